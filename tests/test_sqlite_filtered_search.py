"""SQLiteStore's filtered searches return what ranking every matching memory would.

Filters and time bounds are answered partly by indexes (metadata values, creation times) and
partly by checking memories, by several routes depending on how many memories they admit.
Whatever the route, on a store where the candidate limit does not bind, the hits must be the
exact BM25 ranking (:mod:`bm25_oracle`, statistics over the whole database) of the memories
that meet every condition, as :func:`agentrecall.retrieval.filters.matches` reads the filter.
"""

from __future__ import annotations

import asyncio
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bm25_oracle import Corpus
from sqlite_checks import check_full_text_index, old_database

from agentrecall import SQLiteStore
from agentrecall.retrieval.filters import matcher
from agentrecall.retrieval.plan import CANDIDATES
from agentrecall.stores.sqlite.narrowing import (
    TAGGED_TEXT,
    TAGGED_VALUES,
    Count,
    chosen,
    narrowings,
    posting_test,
)
from agentrecall.stores.times import timestamp
from agentrecall.types import MemoryRecord

START = datetime(2025, 3, 1, tzinfo=timezone.utc)
MEMORIES = 3_000
VOCABULARY = [f"w{i}" for i in range(900)]
KINDS = [f"kind{i}" for i in range(8)]  # about 12% of the memories each
RARE = [f"rare{i}" for i in range(200)]  # about 15 memories each
LONG = "L" * 300  # longer than the metadata index keeps


def _metadata(rng: random.Random, index: int) -> dict[str, Any] | None:
    if index % 17 == 0:
        return None
    metadata: dict[str, Any] = {
        "kind": rng.choice(KINDS),
        "rare": rng.choice(RARE),
        "n": rng.randrange(100),
        "f": rng.choice([3, 3.0, 2.5, "3", True]),
        "flag": rng.random() < 0.3,
    }
    if rng.random() < 0.5:
        metadata["maybe"] = rng.choice([None, "x", 0])
    if rng.random() < 0.1:
        metadata["long"] = LONG + str(index % 3)
    if rng.random() < 0.1:
        metadata["list"] = [1, "kind1"]
    return metadata


def _text(rng: random.Random) -> str:
    chosen = [rng.choice(VOCABULARY) for _ in range(rng.randrange(4, 12))]
    return " ".join(chosen + rng.sample(["the", "lake", "and", "trip"], 2))


def _records(rng: random.Random) -> list[MemoryRecord]:
    # Half the memories arrive in time order, half out of it: row ids then follow creation
    # times only in part, as after an import of older memories.
    minutes = list(range(MEMORIES))
    tail = minutes[MEMORIES // 2 :]
    rng.shuffle(tail)
    minutes[MEMORIES // 2 :] = tail
    return [
        MemoryRecord(
            id=f"m{i}",
            content=_text(rng),
            created_at=timestamp(START + timedelta(minutes=minute), "t") or "",
            metadata=_metadata(rng, i),
        )
        for i, minute in enumerate(minutes)
    ]


def _filter(rng: random.Random) -> dict[str, Any] | None:
    options: list[dict[str, Any]] = [
        {"kind": rng.choice(KINDS)},
        {"rare": rng.choice(RARE)},
        {"rare": {"$in": rng.sample(RARE, 3)}},
        {"kind": {"$in": rng.sample(KINDS, 2)}, "rare": {"$ne": rng.choice(RARE)}},
        {"n": {"$gte": rng.randrange(100), "$lt": rng.randrange(100)}},
        {"n": rng.randrange(100)},
        {"f": rng.choice([3, 3.0, "3", True, 2.5])},
        {"flag": rng.choice([True, False, 1, 0])},
        {"maybe": rng.choice([None, "x", 0, False])},
        {"maybe": {"$exists": rng.choice([True, False])}},
        {"kind": {"$ne": rng.choice(KINDS)}},
        {"long": LONG + rng.choice("0123")},
        {"list": 1},
        {"kind": rng.choice(KINDS), "rare": rng.choice(RARE)},
        {"kind": rng.choice(KINDS), "flag": True, "n": {"$lt": 50}},
    ]
    return None if rng.random() < 0.15 else rng.choice(options)


def _bounds(rng: random.Random) -> tuple[str | None, str | None]:
    def moment() -> str:
        return timestamp(START + timedelta(minutes=rng.randrange(MEMORIES)), "t") or ""

    after = moment() if rng.random() < 0.4 else None
    before = moment() if rng.random() < 0.3 else None
    return after, before


def _expected(
    memories: list[MemoryRecord],
    corpus: Corpus,
    query: str,
    flt: dict[str, Any] | None,
    bounds: tuple[str | None, str | None],
    allowed: set[str] | None,
) -> tuple[list[tuple[str, float]], int]:
    """Return the exact ranking of the memories meeting every condition, and how many of
    those hold a query term."""
    after, before = bounds
    metadata_matches = matcher(flt)

    def meets(record: MemoryRecord) -> bool:
        return (
            (allowed is None or record.id in allowed)
            and (after is None or record.created_at >= after)
            and (before is None or record.created_at < before)
            and metadata_matches(record.metadata)
        )

    scored = corpus.ranked(query)
    hits = [(memories[i].id, score) for i, score in scored if meets(memories[i])]
    return hits, len(hits)


async def _build(path: Path, rng: random.Random) -> tuple[SQLiteStore, set[str]]:
    store = SQLiteStore(path)
    await store.import_records(_records(rng))
    ana = store.scope(user_id="ana")
    owned = {(await ana.add(_text(rng), _metadata(rng, i))).id for i in range(40)}
    for i in range(20):  # single adds wait for the full-text index for a while
        await store.add(_text(rng), _metadata(rng, i))
    for i in rng.sample(range(MEMORIES), 60):
        await store.update(f"m{i}", metadata=_metadata(rng, i + 1))
    await store.delete_many([f"m{i}" for i in rng.sample(range(MEMORIES), 60)])
    return store, owned


def test_filtered_searches_rank_the_matching_memories_exactly(tmp_path: Path) -> None:
    rng = random.Random(7)

    async def run() -> int:
        store, owned = await _build(tmp_path / "m.db", rng)
        try:
            memories = await store.list()
            corpus = Corpus([record.content for record in memories])
            compared = 0
            for _ in range(400):
                query = " ".join(rng.sample(VOCABULARY, rng.randrange(1, 4)) + ["the"])
                flt, bounds, limit = _filter(rng), _bounds(rng), rng.choice([3, 10, 60])
                scoped = rng.random() < 0.2
                view = store.scope(user_id="ana") if scoped else store
                expected, holding = _expected(
                    memories, corpus, query, flt, bounds, owned if scoped else None
                )
                if holding > CANDIDATES:
                    continue  # the candidate limit binds: the ranking is no longer exact
                hits = await view.search(
                    query,
                    {"max_search_results": limit},
                    filter=flt,
                    created_after=bounds[0],
                    created_before=bounds[1],
                )
                got = [(hit.id or "", hit.metadata["_relevanceScore"]) for hit in hits]
                _assert_same(got, expected[:limit], (query, flt, bounds, scoped))
                compared += 1
            store._db.run(check_full_text_index, write=True)
            return compared
        finally:
            await store.aclose()

    assert asyncio.run(run()) >= 300


def _assert_same(
    got: list[tuple[str, float]], expected: list[tuple[str, float]], case: object
) -> None:
    # Equal scores may differ in their last bits with the order of summation, and the last
    # places may be a tie cut differently: compare scores, and ids above the last score.
    assert len(got) == len(expected), case
    for (_, have), (_, want) in zip(got, expected, strict=True):
        assert math.isclose(have, want, rel_tol=1e-9), case
    if expected:
        last = expected[-1][1]
        above = {i for i, score in expected if not math.isclose(score, last, rel_tol=1e-9)}
        assert above <= {i for i, _ in got}, case


async def test_the_metadata_index_follows_every_write(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db", ttl=None)
    try:
        first = await store.add("a walrus", {"kind": "a", "n": 1, "ok": True, "no": None})
        await store.add_many([(f"bulk {i}", {"kind": "b", "i": i}) for i in range(40)])
        store._db.run(check_full_text_index, write=True)
        await store.update(first.id, metadata={"kind": "c", "nested": {"x": 1}})
        await store.update(first.id, content="a walrus swims")
        later = await store.add("waits for the index", {"kind": "d"})
        await store.update(later.id, metadata={"kind": "e"})
        await store.add("expires", {"kind": "f"}, expires_at=datetime.now(timezone.utc))
        await store.delete_many([later.id])
        await store.scope(user_id="ana").add_many([(f"ana {i}", {"kind": "g"}) for i in range(30)])
        await store.scope(user_id="ana").clear()
        await store.add("after expiry", {"kind": "h"})  # a write purges the expired memory
        store._db.run(check_full_text_index, write=True)
        assert [h.content for h in await store.search("walrus", filter={"kind": "c"})] == [
            "a walrus swims"
        ]
        assert await store.search("expires", filter={"kind": "f"}) == []
    finally:
        await store.aclose()


async def test_an_older_database_gets_its_metadata_index(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    def fill(db: Any) -> None:
        for seq in range(1, 4):
            db.execute(
                "INSERT INTO memories (seq, id, scope, content, content_hash, metadata, "
                "created_at) VALUES (?, ?, 0, ?, ?, ?, '2025-01-01T00:00:00.000Z')",
                (seq, f"id{seq}", f"note {seq}", seq, f'{{"kind": "k{seq % 2}", "n": {seq}}}'),
            )
        db.execute("INSERT INTO memories_fts (rowid, content, scope) VALUES (1, 'note 1', 0)")
        db.execute("INSERT INTO memories_fts (rowid, content, scope) VALUES (2, 'note 2', 0)")
        db.execute("INSERT INTO memories_unindexed (seq) VALUES (3)")

    old_database(path, 7, fill)
    store = SQLiteStore(path)
    try:
        hits = await store.search("note", filter={"kind": "k1"})
        assert sorted(h.id or "" for h in hits) == ["id1", "id3"]
        store._db.run(check_full_text_index, write=True)
    finally:
        await store.aclose()


async def test_common_words_under_a_selective_filter_still_find_its_memories(
    tmp_path: Path,
) -> None:
    # Every memory holds "lake", so its postings are the newest few only; the filter's twenty
    # memories are the oldest, far below them: the search must read further for them.
    store = SQLiteStore(tmp_path / "m.db")
    try:
        items = [
            (f"lake note {i}", {"kind": "x" if i < 20 else "y", "n": i % 10}) for i in range(30_000)
        ]
        await store.add_many(items)
        hits = await store.search("lake", {"max_search_results": 10}, filter={"kind": "x"})
        assert len(hits) == 10 and all(hit.metadata["kind"] == "x" for hit in hits)
        # A filter no index answers, met by a tenth of the memories: more of them than the
        # best memories without the filter hold.
        wide = await store.search("lake", {"max_search_results": 60}, filter={"n": {"$lt": 1}})
        assert len(wide) == 60 and all(hit.metadata["n"] == 0 for hit in wide)
    finally:
        await store.aclose()


def test_narrowings_take_equalities_and_time_bounds() -> None:
    found = narrowings(
        {"kind": "a", "n": {"$gt": 1}, "ok": {"$in": [True, None, 2.5]}, "x": {"$ne": 1}},
        "2025-01-01T00:00:00.000Z",
        None,
    )
    assert [n.params for n in found] == [
        ("kind", "a"),
        ("ok", b"\x02", b"\x00", 2.5),
        ("2025-01-01T00:00:00.000Z",),
    ]
    assert found[2].posting is None and "created_at >= ?" in found[2].rows
    too_long = {"a": "v" * (TAGGED_TEXT + 1), "b" * (TAGGED_TEXT + 1): 1}
    assert narrowings(too_long, None, None) == []
    assert narrowings({"a": {"$in": list(range(TAGGED_VALUES + 1))}}, None, None) == []


def test_the_fewest_rows_narrow_the_postings_when_few_enough() -> None:
    tags, time = narrowings({"kind": "a"}, "2025-01-01T00:00:00.000Z", None)
    few, many = Count(10, 5, 900), Count(30_000, 1, 1_000_000)
    assert chosen([few, many], 1_000_000) == 0
    assert chosen([many, many], 1_000_000) is None
    assert chosen([few], 100) is None  # ten rows are more than 5% of a hundred
    spread = posting_test([tags, time], [few, many], 1_000_000)
    assert spread.narrows and spread.rows == tags and "+f.rowid IN" in spread.condition
    dense = posting_test([tags, time], [many, Count(10, 991, 1_000)], 1_000_000)
    assert dense.narrows and dense.rows is None and dense.params[:2] == [991, 1_000]
    assert "EXISTS" in dense.condition  # the tag still checks each posting by its index
