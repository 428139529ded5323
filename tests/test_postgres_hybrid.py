"""Hybrid search on PostgresStore: both rankings read side by side, the same answer as SQLite."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.testing import HashEmbedder
from agentrecall.types import MemoryEntry

FACTS = [
    "The user's favourite seat is by the window",
    "Ana bought a red bicycle in Lisbon",
    "The quarterly report is due on the 3rd of March",
    "Bo plays chess at the library club on Tuesdays",
    "The window seat on the train was taken",
    "Ana's sister is a doctor in Porto",
    "Tomatoes grow in the garden by the window",
    "The chess club meets in the library",
]

QUERIES = ["which seat by the window", "chess club", "Ana", "report due in March", "zzz"]


def shown(hits: list[MemoryEntry]) -> list[tuple[str, float]]:
    return [(hit.content, round(float((hit.metadata or {})["_relevanceScore"]), 6)) for hit in hits]


@pytest.mark.asyncio
async def test_hybrid_search_gives_sqlite_answers_with_one_connection_or_several(
    postgres_dsn: str, tmp_path: Path
) -> None:
    lite = SQLiteStore(tmp_path / "m.db", embedder=HashEmbedder(256))
    narrow = PostgresStore(postgres_dsn, embedder=HashEmbedder(256), pool_size=1)
    wide = PostgresStore(postgres_dsn, embedder=HashEmbedder(256))
    await lite.add_many([(fact, None) for fact in FACTS])
    await narrow.add_many([(fact, None) for fact in FACTS])
    for query in QUERIES:
        for options in ({"mode": "hybrid"}, {"mode": "hybrid", "neighbours": True}):
            expected = shown(await narrow.search(query, options))  # type: ignore[arg-type]
            assert shown(await wide.search(query, options)) == expected  # type: ignore[arg-type]
            found = await lite.search(query, options)  # type: ignore[arg-type]
            assert [hit.content for hit in found] == [content for content, _ in expected]
    for store in (lite, narrow, wide):
        await store.aclose()


@pytest.mark.asyncio
async def test_the_semantic_ranking_is_read_while_the_keyword_one_waits(postgres_dsn: str) -> None:
    """The keyword half waits on a lock of the term statistics; the semantic half ends meanwhile."""
    named = psycopg.conninfo.make_conninfo(postgres_dsn, application_name="halves")
    store = PostgresStore(named, embedder=HashEmbedder(256))
    await store.add_many([(fact, None) for fact in FACTS])
    alone = shown(await store.search("which seat by the window"))
    async with await psycopg.AsyncConnection.connect(postgres_dsn) as locker:
        cursor = await locker.execute("SELECT clock_timestamp()")
        (started,) = await cursor.fetchone() or (None,)
        await locker.execute("LOCK TABLE agentrecall.term_stats IN ACCESS EXCLUSIVE MODE")
        search = asyncio.ensure_future(store.search("which seat by the window"))
        async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as watch:
            for _ in range(3_000):  # a minute at most
                # A session that has ended a transaction since the search began, while the
                # other still waits for the lock.
                cursor = await watch.execute(
                    "SELECT wait_event_type = 'Lock', state = 'idle' AND state_change > %s "
                    "FROM pg_stat_activity WHERE application_name = 'halves'",
                    [started],
                )
                sessions = await cursor.fetchall()
                if (True, False) in sessions and (False, True) in sessions:
                    break
                await asyncio.sleep(0.02)
            else:
                pytest.fail(f"the two halves did not run side by side: {sessions}")
        assert not search.done()
        await locker.rollback()
    assert shown(await search) == alone
    await store.aclose()
