"""PostgresStore's vectors: a large write builds its store's HNSW index once, afterwards."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg
import pytest
from postgres_fixtures import hnsw_indexes

from agentrecall import InvalidArgumentError, MemoryRecord, PostgresStore
from agentrecall.stores.postgres import reindex
from agentrecall.testing import HashEmbedder

LARGE = reindex.DEFER_AT
WINDOW = "Prefers a window seat on trains"
OWN, OTHER = "vectors_hnsw_2_64", "vectors_hnsw_1_64"


async def _watched(dsn: str, write: Callable[[], Awaitable[object]]) -> list[dict[str, bool]]:
    """Run ``write`` while another connection notes the indexes; return every state seen."""
    seen: list[dict[str, bool]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(hnsw_indexes(dsn))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        await write()
    finally:
        done.set()
        watcher.join()
    return seen


async def _stores(dsn: str) -> tuple[PostgresStore, PostgresStore]:
    """An indexed store holding one memory, and the empty store under test (store 2)."""
    other = PostgresStore(dsn, name="other", embedder=HashEmbedder(64))
    await other.add("A memory of another store, indexed all along")
    store = PostgresStore(dsn, embedder=HashEmbedder(64))
    await store.setup()
    assert hnsw_indexes(dsn) == {OTHER: True, OWN: True}
    return other, store


@pytest.mark.asyncio
async def test_a_large_add_many_builds_the_index_once_after_storing(postgres_dsn: str) -> None:
    other, store = await _stores(postgres_dsn)
    items = [(WINDOW, None)] + [(f"Filler note number {n}", None) for n in range(LARGE)]
    seen = await _watched(postgres_dsn, lambda: store.add_many(items))
    assert {OTHER: True} in seen  # this store's index was dropped meanwhile
    assert all(state.get(OTHER) for state in seen)  # the other store's never
    assert hnsw_indexes(postgres_dsn) == {OTHER: True, OWN: True}
    assert await store.count() == LARGE + 1
    assert (await store.search(WINDOW))[0].content == WINDOW
    small = [(f"A later note {n}", None) for n in range(10)]
    seen = await _watched(postgres_dsn, lambda: store.add_many(small))
    assert all(state == {OTHER: True, OWN: True} for state in seen)  # small: kept up to date
    for one in (other, store):
        await one.aclose()


@pytest.mark.asyncio
async def test_a_large_import_that_fails_stores_nothing_and_rebuilds_the_index(
    postgres_dsn: str,
) -> None:
    other, store = await _stores(postgres_dsn)
    await store.add(WINDOW)
    when = "2026-01-01T00:00:00.000Z"
    records = [
        MemoryRecord(id=f"m{n}", content=f"Note {n}", created_at=when, updated_at=when)
        for n in range(LARGE)
    ]
    records.append(MemoryRecord(id="bad", content="Nul\x00", created_at=when, updated_at=when))

    async def refused() -> None:
        with pytest.raises(InvalidArgumentError, match="record 10000"):
            await store.import_records(records)

    seen = await _watched(postgres_dsn, refused)
    assert {OTHER: True} in seen  # dropped for the import, which then failed
    assert await store.count() == 1
    assert hnsw_indexes(postgres_dsn) == {OTHER: True, OWN: True}
    assert await store.import_records(records[:-1]) == LARGE
    assert hnsw_indexes(postgres_dsn) == {OTHER: True, OWN: True}
    assert (await store.search(WINDOW))[0].content == WINDOW
    for one in (other, store):
        await one.aclose()


@pytest.mark.asyncio
async def test_a_large_add_of_another_model_keeps_the_held_index(postgres_dsn: str) -> None:
    other, store = await _stores(postgres_dsn)
    await store.add(WINDOW)
    stranger = PostgresStore(postgres_dsn, embedder=HashEmbedder(64, synonyms={"seat": "chair"}))
    items = [(f"Filler note number {n}", None) for n in range(LARGE)]

    async def refused() -> None:
        with pytest.raises(InvalidArgumentError, match="two models"):
            await stranger.add_many(items)

    seen = await _watched(postgres_dsn, refused)
    assert all(state == {OTHER: True, OWN: True} for state in seen)
    assert await store.count() == 1
    for one in (other, store, stranger):
        await one.aclose()


@pytest.mark.asyncio
async def test_concurrent_large_and_small_writes_and_searches_leave_every_vector_indexed(
    postgres_dsn: str,
) -> None:
    other, store = await _stores(postgres_dsn)
    clients = [PostgresStore(postgres_dsn, embedder=HashEmbedder(64)) for _ in range(3)]

    async def small_writes_and_searches() -> None:
        for n in range(20):
            await clients[2].add(f"A small note {n} about the garden")
            assert (await clients[2].search(f"small note {n} garden"))[0].content.startswith(
                "A small note"
            )

    await asyncio.gather(
        clients[0].add_many([(f"First load, note {n}", None) for n in range(LARGE)]),
        clients[1].add_many([(f"Second load, note {n}", None) for n in range(LARGE)]),
        small_writes_and_searches(),
    )
    assert hnsw_indexes(postgres_dsn) == {OTHER: True, OWN: True}
    with psycopg.connect(postgres_dsn) as connection:
        row = connection.execute(
            "SELECT count(*), count(v.seq) FROM agentrecall.memories AS m "
            "LEFT JOIN agentrecall.vectors AS v ON v.seq = m.seq WHERE m.store = 2"
        ).fetchone()
    assert row == (2 * LARGE + 20, 2 * LARGE + 20)
    for one in (other, store, *clients):
        await one.aclose()


class _Learning:
    """A HashEmbedder that counts how often its dimension is read, and may give a bad one."""

    model_id = "learning"

    def __init__(self, dimension: int, told: Any = None) -> None:
        self._hashed = HashEmbedder(dimension)
        self.reads = 0
        self._told = dimension if told is None else told

    @property
    def dimension(self) -> int:
        self.reads += 1
        told: int = self._told
        return told

    def embed(self, texts: Sequence[str]) -> Any:
        return self._hashed.embed(texts)


async def test_the_embedders_dimension_is_read_at_setup_not_construction(
    postgres_dsn: str,
) -> None:
    # An embedder may learn its dimension by a request: making a store does no I/O.
    embedder = _Learning(32)
    store = PostgresStore(postgres_dsn, name="learning", embedder=embedder)
    try:
        assert embedder.reads == 0
        await store.add("The user likes tea")
        assert embedder.reads >= 1
        assert (await store.search("tea", {"mode": "semantic"}))[0].content == "The user likes tea"
    finally:
        await store.aclose()
    bad = PostgresStore(postgres_dsn, name="badly", embedder=_Learning(32, told=0))
    try:
        with pytest.raises(InvalidArgumentError, match="dimension of embedder .* got 0"):
            await bad.setup()
    finally:
        await bad.aclose()
