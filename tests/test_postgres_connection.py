"""The shared PostgreSQL layer against real servers: clear errors, no hangs, reconnection."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import psycopg
import pytest

from agentrecall._internal.postgres import (
    AsyncPostgresPool,
    ConnectionOptions,
    PostgresPool,
    parse_dsn,
)
from agentrecall.errors import InvalidArgumentError, ServerUnavailableError, StorageError
from agentrecall.testing.postgres import TemporaryPostgres

WHAT = "test store"


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts TCP connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def _select_one(pool: PostgresPool) -> int:
    with pool.connection() as connection:
        row = connection.execute("SELECT 1").fetchone()
    assert row is not None
    return int(row[0])


def test_a_refused_connection_is_retryable_and_names_host_and_database(closed_port: int) -> None:
    pool = PostgresPool(f"postgresql://postgres@127.0.0.1:{closed_port}/notes", what=WHAT)
    with pytest.raises(ServerUnavailableError) as caught:
        _select_one(pool)
    error = caught.value
    assert (error.host, error.port, error.database) == ("127.0.0.1", closed_port, "notes")
    assert f"127.0.0.1:{closed_port}" in str(error) and "'notes'" in str(error)
    assert "refused" in str(error) and str(error).startswith(WHAT)


def test_a_server_that_never_answers_fails_within_the_connect_timeout(silent_port: int) -> None:
    pool = PostgresPool(
        f"postgresql://postgres@127.0.0.1:{silent_port}/notes",
        what=WHAT,
        options=ConnectionOptions(connect_timeout=2),
    )
    with pytest.raises(ServerUnavailableError, match="no answer within the connection timeout"):
        _select_one(pool)


def test_the_async_pool_fails_on_a_silent_server_too(silent_port: int) -> None:
    pool = AsyncPostgresPool(
        f"postgresql://postgres@127.0.0.1:{silent_port}/notes",
        what=WHAT,
        options=ConnectionOptions(connect_timeout=2),
    )

    async def call() -> None:
        async with pool.connection() as connection:
            await connection.execute("SELECT 1")

    with pytest.raises(ServerUnavailableError, match="no answer within the connection timeout"):
        asyncio.run(call())


def test_a_missing_database_is_named_and_not_retryable(postgres_server: object) -> None:
    dsn = postgres_server.database_dsn("no_such_db")  # type: ignore[attr-defined]
    pool = PostgresPool(dsn, what=WHAT)
    with pytest.raises(StorageError) as caught:
        _select_one(pool)
    assert not isinstance(caught.value, ServerUnavailableError)
    assert "database 'no_such_db' does not exist on 127.0.0.1:" in str(caught.value)


def _require_password(server: TemporaryPostgres, role: str, password: str) -> None:
    """Make ``server`` ask ``role`` for a SCRAM password over TCP; trust everyone else."""
    with psycopg.connect(server.dsn, autocommit=True) as connection:
        connection.execute("SET password_encryption = 'scram-sha-256'")
        connection.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        row = connection.execute("SHOW hba_file").fetchone()
        assert row is not None
        lines = [
            f"host all {role} 127.0.0.1/32 scram-sha-256",
            "host all all 127.0.0.1/32 trust",
            "local all all trust",
        ]
        rows = ", ".join(f"('{line}')" for line in lines)
        connection.execute(f"COPY (SELECT * FROM (VALUES {rows}) AS l) TO '{row[0]}'")
        connection.execute("SELECT pg_reload_conf()")


def test_a_wrong_password_names_user_host_and_database_and_hides_the_password(
    private_postgres: TemporaryPostgres,
) -> None:
    _require_password(private_postgres, "alice", "right-horse")
    base = f"127.0.0.1:{private_postgres.port}/postgres"
    assert _select_one(PostgresPool(f"postgresql://alice:right-horse@{base}", what=WHAT)) == 1
    pool = PostgresPool(f"postgresql://alice:wrong-battery@{base}", what=WHAT)
    with pytest.raises(StorageError) as caught:
        _select_one(pool)
    message = str(caught.value)
    assert not isinstance(caught.value, ServerUnavailableError)
    assert "refused the login of user 'alice' to database 'postgres'" in message
    assert f"127.0.0.1:{private_postgres.port}" in message
    assert "wrong-battery" not in message and "password authentication failed" in message


def test_a_restart_fails_the_call_in_flight_retryably_and_the_next_call_succeeds(
    private_postgres: TemporaryPostgres,
) -> None:
    pool = PostgresPool(private_postgres.dsn, what=WHAT, min_size=2)
    assert _select_one(pool) == 1
    with pytest.raises(ServerUnavailableError, match="unavailable"):
        with pool.connection() as connection:
            connection.execute("SELECT 1")
            private_postgres.restart()
            connection.execute("SELECT 1")
    assert _select_one(pool) == 1
    assert _select_one(pool) == 1
    pool.close()


def test_a_crash_with_no_sqlstate_is_retryable_too(private_postgres: TemporaryPostgres) -> None:
    pool = PostgresPool(private_postgres.dsn, what=WHAT)
    with pytest.raises(ServerUnavailableError):
        with pool.connection() as connection:
            private_postgres.crash()
            connection.execute("SELECT 1")
    private_postgres.start()
    assert _select_one(pool) == 1
    pool.close()


def test_calls_while_the_server_is_down_fail_retryably_then_recover(
    private_postgres: TemporaryPostgres,
) -> None:
    pool = PostgresPool(private_postgres.dsn, what=WHAT, timeout=1)
    assert _select_one(pool) == 1
    private_postgres.stop()
    # Each failed call lets the pool's own attempts fail too, so its backoff grows past the
    # timeout: the call after the restart must not wait for that backoff.
    for _ in range(3):
        with pytest.raises(ServerUnavailableError, match="refused"):
            _select_one(pool)
    private_postgres.start()
    assert _select_one(pool) == 1
    pool.close()


def test_the_async_pool_recovers_after_a_restart(private_postgres: TemporaryPostgres) -> None:
    pool = AsyncPostgresPool(private_postgres.dsn, what=WHAT)

    async def select() -> object:
        async with pool.connection() as connection:
            cursor = await connection.execute("SELECT 1")
            return await cursor.fetchone()

    async def scenario() -> None:
        assert await select() == (1,)
        with pytest.raises(ServerUnavailableError):
            async with pool.connection() as connection:
                await asyncio.to_thread(private_postgres.restart)
                await connection.execute("SELECT 1")
        assert await select() == (1,)
        await pool.close()

    asyncio.run(scenario())


def test_a_pool_whose_connections_stay_busy_says_so(postgres_dsn: str) -> None:
    pool = PostgresPool(postgres_dsn, what=WHAT, max_size=1, timeout=0.5)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with pool.connection():
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        with pytest.raises(ServerUnavailableError, match="all 1 were busy"):
            _select_one(pool)
    finally:
        release.set()
        holder.join()
    assert _select_one(pool) == 1
    pool.close()


def test_sql_errors_become_storage_errors_with_their_sqlstate(postgres_dsn: str) -> None:
    pool = PostgresPool(postgres_dsn, what=WHAT)
    with pytest.raises(StorageError, match=r"SQLSTATE 42P01") as caught:
        with pool.connection() as connection:
            connection.execute("SELECT * FROM missing_table")
    assert not isinstance(caught.value, ServerUnavailableError)
    assert isinstance(caught.value.__cause__, psycopg.errors.UndefinedTable)
    assert _select_one(pool) == 1
    pool.close()


def test_sessions_carry_the_application_name_unless_the_dsn_sets_one(postgres_dsn: str) -> None:
    def name(dsn: str) -> object:
        pool = PostgresPool(dsn, what=WHAT)
        with pool.connection() as connection:
            row = connection.execute("SHOW application_name").fetchone()
        pool.close()
        return row

    assert name(postgres_dsn) == ("agentrecall",)
    assert name(f"{postgres_dsn} application_name=worker-7") == ("worker-7",)


def test_statements_are_not_prepared_by_default(postgres_dsn: str) -> None:
    pool = PostgresPool(postgres_dsn, what=WHAT)
    with pool.connection() as connection:
        for _ in range(10):
            connection.execute("SELECT 1 + %s", (1,))
        row = connection.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
    assert row == (0,)
    pool.close()


def test_a_forked_child_opens_its_own_connections(postgres_dsn: str) -> None:
    script = f"""
import os, sys
from agentrecall._internal.postgres import PostgresPool
pool = PostgresPool({postgres_dsn!r}, what="t", max_size=1)
with pool.connection() as c:
    parent = c.execute("SELECT pg_backend_pid()").fetchone()[0]
pid = os.fork()
if pid == 0:
    with pool.connection() as c:
        child = c.execute("SELECT pg_backend_pid()").fetchone()[0]
    os._exit(0 if child != parent else 3)
_, status = os.waitpid(pid, 0)
with pool.connection() as c:
    assert c.execute("SELECT pg_backend_pid()").fetchone()[0] == parent
sys.exit(os.waitstatus_to_exitcode(status))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ("postgresql://ann:secret@db.example:6543/mem", ("db.example", 6543, "mem", "ann")),
        ("host=/run/pg dbname=mem user=bob", ("/run/pg", 5432, "mem", "bob")),
        ("postgresql://ann@h1:5433,h2:5434/mem", ("h1,h2", 5433, "mem", "ann")),
        ("postgresql://ann@db.example", ("db.example", 5432, "ann", "ann")),
    ],
)
def test_parse_dsn_describes_where_the_dsn_points(dsn: str, expected: tuple[object, ...]) -> None:
    address = parse_dsn(dsn)
    assert (address.host, address.port, address.database, address.user) == expected
    assert "secret" not in str(address)


def test_parse_dsn_takes_what_the_dsn_leaves_out_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PGHOST", "envhost")
    monkeypatch.setenv("PGPORT", "7777")
    monkeypatch.setenv("PGDATABASE", "envdb")
    assert str(parse_dsn("user=u")) == "database 'envdb' on envhost:7777"


@pytest.mark.parametrize("dsn", ["", "   ", None, 5, b"postgresql://x"])
def test_parse_dsn_refuses_what_is_not_a_connection_string(dsn: object) -> None:
    with pytest.raises(InvalidArgumentError, match="dsn must be a PostgreSQL connection string"):
        parse_dsn(dsn)


@pytest.mark.parametrize("dsn", ["postgresql://u@h:abc/d", "host=h port=0", "port=5432,x"])
def test_a_port_that_is_not_a_number_is_refused(dsn: str) -> None:
    with pytest.raises(InvalidArgumentError, match="port must be a number from 1 to 65535"):
        parse_dsn(dsn)


def test_a_setting_libpq_refuses_is_not_retryable(postgres_dsn: str) -> None:
    pool = PostgresPool(f"{postgres_dsn} sslmode=sometimes", what=WHAT)
    with pytest.raises(StorageError, match="has a setting libpq refuses") as caught:
        _select_one(pool)
    assert not isinstance(caught.value, ServerUnavailableError)


def test_encryption_the_server_does_not_offer_is_not_retryable(postgres_dsn: str) -> None:
    pool = PostgresPool(f"{postgres_dsn} sslmode=require", what=WHAT)
    with pytest.raises(StorageError, match="does not offer the encryption") as caught:
        _select_one(pool)
    assert not isinstance(caught.value, ServerUnavailableError)
    assert "sslmode" in str(caught.value)


def test_an_unparsable_dsn_is_refused_without_repeating_its_values() -> None:
    with pytest.raises(InvalidArgumentError, match="not a valid PostgreSQL") as caught:
        parse_dsn("host=h password=hunter2 oops")
    assert "hunter2" not in str(caught.value)
    assert "\n" not in str(caught.value)  # one line, as libpq's own message is not


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"min_size": -1}, "min_size must be an integer >= 0"),
        ({"max_size": 0}, "max_size must be an integer >= 1"),
        ({"min_size": 3, "max_size": 2}, "max_size must be >= min_size"),
        ({"timeout": 0}, "timeout must be a number of seconds above 0"),
        ({"timeout": float("inf")}, "timeout must be a number of seconds above 0"),
    ],
)
def test_pool_arguments_are_checked_at_construction(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        PostgresPool("postgresql://u@h/d", what=WHAT, **arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, -1, True, "5", float("nan"), float("inf")])
def test_connect_timeout_must_be_a_positive_number(timeout: object) -> None:
    with pytest.raises(InvalidArgumentError, match="connect_timeout"):
        ConnectionOptions(connect_timeout=timeout)  # type: ignore[arg-type]


def test_without_psycopg_the_error_names_the_extra_to_install() -> None:
    script = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from agentrecall._internal.postgres import parse_dsn\n"
        "parse_dsn('postgresql://u@h/d')\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode != 0
    assert "pip install 'agentrecall[postgres]'" in run.stderr
