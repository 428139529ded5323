"""PostgresStore.reindex(): vectors for memories without one, or all of them for a new model."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest
from postgres_fixtures import hnsw_indexes

from agentrecall import InvalidArgumentError, PostgresStore, SQLiteStore, StorageError
from agentrecall.migrate import migrate
from agentrecall.stores.postgres import reindex
from agentrecall.testing import HashEmbedder


async def _semantic(store: PostgresStore, query: str) -> list[str]:
    return [hit.content for hit in await store.search(query, {"mode": "semantic", "limit": 2})]


@pytest.mark.asyncio
async def test_migrate_then_reindex_gives_semantic_search(
    tmp_path: Path, postgres_dsn: str
) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    await source.add_many([(f"Filler note number {n}", None) for n in range(25)])
    await source.scope(user_id="ana").add("Prefers a window seat on trains")
    await migrate(source, PostgresStore(postgres_dsn), batch=10)
    store = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))
    assert await _semantic(store, "window seat") == []  # migrated without vectors
    seen: list[tuple[int, int]] = []
    assert (
        await store.reindex(progress=lambda done, total: seen.append((done, total)), batch=10) == 26
    )
    assert seen == [(0, 26), (10, 26), (20, 26), (26, 26)]
    assert (await _semantic(store, WINDOW))[0] == WINDOW
    assert await store.reindex() == 0  # nothing left to do
    await source.aclose()
    await store.aclose()


@pytest.mark.asyncio
async def test_reindex_with_a_new_model_replaces_every_vector(postgres_dsn: str) -> None:
    old = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))
    await old.add_many([("The user's seat is by the window", None), ("Dinner at eight", None)])
    new = PostgresStore(postgres_dsn, embedder=HashEmbedder(32))
    for refused in (_semantic(new, "window"), new.add("Another note")):
        with pytest.raises(InvalidArgumentError, match=r"two models.*store\.reindex\(\)"):
            await refused
    assert await new.count() == 2  # the refused add stored nothing
    assert await new.reindex() == 2
    assert (await _semantic(new, "window"))[0] == "The user's seat is by the window"
    await new.add("Another note about the window")
    with pytest.raises(InvalidArgumentError, match="agentrecall-test-hash-32"):
        await _semantic(old, "window")
    for store in (old, new):
        await store.aclose()


@pytest.mark.asyncio
async def test_an_interrupted_reindex_keeps_its_batches(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    await store.add_many([(f"Note number {n}", None) for n in range(7)])
    embedded = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))

    def stop(done: int, total: int) -> None:
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await embedded.reindex(progress=stop, batch=3)
    assert await embedded.reindex() == 4
    for one in (store, embedded):
        await one.aclose()


@pytest.mark.asyncio
async def test_reindex_refuses_bad_calls_clearly(postgres_dsn: str) -> None:
    plain = PostgresStore(postgres_dsn)
    with pytest.raises(InvalidArgumentError, match="reindex needs an embedder"):
        await plain.reindex()
    embedded = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))
    for batch in (0, None, "10"):
        with pytest.raises(InvalidArgumentError, match="batch"):
            await embedded.reindex(batch=batch)  # type: ignore[arg-type]
    reader = PostgresStore(postgres_dsn, embedder=HashEmbedder(64), writable=False)
    with pytest.raises(InvalidArgumentError, match="read-only"):
        await reader.reindex()
    for store in (plain, embedded, reader):
        await store.aclose()


@pytest.mark.asyncio
async def test_a_memory_with_a_zero_vector_is_stored_and_never_found_by_meaning(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))
    await store.add("!!!")  # no words: a zero vector, which the index cannot hold
    assert await _semantic(store, "anything at all") == []
    assert await store.count() == 1
    await store.aclose()


LARGE = reindex.DEFER_AT
WINDOW = "Prefers a window seat on trains"


@pytest.mark.asyncio
async def test_a_large_reindex_stores_vectors_first_and_builds_the_index_once(
    postgres_dsn: str,
) -> None:
    other = PostgresStore(postgres_dsn, name="other", embedder=HashEmbedder(64))
    await other.add("A memory of another store, indexed all along")
    plain = PostgresStore(postgres_dsn)
    await plain.add_many([(f"Filler note number {n}", None) for n in range(LARGE - 1)])
    await plain.add("Prefers a window seat on trains")
    store = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))
    await store.setup()
    own, others = "vectors_hnsw_2_64", "vectors_hnsw_1_64"
    assert hnsw_indexes(postgres_dsn) == {own: True, others: True}  # both stores start indexed
    during: list[dict[str, bool]] = []

    def look(done: int, total: int) -> None:
        if 0 < done < total:
            during.append(hnsw_indexes(postgres_dsn))

    assert await store.reindex(progress=look, batch=LARGE // 4) == LARGE
    assert during and all(seen == {others: True} for seen in during)  # only this one dropped
    assert hnsw_indexes(postgres_dsn) == {own: True, others: True}
    assert (await store.search(WINDOW))[0].content == WINDOW
    late = "A note added after the build"
    await store.add(late)
    assert (await store.search(late))[0].content == late
    for one in (other, plain, store):
        await one.aclose()


@pytest.mark.asyncio
async def test_an_interrupted_large_reindex_searches_exactly_until_the_next_builds_the_index(
    postgres_dsn: str,
) -> None:
    plain = PostgresStore(postgres_dsn)
    await plain.add("Prefers a window seat on trains")
    await plain.add_many([(f"Filler note number {n}", None) for n in range(LARGE)])
    store = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))

    def stop(done: int, total: int) -> None:
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await store.reindex(progress=stop, batch=LARGE // 2)
    assert hnsw_indexes(postgres_dsn) == {}
    # No index: the search scans the vectors stored so far, and finds the first batch's.
    assert (await _semantic(store, WINDOW))[0] == WINDOW
    again = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))
    await again.setup()  # setup leaves a store holding vectors to reindex, building nothing
    assert hnsw_indexes(postgres_dsn) == {}
    assert await again.reindex() == LARGE + 1 - LARGE // 2
    assert hnsw_indexes(postgres_dsn) == {"vectors_hnsw_1_64": True}
    assert (await again.search(WINDOW))[0].content == WINDOW
    for one in (plain, store, again):
        await one.aclose()


@pytest.mark.asyncio
async def test_an_index_build_cancelled_midway_is_built_again_by_the_next_reindex(
    postgres_dsn: str,
) -> None:
    plain = PostgresStore(postgres_dsn)
    await plain.add_many([(f"Filler note number {n} of many", None) for n in range(LARGE)])
    store = PostgresStore(postgres_dsn, embedder=HashEmbedder(64))
    cancelled = threading.Event()

    def cancel_the_build() -> None:
        # Once the build has committed its index entry (not valid yet), cancel it midway.
        with psycopg.connect(postgres_dsn, autocommit=True) as connection:
            while not cancelled.is_set():
                if hnsw_indexes(postgres_dsn) == {"vectors_hnsw_1_64": False}:
                    row = connection.execute(
                        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
                        "WHERE query LIKE 'CREATE INDEX CONCURRENTLY%'"
                    ).fetchone()
                    if row and row[0]:
                        cancelled.set()
                time.sleep(0.005)

    watcher = threading.Thread(target=cancel_the_build, daemon=True)
    watcher.start()
    with pytest.raises(StorageError, match="cancel"):
        await store.reindex()
    watcher.join()
    assert hnsw_indexes(postgres_dsn) == {"vectors_hnsw_1_64": False}  # left invalid
    assert await store.reindex() == 0
    assert hnsw_indexes(postgres_dsn) == {"vectors_hnsw_1_64": True}
    assert await _semantic(store, "Filler note number 7 of many")
    for one in (plain, store):
        await one.aclose()
