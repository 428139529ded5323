"""PostgresStore's metadata filters: the shared semantics over NULL metadata, and the GIN index."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
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


# Exact search under a narrowed search: 5,000 memories of random vectors, a field matching
# 1.2% of them (61) and one matching half (2,500, more than vectors.EXACT_UNDER). The database's
# hnsw.max_scan_tuples of 1 stops a walk of the graph early, so a walk under the selective
# filter misses some of the nearest matches.
SPREAD = 5_000
DIMENSION = 64


class _GaussianEmbedder:
    """Each text's vector drawn at random from a seed of its hash: no two distances tie."""

    dimension = DIMENSION
    model_id = "test-gaussian-64"

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy

        return numpy.asarray(
            [
                numpy.random.default_rng(
                    int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
                ).standard_normal(DIMENSION)
                for text in texts
            ],
            dtype=numpy.float32,
        )


def _spread() -> list[tuple[str, dict[str, Any]]]:
    return [(f"note {n}", {"rare": n % 83 == 0, "half": n % 2 == 0}) for n in range(SPREAD)]


def _nearest(items: list[tuple[str, dict[str, Any]]], query: str, field: str, k: int) -> list[str]:
    """The ``k`` matching contents most similar to ``query`` (positive only), by numpy."""
    import numpy

    chosen = [content for content, metadata in items if metadata[field]]
    embedder = _GaussianEmbedder()
    vectors = numpy.asarray(embedder.embed(chosen), dtype=numpy.float64)
    vectors /= numpy.linalg.norm(vectors, axis=1, keepdims=True)
    wanted = numpy.asarray(embedder.embed([query])[0], dtype=numpy.float64)
    similarity = vectors @ (wanted / numpy.linalg.norm(wanted))
    order = numpy.argsort(-similarity)
    return [chosen[i] for i in order if similarity[i] > 0][:k]


def _walks(dsn: str) -> int:
    """Return the scans of the HNSW indexes so far, once the database's other sessions ended.

    A session's statistics are flushed before it leaves ``pg_stat_activity``.
    """
    with psycopg.connect(dsn, autocommit=True) as connection:
        for _ in range(1_200):  # a minute at most
            others = connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
            if others == (0,):
                break
            time.sleep(0.05)
        row = connection.execute(
            "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes "
            "WHERE indexrelname LIKE 'vectors_hnsw_%'"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def _searched(dsn: str, filter: dict[str, Any], queries: Sequence[str], k: int) -> list[Any]:
    """Search each of ``queries`` semantically with ``filter`` from a store of its own."""
    store = PostgresStore(dsn, embedder=_GaussianEmbedder())
    try:
        options = {"mode": "semantic", "max_search_results": k}
        return [await store.search(query, options, filter=filter) for query in queries]
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_a_selective_filter_finds_the_exact_nearest_and_an_unselective_one_walks(
    postgres_dsn: str,
) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        database = admin.execute("SELECT current_database()").fetchone()
        assert database is not None
        admin.execute(f'ALTER DATABASE "{database[0]}" SET hnsw.max_scan_tuples = 1')
    items = _spread()
    store = PostgresStore(postgres_dsn, embedder=_GaussianEmbedder())
    await store.add_many(items)
    await store.aclose()
    queries = [f"question {n}" for n in range(5)]
    before = _walks(postgres_dsn)
    found = await _searched(postgres_dsn, {"rare": True}, queries, 20)
    for query, entries in zip(queries, found, strict=True):
        assert [entry.content for entry in entries] == _nearest(items, query, "rare", 20)
    assert _walks(postgres_dsn) == before  # the HNSW index was not read
    found = await _searched(postgres_dsn, {"half": True}, queries[:1], 10)
    assert len(found[0]) == 10
    assert _walks(postgres_dsn) > before
