"""The throwaway PostgreSQL server of the tests: starts, restarts, leaves nothing behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psycopg
import pytest

from agentrecall.testing.postgres import PostgresStartError, TemporaryPostgres


def test_each_test_gets_an_empty_database_with_pgvector(postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        assert connection.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        row = connection.execute("SELECT '[1,2]'::vector <=> '[2,4]'::vector").fetchone()
    assert row is not None and row[0] == pytest.approx(0.0, abs=1e-6)


def test_committed_rows_survive_a_restart_and_a_crash(private_postgres: TemporaryPostgres) -> None:
    with psycopg.connect(private_postgres.dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE kept (n int)")
        connection.execute("INSERT INTO kept VALUES (1)")
    private_postgres.restart()
    private_postgres.crash()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(private_postgres.dsn, connect_timeout=2)
    private_postgres.start()
    with psycopg.connect(private_postgres.dsn) as connection:
        assert connection.execute("SELECT n FROM kept").fetchall() == [(1,)]


def test_a_killed_process_leaves_no_server_and_no_files(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, signal
        from agentrecall.testing.postgres import TemporaryPostgres
        server = TemporaryPostgres(durable=False)
        server.start()
        print(server.port, server.log_path.parent, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == -signal.SIGKILL
    port, directory = run.stdout.split()
    deadline = time.monotonic() + 60
    while Path(directory).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(directory).exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2)


def test_binaries_that_do_not_run_are_reported_with_the_failing_step(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("initdb", "pg_ctl"):
        (fake / name).write_text("#!/bin/sh\necho 'no cluster for you' >&2\nexit 3\n")
        (fake / name).chmod(0o755)
    tmp_path.chmod(0o755)
    before = set(Path(tempfile.gettempdir()).glob("agentrecall-postgres-*"))
    server = TemporaryPostgres(bin_dir=fake)
    with pytest.raises(PostgresStartError, match="initdb failed with status 3: no cluster"):
        server.start()
    assert set(Path(tempfile.gettempdir()).glob("agentrecall-postgres-*")) <= before
