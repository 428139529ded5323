"""``PostgresStore.snapshot`` and ``existing_ids``: what an export and an import rely on.

And what an export, an import or a migration keeps of a history, between the backends.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from subprocess import PIPE
from typing import Any

import pytest
from history_scenarios import ListSink, check_unpurged_expiries, unpurged_expiries
from test_postgres_migrate import _url

from agentrecall import MemoryRecord, MemoryVersion, PostgresStore, SQLiteStore, SyncStore
from agentrecall.testing import ManualClock
from agentrecall.testing._contract_base import run_out, set_up, soon


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
    with ManualClock() as clock:
        lapsed = await store.add("Lapsed", ttl=0.001)
        view = store.scope(user_id="bo")
        assert await view.existing_ids([ana.id, lapsed.id, "nope", ana.id]) == {ana.id, lapsed.id}
        clock.advance(0.002)
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


@pytest.mark.asyncio
async def test_copies_of_the_history_hold_an_expiry_no_write_has_purged_yet(
    postgres_dsn: str,
) -> None:
    store, copy = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn, name="copy")
    await check_unpurged_expiries(store, copy)
    await copy.aclose()
    await store.aclose()


def test_export_import_and_migrate_keep_expiries_between_sqlite_and_postgresql(
    tmp_path: Path, postgres_dsn: str
) -> None:
    source, back = tmp_path / "source.db", tmp_path / "back.db"
    url = postgres_dsn if postgres_dsn.startswith("postgres") else _url(postgres_dsn)

    async def fill() -> list[str]:
        async with SQLiteStore(source) as store:
            return await unpurged_expiries(store)

    ids = asyncio.run(fill())
    expected = _histories(SQLiteStore(source, writable=False), ids)
    assert [v.change for v in expected["versions"]].count("expire") == 4
    command = [sys.executable, "-m", "agentrecall"]
    with subprocess.Popen([*command, "--db", str(source), "export"], stdout=PIPE) as exporter:
        importer = subprocess.run(
            [*command, "--dsn", url, "--pg-name", "piped", "import", "-"],
            stdin=exporter.stdout,
            capture_output=True,
            text=True,
        )
    assert (exporter.returncode, importer.returncode) == (0, 0), importer.stderr
    for arguments in (["migrate", str(source), url], ["migrate", url, str(back)]):
        done = subprocess.run([*command, *arguments], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert _histories(PostgresStore(postgres_dsn, name="piped"), ids) == expected
    assert _histories(PostgresStore(postgres_dsn), ids) == expected
    assert _histories(SQLiteStore(back), ids) == expected
    shown = [
        subprocess.run([*command, *store, "history", ids[0]], capture_output=True, text=True)
        for store in (["--db", str(source)], ["--dsn", url, "--pg-name", "piped"])
    ]
    assert shown[0].stdout == shown[1].stdout and "expire" in shown[0].stdout, shown
    with SyncStore(SQLiteStore(source)) as store:
        store.add("a write, which purges the expired memories")
    assert _histories(SQLiteStore(source), ids) == expected


def _histories(store: SQLiteStore | PostgresStore, ids: list[str]) -> dict[str, object]:
    """Every id's history in ``store``, and every version ``versions()`` gives, then close it."""

    async def read() -> dict[str, Any]:
        async with store:
            found: dict[str, object] = {
                memory_id: await store.history(memory_id) for memory_id in ids
            }
            found["versions"] = [v async for page in store.versions(batch=2) for v in page]
            return found

    return asyncio.run(read())


@pytest.mark.asyncio
async def test_a_snapshot_merges_expiries_before_after_and_without_any_other_version(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn)
    await set_up(store)
    with ManualClock() as clock:
        expiry = soon()
        alone = await store.add("Expires with no other version", expires_at=expiry)
        run_out(clock, expiry)
        for batch in (1, 5):
            sink = ListSink()
            await store.snapshot(sink, batch=batch)
            assert sink.replaced == await store.history(alone.id) and len(sink.replaced) == 1
        changed = await store.add("Changed once")
        await store.update(changed.id, content="Changed twice")
        expiry = soon()
        last = await store.add("Expires after every other version", expires_at=expiry)
        run_out(clock, expiry)
        expected = [v for m in (alone, changed, last) for v in await store.history(m.id)]
        for batch in (1, 2, 5):
            sink = ListSink()
            await store.snapshot(sink, batch=batch)
            assert sink.replaced == expected and sink.counted == (2, 3)
    await store.aclose()
