"""A filter of up to ``MAX_CONDITIONS`` conditions runs on both SQL stores; a longer one is refused.

SQLite nests an expression one level deeper per condition (1,000 levels at most) and a search
repeats the filter in each of its term parts, so a filter of about 1,000 keys once failed with
``StorageError: Expression tree is too large``. The limit is checked up front, by the shared
filter validation, the same for every store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.filters import MAX_CONDITIONS, check_filter
from agentrecall.retrieval.plan import CANDIDATES, MAX_QUERY_TERMS
from agentrecall.stores.base import MemoryStore

FIELDS = MAX_CONDITIONS // 2
WORDS = [f"w{i}" for i in range(MAX_QUERY_TERMS)]
QUERY = "alpha " + " ".join(WORDS)
OTHERS = 5 * CANDIDATES  # more memories than the unfiltered candidate pool checks
"""Memories that hold the query's words and fail the filter: the one that meets it is oldest,
so the search must check the conditions on each posting, where the filter is repeated in
every term part of the statement."""


def at_limit(fields: int = FIELDS) -> dict[str, Any]:
    """Return a filter of ``2 * fields`` comparisons (the operator with the most parameters)."""
    return {f"k{i}": {"$gt": 5, "$lt": 9} for i in range(fields)}


def one_over() -> dict[str, Any]:
    return {**at_limit(), "extra": {"$exists": True}}


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    opened: MemoryStore
    if request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "memory.db")
    else:
        opened = PostgresStore(request.getfixturevalue("postgres_dsn"))
    wanted = {f"k{i}": 7 for i in range(MAX_CONDITIONS)}
    others = {f"k{i}": 1 for i in range(MAX_CONDITIONS)}
    await opened.add("alpha w0 the one that meets the filter", metadata=wanted)
    await opened.add_many(
        [(f"alpha {WORDS[n % len(WORDS)]} other {n}", others) for n in range(OTHERS)]
    )
    try:
        yield opened
    finally:
        await opened.aclose()


def test_the_limit_counts_each_value_and_operator() -> None:
    check_filter(at_limit())
    check_filter({f"k{i}": i for i in range(MAX_CONDITIONS)})
    with pytest.raises(
        InvalidArgumentError, match=f"101 conditions, more than the {MAX_CONDITIONS}"
    ):
        check_filter(one_over())
    with pytest.raises(InvalidArgumentError, match=f"1000 fields, more than the {MAX_CONDITIONS}"):
        check_filter({f"k{i}": i for i in range(1000)})


@pytest.mark.asyncio
async def test_a_filter_at_the_limit_runs_in_every_read(store: MemoryStore) -> None:
    hits = await store.search(QUERY, filter=at_limit())
    assert [hit.content for hit in hits] == ["alpha w0 the one that meets the filter"]
    assert len(await store.list(filter=at_limit())) == 1
    assert await store.count(filter=at_limit()) == 1
    equal = {f"k{i}": 1 for i in range(MAX_CONDITIONS)}
    assert len(await store.search(QUERY, {"max_search_results": 20}, filter=equal)) == 20


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [MAX_CONDITIONS + 1, 1_000])
async def test_a_longer_filter_is_refused_naming_the_limit(store: MemoryStore, size: int) -> None:
    filter = {f"k{i}": {"$gt": 5} for i in range(size)}
    for read in (
        lambda: store.search(QUERY, filter=filter),
        lambda: store.list(filter=filter),
        lambda: store.count(filter=filter),
    ):
        with pytest.raises(InvalidArgumentError, match=f"more than the {MAX_CONDITIONS}"):
            await read()
