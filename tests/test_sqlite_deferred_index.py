"""Small writes are indexed after their durable commit: search, edits and crashes meanwhile."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlite_checks import check_full_text_index

from agentrecall import SQLiteStore
from agentrecall._internal import sqlite as sqlite_module
from agentrecall._internal.debounce import Debouncer
from agentrecall.stores.sqlite.tables import DEFERRED_ROWS, index_unindexed

WAIT_LIMIT = 60
"""Seconds a test waits for what must happen, only so that a broken build fails, not hangs."""


def _waiting(path: Path | str) -> int:
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM memories_unindexed").fetchone()[0])


@pytest.fixture
async def held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SQLiteStore]:
    """A store whose small writes stay unindexed until the test indexes them."""
    monkeypatch.setattr(sqlite_module, "TIDY_SETTLE", 3600.0)
    monkeypatch.setattr(sqlite_module, "TIDY_LONGEST", 3600.0)
    store = SQLiteStore(tmp_path / "m.db")
    yield store
    await store.aclose()


def _index_now(store: SQLiteStore) -> None:
    store._db.run(index_unindexed, write=True)


async def _ranked(store: SQLiteStore, query: str, **options: object) -> list[tuple[str, float]]:
    hits = await store.search(query, {"max_search_results": 50}, **options)
    return [(hit.id, round(hit.metadata["_relevanceScore"], 9)) for hit in hits]


async def test_waiting_memories_are_found_and_ranked_as_if_indexed(held: SQLiteStore) -> None:
    bulk = [(f"harbour note {i} about a boat", {"i": i}) for i in range(DEFERRED_ROWS + 4)]
    await held.add_many(bulk)  # a large batch: indexed in its own transaction
    ana = held.scope(user_id="ana")
    await held.add("the red boat sails at dawn", {"i": 100})
    await ana.add("ana keeps her boat in the harbour", {"i": 101})
    await held.add_many([("a canoe and a boat", {"i": 102}), ("nothing to see", None)])
    assert _waiting(held.path) == 4
    queries = [
        ("boat", {}),
        ("harbour boat", {}),
        ("boat", {"filter": {"i": {"$gte": 100}}}),
        ("canoe", {}),
    ]
    before = [await _ranked(held, query, **options) for query, options in queries]
    ana_before = await _ranked(ana, "boat harbour")
    assert len(before[0]) == len(bulk) + 3 and len(before[2]) == 3
    assert [hit for hit, _ in ana_before] == [(await ana.list())[0].id]
    _index_now(held)
    assert _waiting(held.path) == 0
    assert [await _ranked(held, query, **options) for query, options in queries] == before
    assert await _ranked(ana, "boat harbour") == ana_before


async def test_editing_and_deleting_waiting_memories_keeps_the_index_exact(
    held: SQLiteStore,
) -> None:
    kept = await held.add("the walrus naps on ice")
    gone = await held.add("the walrus swims away")
    await held.update(kept.id, content="the seal naps on ice")
    await held.delete(gone.id)
    assert _waiting(held.path) == 1
    assert await held.search("walrus") == []
    assert [hit.id for hit in await held.search("seal")] == [kept.id]
    _index_now(held)
    # Indexed now: edits go through the index itself.
    await held.update(kept.id, content="the otter naps on ice")
    assert [hit.id for hit in await held.search("otter")] == [kept.id]
    assert await held.search("seal") == []
    again = await held.add("the walrus swims back")
    await held.delete(kept.id)
    assert [hit.id for hit in await held.search("walrus")] == [again.id]
    held._db.run(check_full_text_index, write=True)


async def test_clearing_a_store_with_waiting_memories(held: SQLiteStore) -> None:
    await held.add_many([(f"bulk {i} lemon", None) for i in range(DEFERRED_ROWS + 1)])
    await held.add("one more lemon")
    assert await held.clear() == DEFERRED_ROWS + 2
    assert _waiting(held.path) == 0 and await held.search("lemon") == []
    held._db.run(check_full_text_index, write=True)


async def test_the_index_catches_up_by_itself(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        for i in range(5):
            await store.add(f"fact {i} about kites")
        deadline = time.monotonic() + WAIT_LIMIT
        while _waiting(store.path):
            assert time.monotonic() < deadline, "the waiting memories were never indexed"
            await asyncio.sleep(0.01)
        assert len(await store.search("kites")) == 5
    finally:
        await store.aclose()


async def test_closing_indexes_what_waits(held: SQLiteStore) -> None:
    await held.add("a fact about owls")
    assert _waiting(held.path) == 1
    await held.aclose()
    assert _waiting(held.path) == 0
    with closing(sqlite3.connect(held.path)) as db:
        check_full_text_index(db)


async def test_a_read_only_store_finds_waiting_memories_and_leaves_them(
    held: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await held.add("a fact about herons")
    # The reader gets the usual delays, so a request to index would be served within the sleep.
    monkeypatch.setattr(sqlite_module, "TIDY_SETTLE", 0.02)
    monkeypatch.setattr(sqlite_module, "TIDY_LONGEST", 0.1)
    reader = SQLiteStore(held.path, writable=False)
    try:
        assert [hit.content for hit in await reader.search("herons")] == ["a fact about herons"]
        await asyncio.sleep(0.3)
        assert _waiting(held.path) == 1
    finally:
        await reader.aclose()


_KILLED_WRITER = """
import asyncio, json, sys
from agentrecall._internal import sqlite as sqlite_module
sqlite_module.TIDY_SETTLE = sqlite_module.TIDY_LONGEST = 3600.0
from agentrecall import SQLiteStore

async def main():
    store = SQLiteStore(sys.argv[1])
    for i in range(20):
        added = await store.add(f"acknowledged fact {i} about comets")
        print(json.dumps(added.id), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_memories_left_waiting_by_a_killed_writer_are_found_then_indexed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    acknowledged = [json.loads(child.stdout.readline()) for _ in range(20)]
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=WAIT_LIMIT)
    assert _waiting(path) == 20
    store = SQLiteStore(path)
    try:
        hits = await store.search("comets", {"max_search_results": 50})
        assert sorted(hit.id for hit in hits) == sorted(acknowledged)
        deadline = time.monotonic() + WAIT_LIMIT
        while _waiting(path):  # the search asked for them to be indexed
            assert time.monotonic() < deadline, "the left-over memories were never indexed"
            await asyncio.sleep(0.01)
        again = await store.search("comets", {"max_search_results": 50})
        assert sorted(hit.id for hit in again) == sorted(acknowledged)
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as db:
        check_full_text_index(db)
        db.commit()


class HandClock:
    """Seconds that move only when the test moves them, for a Debouncer's delays."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_debouncer_runs_once_for_a_burst_of_nudges() -> None:
    runs: list[float] = []
    done = threading.Event()
    clock = HandClock()

    def action() -> None:
        runs.append(clock())
        done.set()

    debouncer = Debouncer(action, settle=0.05, longest=10.0, name="test debouncer", clock=clock)
    try:
        for _ in range(5):
            debouncer.nudge()
            clock.now += 0.01
        # The last nudge came at 0.04: nothing runs before 0.09, however long the wait.
        clock.now = 0.089
        assert not done.wait(0.2)
        clock.now = 0.09
        assert done.wait(WAIT_LIMIT)
        assert debouncer.stop() is False  # nothing left unserved
        assert runs == [0.09]
    finally:
        debouncer.stop()


def test_debouncer_runs_by_the_longest_delay_under_endless_nudges() -> None:
    done = threading.Event()
    clock = HandClock()
    debouncer = Debouncer(done.set, settle=0.05, longest=0.2, name="test debouncer", clock=clock)
    try:
        # Each nudge puts the settled run 0.05 after it; only the longest delay, 0.2 after the
        # first nudge, has passed when the nudges stop at 0.3.
        for _ in range(30):
            debouncer.nudge()
            clock.now += 0.01
        assert done.wait(WAIT_LIMIT), "endless nudges postponed the run for ever"
    finally:
        debouncer.stop()


def test_debouncer_stop_reports_unserved_work_and_survives_failures() -> None:
    calls: list[int] = []

    def failing() -> None:
        calls.append(1)
        raise RuntimeError("the work failed")

    debouncer = Debouncer(failing, settle=3600.0, longest=3600.0, name="test debouncer")
    debouncer.nudge()
    assert debouncer.stop() is True and calls == []
    quick = Debouncer(failing, settle=0.0, longest=0.0, name="test debouncer")
    try:
        for _ in range(2):
            quick.nudge()
            deadline = time.monotonic() + WAIT_LIMIT
            count = len(calls)
            while len(calls) == count:
                assert time.monotonic() < deadline
                time.sleep(0.005)
    finally:
        quick.stop()


async def test_searches_do_not_wait_behind_indexing_while_another_writer_holds_the_file(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "m.db", busy_timeout=60.0)
    other = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    try:
        await store.add("a fact about lynxes")
        other.execute("BEGIN IMMEDIATE")  # another writer holds the file, as a long import would
        # Each search sees the waiting memory and asks for it to be indexed; the indexing must
        # step aside rather than hold the store's connection while it waits for the file.
        for _ in range(3):
            hits = await asyncio.wait_for(store.search("lynxes"), timeout=20)
            assert [hit.content for hit in hits] == ["a fact about lynxes"]
            await asyncio.sleep(0.15)
        assert _waiting(store.path) == 1
        other.execute("ROLLBACK")
        deadline = time.monotonic() + WAIT_LIMIT
        while _waiting(store.path):  # indexed once the file is free
            assert time.monotonic() < deadline, "the waiting memory was never indexed"
            await asyncio.sleep(0.01)
    finally:
        other.close()
        await store.aclose()
