"""Work that SQLite stores hand to threads: checkpoints after bulk writes, and the store worker."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from agentrecall import StorageError
from agentrecall._internal import worker as worker_module
from agentrecall._internal.sqlite import BULK_ROWS, Database
from agentrecall._internal.worker import Worker


def _checkpoint_threads(path: Path) -> list[threading.Thread]:
    """The checkpoint threads of the database at ``path`` (other tests' stores may have some)."""
    return [t for t in threading.enumerate() if t.name == f"agentrecall checkpoint {path}"]


def _rows_in_main_file(path: Path, tmp_path: Path) -> int:
    """Count the rows the database file holds by itself, without its write-ahead log."""
    alone = tmp_path / "alone.db"
    shutil.copyfile(path, alone)
    with closing(sqlite3.connect(alone)) as db:
        try:
            return int(db.execute("SELECT count(*) FROM notes").fetchone()[0])
        except sqlite3.OperationalError:  # not even the table has been copied in yet
            return 0


def test_a_bulk_write_is_checkpointed_in_the_background(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    db = Database(str(path), component="notes", migrations=["CREATE TABLE notes (body TEXT)"])
    try:
        db.run(lambda c: c.execute("INSERT INTO notes VALUES ('small')"), write=True)
        assert not _checkpoint_threads(path)  # small writes leave checkpoints to SQLite
        rows = [(f"note {i}",) for i in range(BULK_ROWS)]
        db.run(lambda c: c.executemany("INSERT INTO notes VALUES (?)", rows), write=True)
        deadline = time.monotonic() + 60
        while _rows_in_main_file(path, tmp_path) != BULK_ROWS + 1:
            assert time.monotonic() < deadline, "the log was never copied into the file"
            time.sleep(0.01)
        assert _checkpoint_threads(path)
        # The writer's connection went back to checkpointing small writes itself.
        assert db.run(lambda c: c.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 1000
    finally:
        db.close()
    assert not _checkpoint_threads(path)  # close ends the thread and its connection


def test_the_checkpoint_setting_is_restored_when_a_bulk_commit_fails(tmp_path: Path) -> None:
    schema = (
        "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
        "CREATE TABLE n (x, p REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    db = Database(str(tmp_path / "n.db"), component="notes", migrations=[schema])

    def orphans(c: sqlite3.Connection) -> None:
        # A deferred foreign key is checked at COMMIT: the commit itself fails, after the bulk
        # write has already switched the checkpoint threshold.
        c.executemany("INSERT INTO n VALUES (?, 999)", [(i,) for i in range(BULK_ROWS)])

    try:
        db.run(lambda c: None)
        assert db._connection is not None
        db._connection.execute("PRAGMA foreign_keys = ON")
        with pytest.raises(StorageError, match="FOREIGN KEY constraint failed"):
            db.run(orphans, write=True)
        assert db.run(lambda c: c.execute("SELECT count(*) FROM n").fetchone()[0]) == 0
        assert db.run(lambda c: c.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 1000
    finally:
        db.close()


async def test_worker_returns_results_and_raises_errors_in_order() -> None:
    worker = Worker("test worker")
    seen: list[int] = []

    def job(number: int) -> int:
        seen.append(number)
        if number == 3:
            raise KeyError(number)
        return number * 10

    results = await asyncio.gather(*(worker.run(job, n) for n in range(6)), return_exceptions=True)
    assert seen == list(range(6))
    assert results[:3] == [0, 10, 20] and isinstance(results[3], KeyError)
    assert results[4:] == [40, 50]
    assert await worker.run(threading.current_thread) is not threading.current_thread()


def test_worker_serves_more_than_one_event_loop() -> None:
    worker = Worker("test worker")
    assert asyncio.run(worker.run(sum, [1, 2])) == 3
    assert asyncio.run(worker.run(max, [1, 2])) == 2


async def test_a_cancelled_caller_leaves_the_call_to_finish() -> None:
    worker = Worker("test worker")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(10)
        finished.set()

    task = asyncio.create_task(worker.run(slow))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await worker.run(finished.is_set) is True  # ran to its end, before the next call


async def test_an_idle_worker_thread_ends_and_a_new_call_starts_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_module, "IDLE_SECONDS", 0.05)
    worker = Worker("idle test worker")
    first = await worker.run(threading.current_thread)
    deadline = time.monotonic() + 60
    while first.is_alive():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    second = await worker.run(threading.current_thread)
    assert second is not first and second.name == "idle test worker"
