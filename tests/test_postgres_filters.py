"""PostgresStore's metadata filters: the shared semantics over NULL metadata, and the GIN index."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from agentrecall import PostgresStore
from agentrecall.retrieval.filters import matches
from agentrecall.stores.postgres.filters import to_postgres

# SQL NULL metadata (``None``), an empty object, and the key absent, null, of each JSON type,
# or holding an array or an object: every place a positive test could slip to NULL.
METADATA: list[dict[str, Any] | None] = [
    None,
    {},
    {"other": "x"},
    {"k": None},
    {"k": "x"},
    {"k": "y"},
    {"k": 1},
    {"k": 1.0},
    {"k": True},
    {"k": "1"},
    {"k": ["x"]},
    {"k": {"x": 1}},
    {"k": "x", "other": "y"},
]
FILTERS: list[dict[str, Any]] = [
    {"k": "x"},
    {"k": {"$eq": 1}},
    {"k": {"$eq": None}},
    {"k": {"$ne": "x"}},
    {"k": {"$ne": None}},
    {"k": {"$in": ["x", 1]}},
    {"k": {"$in": []}},
    {"k": {"$in": [None, True]}},
    {"k": {"$nin": ["x", 1]}},
    {"k": {"$nin": []}},
    {"k": {"$exists": True}},
    {"k": {"$exists": False}},
    {"k": {"$ne": "x", "$nin": ["y"]}},
    {"k": {"$in": ["x", "y"]}, "other": {"$ne": "y"}},
    {"k": {"$gt": 0}},
    {"k": {"$lte": "x"}},
]


async def stored(dsn: str) -> dict[str, dict[str, Any] | None]:
    """Add one memory per entry of METADATA; return their metadata by id."""
    store = PostgresStore(dsn)
    try:
        results = await store.add_many(
            [(f"note {n} about the garden", metadata) for n, metadata in enumerate(METADATA)]
        )
    finally:
        await store.aclose()
    ids = [result.id for result in results]
    with psycopg.connect(dsn) as connection:
        row = connection.execute(
            "SELECT count(*) FROM agentrecall.memories WHERE metadata IS NULL"
        ).fetchone()
    assert row is not None and row[0] == 1  # the None really is SQL NULL
    return dict(zip(ids, METADATA, strict=True))


@pytest.mark.asyncio
async def test_every_read_selects_what_matches_selects_null_metadata_included(
    postgres_dsn: str,
) -> None:
    by_id = await stored(postgres_dsn)
    store = PostgresStore(postgres_dsn)
    try:
        for filter in FILTERS:
            expected = sorted(key for key, metadata in by_id.items() if matches(metadata, filter))
            listed = [record.id for record in await store.list(filter=filter)]
            assert sorted(listed) == expected, filter
            assert await store.count(filter=filter) == len(expected), filter
            options = {"max_search_results": 50}
            hits = await store.search("garden", options, filter=filter)
            assert sorted(hit.id for hit in hits) == expected, filter
            hits = await store.search("garden", options | {"neighbours": True}, filter=filter)
            assert sorted(hit.id for hit in hits) == expected, filter
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_a_rendered_filter_is_true_or_false_never_null(postgres_dsn: str) -> None:
    """The condition also goes into SELECT lists (conversation search), where NULL is not FALSE."""
    by_id = await stored(postgres_dsn)
    with psycopg.connect(postgres_dsn) as connection:
        for filter in FILTERS:
            condition, params = to_postgres(filter, "metadata")
            rows = connection.execute(
                f"SELECT id, ({condition}), NOT ({condition}) FROM agentrecall.memories",
                [*params, *params],
            ).fetchall()
            for memory_id, value, negated in rows:
                wanted = matches(by_id[memory_id], filter)
                assert (value, negated) == (wanted, not wanted), (filter, by_id[memory_id])


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "filter", [{"tenant": "t07"}, {"tenant": {"$in": ["t07", "t42"]}}, {"a": 1, "tenant": "t07"}]
)
async def test_equality_and_in_filters_can_be_served_by_the_metadata_index(
    postgres_dsn: str, filter: dict[str, Any]
) -> None:
    """With sequential scans priced out, the plan reads ``memories_metadata``: it is usable."""
    store = PostgresStore(postgres_dsn)
    try:
        await store.add_many([(f"note {n}", {"tenant": f"t{n % 100:02d}"}) for n in range(300)])
    finally:
        await store.aclose()
    condition, params = to_postgres(filter, "m.metadata")
    with psycopg.connect(postgres_dsn) as connection:
        connection.execute("SET enable_seqscan = off")
        plan = "\n".join(
            row[0]
            for row in connection.execute(
                f"EXPLAIN SELECT m.id FROM agentrecall.memories AS m WHERE {condition}", params
            )
        )
    assert "memories_metadata" in plan, plan
