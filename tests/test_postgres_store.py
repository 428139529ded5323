"""PostgresStore beyond the conformance suite: setup, concurrency, names, faults, limits."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import string
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import psycopg
import pytest
from test_postgres_search import assert_counts_exact

from agentrecall import InvalidArgumentError, MemoryManager, PostgresStore
from agentrecall.errors import ServerUnavailableError, StorageError
from agentrecall.stores.postgres import writes
from agentrecall.stores.postgres.schema import MIGRATIONS
from agentrecall.testing import HashEmbedder
from agentrecall.testing.postgres import TemporaryPostgres
from agentrecall.types import MemoryRecord, MemoryVersion


def _rows(dsn: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as connection:
        return connection.execute(query).fetchall()


@pytest.mark.asyncio
async def test_construction_does_no_io_and_a_dead_server_is_named() -> None:
    store = PostgresStore("postgresql://nobody@127.0.0.1:9/nowhere", connect_timeout=2)
    assert store.name == "memory" and store.schema == "agentrecall"
    with pytest.raises(ServerUnavailableError, match=r"127\.0\.0\.1:9.*nowhere"):
        await store.add("A memory that has nowhere to go")
    await store.aclose()


def test_bad_arguments_are_refused_at_construction() -> None:
    dsn = "postgresql://u@127.0.0.1/db"
    for options, argument in (
        ({"schema": " "}, "schema"),
        ({"pool_size": 0}, "pool_size"),
        ({"name": ""}, "name"),
        ({"search_mode": "semantic"}, "embedder"),
    ):
        with pytest.raises(InvalidArgumentError, match=argument):
            PostgresStore(dsn, **options)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="dsn"):
        PostgresStore("")


@pytest.mark.parametrize(
    "schema",
    ["x" * 63 + "a", "é" * 32, "a$$b", "$tag$", "pg_memory", "nul\0schema"],
)
def test_schemas_postgresql_would_cut_or_misread_are_refused(schema: str) -> None:
    """Longer than 63 bytes the server cuts the name (two schemas would share tables); a '$'
    ends the dollar quotes of the migrations' functions; 'pg_' is the server's own."""
    with pytest.raises(InvalidArgumentError, match=r"schema must be .*63 bytes"):
        PostgresStore("postgresql://u@127.0.0.1/db", schema=schema)


@pytest.mark.parametrize("size", [0, -1, None, 1.5, True, "3"])
def test_a_pool_size_below_one_or_not_an_integer_is_refused_as_such(size: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"pool_size must be an integer of at least 1"):
        PostgresStore("postgresql://u@127.0.0.1/db", pool_size=size)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_schemas_of_63_bytes_and_quoted_names_stay_apart(postgres_dsn: str) -> None:
    schemas = ["x" * 62 + "A", "x" * 62 + "B", "é" * 31 + "a", 'Quoted "Name"', "public"]
    stores = [PostgresStore(postgres_dsn, schema=schema) for schema in schemas]
    for number, store in enumerate(stores):
        await store.add_many([(f"Note {n} of schema {number}", None) for n in range(number + 1)])
    assert [await store.count() for store in stores] == [1, 2, 3, 4, 5]
    for store in stores:
        await store.aclose()


@pytest.mark.asyncio
async def test_setup_is_idempotent_and_concurrent_setups_never_collide(postgres_dsn: str) -> None:
    stores = [PostgresStore(postgres_dsn, name=f"n{i % 3}") for i in range(12)]
    await asyncio.gather(*(store.setup() for store in stores))
    await stores[0].setup()
    for store in stores:
        await store.aclose()
    versions = _rows(postgres_dsn, "SELECT version FROM agentrecall.migrations ORDER BY 1")
    assert versions == [(n + 1,) for n in range(len(MIGRATIONS))]
    names = _rows(postgres_dsn, "SELECT name FROM agentrecall.stores ORDER BY name")
    assert names == [("n0",), ("n1",), ("n2",)]


def test_processes_starting_at_once_migrate_once(postgres_dsn: str) -> None:
    code = textwrap.dedent(
        f"""
        import asyncio
        from agentrecall import PostgresStore

        async def main():
            store = PostgresStore({postgres_dsn!r}, schema="raced")
            await store.add("written by a racing process")
            await store.aclose()

        asyncio.run(main())
        """
    )
    processes = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(4)]
    assert [process.wait(timeout=100) for process in processes] == [0] * 4
    assert _rows(postgres_dsn, "SELECT count(*) FROM raced.migrations") == [(len(MIGRATIONS),)]
    assert _rows(postgres_dsn, "SELECT count(*) FROM raced.memories") == [(1,)]


@pytest.mark.asyncio
async def test_concurrent_clients_store_each_distinct_memory_once(postgres_dsn: str) -> None:
    """8 clients add 1,000 memories each in batches, half of them shared with a neighbour."""
    clients = [PostgresStore(postgres_dsn, pool_size=2) for _ in range(8)]
    await clients[0].setup()

    async def client(number: int) -> dict[str, str]:
        contents = [f"shared memory number {n}" for n in range(500 * number, 500 * number + 1000)]
        ids: dict[str, str] = {}
        for start in range(0, len(contents), 50):
            batch = contents[start : start + 50]
            results = await clients[number].add_many([(content, None) for content in batch])
            ids.update(zip(batch, [result.id for result in results], strict=True))
        return ids

    answers = await asyncio.gather(*(client(n) for n in range(8)))
    merged: dict[str, set[str]] = {}
    for ids in answers:
        for content, memory_id in ids.items():
            merged.setdefault(content, set()).add(memory_id)
    assert len(merged) == 500 * 7 + 1000
    assert all(len(ids) == 1 for ids in merged.values())
    assert await clients[0].count() == len(merged)
    listed = {record.content: record.id for record in await clients[0].list()}
    assert listed == {content: next(iter(ids)) for content, ids in merged.items()}
    for store in clients:
        await store.aclose()


@pytest.mark.asyncio
async def test_names_and_schemas_share_a_database_apart(postgres_dsn: str) -> None:
    one = PostgresStore(postgres_dsn, name="one")
    two = PostgresStore(postgres_dsn, name="two")
    other = PostgresStore(postgres_dsn, name="one", schema="elsewhere")
    for store in (one, two, other):
        await store.add("The same words in every store")
    await one.add("Only in the first store")
    assert await two.clear() == 1
    assert await one.count() == 2 and await other.count() == 1
    assert [hit.content for hit in await one.search("words")] == ["The same words in every store"]
    assert await two.search("words") == []
    for store in (one, two, other):
        await store.aclose()


@pytest.mark.asyncio
async def test_a_read_only_store_never_writes(postgres_dsn: str) -> None:
    reader = PostgresStore(postgres_dsn, writable=False)
    assert await reader.search("anything") == [] and await reader.count() == 0
    assert await reader.list() == [] and await reader.get("x") is None
    await reader.setup()  # connects and creates nothing, as a manager's initialize() does
    await MemoryManager(stores=[reader]).initialize()
    with pytest.raises(InvalidArgumentError, match="read-only"):
        await reader.add("A write the reader may not make")
    assert _rows(postgres_dsn, "SELECT to_regnamespace('agentrecall') IS NULL") == [(True,)]
    writer = PostgresStore(postgres_dsn)
    memory = await writer.add("Written by the writer")
    other = PostgresStore(postgres_dsn, writable=False)
    assert (await other.get(memory.id)) is not None
    for store in (reader, writer, other):
        await store.aclose()


@pytest.mark.asyncio
async def test_a_schema_of_a_newer_agentrecall_is_refused_and_left_alone(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    await store.add("Written by this release")
    await store.aclose()
    newer = len(MIGRATIONS) + 1
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute("INSERT INTO agentrecall.migrations (version) VALUES (%s)", [newer])
    for writable in (True, False):
        old = PostgresStore(postgres_dsn, writable=writable)
        with pytest.raises(StorageError, match=rf"version {newer}, newer .*upgrade agentrecall"):
            await (old.add("Written by an older release") if writable else old.count())
        await old.aclose()
    assert _rows(postgres_dsn, "SELECT content FROM agentrecall.memories") == [
        ("Written by this release",)
    ]


@pytest.mark.asyncio
async def test_a_read_only_store_over_an_older_schema_says_how_to_upgrade(
    postgres_dsn: str,
) -> None:
    """Tables of version 2, as an older release left them: they lack the term counts."""
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        with connection.transaction():
            connection.execute("CREATE SCHEMA agentrecall")
            connection.execute(
                "CREATE TABLE agentrecall.migrations (version integer PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for number, migration in enumerate(MIGRATIONS[:2], 1):
                connection.execute(migration.replace("{schema}", '"agentrecall"').encode())
                connection.execute("INSERT INTO agentrecall.migrations VALUES (%s)", [number])
    reader = PostgresStore(postgres_dsn, writable=False)
    with pytest.raises(StorageError, match=r"version 2, older .* read-only; open it once"):
        await reader.search("anything")
    await reader.aclose()
    writer = PostgresStore(postgres_dsn)
    await writer.add("Written after the upgrade")
    await writer.aclose()
    reader = PostgresStore(postgres_dsn, writable=False)
    assert [hit.content for hit in await reader.search("upgrade")] == ["Written after the upgrade"]
    await reader.aclose()


@pytest.mark.asyncio
async def test_text_postgresql_cannot_hold_is_refused_clearly(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    with pytest.raises(InvalidArgumentError, match="content.*U\\+0000"):
        await store.add("nul \0 inside")
    with pytest.raises(InvalidArgumentError, match="metadata.*U\\+0000"):
        await store.add("fine", {"k\0": 1})
    assert await store.count() == 0
    await store.aclose()


@pytest.mark.asyncio
async def test_scope_ids_reasons_and_imported_ids_with_nul_are_refused_as_arguments(
    postgres_dsn: str,
) -> None:
    """Text PostgreSQL cannot store is bad input, named; an id holding it names no memory."""
    store = PostgresStore(postgres_dsn)
    memory = await store.add("A plain memory")
    for argument in ("user_id", "agent_id", "session_id"):
        with pytest.raises(InvalidArgumentError, match=f"{argument}.*U\\+0000"):
            store.scope(**{argument: "nul \0 inside"})
    for call in (
        store.update(memory.id, content="new words", reason="why \0"),
        store.delete(memory.id, reason="why \0"),
    ):
        with pytest.raises(InvalidArgumentError, match="reason.*U\\+0000"):
            await call
    created = "2026-01-01T00:00:00.000Z"
    for record, argument in (
        (MemoryRecord(id="id \0", content="Copied", created_at=created), "id"),
        (MemoryRecord(id="x", content="Copied", created_at=created, agent_id="\0"), "agent_id"),
    ):
        with pytest.raises(InvalidArgumentError, match=f"{argument} \\(record 0\\).*U\\+0000"):
            await store.import_records([record])
    version = MemoryVersion("Old", None, created, "update", None, memory_id="id \0")
    with pytest.raises(InvalidArgumentError, match="memory_id \\(version 0\\).*U\\+0000"):
        await store.import_versions([version])
    missing = "no \0 such id"
    assert await store.get(missing) is None and await store.history(missing) == []
    assert await store.delete(missing) is False and await store.update(missing) is None
    assert await store.existing_ids([missing, memory.id]) == {memory.id}
    assert [record.content for record in await store.list()] == ["A plain memory"]
    assert await store.history(memory.id) == []
    await store.aclose()


@pytest.mark.asyncio
async def test_ids_longer_than_an_index_row_holds_are_refused_as_arguments(
    postgres_dsn: str,
) -> None:
    """B-tree index rows hold 2,704 bytes: random ids of 2,700 failed naming an index."""
    letters = random.Random(7)

    def text(size: int) -> str:
        return "".join(letters.choices(string.ascii_letters, k=size))

    store = PostgresStore(postgres_dsn)
    longest = store.scope(user_id=text(1_000), agent_id=text(1_000), session_id=text(600))
    await longest.add("Kept under the longest scope")
    with pytest.raises(InvalidArgumentError, match=r"session_id together: 2601 bytes .*2600"):
        store.scope(user_id=text(1_000), agent_id=text(1_000), session_id=text(601))
    with pytest.raises(InvalidArgumentError, match=r"together: 2700 bytes"):
        store.scope(user_id="é" * 1_350)
    created = "2026-01-01T00:00:00.000Z"
    kept = MemoryRecord(id=text(2_600), content="A long id", created_at=created)
    assert await store.import_records([kept]) == 1
    await store.update(kept.id, content="A long id, changed")
    assert [version.content for version in await store.history(kept.id)] == ["A long id"]
    for record, argument in (
        (MemoryRecord(id=text(2_700), content="Too long", created_at=created), "id"),
        (
            MemoryRecord(id="x", content="Long scope", created_at=created, user_id=text(2_700)),
            "scope ids",
        ),
    ):
        with pytest.raises(InvalidArgumentError, match=f"{argument} \\(record 0\\): 2700 bytes"):
            await store.import_records([record])
    missing = text(2_700)
    assert await store.get(missing) is None and await store.delete(missing) is False
    assert await store.count() == 2
    await store.aclose()


@pytest.mark.asyncio
async def test_a_restarted_server_is_reconnected(private_postgres: TemporaryPostgres) -> None:
    store = PostgresStore(private_postgres.dsn, connect_timeout=2)
    kept = await store.add("Acknowledged before the restart")
    private_postgres.stop()
    with pytest.raises(ServerUnavailableError):
        await store.add("Refused while the server is down")
    private_postgres.start()
    after = await store.add("Written after the restart")
    assert {record.id for record in await store.list()} == {kept.id, after.id}
    await store.aclose()


def test_the_extra_is_named_when_psycopg_is_missing() -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "import agentrecall\n"
        "try:\n"
        "    from agentrecall import PostgresStore\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "pip install 'agentrecall[postgres]'" in result.stdout


@pytest.mark.asyncio
async def test_without_pgvector_keyword_works_and_semantic_names_the_extension(
    postgres_server: Any,
) -> None:
    """A role that may not create extensions, in a database without pgvector."""
    database = f"agentrecall_plain_{os.getpid()}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        admin.execute("DROP ROLE IF EXISTS agentrecall_plain")
        admin.execute("CREATE ROLE agentrecall_plain LOGIN")
        admin.execute(f"CREATE DATABASE {database} OWNER agentrecall_plain")
    info = psycopg.conninfo.conninfo_to_dict(postgres_server.database_dsn(database))
    info["user"] = "agentrecall_plain"
    dsn = psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
    store = PostgresStore(dsn, embedder=HashEmbedder(64), search_mode="keyword")
    try:
        memory = await store.add("The user's seat is by the window")
        assert [hit.id for hit in await store.search("window")] == [memory.id]
        for mode in ("semantic", "hybrid"):
            with pytest.raises(
                StorageError,
                match=rf"memory store 'memory' \(database '{database}' on .*pgvector extension",
            ):
                await store.search("window", {"mode": mode})
        assert _rows(dsn, "SELECT count(*) FROM agentrecall.vectors") == [(1,)]
    finally:
        await store.aclose()
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            admin.execute("DROP ROLE IF EXISTS agentrecall_plain")


@pytest.mark.asyncio
async def test_stores_of_several_schemas_create_pgvector_at_once(postgres_dsn: str) -> None:
    """Each round starts without the extension; every setup finds it missing, and all race."""
    for round in range(3):
        with psycopg.connect(postgres_dsn, autocommit=True) as connection:
            connection.execute("DROP EXTENSION IF EXISTS vector CASCADE")
        stores = [
            PostgresStore(postgres_dsn, schema=f"s{round}_{n}", embedder=HashEmbedder(8))
            for n in range(6)
        ]
        try:
            await asyncio.gather(*(store.setup() for store in stores))
            for store in stores:
                memory = await store.add("A note stored by meaning")
                assert [hit.id for hit in await store.search("note", {"mode": "semantic"})] == [
                    memory.id
                ]
        finally:
            for store in stores:
                await store.aclose()


@pytest.mark.asyncio
async def test_search_modes_check_their_options_clearly(postgres_dsn: str) -> None:
    with pytest.raises(InvalidArgumentError, match="neighbours must be True or False"):
        PostgresStore(postgres_dsn, neighbours="yes")  # type: ignore[arg-type]
    store = PostgresStore(postgres_dsn)
    with pytest.raises(InvalidArgumentError, match="'neighbours' must be True or False"):
        await store.search("anything", {"neighbours": "yes"})  # type: ignore[typeddict-item]
    assert await store.search("anything", {"neighbours": True}) == []
    with pytest.raises(InvalidArgumentError, match="embedder"):
        await store.search("anything", {"mode": "semantic"})
    await store.aclose()


@pytest.mark.asyncio
async def test_large_batches_go_through_copy_and_dedup_like_small_ones(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    scoped = store.scope(user_id="ana")
    await scoped.add("Copied fact 7", {"first": True})
    contents = [f"Copied fact {n % 2_000}" for n in range(2_500)]  # 500 repeats in the batch
    results = await scoped.add_many([(content, {"n": n}) for n, content in enumerate(contents)])
    assert len({result.id for result in results}) == 2_000
    assert results[7].id == (await scoped.list(limit=1))[0].id
    assert [results[n].id for n in range(2_000, 2_500)] == [results[n].id for n in range(500)]
    assert await store.count() == 2_000
    records = await store.list()
    assert [record.content for record in records[1:4]] == [f"Copied fact {n}" for n in (0, 1, 2)]
    copy = PostgresStore(postgres_dsn, name="copy")
    assert await copy.import_records(records) == 2_000
    assert await copy.import_records(records) == 0
    assert await copy.list() == records
    assert [hit.content for hit in await copy.search("fact 1999")][:1] == ["Copied fact 1999"]
    for each in (store, copy):
        await each.aclose()


@pytest.mark.asyncio
async def test_a_bad_item_late_in_a_large_batch_stores_nothing(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    items: list[tuple[str, Any]] = [(f"Bulk fact {n}", None) for n in range(5_000)]
    items[4_500] = ("   ", None)
    with pytest.raises(InvalidArgumentError, match=r"item 4500"):
        await store.add_many(items)
    items[4_500] = ("Fine words", {"nul": "\0"})
    with pytest.raises(InvalidArgumentError, match=r"item 4500.*U\+0000"):
        await store.add_many(items)
    assert await store.count() == 0
    await store.aclose()


@pytest.mark.parametrize("start, stop", [(0, 0), (0, 1_001), (3, 5_000), (0, 23_456)])
def test_a_bulk_write_is_cut_into_growing_chunks_that_cover_it_in_order(
    start: int, stop: int
) -> None:
    bounds = writes.pieces(start, stop)
    assert [at for bound in bounds for at in range(*bound)] == list(range(start, stop))
    sizes = [end - begin for begin, end in bounds]
    assert not sizes or sizes[0] == min(writes.FIRST_CHUNK, stop - start)
    assert all(later <= min(3 * earlier, writes.CHUNK) for earlier, later in pairwise(sizes))


def _schema_at(dsn: str, version: int) -> None:
    """Create the tables of ``version``, as a release of that version left them."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        with connection.transaction():
            connection.execute("CREATE SCHEMA agentrecall")
            connection.execute(
                "CREATE TABLE agentrecall.migrations (version integer PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for number, migration in enumerate(MIGRATIONS[:version], 1):
                connection.execute(migration.replace("{schema}", '"agentrecall"').encode())
                connection.execute("INSERT INTO agentrecall.migrations VALUES (%s)", [number])


@pytest.mark.asyncio
@pytest.mark.parametrize("version", [4, 5])
async def test_the_functions_ignore_a_search_path_that_shadows_the_catalog(
    postgres_dsn: str, version: int
) -> None:
    """A role whose search_path puts a schema of its own before pg_catalog.

    That schema holds a ``tsvector_to_array`` of the same signature as the server's: the
    store's functions must still call the server's (before, each add raised the shadow's
    error, and a function that called it silently would have miscounted the terms). The
    tables are those of an older release, upgraded by the store's first write.
    """
    _schema_at(postgres_dsn, version)
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute("CREATE SCHEMA shadow")
        connection.execute(
            "CREATE FUNCTION shadow.tsvector_to_array(tsvector) RETURNS text[] "
            "LANGUAGE plpgsql AS $$ BEGIN RAISE 'the shadow was called'; END $$"
        )
    store = PostgresStore(postgres_dsn)
    await store.add("Written while upgrading the schema")
    await store.aclose()
    shadowed = psycopg.conninfo.make_conninfo(
        postgres_dsn, options="-c search_path=shadow,pg_catalog,public"
    )
    store = PostgresStore(shadowed)
    first = await store.add("A memory added under a shadowing search_path")
    assert (await store.add("A memory added under a shadowing search_path")).id == first.id
    await store.update(first.id, content="Its content updated under the same search_path")
    await store.add_many([(f"bulk memory {n}", None) for n in range(3)])
    await store.delete(first.id)
    assert await store.count() == 4
    await store.aclose()
    assert_counts_exact(postgres_dsn)


@pytest.mark.asyncio
@pytest.mark.parametrize("version", [4, 5])
async def test_an_upgraded_store_keeps_counting_and_extending_held_copies(
    postgres_dsn: str, version: int
) -> None:
    """Memories written at an older version, then single adds of held copies after it."""
    _schema_at(postgres_dsn, version)
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute("INSERT INTO agentrecall.stores (name) VALUES ('memory')")
        connection.execute(
            "INSERT INTO agentrecall.scopes (store) SELECT store FROM agentrecall.stores"
        )
        connection.execute(
            "INSERT INTO agentrecall.memories (store, scope, id, content, content_hash, "
            "created_at, expires_at, terms, length) SELECT 1, 1, 'old', 'an old memory', "
            "'\\x00'::bytea, '2026-01-01T00:00:00.000Z', '2999-01-01T00:00:00.000Z', "
            "'old:2 memory:3'::tsvector, 2"
        )
    store = PostgresStore(postgres_dsn)
    kept = await store.add("A memory kept a while", ttl=3_600)
    assert (await store.add("A memory kept a while")).id == kept.id
    again = await store.get(kept.id)
    assert again is not None and again.expires_at is None
    await store.add("another memory")
    assert await store.count() == 3
    await store.aclose()
    versions = _rows(postgres_dsn, "SELECT max(version) FROM agentrecall.migrations")
    assert versions == [(len(MIGRATIONS),)]
    assert_counts_exact(postgres_dsn)


@contextlib.contextmanager
def application_role(dsn: str, role: str) -> Iterator[str]:
    """Yield the URL of a new role with the rights the README grants an application's role:
    on the schema's tables and sequences, none to create in the database; dropped after."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        database = connection.info.dbname
        connection.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'app'")
        connection.execute(f'REVOKE CREATE ON DATABASE "{database}" FROM PUBLIC')
        connection.execute(f"GRANT USAGE ON SCHEMA agentrecall TO {role}")
        connection.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA agentrecall TO {role}"
        )
        connection.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA agentrecall TO {role}")
    try:
        yield psycopg.conninfo.make_conninfo(dsn, user=role, password="app")
    finally:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f"DROP OWNED BY {role}")
            connection.execute(f"DROP ROLE {role}")


@pytest.mark.asyncio
async def test_a_role_with_rights_on_the_tables_only_uses_a_store_an_admin_set_up(
    postgres_dsn: str,
) -> None:
    """An administrator's role runs setup(); the application's role may not create anything.

    The application's role has the rights on the schema's tables and sequences its writes
    need, no right to create in the database: it adds (through the schema's function),
    dedups, searches and imports in bulk. Before, opening the store ran ``CREATE SCHEMA IF
    NOT EXISTS`` even at the newest version, which such a role is refused.
    """
    admin = PostgresStore(postgres_dsn)
    await admin.setup()
    await admin.aclose()
    with application_role(postgres_dsn, f"agentrecall_app_{os.getpid()}") as url:
        app = PostgresStore(url)
        first = await app.add("Written by the application's role")
        assert (await app.add("Written by the application's role")).id == first.id
        await app.add_many([(f"bulk memory {n}", None) for n in range(writes.COPY_AFTER + 1)])
        assert [hit.id for hit in await app.search("application")] == [first.id]
        await app.aclose()
        assert_counts_exact(postgres_dsn)


@pytest.mark.asyncio
async def test_a_role_with_rights_on_the_tables_only_writes_and_finds_vectors(
    postgres_dsn: str,
) -> None:
    """The administrator set up a store with an embedder (extension, model, HNSW index); the
    application's role, owning nothing, adds with vectors and searches by them. Before, its
    first write ran CREATE INDEX IF NOT EXISTS, which PostgreSQL refuses to a non-owner even
    when the index exists ("must be owner of table vectors")."""
    async with PostgresStore(postgres_dsn, embedder=HashEmbedder(64)) as admin:
        await admin.setup()
    with application_role(postgres_dsn, f"agentrecall_vectors_{os.getpid()}") as url:
        async with PostgresStore(url, embedder=HashEmbedder(64)) as app:
            tea = await app.add("The user drinks green tea")
            await app.add_many([(f"bulk memory {n}", None) for n in range(20)])
            hits = await app.search("green tea", {"mode": "semantic"})
            assert hits and hits[0].id == tea.id


@pytest.mark.asyncio
async def test_single_adds_go_on_after_a_restart_between_them(
    private_postgres: TemporaryPostgres,
) -> None:
    """The server restarts between two adds: the pool's sessions are gone, and with them the
    plans the function cached. The next add may fail retryably; one after it succeeds, dedups
    against the memory stored before the restart and extends its expiry."""
    store = PostgresStore(private_postgres.dsn)
    kept = await store.add("Stored before the restart", ttl=3_600)
    await asyncio.to_thread(private_postgres.restart)
    for _ in range(3):
        try:
            again = await store.add("Stored before the restart")
            break
        except ServerUnavailableError:
            continue
    else:
        pytest.fail("three adds after the restart all failed")
    assert again.id == kept.id
    held = await store.get(kept.id)
    assert held is not None and held.expires_at is None
    await store.add("Stored after the restart")
    assert await store.count() == 2
    await store.aclose()
    assert_counts_exact(private_postgres.dsn)
