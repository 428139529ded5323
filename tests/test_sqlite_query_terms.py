"""SQLiteStore takes queries of any length: long ones keep their rarest terms.

A query's terms each become a part of one SQL statement, and SQLite refuses a statement of
more than 500 parts: before the cap on query terms, a pasted document (hundreds of distinct
words) made every search fail. The cap must change nothing for an ordinary query: the rankings
of the store below (large enough for the planner's bounds to bind, so they are not the exact
BM25 ranking) are pinned as digests. They were first pinned by the search as it was before
the cap, and pinned again, deliberately, when stemmed BM25 (k1 0.9, b 0.25) became the
ranking; small stores are checked against the exact stemmed ranking in
``test_sqlite_ranking.py``. Regenerate with ``python tests/test_sqlite_query_terms.py --pin``
only for a deliberate ranking change, and say so in its commit.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import hashlib
import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import LOCOMO_DEV

from agentrecall import JsonFileStore, SQLiteStore
from agentrecall.evaluation.locomo import load
from agentrecall.retrieval.bm25 import query_terms
from agentrecall.retrieval.plan import MAX_QUERY_TERMS, plan_terms
from agentrecall.retrieval.tokenize import STOP_WORDS
from agentrecall.types import MemoryRecord

PINNED = Path(__file__).resolve().parent / "fixtures" / "sqlite" / "search-rankings.json"
FILLER = 50_000
"""Filler memories beside the LoCoMo turns: enough for common words to pass the planner's
bounds (more postings than it counts exactly or takes in full), as in a large store."""
LIMIT = 10
_WORD = re.compile(r"[^\W_]+")


def _turn_records() -> list[MemoryRecord]:
    records = []
    for conversation in load(LOCOMO_DEV):
        for turn in conversation.turns:
            records.append(
                MemoryRecord(
                    id=f"{conversation.sample_id}/{turn.dia_id}",
                    content=turn.content(),
                    created_at="2024-01-01T00:00:00.000Z",
                    metadata={"conversation": conversation.sample_id, **turn.metadata()},
                )
            )
    return records


def _filler(turns: list[MemoryRecord]) -> Iterator[MemoryRecord]:
    """Yield memories of words drawn from the turns' words with their frequencies there.

    Only ``Random.random`` is used: its sequence is the same on every Python version.
    """
    counts = Counter(word for record in turns for word in _WORD.findall(record.content.lower()))
    words = sorted(counts)
    cumulative = list(itertools.accumulate(counts[word] for word in words))
    rng = random.Random(20240101)
    for index in range(FILLER):
        length = 6 + int(rng.random() * 20)
        drawn = (
            words[bisect.bisect(cumulative, rng.random() * cumulative[-1])] for _ in range(length)
        )
        yield MemoryRecord(
            id=f"filler/{index}",
            content=" ".join(drawn),
            created_at="2024-01-02T00:00:00.000Z",
            metadata={"source": "filler"},
        )


def _queries() -> list[str]:
    """Return the LoCoMo questions, then runs of consecutive questions of up to the cap's terms."""
    questions = [q.text for conversation in load(LOCOMO_DEV) for q in conversation.questions]
    runs = []
    for start in range(0, len(questions), 7):
        run: list[str] = []
        for question in questions[start:]:
            if len(query_terms(" ".join([*run, question]))) > MAX_QUERY_TERMS:
                break
            run.append(question)
        runs.append(" ".join(run))
    return questions + runs


def _digest(hits: list[tuple[str, float]]) -> str:
    text = json.dumps([[memory_id, repr(score)] for memory_id, score in hits])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def _rankings(path: Path, queries: list[str]) -> list[list[tuple[str, float]]]:
    store = SQLiteStore(path)
    try:
        turns = _turn_records()
        await store.import_records([*turns, *_filler(turns)])
        rankings = []
        for query in queries:
            hits = await store.search(query, {"max_search_results": LIMIT})
            rankings.append([(hit.id or "", hit.metadata["_relevanceScore"]) for hit in hits])
        return rankings
    finally:
        await store.aclose()


def test_the_plan_keeps_the_rarest_terms_ties_by_text() -> None:
    df = {f"t{i:03d}": 1 + i // 2 for i in range(3 * MAX_QUERY_TERMS)} | {"absent": 0}
    kept = [plan.term for plan in plan_terms(df, 1_000_000)]
    assert kept == sorted(df, key=lambda term: (df[term], term))[1 : MAX_QUERY_TERMS + 1]
    assert [plan.term for plan in plan_terms(dict(reversed(df.items())), 1_000_000)] == kept


def test_queries_within_the_cap_rank_as_pinned(tmp_path: Path) -> None:
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    queries = _queries()
    assert pinned["queries"] == len(queries)
    assert max(len(query_terms(query)) for query in queries) == MAX_QUERY_TERMS
    rankings = asyncio.run(_rankings(tmp_path / "m.db", queries))
    changed = [
        (query, ranking)
        for query, ranking, digest in zip(queries, rankings, pinned["digests"], strict=True)
        if _digest(ranking) != digest
    ]
    assert not changed, f"{len(changed)} rankings changed, the first: {changed[0]}"


def _document(words: int, seed: int) -> str:
    """Return ``words`` words of English-like text with a long tail of distinct words."""
    rng = random.Random(seed)
    common = sorted(STOP_WORDS) + ["lake", "trip", "music", "dog", "painting", "friend"]
    return " ".join(
        common[int(rng.random() * len(common))]
        if rng.random() < 0.7
        else f"w{int(rng.random() * 40_000)}"
        for _ in range(words)
    )


async def test_a_pasted_document_of_100k_words_finds_its_memory(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        await store.add_many([(f"note {i} about w{i} and the lake", None) for i in range(2_000)])
        target = (await store.add("the zanzibar kayak trip with Mia", None)).id
        await store.add_many([(f"another note {i} on music", None) for i in range(2_000)])
        document = _document(100_000, seed=1) + " Mia zanzibar kayak " + _document(1_000, seed=2)
        assert len(query_terms(document)) > 10_000
        hits = await store.search(document, {"max_search_results": 3})
        assert hits[0].id == target
    finally:
        await store.aclose()


async def test_a_query_of_600_distinct_words_finds_memories(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        await store.add_many(
            [(f"entry w{i} w{i + 1} and w{i + 2}", None) for i in range(0, 1_200, 3)]
        )
        query = " ".join(f"w{i}" for i in range(600))
        assert len(query_terms(query)) == 600
        hits = await store.search(query, {"max_search_results": 5})
        assert len(hits) == 5
        # With the common terms left out, what counts is the rarest: every word is in one
        # memory, so the ties go to the newest memories holding the kept words.
        assert all(hit.metadata["_relevanceScore"] > 0 for hit in hits)
    finally:
        await store.aclose()


@pytest.mark.parametrize("words", [100_000])
async def test_the_json_store_takes_a_pasted_document_too(tmp_path: Path, words: int) -> None:
    store = JsonFileStore(name="m", path=str(tmp_path / "m.json"))
    await store.add_many([(f"note {i} about w{i} and the lake", None) for i in range(2_000)])
    # Nine of the document's words, against at most five for any other memory.
    target = (await store.add("zanzibar kayak Mia and the lake trip, music, dog", None)).id
    document = _document(words, seed=1) + " Mia zanzibar kayak"
    hits = await store.search(document, {"max_search_results": 3})
    assert hits[0].id == target


def _pin() -> None:
    queries = _queries()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        rankings = asyncio.run(_rankings(Path(tmp) / "m.db", queries))
    PINNED.parent.mkdir(parents=True, exist_ok=True)
    pinned = {"queries": len(queries), "digests": [_digest(ranking) for ranking in rankings]}
    PINNED.write_text(json.dumps(pinned, indent=0) + "\n", encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Pin the rankings of the ordinary queries.")
    parser.add_argument("--pin", action="store_true", required=True)
    parser.parse_args()
    _pin()
