"""Persistent stores on a real full disk: a small tmpfs filled to its last page.

The standard: a full disk gives a clear error naming the file and saying the disk is full;
nothing is half written (every operation is one transaction); a corrupt file is reported and
never overwritten; an acknowledged write survives. Each test writes some memories (they are
acknowledged), fills the file system with a filler file, tries writes, frees the space and then
checks the file with fresh objects and a fresh interpreter.

Mounting needs Linux and the right to mount (root with CAP_SYS_ADMIN); the tests skip
otherwise.
"""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlite_checks import check_full_text_index

from agentrecall import (
    BufferMemory,
    InvalidFileError,
    JsonFileStore,
    MemoryRecord,
    SQLiteStore,
    StorageError,
)
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS

KIB = 1024
DISK_KIB = 1536
CHILD_TIMEOUT = 60
TEMP_PREFIX = ".__agentrecall_tmp_"
CREATED_AT = "2024-01-01T00:00:00.000Z"
DISK_FULL = re.compile(r"disk is full|no space left on device", re.IGNORECASE)

# One fact per search word, so a search for the word must find exactly that fact first.
FACTS = {
    "biscuit": "The user's dog is named Biscuit.",
    "aisle": "The user prefers aisle seats on long flights.",
    "vegetarian": "The user is vegetarian.",
    "lisbon": "The user lives in Lisbon.",
    "violin": "The user plays the violin on weekends.",
}
CONVERSATIONS = {
    "alice": [
        {"role": "user", "content": "Book me a table for two."},
        {"role": "assistant", "content": "Done: 19:30 at Cervejaria Ramiro."},
    ],
    "bob": [
        {"role": "user", "content": "What is the capital of Portugal?"},
        {"role": "assistant", "content": "Lisbon."},
    ],
}


def _big(tag: str, kib: int = 24) -> str:
    """Content of about ``kib`` KiB whose words all carry ``tag``, so searches can find it."""
    return f"{tag} " + " ".join(f"{tag}word{i}" for i in range(kib * KIB // (len(tag) + 10)))


def _batch(tag: str, count: int = 24) -> list[tuple[str, None]]:
    return [(_big(f"{tag}{index}x"), None) for index in range(count)]


# --------------------------------------------------------------------------------------------
# the disk


class Disk:
    """A tmpfs mount that a test fills up and frees again."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self._filler = root / "filler"

    def fill(self, *, leave: int = 0) -> None:
        """Write a filler file until the file system refuses a single byte, then give back
        ``leave`` bytes (tmpfs hands out whole pages)."""
        fd = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            chunk = 256 * KIB
            while chunk:
                try:
                    os.write(fd, b"\0" * chunk)
                except OSError:
                    chunk //= 2
            os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
        finally:
            os.close(fd)
        assert self.free_bytes() == leave

    def free(self) -> None:
        self._filler.unlink()

    def free_bytes(self) -> int:
        info = os.statvfs(self.root)
        return info.f_bavail * info.f_frsize

    def used_bytes(self) -> int:
        info = os.statvfs(self.root)
        return (info.f_blocks - info.f_bfree) * info.f_frsize


@pytest.fixture(scope="session")
def tmpfs_root() -> Iterator[Path]:
    if not sys.platform.startswith("linux") or shutil.which("mount") is None:
        pytest.skip("full-disk tests mount a tmpfs: they need Linux and mount(8)")
    root = Path(tempfile.mkdtemp(prefix="agentrecall-full-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_KIB}k,mode=0700", "tmpfs", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        root.rmdir()
        why = (mounted.stderr.strip().splitlines() or [f"exit status {mounted.returncode}"])[0]
        pytest.skip(f"full-disk tests need to mount a small tmpfs (root with CAP_SYS_ADMIN): {why}")
    try:
        yield root
    finally:
        gc.collect()  # a failed test may have left a connection open, keeping the mount busy
        unmounted = subprocess.run(["umount", str(root)], capture_output=True, check=False)
        if unmounted.returncode != 0:
            subprocess.run(["umount", "--lazy", str(root)], capture_output=True, check=False)
        root.rmdir()


@pytest.fixture
def disk(tmpfs_root: Path) -> Iterator[Disk]:
    disk = Disk(tmpfs_root)
    assert not any(tmpfs_root.iterdir()), "the test disk must start empty"
    yield disk
    for entry in tmpfs_root.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    # Space still used now belongs to a deleted file someone holds open: a leaked connection.
    assert disk.used_bytes() == 0, "a file on the test disk is still open after the test"


# --------------------------------------------------------------------------------------------
# helpers


def _assert_says_disk_full(error: BaseException, path: Path, operation: str) -> None:
    message = str(error)
    assert str(path) in message, f"{operation}: the error does not name the file: {message}"
    assert DISK_FULL.search(message), f"{operation}: the error does not say why: {message}"


async def _fails_on_full_disk(
    operation: str, call: Callable[[], Awaitable[object]], path: Path
) -> None:
    with pytest.raises(StorageError) as caught:
        await call()
    _assert_says_disk_full(caught.value, path, operation)


def _child(script: str, *args: str) -> Any:
    """Run ``script`` in a fresh interpreter and return the JSON it prints."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


SQLITE_CHILD = """
import asyncio, json, sqlite3, sys
from agentrecall import SQLiteStore
from agentrecall.stores.sqlite.tables import index_unindexed

async def main(path, words):
    store = SQLiteStore(path)
    memories = {record.id: record.content for record in await store.list()}
    found = {word: [hit.id for hit in await store.search(word)] for word in words}
    await store.aclose()
    db = sqlite3.connect(path)
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    index_unindexed(db)
    db.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    db.commit()
    db.close()
    print(json.dumps({"memories": memories, "found": found, "integrity": integrity}))

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""

JSONFILE_CHILD = """
import asyncio, json, sys
from agentrecall import JsonFileStore

async def main(path, words):
    store = JsonFileStore(name="notes", path=path)
    memories = {record.id: record.content for record in await store.list()}
    found = {word: [hit.id for hit in await store.search(word)] for word in words}
    print(json.dumps({"memories": memories, "found": found}))

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""

BUFFER_CHILD = """
import asyncio, json, sys
from agentrecall import BufferMemory

async def main(path, sessions):
    async with BufferMemory(path=path) as buffer:
        read = {session: await buffer.read(session) for session in sessions}
        count = await buffer.count_sessions()
    print(json.dumps({"sessions": read, "count": count}))

asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
"""


def _sqlite_integrity(path: Path) -> None:
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        check_full_text_index(db)
        db.commit()
    finally:
        db.close()


async def _assert_sqlite_holds(path: Path, acknowledged: dict[str, str]) -> None:
    """Check, in this process and in a fresh one, that the file holds exactly ``acknowledged``
    (id -> content), that each fact is found by its word, and that the file is sound."""
    ids = {content: memory_id for memory_id, content in acknowledged.items()}
    wanted = {word: ids[fact] for word, fact in FACTS.items() if fact in ids}
    store = SQLiteStore(path)
    try:
        assert {r.id: r.content for r in await store.list()} == acknowledged
        for word, memory_id in wanted.items():
            assert [hit.id for hit in await store.search(word)][:1] == [memory_id], word
    finally:
        await store.aclose()
    _sqlite_integrity(path)
    seen = _child(SQLITE_CHILD, str(path), json.dumps(sorted(wanted)))
    assert seen["integrity"] == "ok"
    assert seen["memories"] == acknowledged
    assert {word: hits[:1] for word, hits in seen["found"].items()} == {
        word: [memory_id] for word, memory_id in wanted.items()
    }


async def _sqlite_with_facts(path: Path) -> tuple[SQLiteStore, dict[str, str]]:
    store = SQLiteStore(path)
    acknowledged = {(await store.add(fact)).id: fact for fact in FACTS.values()}
    return store, acknowledged


# --------------------------------------------------------------------------------------------
# SQLiteStore


async def test_sqlite_writes_on_a_full_disk_fail_whole_and_keep_acknowledged(disk: Disk) -> None:
    path = disk.data / "memory.db"
    store, acknowledged = await _sqlite_with_facts(path)
    first, second, *_ = acknowledged
    try:
        # Even the small writes find no room: no checkpoint has reset the WAL, so every write
        # appends frames, and a frame (page + 24 bytes) exceeds the slack in the WAL's last page.
        disk.fill()
        records = [
            MemoryRecord(id=f"imported-{i}", content=text, created_at=CREATED_AT)
            for i, (text, _) in enumerate(_batch("imported", 8))
        ]
        failing: dict[str, Callable[[], Awaitable[object]]] = {
            "add": lambda: store.add(_big("lonely")),
            "add_many": lambda: store.add_many(_batch("batched")),
            "update": lambda: store.update(first, content=_big("rewritten")),
            "update of metadata": lambda: store.update(second, metadata={"k": "v"}),
            "delete": lambda: store.delete(second),
            "delete_many": lambda: store.delete_many([first, second]),
            "clear": store.clear,
            "import_records": lambda: store.import_records(records),
        }
        for operation, call in failing.items():
            await _fails_on_full_disk(operation, call, path)
        # Reads are still served by the open store while the disk is full.
        assert await store.count() == len(FACTS)
        assert [hit.id for hit in await store.search("biscuit")] == [first]
        disk.free()
        # The same store object works again once there is space.
        added = await store.add("The user's cat is called Miso.")
        acknowledged[added.id] = "The user's cat is called Miso."
        assert await store.history(first) == [] and await store.history(second) == []
    finally:
        await store.aclose()
    await _assert_sqlite_holds(path, acknowledged)
    store = SQLiteStore(path)
    try:
        assert [hit.id for hit in await store.search("miso")] == [added.id]
        assert [hit.content for hit in await store.search("batched0x")] == []
        later = await store.add(_big("afterwards"))
        assert [hit.id for hit in await store.search("afterwards")] == [later.id]
    finally:
        await store.aclose()


async def test_sqlite_batch_that_fills_the_disk_midway_leaves_none_of_it(disk: Disk) -> None:
    path = disk.data / "memory.db"
    store, acknowledged = await _sqlite_with_facts(path)
    try:
        disk.fill(leave=128 * KIB)  # room for part of the batch, not all of it
        await _fails_on_full_disk("add_many", lambda: store.add_many(_batch("half")), path)
        # The rolled-back batch's WAL frames are reused: a small write still fits, on a disk
        # that reports no free space, and is acknowledged like any other.
        assert disk.free_bytes() == 0
        small = await store.add("The user's cat is called Miso.")
        acknowledged[small.id] = "The user's cat is called Miso."
        disk.free()
    finally:
        await store.aclose()
    await _assert_sqlite_holds(path, acknowledged)


@pytest.mark.parametrize("leave", [0, 8 * KIB, 64 * KIB], ids=["no-space", "8k", "64k"])
async def test_sqlite_first_open_on_a_full_disk_fails_then_opens(disk: Disk, leave: int) -> None:
    path = disk.data / "memory.db"
    disk.fill(leave=leave)
    store = SQLiteStore(path)
    with pytest.raises(StorageError) as caught:
        await store.setup()
    assert str(path) in str(caught.value)
    disk.free()
    try:
        await store.setup()  # the same object, after the failed open
        added = await store.add(FACTS["biscuit"])
    finally:
        await store.aclose()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        version = db.execute(
            "SELECT version FROM agentrecall_schema WHERE component = ?", (COMPONENT,)
        ).fetchone()
        assert version == (len(MIGRATIONS),)
    finally:
        db.close()
    await _assert_sqlite_holds(path, {added.id: FACTS["biscuit"]})


async def test_sqlite_reopened_on_a_full_disk_fails_then_keeps_everything(disk: Disk) -> None:
    path = disk.data / "memory.db"
    store, acknowledged = await _sqlite_with_facts(path)
    await store.aclose()  # the last connection checkpoints and removes the WAL and its index
    disk.fill()
    reopened = SQLiteStore(path)
    try:
        with pytest.raises(StorageError) as caught:
            await reopened.count()
        assert str(path) in str(caught.value)
        disk.free()
        assert await reopened.count() == len(FACTS)
    finally:
        await reopened.aclose()
    await _assert_sqlite_holds(path, acknowledged)


async def _reopen_error(disk: Disk, component: str) -> tuple[StorageError, Path]:
    """Return the error of reading a closed database again once the disk is full."""
    if component == "SQLiteStore":
        path = disk.data / "memory.db"
        store, _ = await _sqlite_with_facts(path)
        await store.aclose()
        disk.fill()
        reopened = SQLiteStore(path)
        try:
            with pytest.raises(StorageError) as caught:
                await reopened.count()
        finally:
            await reopened.aclose()
        return caught.value, path
    path = disk.data / "buffer.db"
    async with BufferMemory(path=path) as buffer:
        await buffer.write(CONVERSATIONS["alice"], "alice")
    disk.fill()
    async with BufferMemory(path=path) as buffer:
        with pytest.raises(StorageError) as caught:
            await buffer.entries()
    return caught.value, path


COMPONENTS = ["SQLiteStore", "BufferMemory"]


@pytest.mark.parametrize("component", COMPONENTS)
async def test_reopened_on_a_full_disk_is_not_called_a_foreign_file(
    disk: Disk, component: str
) -> None:
    error, _ = await _reopen_error(disk, component)
    assert "not an SQLite database" not in str(error), str(error)


@pytest.mark.parametrize("component", COMPONENTS)
async def test_reopened_on_a_full_disk_says_the_disk_is_full(disk: Disk, component: str) -> None:
    error, path = await _reopen_error(disk, component)
    _assert_says_disk_full(error, path, "reopen")


@pytest.mark.parametrize("leave", [0, 8 * KIB, 64 * KIB], ids=["no-space", "8k", "64k"])
async def test_sqlite_first_open_on_a_full_disk_says_the_disk_is_full(
    disk: Disk, leave: int
) -> None:
    path = disk.data / "memory.db"
    disk.fill(leave=leave)
    store = SQLiteStore(path)
    try:
        with pytest.raises(StorageError) as caught:
            await store.setup()
    finally:
        await store.aclose()
    _assert_says_disk_full(caught.value, path, "first open")


async def test_sqlite_corrupt_file_on_a_full_disk_is_reported_and_untouched(disk: Disk) -> None:
    path = disk.data / "memory.db"
    disk.data.mkdir()
    garbage = b"not a database, " * 512
    path.write_bytes(garbage)
    disk.fill()
    store = SQLiteStore(path)
    try:
        with pytest.raises(StorageError, match="not an SQLite database") as caught:
            await store.add(FACTS["biscuit"])
        assert str(path) in str(caught.value)
    finally:
        await store.aclose()
    disk.free()
    assert path.read_bytes() == garbage


# --------------------------------------------------------------------------------------------
# JsonFileStore


def _temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX))


async def _assert_jsonfile_holds(path: Path, acknowledged: dict[str, str]) -> None:
    ids = {content: memory_id for memory_id, content in acknowledged.items()}
    wanted = {word: ids[fact] for word, fact in FACTS.items() if fact in ids}
    store = JsonFileStore(name="notes", path=path)
    assert {r.id: r.content for r in await store.list()} == acknowledged
    for word, memory_id in wanted.items():
        assert [hit.id for hit in await store.search(word)][:1] == [memory_id], word
    seen = _child(JSONFILE_CHILD, str(path), json.dumps(sorted(wanted)))
    assert seen["memories"] == acknowledged
    assert {word: hits[:1] for word, hits in seen["found"].items()} == {
        word: [memory_id] for word, memory_id in wanted.items()
    }


async def test_jsonfile_writes_on_a_full_disk_fail_and_leave_the_file_alone(disk: Disk) -> None:
    path = disk.data / "memory.json"
    store = JsonFileStore(name="notes", path=path)
    acknowledged = {(await store.add(fact)).id: fact for fact in FACTS.values()}
    first, second, *_ = acknowledged
    before = path.read_bytes()
    disk.fill()
    records = [
        MemoryRecord(id=f"imported-{i}", content=text, created_at=CREATED_AT)
        for i, (text, _) in enumerate(_batch("imported", 4))
    ]
    failing: dict[str, Callable[[], Awaitable[object]]] = {
        "add": lambda: store.add("The user's cat is called Miso."),
        "add_many": lambda: store.add_many(_batch("batched", 8)),
        "delete": lambda: store.delete(first),
        "delete_many": lambda: store.delete_many([first, second]),
        "import_records": lambda: store.import_records(records),
    }
    for operation, call in failing.items():
        await _fails_on_full_disk(operation, call, path)
        assert path.read_bytes() == before, operation
        assert _temp_files(disk.data) == [], operation
    # Reads are still served while the disk is full.
    assert [hit.id for hit in await store.search("biscuit")] == [first]
    assert await store.count() == len(FACTS)
    disk.free()
    added = await store.add("The user's cat is called Miso.")
    acknowledged[added.id] = "The user's cat is called Miso."
    await _assert_jsonfile_holds(path, acknowledged)


async def test_jsonfile_write_that_fills_the_disk_midway_leaves_no_trace(disk: Disk) -> None:
    path = disk.data / "memory.json"
    store = JsonFileStore(name="notes", path=path)
    acknowledged = {(await store.add(fact)).id: fact for fact in FACTS.values()}
    before = path.read_bytes()
    disk.fill(leave=64 * KIB)  # the temp file gets part of the new file, then no more
    await _fails_on_full_disk("add_many", lambda: store.add_many(_batch("half", 8)), path)
    assert path.read_bytes() == before
    assert _temp_files(disk.data) == []
    assert disk.free_bytes() == 64 * KIB  # the partial temp file's space came back
    disk.free()
    await _assert_jsonfile_holds(path, acknowledged)


async def test_jsonfile_first_write_on_a_full_disk_creates_no_file(disk: Disk) -> None:
    path = disk.data / "memory.json"
    disk.fill()
    store = JsonFileStore(name="notes", path=path)
    await _fails_on_full_disk("first add", lambda: store.add(FACTS["biscuit"]), path)
    assert not path.exists()
    assert _temp_files(disk.data) == []
    disk.free()
    added = await store.add(FACTS["biscuit"])
    await _assert_jsonfile_holds(path, {added.id: FACTS["biscuit"]})


async def test_jsonfile_corrupt_file_on_a_full_disk_is_reported_and_untouched(
    disk: Disk,
) -> None:
    path = disk.data / "memory.json"
    disk.data.mkdir()
    garbage = b'[{"id": "cut off mid-'
    path.write_bytes(garbage)
    disk.fill()
    store = JsonFileStore(name="notes", path=path)
    with pytest.raises(InvalidFileError) as caught:
        await store.add(FACTS["biscuit"])
    assert caught.value.path == str(path) and str(path) in str(caught.value)
    assert path.read_bytes() == garbage
    assert _temp_files(disk.data) == []
    disk.free()


# --------------------------------------------------------------------------------------------
# BufferMemory


async def test_buffer_writes_on_a_full_disk_fail_and_keep_every_session(disk: Disk) -> None:
    path = disk.data / "buffer.db"
    async with BufferMemory(path=path) as buffer:
        for session, conversation in CONVERSATIONS.items():
            await buffer.write(conversation, session)
        disk.fill()
        grown = [*CONVERSATIONS["alice"], {"role": "user", "content": _big("longwinded", 96)}]
        failing: dict[str, Callable[[], Awaitable[object]]] = {
            "write replacing a session": lambda: buffer.write(grown, "alice"),
            "write of a new session": lambda: buffer.write(CONVERSATIONS["bob"], "carol"),
            "clear": lambda: buffer.clear("bob"),
        }
        for operation, call in failing.items():
            await _fails_on_full_disk(operation, call, path)
        # A read records the access time when there is room for it, and never fails for it.
        assert await buffer.read("alice") == CONVERSATIONS["alice"]
        disk.free()
        assert await buffer.read("alice") == CONVERSATIONS["alice"]
    async with BufferMemory(path=path) as fresh:
        assert {s: await fresh.read(s) for s in [*CONVERSATIONS, "carol"]} == {
            **CONVERSATIONS,
            "carol": [],
        }
        await fresh.write(grown, "alice")
        assert await fresh.read("alice") == grown
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    seen = _child(BUFFER_CHILD, str(path), json.dumps([*CONVERSATIONS, "carol"]))
    assert seen == {"sessions": {**CONVERSATIONS, "alice": grown, "carol": []}, "count": 2}


async def test_buffer_read_on_a_full_disk_keeps_the_idle_rules(disk: Disk) -> None:
    path = disk.data / "buffer.db"
    now = [1000.0]
    async with BufferMemory(path=path, idle_ttl=60, clock=lambda: now[0]) as buffer:
        await buffer.write(CONVERSATIONS["alice"], "alice")
        disk.fill()
        now[0] += 30
        assert await buffer.read("alice") == CONVERSATIONS["alice"]  # its access is not recorded
        now[0] += 40  # idle for 70 s by the last recorded access, 40 s by the read above
        assert await buffer.read("alice") == []
        disk.free()
        assert await buffer.read("alice") == []
    async with BufferMemory(path=path) as fresh:
        assert await fresh.entries() == []
