"""PostgresStore and facts that change: the schema upgrade, concurrent supersedes, a killed client.

The behaviour both SQL stores share is in the conformance suite
(:mod:`agentrecall.testing._contract_changes`); these are what only a server shows.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from typing import Any

import psycopg
import pytest
from psycopg import sql
from test_postgres_search import assert_counts_exact

from agentrecall import PostgresStore
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.postgres.rows import new_row
from agentrecall.stores.postgres.schema import MIGRATIONS

PREVIOUS = 8
"""The schema version of the release before supersession."""

CREATED = "2025-01-01T00:00:00.000Z"


async def _schema_at(dsn: str, version: int) -> None:
    """Build schema ``agentrecall`` as the migrations up to ``version`` left it, with data.

    Two memories (one of them updated once) and the version of a memory since deleted, as a
    store of that release wrote them.
    """
    async with await psycopg.AsyncConnection.connect(dsn) as connection:
        await connection.execute(
            "CREATE SCHEMA agentrecall; CREATE TABLE agentrecall.migrations (version integer "
            "PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        quoted = sql.Identifier("agentrecall").as_string(connection)
        for number, migration in enumerate(MIGRATIONS[:version], start=1):
            if isinstance(migration, str):
                await connection.execute(migration.replace("{schema}", quoted).encode())
            else:
                await migration(connection, quoted)
            await connection.execute(
                "INSERT INTO agentrecall.migrations (version) VALUES (%s)", [number]
            )
        await connection.execute(
            "INSERT INTO agentrecall.stores (name) VALUES ('memory'); "
            "INSERT INTO agentrecall.scopes (store) VALUES (1)"
        )
        for memory_id, content, updated in (
            ("home", "The user lives in Lyon", "2025-02-01T00:00:00.000Z"),
            ("pet", "The user has a cat", None),
        ):
            text, key, _, terms, length = new_row(content, None, "")
            await connection.execute(
                "INSERT INTO agentrecall.memories (store, id, scope, content, content_hash, "
                "created_at, updated_at, terms, length) "
                "VALUES (1, %s, 1, %s, %s, %s, %s, %s::tsvector, %s)",
                [memory_id, text, key, CREATED, updated, terms, length],
            )
        await connection.execute(
            "INSERT INTO agentrecall.history (store, id, scope, content, changed_at, change) "
            "VALUES (1, 'home', 1, 'The user lives in Nice', '2025-02-01T00:00:00.000Z', "
            "'update'), (1, 'gone', 1, 'The user drives a van', '2025-03-01T00:00:00.000Z', "
            "'delete')"
        )
        await connection.commit()


@pytest.mark.asyncio
async def test_a_schema_of_the_previous_version_migrates_in_place(postgres_dsn: str) -> None:
    """Opened by this release, an older schema gains the new columns, keeps its data, works.

    Versions of a memory that still exists get its ``created_at``; a deleted memory's keep
    none. Retired memories leave dedup, supersede and ``as_of`` read the upgraded data.
    """
    await _schema_at(postgres_dsn, PREVIOUS)
    store = PostgresStore(postgres_dsn)
    try:
        await store.setup()
        with psycopg.connect(postgres_dsn) as connection:
            versions = connection.execute("SELECT max(version) FROM agentrecall.migrations")
            assert versions.fetchone() == (len(MIGRATIONS),)
        [kept] = await store.history("home")
        assert (kept.content, kept.created_at, kept.invalidated_at) == (
            "The user lives in Nice",
            CREATED,
            None,
        )
        [deleted] = await store.history("gone")
        assert deleted.created_at is None
        assert (await store.get("home", as_of="2025-01-15T00:00:00.000Z")).content == (
            "The user lives in Nice"
        )

        berlin = await store.supersede(["home"], "The user lives in Berlin", reason="moved")
        assert berlin.created is True
        assert [r.id for r in await store.list()] == ["pet", berlin.id]
        retired = await store.get("home", include_superseded=True)
        assert retired is not None and retired.superseded_by == berlin.id
        assert [v.change for v in await store.history(berlin.id)] == ["update", "supersede"]
        # The retired content is no longer a duplicate: it comes back as a new memory.
        again = await store.add("The user lives in Lyon")
        assert again.created is True and again.id != "home"
        assert [h.id for h in await store.search("user lives")] != []
        assert_counts_exact(postgres_dsn)
    finally:
        await store.aclose()


async def _waiting_on_locks(dsn: str, count: int) -> None:
    """Return once ``count`` sessions of the database wait for a lock (polled, no fixed wait)."""
    deadline = time.monotonic() + 120  # only a guard against a hang: the outcome never depends
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        while True:
            cursor = await connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            row = await cursor.fetchone()
            if row is not None and row[0] >= count:
                return
            assert time.monotonic() < deadline, "the supersedes never waited for the row"
            await asyncio.sleep(0.02)


@pytest.mark.asyncio
async def test_concurrent_supersedes_of_one_memory_retire_it_once(postgres_dsn: str) -> None:
    """Two clients superseding one memory with different contents: one wins, the other fails.

    Both are held at the old memory's row (a third session locks it) until both wait there,
    so they truly overlap; the loser's new memory is rolled back with its refusal.
    """
    setup = PostgresStore(postgres_dsn)
    old = await setup.add("The office is on the third floor")
    clients = [PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)]
    try:
        for client in clients:
            await client.setup()
        async with await psycopg.AsyncConnection.connect(postgres_dsn) as blocker:
            await blocker.execute(
                "SELECT 1 FROM agentrecall.memories WHERE id = %s FOR UPDATE", [old.id]
            )
            calls = [
                asyncio.ensure_future(client.supersede([old.id], content))
                for client, content in zip(
                    clients,
                    ["The office is on the fourth floor", "The office is on the fifth floor"],
                    strict=True,
                )
            ]
            await _waiting_on_locks(postgres_dsn, 2)
            await blocker.commit()
        results: list[Any] = await asyncio.gather(*calls, return_exceptions=True)
        won = [r for r in results if not isinstance(r, BaseException)]
        lost = [r for r in results if isinstance(r, BaseException)]
        assert len(won) == 1 and len(lost) == 1
        assert isinstance(lost[0], InvalidArgumentError)
        assert "already superseded" in str(lost[0])
        retired = await setup.get(old.id, include_superseded=True)
        assert retired is not None and retired.superseded_by == won[0].id
        current = await setup.list()
        assert [r.id for r in current] == [won[0].id]
        assert await setup.count(include_superseded=True) == 2
        assert [v.change for v in await setup.history(old.id)] == ["supersede"]
    finally:
        for store in (setup, *clients):
            await store.aclose()


_KILLED_CLIENT = """
import asyncio, sys
from agentrecall import PostgresStore

async def main():
    store = PostgresStore(sys.argv[1])
    await store.setup()
    print("ready", flush=True)
    await store.supersede([sys.argv[2]], "The user lives in Berlin", reason="moved")
    print("done", flush=True)

asyncio.run(main())
"""


@pytest.mark.asyncio
async def test_a_client_killed_during_supersede_leaves_the_old_state(postgres_dsn: str) -> None:
    """SIGKILL of the client inside the supersede's transaction writes none of it.

    The child is held inside its transaction (its new memory inserted, the old one's row
    locked by this test) and killed there; once the lock is gone the store shows the old
    state whole, and a new supersede then succeeds.
    """
    store = PostgresStore(postgres_dsn)
    old = await store.add("The user lives in Lyon")
    try:
        async with await psycopg.AsyncConnection.connect(postgres_dsn) as blocker:
            await blocker.execute(
                "SELECT 1 FROM agentrecall.memories WHERE id = %s FOR UPDATE", [old.id]
            )
            child = subprocess.Popen(
                [sys.executable, "-c", _KILLED_CLIENT, postgres_dsn, old.id],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
            await _waiting_on_locks(postgres_dsn, 1)
            child.send_signal(signal.SIGKILL)
            child.communicate()  # closes the pipes
            assert child.returncode == -signal.SIGKILL
            await blocker.commit()
        assert [r.id for r in await store.list(include_superseded=True)] == [old.id]
        assert await store.history(old.id) == []
        new = await store.supersede([old.id], "The user lives in Berlin")
        assert new.created is True
        assert (await store.get(old.id, include_superseded=True)).superseded_by == new.id
    finally:
        await store.aclose()
