"""An SQLite store keeps working in processes forked from one that uses it, and in that one.

Each test forks while a thread of the parent keeps the store busy (small adds, whose deferred
indexing runs in the background), so forks land while some thread holds the store's locks or
is inside SQLite. A child that hangs is killed and fails the test.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import select
import signal
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentrecall import SQLiteStore

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    # Python 3.12+ warns about forking a process with threads; forking one is the point here.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

CHILDREN = 64
ROUND = 8  # children forked before the parent waits for them
CHILD_SECONDS = 60.0  # far beyond what a child needs; only a hung child gets near it


@contextmanager
def _busy(store: SQLiteStore) -> Iterator[list[int]]:
    """Keep a thread adding small batches to ``store``; yield the running count of its adds."""
    stop = threading.Event()
    added = [0]

    async def add_until_stopped() -> None:
        while not stop.is_set():
            batch = [(f"parent note {added[0] + i} about rivers", None) for i in range(3)]
            await store.add_many(batch)
            added[0] += len(batch)

    thread = threading.Thread(target=asyncio.run, args=(add_until_stopped(),))
    thread.start()
    try:
        while added[0] < 30:  # the thread and its background indexing are under way
            time.sleep(0.01)
        yield added
    finally:
        stop.set()
        thread.join()


async def _use_in_child(store: SQLiteStore, number: int) -> None:
    found = await store.search("rivers")
    assert found, "the child found none of the parent's memories"
    result = await store.add(f"child {number} writes about lakes")
    hits = await store.search(f"child {number} lakes")
    assert hits and hits[0].id == result.id


def _fork(work: Callable[[], Coroutine[Any, Any, None]]) -> int:
    """Fork a child that runs ``work()`` on an event loop of its own, then exits."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            asyncio.run(work())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def _wait(pids: list[int]) -> list[str]:
    """Wait for the children; kill those still running after the deadline. Return failures."""
    deadline = time.monotonic() + CHILD_SECONDS
    failures = []
    for pid in pids:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                if os.waitstatus_to_exitcode(status) != 0:
                    failures.append(f"child {pid} failed")
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                failures.append(f"child {pid} hung")
                break
            time.sleep(0.01)
    return failures


def _count(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return int(db.execute("SELECT count(*) FROM memories").fetchone()[0])


@pytest.mark.timeout(900)
async def test_forked_children_use_the_store_while_the_parent_keeps_it_busy(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    await store.add("a first note about rivers")
    failures: list[str] = []
    with _busy(store) as added:
        for start in range(0, CHILDREN, ROUND):
            pids = [_fork(partial(_use_in_child, store, n)) for n in range(start, start + ROUND)]
            failures += _wait(pids)
            if failures:
                break
    parent_adds = added[0]  # the thread has stopped
    assert not failures, failures
    # The parent kept working, and nothing a child or the parent wrote was lost.
    assert await store.search("child 3 lakes")
    await store.add("the parent writes after its children exited")
    assert await store.count() == 1 + parent_adds + CHILDREN + 1
    await store.aclose()
    assert _count(path) == 1 + parent_adds + CHILDREN + 1


_POOL_STORE: SQLiteStore | None = None


def _pool_task(number: int) -> int:
    assert _POOL_STORE is not None
    asyncio.run(_use_in_child(_POOL_STORE, number))
    return number


@pytest.mark.timeout(900)
async def test_a_fork_pool_uses_a_store_the_parent_created(tmp_path: Path) -> None:
    global _POOL_STORE
    store = _POOL_STORE = SQLiteStore(tmp_path / "memory.db")
    await store.add("a first note about rivers")
    context = multiprocessing.get_context("fork")
    with _busy(store):
        # One task per process, so the pool forks again and again while the parent is busy.
        pool = context.Pool(4, maxtasksperchild=1)
        try:
            done = pool.map_async(_pool_task, range(24)).get(timeout=CHILD_SECONDS * 4)
        except multiprocessing.TimeoutError:
            pool.terminate()
            pytest.fail("a forked pool worker hung")
        else:
            # Not terminate(): with maxtasksperchild, the pool's own thread may fork a worker
            # while terminate() collects the others, and join() then waits for it for ever.
            pool.close()
        finally:
            pool.join()
    assert done == list(range(24))
    assert len(await store.search("lakes", {"max_search_results": 50})) == 24
    await store.aclose()


def _signal(fd: int) -> None:
    os.write(fd, b"x")


def _await_signal(fd: int) -> bool:
    ready, _, _ = select.select([fd], [], [], CHILD_SECONDS)
    return bool(ready) and os.read(fd, 1) == b"x"


async def test_a_child_keeps_its_writes_when_the_parent_closes_the_store(tmp_path: Path) -> None:
    # SQLite's locks are per process: a child that inherited the parent's open connection
    # holds none of them, so the parent's close took it for the last connection, folded the
    # log into the file and deleted it, and the child's next commit went to the deleted log.
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    await store.add("a first note about rivers")
    to_parent, from_child = os.pipe()[::-1]
    to_child, from_parent = os.pipe()[::-1]

    async def child() -> None:
        await store.add("the child's first note")
        _signal(to_parent)
        assert _await_signal(from_parent)
        await store.add("the child's second note")

    pid = _fork(child)
    assert await store.search("rivers")  # the parent has the file open again
    assert _await_signal(from_child)
    await store.aclose()
    _signal(to_child)
    assert not _wait([pid])
    assert _count(path) == 3
