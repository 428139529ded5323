"""Opening an SQLite database: readers take no write lock, read-only opens write nothing,
damaged files take no writes, and refused files stay byte for byte as they were."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlite_checks import old_database

from agentrecall import BufferMemory, SQLiteStore, StorageError
from agentrecall._internal import sqlite as sqlite_module
from agentrecall._internal.sqlite import Database


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _integrity(path: Path) -> list[Any]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        try:
            return db.execute("PRAGMA integrity_check").fetchall()
        except sqlite3.DatabaseError as error:
            return [str(error)]


async def test_a_reader_does_not_wait_for_a_write_in_progress(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    writer = SQLiteStore(path)
    await writer.add("a note about herons")
    await writer.aclose()
    done = threading.Event()
    found: list[str] = []

    def search() -> None:
        found.extend(hit.content for hit in asyncio.run(SQLiteStore(path).search("herons")))
        done.set()

    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("INSERT INTO memory_scopes (user_id) VALUES ('someone')")
        reader = threading.Thread(target=search)
        reader.start()
        # The write lock is held until the search is done, or for longer than any wait for it.
        finished_while_held = done.wait(60)
        holder.execute("ROLLBACK")
    reader.join()
    assert finished_while_held, "the search waited for another connection's write"
    assert found == ["a note about herons"]


@pytest.mark.parametrize("writable", [True, False])
async def test_a_newer_schema_is_refused_and_left_byte_for_byte(
    tmp_path: Path, writable: bool
) -> None:
    path = tmp_path / "memory.db"
    writer = SQLiteStore(path)
    await writer.add("a note")
    await writer.aclose()
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        # In rollback mode, switching to WAL would change the file's header.
        db.execute("PRAGMA journal_mode = DELETE")
        db.execute("UPDATE agentrecall_schema SET version = 99 WHERE component = 'store'")
    before, files = _sha(path), sorted(os.listdir(tmp_path))
    with pytest.raises(StorageError, match="version 99, newer than this agentrecall knows"):
        await SQLiteStore(path, writable=writable).count()
    assert _sha(path) == before
    assert sorted(os.listdir(tmp_path)) == files


async def test_a_read_only_store_of_a_missing_file_is_empty_and_creates_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "not yet" / "memory.db"
    store = SQLiteStore(path, writable=False)
    assert await store.search("anything") == []
    assert await store.count() == 0 and await store.list() == []
    assert not path.parent.exists()
    await SQLiteStore(path).add("written later")
    # The file appeared: the read-only store now reads it.
    assert [hit.content for hit in await store.search("written")] == ["written later"]
    await store.aclose()


async def test_a_read_only_store_refuses_an_older_schema_and_leaves_it(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    old_database(path, 6, lambda db: None)
    before = _sha(path)
    with pytest.raises(StorageError, match="older than this agentrecall's.*write access"):
        await SQLiteStore(path, writable=False).search("anything")
    assert _sha(path) == before


async def _damaged_copy(tmp_path: Path) -> Path:
    """Write a store of some hundred pages, then overwrite 8 pages in its middle with garbage."""
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    await store.add_many([(f"note {i} about the river {i % 97}", None) for i in range(3000)])
    await store.aclose()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not Path(f"{path}-wal").exists()
    data = bytearray(path.read_bytes())
    pages = len(data) // 4096
    garbage = random.Random(8).randbytes(8 * 4096)
    start = pages // 2 * 4096
    data[start : start + len(garbage)] = garbage
    path.write_bytes(bytes(data))
    return path


async def test_a_damaged_database_takes_no_writes(tmp_path: Path) -> None:
    path = await _damaged_copy(tmp_path)
    before, problems = _sha(path), _integrity(path)
    assert problems != [("ok",)]
    store = SQLiteStore(path)
    for number in range(200):
        with pytest.raises(StorageError) as refused:
            await store.add(f"a new note {number}")
        assert str(refused.value).startswith(f"memory database '{path}' is damaged (")
        assert f"sqlite3 '{path}' .recover" in str(refused.value)
    await store.aclose()
    assert _sha(path) == before
    assert _integrity(path) == problems


def test_damage_a_statement_meets_stops_every_later_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As for a file too large to check before writing: damage is found when a read meets it.
    monkeypatch.setattr(sqlite_module, "QUICK_CHECK_BYTES", 0)
    path = tmp_path / "notes.db"
    db = Database(str(path), component="notes", migrations=["CREATE TABLE notes (body BLOB)"])
    rows = [(random.Random(i).randbytes(3000),) for i in range(200)]
    db.run(lambda c: c.executemany("INSERT INTO notes VALUES (?)", rows), write=True)
    db.close()
    data = bytearray(path.read_bytes())
    middle = len(data) // 4096 // 2 * 4096
    data[middle : middle + 8 * 4096] = random.Random(8).randbytes(8 * 4096)
    path.write_bytes(bytes(data))
    db = Database(str(path), component="notes", migrations=["CREATE TABLE notes (body BLOB)"])
    db.run(lambda c: c.execute("INSERT INTO notes VALUES (x'00')"), write=True)  # not checked
    with pytest.raises(StorageError, match="is damaged"):
        db.run(lambda c: c.execute("SELECT sum(length(body)) FROM notes").fetchall())
    files = {name: _sha(tmp_path / name) for name in os.listdir(tmp_path)}
    for _ in range(20):
        with pytest.raises(StorageError, match=r"is damaged .*\.recover"):
            db.run(lambda c: c.execute("INSERT INTO notes VALUES (x'00')"), write=True)
    assert {name: _sha(tmp_path / name) for name in os.listdir(tmp_path)} == files
    db.close()


async def test_taking_an_empty_file_for_a_new_database_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "memory.db"
    path.touch()
    caplog.set_level(logging.INFO, logger="agentrecall")
    store = SQLiteStore(path)
    await store.add("a note")
    await store.aclose()
    await SQLiteStore(path).add("another note")
    await SQLiteStore(path).count()
    adopted = [r for r in caplog.records if getattr(r, "agentrecall_empty_file", None)]
    assert [r.agentrecall_empty_file for r in adopted] == [str(path)]  # type: ignore[attr-defined]
    assert "was an empty file" in adopted[0].getMessage()


# --- as a user who may not write the file or its directory ----------------------------------

_AS_NOBODY = """
import asyncio, json, os, sys
from agentrecall import BufferMemory, SQLiteStore, StorageError

async def warm_up(scratch):
    # Everything the store loads lazily is loaded as root, before privileges are dropped.
    store = SQLiteStore(os.path.join(scratch, "warm.db"))
    await store.add("warm up")
    await store.search("warm")
    await store.aclose()
    buffer = BufferMemory(path=os.path.join(scratch, "warm-buffer.db"))
    await buffer.write([{"role": "user", "content": "hi"}])
    await buffer.read()
    await buffer.aclose()

async def attempt(call):
    try:
        return {"ok": await call}
    except StorageError as error:
        return {"error": str(error)}

async def main(memory, buffer_path):
    out = {}
    for writable in (True, False):
        store = SQLiteStore(memory, writable=writable)
        hits = await attempt(store.search("herons"))
        out[f"search {writable}"] = hits.get("error") or [h.content for h in hits["ok"]]
        out[f"count {writable}"] = await attempt(store.count())
        listed = await attempt(store.list())
        out[f"list {writable}"] = listed.get("error") or [r.content for r in listed["ok"]]
    out["add"] = await attempt(SQLiteStore(memory).add("a new note"))
    out["add"] = out["add"].get("error", "added")
    out["read"] = await attempt(BufferMemory(path=buffer_path).read("s"))
    print(json.dumps(out))

asyncio.run(warm_up(sys.argv[3]))
os.setgroups([]); os.setgid(65534); os.setuid(65534)
asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's own are private to root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the reader as another user")
    directory = Path(tempfile.mkdtemp(prefix="agentrecall-shared-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory)


async def _files(directory: Path) -> tuple[Path, Path]:
    memory, buffer_path = directory / "memory.db", directory / "buffer.db"
    store = SQLiteStore(memory)
    await store.add("a note about herons")
    await store.aclose()
    buffer = BufferMemory(path=buffer_path)
    await buffer.write([{"role": "user", "content": "hello"}], "s")
    await buffer.aclose()
    return memory, buffer_path


def _as_nobody(memory: Path, buffer_path: Path, scratch: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", _AS_NOBODY, str(memory), str(buffer_path), str(scratch)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    outcome: dict[str, Any] = json.loads(result.stdout)
    return outcome


def _reads_work(outcome: dict[str, Any]) -> None:
    for writable in (True, False):
        assert outcome[f"search {writable}"] == ["a note about herons"]
        assert outcome[f"count {writable}"] == {"ok": 1}
        assert outcome[f"list {writable}"] == ["a note about herons"]
    assert outcome["read"] == {"ok": [{"role": "user", "content": "hello"}]}


async def test_a_file_this_user_may_not_write_can_still_be_read(
    shared_dir: Path, tmp_path: Path
) -> None:
    memory, buffer_path = await _files(shared_dir)
    shared_dir.chmod(0o777)  # the directory is writable: SQLite can keep its -shm file there
    memory.chmod(0o444)
    buffer_path.chmod(0o444)
    before = _sha(memory)
    outcome = _as_nobody(memory, buffer_path, tmp_path)
    _reads_work(outcome)
    assert outcome["add"].startswith(f"memory database '{memory}' is not writable by this process")
    assert _sha(memory) == before


async def test_a_directory_without_room_for_the_log_is_named_as_the_cause(
    shared_dir: Path, tmp_path: Path
) -> None:
    memory, buffer_path = await _files(shared_dir)
    outcome = _as_nobody(memory, buffer_path, tmp_path)
    expected = (
        f"cannot use memory database '{memory}': SQLite keeps '{memory}-wal' and '{memory}-shm' "
        f"beside a WAL database, also to read it, and cannot create them because directory "
        f"'{shared_dir}' is not writable by this process"
    )
    assert outcome["search True"].startswith(expected)
    assert outcome["add"].startswith(expected)
    # A read-only store needs neither file while no one writes: it reads without them.
    assert outcome["search False"] == ["a note about herons"]
    assert sorted(os.listdir(shared_dir)) == ["buffer.db", "memory.db"]


async def test_a_file_another_user_has_open_can_be_read_from_a_locked_directory(
    shared_dir: Path, tmp_path: Path
) -> None:
    memory, buffer_path = await _files(shared_dir)
    # While a writer has the files open, their -wal and -shm files exist for readers to use.
    holders = [SQLiteStore(memory), BufferMemory(path=buffer_path)]
    await holders[0].count()
    await holders[1].read("s")
    try:
        _reads_work(_as_nobody(memory, buffer_path, tmp_path))
    finally:
        for holder in holders:
            await holder.aclose()
