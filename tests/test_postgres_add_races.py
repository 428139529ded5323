"""Adds racing other clients' writes of the same contents, on the real server."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from agentrecall import PostgresStore

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


@pytest.mark.asyncio
@pytest.mark.parametrize("batch", [False, True], ids=["add", "add_many"])
async def test_an_add_whose_held_copy_is_deleted_meanwhile_stores_the_memory(
    postgres_dsn: str, batch: bool
) -> None:
    """The held copy vanishes between the add's conflicting insert and its read of that copy.

    A trigger the test adds makes every insert into the memories wait, at its end, for an
    advisory lock the test holds: the add's insert has then found the copy and skipped its
    row, and another client deletes the copy (and commits) before the add reads it.
    """
    adder, deleter = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    held = await deleter.add(CONTENT)
    async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as gate:
        await gate.execute(
            "CREATE FUNCTION public.wait_for_gate() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN PERFORM pg_advisory_xact_lock_shared({GATE}); RETURN NULL; END $$"
        )
        await gate.execute(
            "CREATE TRIGGER zz_gate AFTER INSERT ON agentrecall.memories "
            "FOR EACH STATEMENT EXECUTE FUNCTION public.wait_for_gate()"
        )
        await gate.execute("SELECT pg_advisory_lock(%s)", [GATE])
        if batch:
            adding = asyncio.ensure_future(adder.add_many([(CONTENT, None), ("Another", None)]))
        else:
            adding = asyncio.ensure_future(adder.add(CONTENT))
        await _until_an_insert_waits(gate)
        assert await deleter.delete(held.id)
        await gate.execute("SELECT pg_advisory_unlock(%s)", [GATE])
        added = await adding
    first = added[0] if isinstance(added, list) else added
    assert first.id != held.id
    stored = {record.content: record.id for record in await deleter.list()}
    assert stored[CONTENT] == first.id
    assert len(stored) == (2 if batch else 1)
    assert [version.content for version in await deleter.history(held.id)] == [CONTENT]
    for store in (adder, deleter):
        await store.aclose()
