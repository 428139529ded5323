"""Okapi BM25 as every agentrecall backend scores keyword hits: query terms, weights, the rerank.

A backend's index picks candidates its own way (FTS5 postings in SQLite, a GIN index over a
``tsvector`` in PostgreSQL); the candidates are then scored here, over the same terms
(:mod:`~agentrecall.retrieval.keywords`), so both rank a store the same way given the same
term statistics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from agentrecall.retrieval.keywords import term_counter, words
from agentrecall.retrieval.tokenize import STOP_WORDS

T = TypeVar("T")

K1 = 0.9
"""BM25's term-frequency saturation. With :data:`B`, chosen by leave-one-conversation-out
cross-validation on the LoCoMo dev file (``benchmarks/tune_bm25.py``, results in
``benchmarks/results/bm25-tuning.md``): recall@10 0.647 there, against 0.629 with the usual
k1 1.2, b 0.75."""

B = 0.25
"""BM25's length normalisation. Memories are short (LoCoMo turns: 35 terms on average), so a
long one says little about its relevance: b matters more than k1, and less of it is better."""

LONG_TEXT = 16_384
"""A memory of more characters is long: the SQL stores keep its term counts and length when
they write it (:func:`~agentrecall.retrieval.keywords.term_counts`), and the rerank reads those
instead of counting its text. Counting a 4 MB memory's text took half a second, at every
search it was a candidate of; counting a text of this length takes about a millisecond."""

Counts = tuple[Mapping[str, int], int]
"""How often a text holds each query term (terms it lacks may be left out), and its length."""


def query_terms(query: str) -> dict[str, str]:
    """Return the searchable terms of ``query``, keyed by the word a full-text query asks for.

    A term is what the index keeps for a word (:mod:`~agentrecall.retrieval.keywords`: a Porter
    stem, a CJK character or pair); stop words are left out before stemming. Of several words
    with one term, the first in sort order stands for it. Sorted by word.
    """
    chosen: dict[str, str] = {}
    for word, term in words(query):
        if word not in STOP_WORDS and (term not in chosen or word < chosen[term]):
            chosen[term] = word
    return {word: term for term, word in sorted(chosen.items(), key=lambda item: item[1])}


def idf(df: int, total: int) -> float:
    """Return BM25's inverse document frequency, always positive."""
    return math.log(1 + (max(total, df) - df + 0.5) / (df + 0.5))


def bm25(
    query: Mapping[str, float], text: str, average_length: float, *, k1: float = K1, b: float = B
) -> float:
    """Return the Okapi BM25 score of ``text`` for terms weighted by their idf."""
    counts, length = term_counter(query)(text)
    return bm25_of_counts(query, counts, length, average_length, k1=k1, b=b)


def bm25_of_counts(
    query: Mapping[str, float],
    counts: Mapping[str, int],
    length: int,
    average_length: float,
    *,
    k1: float = K1,
    b: float = B,
) -> float:
    """Return :func:`bm25` of a text of ``length`` terms holding the query's terms ``counts``."""
    norm = k1 * (1 - b + b * length / max(average_length, 1e-9))
    return sum(query[term] * tf * (k1 + 1) / (tf + norm) for term, tf in counts.items())


def rerank(
    weights: Mapping[str, float],
    candidates: Sequence[T],
    text: Callable[[T], str],
    newness: Callable[[T], int],
    average_length: float,
    limit: int,
    stored: Callable[[T], Counts | None] = lambda item: None,
) -> list[tuple[float, T]]:
    """Return the best ``limit`` candidates by BM25, best first, each with its score.

    A candidate's counts are ``stored(candidate)`` when the store kept them (a
    :data:`LONG_TEXT` memory), else counted in its ``text``: the scores are the same either way.
    Candidates that score 0 (no query term) are dropped; ties go to the higher ``newness``
    (the newer memory).
    """
    count = term_counter(weights)
    scored = []
    for item in candidates:
        known = stored(item)
        if known is None:
            counts, length = count(text(item))
        else:
            counts = {term: n for term, n in known[0].items() if term in weights}
            length = known[1]
        scored.append((bm25_of_counts(weights, counts, length, average_length), item))
    kept = sorted(
        (item for item in scored if item[0] > 0), key=lambda pair: (-pair[0], -newness(pair[1]))
    )
    return kept[:limit]
