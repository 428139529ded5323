"""A PostgreSQL row's terms are exactly the terms the shared BM25 reads in its content."""

from __future__ import annotations

from conftest import LOCOMO_DEV

from agentrecall.evaluation.locomo import load
from agentrecall.retrieval.keywords import keyword_terms
from agentrecall.stores.postgres.rows import tsvector

EDGES = [
    "",
    "   ",
    "snake_case_words AND CamelCase, 3.14 and 42nd",
    "Crème brûlée at the café, CAFÉ and cafe",
    "naïve coöperation ½ ² ß straße",
    "Mixed 中文字符 with English words and 日本語",
    "repeat repeat REPEAT repeating repeated",
    "x" * 600 + " short words after a very long one",
]


def test_a_rows_terms_are_the_distinct_terms_bm25_reads() -> None:
    texts = EDGES + [turn.text for conversation in load(LOCOMO_DEV) for turn in conversation.turns]
    for text in texts * 2:  # the second pass reads the kept stems
        written, length = tsvector(text)
        expected = [term for term in dict.fromkeys(keyword_terms(text)) if len(term) <= 511]
        assert written == ("'" + "' '".join(expected) + "'" if expected else ""), text
        assert length == len(keyword_terms(text)), text
