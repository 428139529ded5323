"""Ranking counts a query's terms in a text as the full list of the text's terms would.

``keywords.term_counter`` stems only the words of a text that can stem to a query term; its
counts and the text's length must be those of :func:`~agentrecall.retrieval.keywords.keyword_terms`.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from test_porter import LETTERS, SUFFIXES

from agentrecall.retrieval.keywords import keyword_terms, term_counter
from agentrecall.retrieval.porter import stem

ASCII = [letter for letter in LETTERS if letter.isascii()]
WORDS = st.tuples(
    st.text(st.sampled_from(ASCII), min_size=1, max_size=7),
    st.lists(st.sampled_from(SUFFIXES), max_size=2).map("".join),
).map("".join)
ASCII_TEXTS = st.lists(
    st.one_of(WORDS, WORDS.map(str.upper), st.sampled_from(["42", "x1", "a_b", "it's"])),
    max_size=30,
).map(" ".join)
# Text with other characters takes the full path; it must agree all the same.
OTHER_TEXTS = st.tuples(
    ASCII_TEXTS, st.sampled_from(["café", "用户喜欢座位", "ﬁnance", "Straße", "\u1041ed"])
).map(" ".join)


def expected(text: str, terms: set[str]) -> tuple[dict[str, int], int]:
    found = keyword_terms(text)
    return {term: n for term, n in Counter(found).items() if term in terms}, len(found)


def test_counts_of_the_query_terms_and_the_length() -> None:
    count = term_counter({"seat", "window", "tv"})
    text = "The user's seats: seating by the WINDOW, a seat; no TV."
    assert count(text) == ({"seat": 3, "window": 1, "tv": 1}, 12)
    assert count("") == ({}, 0)
    assert term_counter(set())("seats and windows") == ({}, 3)


@settings(max_examples=300, deadline=None)
@given(st.one_of(ASCII_TEXTS, OTHER_TEXTS), st.lists(WORDS, max_size=6), st.data())
def test_the_same_as_tallying_every_term(text: str, others: list[str], data: st.DataObject) -> None:
    own = keyword_terms(text)
    terms = {stem(word.lower()) for word in others}
    if own:
        terms |= set(data.draw(st.lists(st.sampled_from(own), max_size=4)))
    assert term_counter(terms)(text) == expected(text, terms)
