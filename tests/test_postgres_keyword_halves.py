"""PostgresStore keyword search in two halves at once: the same hits, and no wait for the pool."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from agentrecall import PostgresStore

QUERIES = [
    "alpha beta",
    "alpha beta gamma",
    "beta gamma delta",
    "alpha delta",
    "gamma",
    "nothing here",
]


def items() -> list[tuple[str, dict[str, Any] | None]]:
    """6,000 memories: "alpha", "beta", "gamma" and "delta" in 460 to 750 each, overlapping.

    With the first 600 again in another scope, a search for "alpha beta" reads all the postings
    of both, enough for two halves to pay; with "gamma" too, "alpha" gives none.
    """
    made: list[tuple[str, dict[str, Any] | None]] = []
    for n in range(6_000):
        steps = (("alpha", 8), ("beta", 9), ("gamma", 11))
        words = [name for name, step in steps if n % step == 0]
        if n % 13 == 1:
            words.append("delta")
        made.append((" ".join([*words, f"item{n}", "filler words"]), {"even": n % 2 == 0}))
    return made


def shown(hits: list[Any]) -> list[tuple[str, float]]:
    return [(hit.id, round(float((hit.metadata or {})["_relevanceScore"]), 9)) for hit in hits]


def named(dsn: str, name: str) -> str:
    return psycopg.conninfo.make_conninfo(dsn, application_name=name)


@pytest.mark.asyncio
async def test_a_search_in_halves_finds_what_one_statement_finds(postgres_dsn: str) -> None:
    await PostgresStore(postgres_dsn).scope(user_id="ana").add_many(items()[:600])
    writer = PostgresStore(postgres_dsn)
    await writer.add_many(items())
    alone = PostgresStore(named(postgres_dsn, "alone"), pool_size=1)  # never a spare
    halves = PostgresStore(named(postgres_dsn, "halves"), pool_size=3)
    for query in QUERIES:
        for options in ({}, {"filter": {"even": True}}, {"max_search_results": 50}):
            for view in (lambda store: store, lambda store: store.scope(user_id="ana")):
                expected = shown(await view(alone).search(query, options))
                await view(halves).search(query, options)  # lets the pool grow a spare
                assert shown(await view(halves).search(query, options)) == expected
    for store in (alone, halves):
        await store.search("alpha beta")
    with psycopg.connect(postgres_dsn) as watch:
        last = watch.execute(
            "SELECT application_name, query FROM pg_stat_activity "
            "WHERE application_name IN ('alone', 'halves')"
        ).fetchall()
    # The spare connection's last statement is the second half's, in autocommit.
    halves_ran = [name for name, query in last if "sum(w) FROM p GROUP BY seq" in query]
    assert halves_ran == ["halves"], last
    for store in (writer, alone, halves):
        await store.aclose()


@pytest.mark.asyncio
async def test_searches_that_fill_the_pool_never_wait_for_a_spare(postgres_dsn: str) -> None:
    """Eight searches at once on two connections: none waits for the pool's timeout."""
    writer = PostgresStore(postgres_dsn)
    await writer.add_many(items())
    store = PostgresStore(postgres_dsn, pool_size=2, connect_timeout=3)
    expected = [shown(await store.search(query)) for query in QUERIES]
    found = await asyncio.wait_for(
        asyncio.gather(*(store.search(query) for query in QUERIES + QUERIES[:2])), timeout=60
    )
    assert [shown(hits) for hits in found] == expected + expected[:2]
    for each in (writer, store):
        await each.aclose()
