"""PostgresStore.reindex(): vectors for memories without one, or all of them for a new model."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrecall import InvalidArgumentError, PostgresStore, SQLiteStore
from agentrecall.migrate import migrate
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
    assert (await _semantic(store, "window seat"))[0] == "Prefers a window seat on trains"
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
