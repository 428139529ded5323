"""PostgresStore with a read replica: a real streaming standby of a real primary.

Which server answered is seen by pausing the standby's replay: a memory written to the primary
meanwhile is there for a read of the primary and missing from one of the standby.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager

import psycopg
import pytest
from psycopg import sql

from agentrecall import PostgresStore
from agentrecall.errors import InvalidArgumentError, ServerUnavailableError, StorageError
from agentrecall.stores.postgres.replica import format_lsn, parse_lsn
from agentrecall.testing import HashEmbedder
from agentrecall.testing.postgres import TemporaryPostgres
from agentrecall.types import MemoryEntry, MemoryRecord

Pair = tuple[TemporaryPostgres, TemporaryPostgres]

_numbers = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Pair]:
    """A primary and its hot standby, shared by this module's tests (each its own database)."""
    with TemporaryPostgres(durable=False) as primary:
        standby = primary.standby()
        try:
            yield primary, standby
        finally:
            standby.close()


@contextmanager
def database(pair: Pair) -> Iterator[tuple[str, str]]:
    """Yield the URLs of a new database on the primary and on the standby, once it has it."""
    primary, standby = pair
    name = f"replica_test_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(primary.dsn, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        replayed(pair)
        yield primary.dsn_for(name), standby.dsn_for(name)
    finally:
        with psycopg.connect(primary.dsn, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def databases(cluster: Pair) -> Iterator[tuple[str, str]]:
    with database(cluster) as dsns:
        yield dsns


def replayed(pair: Pair) -> None:
    """Wait until the standby has replayed everything the primary has written so far."""
    primary, standby = pair
    with psycopg.connect(primary.dsn, autocommit=True) as connection:
        row = connection.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    assert row is not None
    deadline = time.monotonic() + 60
    with psycopg.connect(standby.dsn, autocommit=True) as connection:
        while True:
            reached = connection.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [row[0]]
            ).fetchone()
            if reached and reached[0]:
                return
            if time.monotonic() > deadline:
                raise AssertionError("the standby did not replay the primary's log in 60 s")
            time.sleep(0.05)


@asynccontextmanager
async def replay_paused(standby: TemporaryPostgres) -> AsyncIterator[None]:
    """Hold the standby's replay: what the primary commits meanwhile is not on the standby."""
    with psycopg.connect(standby.dsn, autocommit=True) as connection:
        connection.execute("SELECT pg_wal_replay_pause()")
        while connection.execute("SELECT pg_get_wal_replay_pause_state()").fetchone() != (
            "paused",
        ):
            await asyncio.sleep(0.02)
        try:
            yield
        finally:
            connection.execute("SELECT pg_wal_replay_resume()")


def contents(hits: Sequence[MemoryRecord | MemoryEntry]) -> list[str]:
    return [hit.content for hit in hits]


@pytest.mark.asyncio
async def test_reads_go_to_the_replica_yet_the_store_sees_its_own_writes(
    cluster: Pair, databases: tuple[str, str]
) -> None:
    primary_dsn, replica_dsn = databases
    store = PostgresStore(primary_dsn, read_dsn=replica_dsn)
    elsewhere = PostgresStore(primary_dsn)  # another machine, writing to the primary
    try:
        assert store.read_address is not None
        assert store.read_address.port == cluster[1].port
        first = await store.add("a first note about the garden")
        await elsewhere.setup()
        replayed(cluster)
        async with replay_paused(cluster[1]):
            theirs = await elsewhere.add("written elsewhere about the lake")
            # The replica answers, and it does not have the other machine's memory yet.
            assert await store.search("lake") == []
            assert await store.get(theirs.id) is None
            assert await store.count() == 1
            assert contents(await store.list()) == ["a first note about the garden"]
            # A view of the primary has it.
            primary = store.on_primary()
            assert contents(await primary.search("lake")) == ["written elsewhere about the lake"]
            assert await primary.get(theirs.id) is not None
            assert await primary.scope(user_id="nobody").count() == 0
            # The store's own writes are never hidden: the replica is behind them, so the
            # store reads the primary, every view of it too.
            mine = await store.scope(user_id="ana").add("my own note about the lake")
            assert set(contents(await store.search("lake"))) == {
                "written elsewhere about the lake",
                "my own note about the lake",
            }
            assert await store.get(mine.id) is not None
            await store.update(first.id, content="the garden note, changed")
            assert [v.content for v in await store.history(first.id)] == [
                "a first note about the garden"
            ]
            assert await store.count() == 3
        replayed(cluster)
        # Caught up, the replica serves the store's reads again.
        async with replay_paused(cluster[1]):
            later = await elsewhere.add("a later lake memory from elsewhere")
            assert later.id not in {hit.id for hit in await store.search("lake")}
            assert await store.on_primary().get(later.id) is not None
    finally:
        await store.aclose()
        await elsewhere.aclose()


@pytest.mark.asyncio
async def test_every_write_goes_to_the_primary_never_to_the_replica(
    cluster: Pair, databases: tuple[str, str]
) -> None:
    primary_dsn, replica_dsn = databases
    with psycopg.connect(replica_dsn, autocommit=True) as connection:
        assert connection.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
    # A write sent to the replica would fail, so none is sent: setup, migrations, the
    # pgvector extension, every kind of write, reindex.
    store = PostgresStore(primary_dsn, read_dsn=replica_dsn, embedder=HashEmbedder())
    copy = PostgresStore(primary_dsn, name="copy", read_dsn=replica_dsn)
    try:
        await store.setup()
        memory = await store.add("the bakery opens at seven")
        await store.add_many([(f"bread number {n}", {"n": n}) for n in range(1_500)])
        await store.update(memory.id, metadata={"checked": True})
        assert await store.delete((await store.add("to be deleted")).id)
        assert await copy.import_records(await store.list(limit=10)) == 10
        assert await store.reindex() == 0
        assert await store.scope(user_id="bo").clear() == 0
        replayed(cluster)
        hits = await store.search("bakery seven", {"mode": "hybrid"})
        assert hits[0].id == memory.id
        assert await copy.count() == 10
    finally:
        await store.aclose()
        await copy.aclose()
    with psycopg.connect(replica_dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            connection.execute("CREATE TABLE refused (x int)")


@pytest.mark.asyncio
async def test_a_replica_down_fails_reads_clearly_and_writes_go_on(
    cluster: Pair, databases: tuple[str, str]
) -> None:
    primary_dsn, replica_dsn = databases
    standby = cluster[1]
    store = PostgresStore(primary_dsn, read_dsn=replica_dsn, connect_timeout=2)
    try:
        memory = await store.add("a note before the replica stops")
        replayed(cluster)
        assert contents(await store.search("note")) == ["a note before the replica stops"]
        standby.stop()
        try:
            with pytest.raises(ServerUnavailableError) as caught:
                await store.search("note")
            assert caught.value.port == standby.port
            assert f"127.0.0.1:{standby.port}" in str(caught.value)
            assert "read replica" in str(caught.value)
            assert "may be retried" in str(caught.value)
            await store.add("written while the replica is down")
            assert await store.on_primary().get(memory.id) is not None
        finally:
            standby.start()
        replayed(cluster)
        assert len(await store.search("note")) == 1
        assert await store.count() == 2
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_a_bad_read_dsn_is_refused_by_name(databases: tuple[str, str]) -> None:
    with pytest.raises(InvalidArgumentError, match="read_dsn must be a PostgreSQL connection"):
        PostgresStore(databases[0], read_dsn="")
    with pytest.raises(InvalidArgumentError, match="read_dsn is not a valid PostgreSQL"):
        PostgresStore(databases[0], read_dsn="host=x port")
    store = PostgresStore(databases[0], read_dsn=databases[1] + "_missing")
    try:
        await store.add("a note")
        with pytest.raises(StorageError, match="does not exist"):
            await store.search("note")
        assert PostgresStore(databases[0]).read_address is None
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_after_a_failover_the_store_writes_to_the_promoted_replica() -> None:
    with TemporaryPostgres(durable=False) as primary:
        standby = primary.standby()
        try:
            pair = (primary, standby)
            with psycopg.connect(primary.dsn, autocommit=True) as connection:
                connection.execute("CREATE DATABASE failover")
            replayed(pair)
            # The primary's DSN lists both hosts: libpq takes the one that accepts writes.
            hosts = f"127.0.0.1:{primary.port},127.0.0.1:{standby.port}"
            dsn = f"postgresql://postgres@{hosts}/failover?target_session_attrs=read-write"
            store = PostgresStore(dsn, read_dsn=standby.dsn_for("failover"), connect_timeout=2)
            try:
                before = await store.add("acknowledged before the failover")
                replayed(pair)
                primary.stop()
                standby.promote()
                after = await store.add("written after the failover")
                hits = {hit.id for hit in await store.search("failover")}
                assert hits == {before.id, after.id}
            finally:
                await store.aclose()
        finally:
            standby.close()


def test_log_positions_read_and_write_as_postgresql_writes_them() -> None:
    assert parse_lsn("16/B374D848") == 0x16_B374_D848
    assert format_lsn(0x16_B374_D848) == "16/B374D848"
    assert format_lsn(parse_lsn("0/3001148")) == "0/3001148"
    assert parse_lsn("0/0") == 0
