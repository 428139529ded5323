"""A copy into a new file killed midway leaves hidden staged files: the next copy into that
file removes them, and never those of a copy that is still running."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from agentrecall import JsonFileStore
from agentrecall.migrate import migrate_files, staged_sqlite

# Stages a copy of argv[1], writes to it, says so, then waits for its input to end (or a kill).
_STAGING = """
import asyncio, sys
from agentrecall.migrate import staged_sqlite

async def main():
    async with staged_sqlite(sys.argv[1]) as store:
        await store.add_many([(f"note {i} about herons", None) for i in range(50)])
        print("staged", flush=True)
        sys.stdin.read()
        raise SystemExit("stopped before publishing")

asyncio.run(main())
"""


def _stager(destination: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _STAGING, str(destination)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "staged\n", child.communicate()[1]
    return child


def _kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL


def _staged(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if ".migrating" in name)


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "a.json"
    store = JsonFileStore(name="memory", path=source)
    asyncio.run(store.add_many([(f"fact {i}", None) for i in range(3)]))
    return source


def test_the_next_copy_removes_what_a_killed_copy_left(tmp_path: Path) -> None:
    source, destination = _source(tmp_path), tmp_path / "b.db"
    for _ in range(2):
        _kill(_stager(destination))
    leftovers = _staged(tmp_path)
    assert [name for name in leftovers if name.endswith(".migrating")] != []
    asyncio.run(migrate_files(source, destination))
    assert _staged(tmp_path) == [] and destination.exists()


def test_a_copy_still_running_keeps_its_files(tmp_path: Path) -> None:
    source, destination = _source(tmp_path), tmp_path / "b.db"
    _kill(_stager(destination))
    running = _stager(destination)
    try:
        held = _staged(tmp_path)
        asyncio.run(migrate_files(source, destination))  # a new file, staged and published
        assert _staged(tmp_path) == held
        asyncio.run(migrate_files(source, destination))  # into the existing file
        assert _staged(tmp_path) == held
    finally:
        _kill(running)
    asyncio.run(migrate_files(source, destination))
    assert _staged(tmp_path) == []


async def test_a_finished_copy_leaves_nothing_but_the_file(tmp_path: Path) -> None:
    async with staged_sqlite(tmp_path / "b.db") as store:
        await store.add("a note")
    assert os.listdir(tmp_path) == ["b.db"]
