"""``PostgresStore.snapshot`` and ``existing_ids``: what an export and an import rely on."""

from __future__ import annotations

import pytest

from agentrecall import MemoryRecord, MemoryVersion, PostgresStore, SyncStore


class WritingSink:
    """Takes a snapshot, and adds a memory and deletes one on a second client meanwhile."""

    def __init__(self, dsn: str, doomed: str) -> None:
        self.dsn, self.doomed = dsn, doomed
        self.counted: tuple[int, int] | None = None
        self.memories: list[MemoryRecord] = []
        self.replaced: list[MemoryVersion] = []

    def counts(self, memories: int, versions: int) -> None:
        self.counted = (memories, versions)
        with SyncStore(PostgresStore(self.dsn)) as other:
            other.add("Written during the export")
            other.delete(self.doomed, reason="gone meanwhile")

    def records(self, batch: list[MemoryRecord]) -> None:
        self.memories += batch

    def versions(self, batch: list[MemoryVersion]) -> None:
        self.replaced += batch


class CountingSink(WritingSink):
    """Only records the counts."""

    def counts(self, memories: int, versions: int) -> None:
        self.counted = (memories, versions)


@pytest.mark.asyncio
async def test_a_snapshot_is_one_state_whatever_is_written_meanwhile(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    first = await store.add("First memory")
    await store.update(first.id, content="First memory, changed")
    await store.scope(user_id="ana").add_many([(f"Note {n}", {"n": n}) for n in range(7)])
    before = await store.list()
    history = [v async for page in store.versions() for v in page]
    sink = WritingSink(postgres_dsn, first.id)
    await store.snapshot(sink, batch=3)
    assert sink.counted == (8, 1)
    assert sink.memories == before and sink.replaced == history
    assert await store.count() == 8  # one added, one deleted by the other client
    await store.aclose()


@pytest.mark.asyncio
async def test_existing_ids_sees_every_scope_and_skips_the_expired(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    assert await store.existing_ids(["nope"]) == set()  # no tables yet
    ana = await store.scope(user_id="ana").add("Ana's")
    lapsed = await store.add("Lapsed", ttl=0.001)
    view = store.scope(user_id="bo")
    assert await view.existing_ids([ana.id, lapsed.id, "nope", ana.id]) == {ana.id}
    with pytest.raises(ValueError, match="memory_ids"):
        await store.existing_ids("one-string")
    await store.aclose()


@pytest.mark.asyncio
async def test_a_read_only_snapshot_of_a_store_not_set_up_is_empty(postgres_dsn: str) -> None:
    sink = CountingSink(postgres_dsn, "")
    store = PostgresStore(postgres_dsn, writable=False)
    await store.snapshot(sink)
    assert (sink.counted, sink.memories) == ((0, 0), [])
    with pytest.raises(ValueError, match="batch"):
        await store.snapshot(sink, batch=0)
    await store.aclose()
