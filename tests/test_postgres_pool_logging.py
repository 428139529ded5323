"""During a PostgreSQL outage, what the connection pool logs goes through agentrecall's
logger: nothing on stderr unless the application configures logging."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys

import pytest

from agentrecall import PostgresStore
from agentrecall._internal.pool_logging import LOGGER
from agentrecall.errors import ServerUnavailableError
from agentrecall.testing.postgres import TemporaryPostgres

# Writes, waits for the server to be stopped, fails a call, and waits until the pool has
# logged a warning about reconnecting, seen by a filter (which adds no handler, so Python's
# last-resort handler would still print it).
_OUTAGE = """
import asyncio, logging, sys
from agentrecall import PostgresStore
from agentrecall.errors import ServerUnavailableError

warned = []

class Seen(logging.Filter):
    def filter(self, record):
        if record.levelno >= logging.WARNING:
            warned.append(record.getMessage())
        return True

logging.getLogger("psycopg.pool").addFilter(Seen())

async def main():
    store = PostgresStore(sys.argv[1], name="outage")
    await store.add("written before the outage")
    print("added", flush=True)
    sys.stdin.readline()  # the server is stopped meanwhile
    try:
        await store.search("written")
    except ServerUnavailableError:
        print("unavailable", flush=True)
    while not warned:  # the pool's reconnection attempts log as they fail
        await asyncio.sleep(0.01)
    await store.aclose()
    print("warned", warned[0], flush=True)

asyncio.run(main())
"""


def test_an_outage_prints_nothing_to_stderr(private_postgres: TemporaryPostgres) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _OUTAGE, private_postgres.dsn],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline() == "added\n"
    private_postgres.stop()
    out, err = child.communicate("stopped\n", timeout=600)
    assert child.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == "unavailable"
    assert lines[1].startswith("warned error connecting in \"memory store 'outage'\"")
    assert err == ""


async def test_an_outage_is_logged_under_agentrecall(
    private_postgres: TemporaryPostgres, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    store = PostgresStore(private_postgres.dsn, name="outage")
    await store.add("written before the outage")
    private_postgres.stop()
    with pytest.raises(ServerUnavailableError):
        await store.search("written")
    while not [r for r in caplog.records if r.name == LOGGER]:
        await asyncio.sleep(0.01)  # the pool's reconnection attempts log as they fail
    await store.aclose()
    ours = [r for r in caplog.records if r.name == LOGGER]
    assert ours[0].levelno == logging.WARNING
    assert ours[0].getMessage().startswith("error connecting in \"memory store 'outage'\"")
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]


def test_other_pools_records_are_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    PostgresStore("postgresql://127.0.0.1:1/db", name="quiet")  # agentrecall's pool's name
    logging.getLogger("psycopg.pool").warning("error connecting in %r: %s", "app pool", "boom")
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("psycopg.pool", "error connecting in 'app pool': boom")
    ]
