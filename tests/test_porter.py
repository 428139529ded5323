"""The Porter stemmer stems every word exactly as SQLite's FTS5 ``porter`` tokenizer does.

SQLiteStore's index stems with FTS5 and its ranking stems in Python; a word the two stemmed
differently would be found by the index and then scored as absent (or the reverse).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from agentrecall.retrieval.porter import stem

# The examples of Porter (1980), taken through every step; each is FTS5's stem too
# (test_the_paper_examples_are_what_fts5_makes_of_them).
PAPER = [
    ("caresses", "caress"), ("ponies", "poni"), ("ties", "ti"), ("caress", "caress"),
    ("cats", "cat"), ("feed", "feed"), ("agreed", "agre"), ("plastered", "plaster"),
    ("bled", "bled"), ("motoring", "motor"), ("sing", "sing"), ("conflated", "conflat"),
    ("troubled", "troubl"), ("sized", "size"), ("hopping", "hop"), ("tanned", "tan"),
    ("falling", "fall"), ("hissing", "hiss"), ("fizzed", "fizz"), ("failing", "fail"),
    ("filing", "file"), ("happy", "happi"), ("sky", "sky"), ("relational", "relat"),
    ("conditional", "condit"), ("rational", "ration"), ("valenci", "valenc"),
    ("hesitanci", "hesit"), ("digitizer", "digit"), ("conformabli", "conform"),
    ("radicalli", "radic"), ("differentli", "differ"), ("vileli", "vile"),
    ("analogousli", "analog"), ("vietnamization", "vietnam"), ("predication", "predic"),
    ("operator", "oper"), ("feudalism", "feudal"), ("decisiveness", "decis"),
    ("hopefulness", "hope"), ("callousness", "callous"), ("formaliti", "formal"),
    ("sensitiviti", "sensit"), ("sensibiliti", "sensibl"), ("triplicate", "triplic"),
    ("formative", "form"), ("formalize", "formal"), ("electriciti", "electr"),
    ("electrical", "electr"), ("hopeful", "hope"), ("goodness", "good"), ("revival", "reviv"),
    ("allowance", "allow"), ("inference", "infer"), ("airliner", "airlin"),
    ("gyroscopic", "gyroscop"), ("adjustable", "adjust"), ("defensible", "defens"),
    ("irritant", "irrit"), ("replacement", "replac"), ("adjustment", "adjust"),
    ("dependent", "depend"), ("adoption", "adopt"), ("homologou", "homolog"),
    ("communism", "commun"), ("activate", "activ"), ("angulariti", "angular"),
    ("homologous", "homolog"), ("effective", "effect"), ("bowdlerize", "bowdler"),
    ("probate", "probat"), ("rate", "rate"), ("cease", "ceas"), ("controll", "control"),
    ("roll", "roll"), ("generalizations", "gener"), ("oscillators", "oscil"),
]  # fmt: skip

SUFFIXES = [
    "sses", "ies", "ss", "s", "eed", "ed", "ing", "at", "bl", "iz", "y", "ational", "tional",
    "enci", "anci", "izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator",
    "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi", "icate",
    "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able",
    "ible", "ant", "ement", "ment", "ent", "sion", "tion", "ion", "ou", "ism", "ate", "iti",
    "ous", "ive", "ize", "e", "ll",
]  # fmt: skip
# Letters that decide the rules (vowels, y, the doubles), and bytes no rule knows: ß, ж, and
# U+1041, whose UTF-8 ends in two equal bytes (FTS5 takes them for a double consonant).
LETTERS = list("aeiouyslzbcdgnrtwx") + ["ß", "ж", "\u1041"]


def fts5_stems(words: Sequence[str]) -> list[bytes]:
    """Return the bytes FTS5's ``porter`` tokenizer makes of each of ``words``."""
    db = sqlite3.connect(":memory:")
    db.text_factory = bytes
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='porter ascii')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
        db.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(words, 1))
        found = dict((doc, term) for term, doc in db.execute("SELECT term, doc FROM v"))
        return [found[index] for index in range(1, len(words) + 1)]
    finally:
        db.close()


def test_the_paper_examples() -> None:
    assert [(word, stem(word)) for word, _ in PAPER] == PAPER


def test_the_paper_examples_are_what_fts5_makes_of_them() -> None:
    assert fts5_stems([word for word, _ in PAPER]) == [s.encode() for _, s in PAPER]


def test_where_fts5_reads_the_paper_its_own_way() -> None:
    # A suffix needs a longer word; words under 3 or over 64 bytes stay as they are.
    words = ["ies", "sses", "ated", "is", "x1", "b" * 60 + "cats", "b" * 61 + "cats"]
    stems = ["ie", "sse", "at", "is", "x1", "b" * 60 + "cat", "b" * 61 + "cats"]
    # Bytes, not characters: "ßß" ends in two different bytes; a cut multibyte character is
    # kept as its bytes.
    words += ["aßßed", "a\u1041ed"]
    stems += ["aßß", "a\u1041".encode()[:-1].decode("utf-8", "surrogateescape")]
    assert [stem(word) for word in words] == stems
    assert fts5_stems(words) == [s.encode("utf-8", "surrogateescape") for s in stems]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(st.sampled_from(LETTERS), max_size=6),
            st.lists(st.sampled_from(SUFFIXES), max_size=2).map("".join),
        ).map("".join),
        min_size=1,
        max_size=50,
    )
)
def test_every_word_stems_as_fts5_stems_it(words: list[str]) -> None:
    words = [word for word in words if word]
    if words:
        mine = [stem(word).encode("utf-8", "surrogateescape") for word in words]
        assert mine == fts5_stems(words)


@settings(max_examples=500, deadline=None)
@given(
    st.tuples(
        st.text(st.sampled_from([letter for letter in LETTERS if letter.isascii()]), max_size=8),
        st.lists(st.sampled_from(SUFFIXES), max_size=3).map("".join),
    ).map("".join)
)
def test_a_stem_changes_at_most_the_last_two_characters_and_never_the_first(word: str) -> None:
    # What keywords.term_counter relies on to leave most words of ASCII text unstemmed.
    found = stem(word)
    assert word.startswith(found[: max(1, len(found) - 2)])
