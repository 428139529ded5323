"""A long memory costs a search little: its term counts are kept, not counted at every search.

One 4 MB memory once took every search it was a candidate of from 12 to 557 ms: the exact BM25
rerank counted the query's terms in its whole text. SQLiteStore and PostgresStore now keep the
counts of each memory of more than ``LONG_TEXT`` characters when they write it, and the rerank
reads those. What must hold: the rerank counts no text longer than ``LONG_TEXT`` (the work a
search does per candidate is bounded), the rankings are those counting the text gives, and
every write keeps the counts of exactly the long memories. No timing is asserted here; the
measurements are in ``benchmarks/results/long-memory.md``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Collection
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlite_checks import check_full_text_index, old_database

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.retrieval import bm25
from agentrecall.retrieval.bm25 import LONG_TEXT
from agentrecall.retrieval.keywords import term_counts
from agentrecall.stores.base import MemoryStore
from agentrecall.stores.contentkeys import content_hash
from agentrecall.stores.sqlite import dedup, tables
from agentrecall.stores.sqlite import search as sqlite_search
from agentrecall.types import MemoryRecord

FILLER = " ".join(f"filler{n % 997} words" for n in range(LONG_TEXT // 10))
LONG = f"a long report on the aisle seats {FILLER} and the window seats at the end"
DENSE = "aisle seat " * (LONG_TEXT // 10)  # long, and a hit for "aisle seat"
SHORT = [f"note {n}: Ana likes the aisle seat" for n in range(30)] + ["window seats are cold"]
DSNS: dict[int, str] = {}
"""The database of each PostgresStore the fixture opened, by the store's id()."""


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    opened: MemoryStore
    if request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "memory.db")
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        opened = PostgresStore(dsn)
        DSNS[id(opened)] = dsn
    try:
        yield opened
    finally:
        await opened.aclose()
        DSNS.pop(id(opened), None)


async def _ranking(store: MemoryStore, query: str) -> list[tuple[str, float]]:
    hits = await store.search(query, {"max_search_results": 50})
    return [(hit.content, hit.metadata["_relevanceScore"]) for hit in hits]


def _drop_kept_counts(store: MemoryStore) -> None:
    if isinstance(store, SQLiteStore):
        store._db.run(lambda db: db.execute("DELETE FROM memory_term_counts"), write=True)
    else:
        assert isinstance(store, PostgresStore)
        with psycopg.connect(DSNS[id(store)]) as connection:
            connection.execute("DELETE FROM agentrecall.long_terms")


@pytest.fixture
def counted_texts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lengths of the texts a search counts terms in (the rerank, and waiting memories)."""
    lengths: list[int] = []
    counter = bm25.term_counter

    def recording(terms: Collection[str]) -> Callable[[str], tuple[dict[str, int], int]]:
        count = counter(terms)

        def counting(text: str) -> tuple[dict[str, int], int]:
            lengths.append(len(text))
            return count(text)

        return counting

    terms = sqlite_search.keyword_terms

    def reading(text: str) -> list[str]:
        lengths.append(len(text))
        return terms(text)

    monkeypatch.setattr(bm25, "term_counter", recording)
    monkeypatch.setattr(sqlite_search, "keyword_terms", reading)
    return lengths


@pytest.mark.parametrize("bulk", [False, True])
async def test_a_search_counts_no_long_text(
    store: MemoryStore, counted_texts: list[int], bulk: bool
) -> None:
    if bulk:  # indexed as they are added
        await store.add_many([(text, None) for text in [LONG, DENSE, *SHORT]])
    else:  # in SQLite, waiting for the index: read directly by searches
        for text in [LONG, DENSE, *SHORT[:5]]:
            await store.add(text)
    found = [hit.content for hit in await store.search("aisle seats", {"max_search_results": 50})]
    assert DENSE in found and LONG in found  # both candidates, and returned whole
    assert counted_texts and max(counted_texts) <= LONG_TEXT


async def test_kept_counts_rank_as_counting_the_text_does(store: MemoryStore) -> None:
    await store.add_many([(text, None) for text in [LONG, DENSE, *SHORT]])
    await store.add(LONG.replace("window", "corridor"))  # waiting for the index, in SQLite
    queries = ["aisle seats", "window", "seat filler5 words", "corridor end"]
    kept = [await _ranking(store, query) for query in queries]
    _drop_kept_counts(store)
    assert [await _ranking(store, query) for query in queries] == kept
    assert all(kept)


def _sqlite_counts(db: sqlite3.Connection) -> dict[int, tuple[dict[str, int], int]]:
    found: dict[int, tuple[dict[str, int], int]] = {}
    for seq, term, n in db.execute("SELECT seq, term, n FROM memory_term_counts"):
        counts, length = found.get(seq, ({}, 0))
        if term:
            counts[term] = n
        else:
            length = n
        found[seq] = counts, length
    return found


def _expected(records: list[tuple[int, str]]) -> dict[int, tuple[dict[str, int], int]]:
    return {key: term_counts(text) for key, text in records if len(text) > LONG_TEXT}


async def _check_sqlite_counts(store: SQLiteStore) -> None:
    rows = store._db.run(lambda db: db.execute("SELECT seq, content FROM memories").fetchall())
    assert store._db.run(_sqlite_counts) == _expected(rows)


async def _check_postgres_counts(dsn: str) -> None:
    with psycopg.connect(dsn) as connection:
        contents = [
            row[0] for row in connection.execute("SELECT content FROM agentrecall.memories")
        ]
        kept: dict[bytes, tuple[dict[str, int], int]] = {}
        for key, term, n in connection.execute(
            "SELECT content_hash, term, n FROM agentrecall.long_terms"
        ):
            counts, length = kept.get(key, ({}, 0))
            if term:
                counts[term] = n
            else:
                length = n
            kept[key] = counts, length
    assert kept == _expected([(content_hash(text), text) for text in contents])


async def _check_counts(store: MemoryStore) -> None:
    if isinstance(store, SQLiteStore):
        await _check_sqlite_counts(store)
    else:
        await _check_postgres_counts(DSNS[id(store)])


async def test_every_write_keeps_the_counts_of_exactly_the_long_memories(
    store: MemoryStore,
) -> None:
    first = await store.add(LONG)
    await store.add_many([(DENSE, None), (LONG, None), *[(text, None) for text in SHORT]])
    await _check_counts(store)
    assert len(await store.search("seats")) > 0
    await store.update(first.id, content="now short")
    await _check_counts(store)
    await store.update(first.id, content=LONG + " again")
    await _check_counts(store)
    await store.update(first.id, content=DENSE + " with more")
    await _check_counts(store)
    await store.update(first.id, metadata={"kind": "report"})  # the content stays
    await _check_counts(store)
    ana = store.scope(user_id="ana")
    await ana.add(LONG)  # the same content in another scope
    await ana.import_records(
        [
            MemoryRecord(
                id="imported", content=LONG + " imported", created_at="2025-01-01T00:00:00.000Z"
            )
        ]
    )
    await _check_counts(store)
    assert await store.delete(first.id)
    await _check_counts(store)
    assert await ana.clear() == 2
    await _check_counts(store)
    await store.clear()
    await _check_counts(store)


async def test_an_sqlite_store_written_before_kept_counts_counts_its_long_memories(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    texts = [LONG, "short one", DENSE]

    def fill(db: sqlite3.Connection) -> None:
        for seq, content in enumerate(texts, 1):
            db.execute(
                "INSERT INTO memories (seq, id, scope, content, content_hash, created_at) "
                "VALUES (?, ?, 0, ?, ?, '2025-01-01T00:00:00.000Z')",
                (seq, f"id{seq}", content, seq),
            )
        db.execute(
            "INSERT INTO memories_fts (rowid, content, scope) "
            "SELECT seq, coalesce(index_text, content), scope FROM memories WHERE seq < 3"
        )
        db.execute("INSERT INTO memories_unindexed (seq) VALUES (3)")

    old_database(path, 12, fill)
    store = SQLiteStore(path)
    try:
        await _check_sqlite_counts(store)
        assert {seq for seq in store._db.run(_sqlite_counts)} == {1, 3}
        assert [hit.id for hit in await store.search("aisle seat")][:1] == ["id3"]
        store._db.run(check_full_text_index, write=True)
    finally:
        await store.aclose()


async def test_a_postgres_store_written_before_kept_counts_counts_its_long_memories(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn)
    await store.add_many([(LONG, None), ("short one", None), (DENSE, None)])
    await store.aclose()
    with psycopg.connect(postgres_dsn) as connection:
        # Back to version 7, memories kept, as the release before kept counts left them.
        connection.execute(
            "DROP TABLE agentrecall.long_terms; "
            "DROP FUNCTION agentrecall.forget_long_terms CASCADE; "
            "DELETE FROM agentrecall.migrations WHERE version > 7"
        )
    upgraded = PostgresStore(postgres_dsn)
    try:
        hits: list[Any] = await upgraded.search("aisle seat")  # opens it: migrates
        assert hits[0].content == DENSE
        await _check_postgres_counts(postgres_dsn)
    finally:
        await upgraded.aclose()


@pytest.mark.parametrize("route", ["checked one by one", "pipelined chunks"])
async def test_every_way_rows_go_into_sqlite_counts_the_long_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    items = [(LONG, None), *[(text, None) for text in SHORT], (DENSE, None)]
    if route == "checked one by one":  # as in a scope where dedup keys collided
        monkeypatch.setattr(dedup, "has_collisions", lambda db, scope: True)
    else:  # more rows than one chunk
        items += [(f"bulk note {n}", None) for n in range(tables.CHUNK + 1)]
        items.append((LONG + " last", None))
    try:
        await store.add_many(items)
        await _check_sqlite_counts(store)
        assert len(store._db.run(_sqlite_counts)) == (2 if route == "checked one by one" else 3)
    finally:
        await store.aclose()
