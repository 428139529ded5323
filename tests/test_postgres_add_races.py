"""Adds racing other clients' writes of the same contents, on the real server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import psycopg
import pytest
from test_postgres_search import assert_counts_exact

from agentrecall import MemoryRecord, PostgresStore
from agentrecall.testing import ManualClock

GATE = 16
"""The advisory lock (one bigint key) the test holds to stop an add after its insert."""

CONTENT = "A memory deleted by one client while another adds it again"


async def _until_an_insert_waits(gate: psycopg.AsyncConnection[object]) -> None:
    """Return once a session waits for the gate (its insert statement has run)."""
    while True:
        cursor = await gate.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s "
            "AND NOT granted",
            [GATE],
        )
        row = await cursor.fetchone()
        if row is not None and row[0]:
            return
        await asyncio.sleep(0.01)


async def _until_blocked(gate: psycopg.AsyncConnection[object], sessions: int) -> None:
    """Return once ``sessions`` sessions wait for a lock (the gate, or another's row)."""
    while True:
        cursor = await gate.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        row = await cursor.fetchone()
        if row is not None and row[0] >= sessions:
            return
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def _gated(
    dsn: str, event: str = "AFTER INSERT", *, trigger: str = "zz_gate", session: str | None = None
) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    """Make every statement of ``event`` on the memories wait for an advisory lock held here.

    ``trigger`` names the statement trigger (triggers of one event fire in name order);
    with ``session``, only the sessions of that ``application_name`` wait. The lock is held
    until the block releases it (``pg_advisory_unlock``).
    """
    wait = f"PERFORM pg_advisory_xact_lock_shared({GATE});"
    if session is not None:
        wait = f"IF current_setting('application_name') = '{session}' THEN {wait} END IF;"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as gate:
        await gate.execute(
            "CREATE FUNCTION public.wait_for_gate() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN {wait} RETURN NULL; END $$"
        )
        await gate.execute(
            f"CREATE TRIGGER {trigger} {event} ON agentrecall.memories "
            "FOR EACH STATEMENT EXECUTE FUNCTION public.wait_for_gate()"
        )
        await gate.execute("SELECT pg_advisory_lock(%s)", [GATE])
        yield gate


@pytest.mark.asyncio
@pytest.mark.parametrize("batch", [False, True], ids=["add", "add_many"])
async def test_an_add_whose_held_copy_is_deleted_meanwhile_never_fails(
    postgres_dsn: str, batch: bool
) -> None:
    """The held copy is deleted (and committed) while the add that skipped its row runs.

    The add's insert has found the copy and skipped its row when it waits at the gate; the
    delete commits meanwhile. The add then returns either the held copy's id (it saw the copy
    before the delete, in the snapshot of its read of the holder) or the id of the memory it
    stored again; a batch, which reads holders after its insert, stores it again. Before, a
    read of the holder that found nothing raised ``KeyError``.
    """
    adder, deleter = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    held = await deleter.add(CONTENT)
    await adder.add("A memory that makes the adder know its scope")
    async with _gated(postgres_dsn) as gate:
        if batch:
            adding = asyncio.ensure_future(adder.add_many([(CONTENT, None), ("Another", None)]))
        else:
            adding = asyncio.ensure_future(adder.add(CONTENT))
        await _until_an_insert_waits(gate)
        assert await deleter.delete(held.id)
        await gate.execute("SELECT pg_advisory_unlock(%s)", [GATE])
        added = await adding
    first = added[0] if isinstance(added, list) else added
    stored = {record.content: record.id for record in await deleter.list()}
    if batch or first.id != held.id:
        assert stored[CONTENT] == first.id != held.id
    else:
        assert CONTENT not in stored
    assert len(stored) == (3 if batch else 1 + (CONTENT in stored))
    assert [version.content for version in await deleter.history(held.id)] == [CONTENT]
    for store in (adder, deleter):
        await store.aclose()


@pytest.mark.asyncio
async def test_an_add_racing_an_uncommitted_add_of_the_same_content_returns_its_id(
    postgres_dsn: str,
) -> None:
    """One add of a content waits, uncommitted, at the gate; another add of it starts then.

    The second add's insert waits for the first's row and, once that commits, skips its own;
    its snapshot predates the commit, so it must look again. Both return the one stored id.
    """
    first, second = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    for store in (first, second):
        await store.add(f"A memory that makes {id(store)} know its scope")
    async with _gated(postgres_dsn) as gate:
        holding = asyncio.ensure_future(first.add(CONTENT))
        await _until_an_insert_waits(gate)
        racing = asyncio.ensure_future(second.add(CONTENT))
        await _until_blocked(gate, 2)
        await gate.execute("SELECT pg_advisory_unlock(%s)", [GATE])
        held, raced = await holding, await racing
    assert raced.id == held.id
    assert [record.id for record in await first.list() if record.content == CONTENT] == [held.id]
    for store in (first, second):
        await store.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["add_many", "import_records"])
async def test_a_bulk_write_racing_an_uncommitted_add_of_one_of_its_contents(
    postgres_dsn: str, kind: str
) -> None:
    """A bulk write copies rows straight in; a content committed meanwhile makes it insert.

    One add of a content waits, uncommitted, at the gate; a bulk write holding that content
    starts then. Its read of held contents cannot see the waiting row, so its copy meets it
    in the dedup index, waits, and fails once the add commits: the write then inserts the
    chunk again with ``ON CONFLICT``, skips that content, and keeps every count exact.
    """
    first, second = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    for store in (first, second):
        await store.add(f"A memory that makes {id(store)} know its scope")
    contents = [f"Bulk note {n} about the harbour" for n in range(2_000)]
    contents[10] = CONTENT  # in the first chunk, read and copied while the add waits
    async with _gated(postgres_dsn) as gate:
        holding = asyncio.ensure_future(first.add(CONTENT))
        await _until_an_insert_waits(gate)
        if kind == "add_many":
            racing = asyncio.ensure_future(second.add_many([(text, None) for text in contents]))
        else:
            records = [
                MemoryRecord(id=f"bulk-{n}", content=text, created_at="2026-01-01T00:00:00.000Z")
                for n, text in enumerate(contents)
            ]
            racing = asyncio.ensure_future(second.import_records(records))
        await _until_blocked(gate, 2)
        await gate.execute("SELECT pg_advisory_unlock(%s)", [GATE])
        held, raced = await holding, await racing
    if kind == "add_many":
        assert raced[10].id == held.id
        assert len({result.id for result in raced}) == 2_000
    else:
        assert raced == 1_999
    stored = [record for record in await first.list() if record.content == CONTENT]
    assert [record.id for record in stored] == [held.id]
    assert await first.count() == 2_002
    assert_counts_exact(postgres_dsn)
    for store in (first, second):
        await store.aclose()


@pytest.mark.asyncio
async def test_an_add_whose_held_copy_expired_before_it_began_stores_a_new_memory(
    postgres_dsn: str,
) -> None:
    """A copy committed while the add waits to insert, already expired at the add's time.

    The add has found no expired memory to purge and waits, before its insert, at a gate
    only its session meets; meanwhile another client stores the same content with an expiry
    in the past. The add's insert then meets that copy: it must not return an expired
    memory's id, but purge it (into the history) and store the content anew.
    """
    adder = PostgresStore(psycopg.conninfo.make_conninfo(postgres_dsn, application_name="gated"))
    other = PostgresStore(postgres_dsn)
    for store in (adder, other):
        await store.add(f"A memory that makes {id(store)} know its scope")
    gated = _gated(postgres_dsn, "BEFORE INSERT", trigger="aa_gate", session="gated")
    async with gated as gate:
        adding = asyncio.ensure_future(adder.add(CONTENT))
        await _until_an_insert_waits(gate)
        expired = await other.add(CONTENT, expires_at="2020-01-01T00:00:00Z")
        await gate.execute("SELECT pg_advisory_unlock(%s)", [GATE])
        added = await adding
    assert added.id != expired.id
    stored = [record.id for record in await other.list() if record.content == CONTENT]
    assert stored == [added.id]
    assert [version.change for version in await other.history(expired.id)] == ["expire"]
    assert_counts_exact(postgres_dsn)
    for store in (adder, other):
        await store.aclose()


@pytest.mark.asyncio
async def test_an_add_extends_its_held_copy_before_the_copy_can_expire(
    postgres_dsn: str,
) -> None:
    """The held copy expires, and another client purges it, while the add settles its expiry.

    The add (asking for no expiry) finds the copy, which is live at the add's time, and
    waits at a gate every update of its session meets; meanwhile the copy expires and another
    client's write purges it. The add must not return the id of a memory that is gone: the
    content stays stored, with no expiry. Before, the add returned the purged copy's id once
    its separate update of the copy's expiry found nothing.
    """
    adder = PostgresStore(psycopg.conninfo.make_conninfo(postgres_dsn, application_name="gated"))
    other = PostgresStore(postgres_dsn)
    for store in (adder, other):
        await store.add(f"A memory that makes {id(store)} know its scope")
    gated = _gated(postgres_dsn, "BEFORE UPDATE", trigger="aa_gate", session="gated")
    with ManualClock() as clock:
        held = await other.add(CONTENT, ttl=60)
        async with gated as gate:
            adding = asyncio.ensure_future(adder.add(CONTENT))
            await _until_an_insert_waits(gate)
            clock.advance(61)
            assert await other.get(held.id) is None
            await other.add("A write that purges the expired copy")
            await gate.execute("SELECT pg_advisory_unlock(%s)", [GATE])
            added = await adding
    stored = [record for record in await other.list() if record.content == CONTENT]
    assert [(record.id, record.expires_at) for record in stored] == [(added.id, None)]
    assert_counts_exact(postgres_dsn)
    for store in (adder, other):
        await store.aclose()


@pytest.mark.asyncio
async def test_writes_after_single_adds_on_one_connection_are_counted(postgres_dsn: str) -> None:
    """The setting that tells the trigger to count nothing lasts only for the function's call.

    One connection serves every write: single adds (new, held, held with a longer expiry),
    then writes the trigger counts (an update, a bulk add, deletes). Were the setting left on
    after an add, the later writes' counts would be missing from the recount's comparison.
    """
    store = PostgresStore(postgres_dsn, pool_size=1)
    first = await store.add("A first memory, kept an hour", ttl=3_600)
    assert (await store.add("A first memory, kept an hour", ttl=7_200)).id == first.id
    await store.add("A second memory")
    await store.update(first.id, content="The first memory, rewritten")
    await store.add_many([(f"bulk memory {n}", None) for n in range(1_500)])
    await store.delete_many([record.id for record in await store.list(limit=10)])
    await store.add("A third memory")
    assert_counts_exact(postgres_dsn)
    await store.aclose()
