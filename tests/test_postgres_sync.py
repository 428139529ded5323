"""``SyncStore`` over a ``PostgresStore``: a script that never closes it still ends cleanly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentrecall import PostgresStore

# A script as people write them: no close, or one more call after close (refused).
SCRIPT = """
import sys
from agentrecall import PostgresStore, StoreClosedError, SyncStore

memory = SyncStore(PostgresStore(sys.argv[1], name=sys.argv[2]))
memory.add("The user takes the 7:40 train.")
if sys.argv[3] == "after-close":
    memory.close()
    try:
        memory.add("The user changes at Utrecht.")
    except StoreClosedError:
        print("refused")
"""


@pytest.mark.asyncio
@pytest.mark.parametrize("ending", ["no-close", "after-close"])
async def test_a_facade_left_open_at_exit_closes_its_store_cleanly(
    postgres_dsn: str, ending: str
) -> None:
    name = f"left_open_{ending.replace('-', '_')}"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, postgres_dsn, name, ending],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "Task was destroyed but it is pending!"
    assert done.stdout == ("refused\n" if ending == "after-close" else "")
    async with PostgresStore(postgres_dsn, name=name) as store:
        assert await store.count() == 1
