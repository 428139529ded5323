"""Read-only SQLite stores and other users: what counts as a missing file, and a reader that
never leaves files behind that lock the database's owner out (sticky directories like /tmp)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agentrecall import SQLiteStore, StorageError
from agentrecall._internal.sqlite_reading import Unlocked

OWNER = 40001  # any uid without a process of its own: root may take it without an account
READER = 65534  # nobody

# Runs store calls as one user: one JSON command a line on stdin, one JSON answer a line out.
_AS_USER = """
import asyncio, json, os, sys
from agentrecall import SQLiteStore, StorageError

async def main(uid, scratch):
    # What the store loads lazily is loaded before privileges are dropped (the interpreter's
    # own files may not be readable by the user).
    warm = SQLiteStore(os.path.join(scratch, f"warm-{uid}.db"))
    await warm.add("warm up")
    await warm.search("warm")
    await warm.aclose()
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
    os.umask(0o022)
    stores = {}
    for line in sys.stdin:
        command, path, *rest = json.loads(line)
        try:
            if command == "add":
                store = stores.setdefault((path, True), SQLiteStore(path))
                answer = str(await store.add(rest[0]))
            elif command == "search":
                store = stores.setdefault((path, False), SQLiteStore(path, writable=False))
                answer = [hit.content for hit in await store.search(rest[0])]
            else:
                for store in stores.values():
                    await store.aclose()
                stores.clear()
                answer = "closed"
            print(json.dumps({"ok": answer}), flush=True)
        except StorageError as error:
            print(json.dumps({"error": str(error)}), flush=True)

asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
"""


class User:
    """A process running store calls as ``uid``, answering each command before the next."""

    def __init__(self, uid: int, scratch: Path) -> None:
        self._child = subprocess.Popen(
            [sys.executable, "-c", _AS_USER, str(uid), str(scratch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def __call__(self, *command: str) -> dict[str, Any]:
        assert self._child.stdin is not None and self._child.stdout is not None
        self._child.stdin.write(json.dumps(command) + "\n")
        self._child.stdin.flush()
        line = self._child.stdout.readline()
        if not line:
            self._child.wait()
            assert self._child.stderr is not None
            raise AssertionError(self._child.stderr.read())
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        self._child.communicate(timeout=60)  # closes its input, which ends it


@pytest.fixture
def sticky_dir() -> Iterator[Path]:
    """A directory like /tmp: everyone may create files, only a file's owner may remove it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the owner and the reader as two other users")
    directory = Path(tempfile.mkdtemp(prefix="agentrecall-sticky-"))
    directory.chmod(0o1777)
    yield directory
    shutil.rmtree(directory)


@pytest.fixture
def users(tmp_path: Path) -> Iterator[tuple[User, User]]:
    owner, reader = User(OWNER, tmp_path), User(READER, tmp_path)
    yield owner, reader
    owner.close()
    reader.close()


def _side_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f"{path.name}-"))


def test_a_reader_of_another_users_store_leaves_no_files_and_sees_later_writes(
    sticky_dir: Path, users: tuple[User, User]
) -> None:
    owner, reader = users
    path = str(sticky_dir / "memory.db")
    assert "ok" in owner("add", path, "a note about herons")
    assert owner("close", path) == {"ok": "closed"}
    assert reader("search", path, "herons") == {"ok": ["a note about herons"]}
    assert _side_files(Path(path)) == []
    # The reader's connection is still open: a write of the owner's meanwhile is seen.
    assert "ok" in owner("add", path, "herons nest in colonies")
    assert owner("close", path) == {"ok": "closed"}
    found = reader("search", path, "herons")
    assert sorted(found["ok"]) == ["a note about herons", "herons nest in colonies"]
    assert reader("close", path) == {"ok": "closed"}
    assert _side_files(Path(path)) == []
    assert "ok" in owner("add", path, "a third note")


def test_a_reader_uses_the_log_of_an_owner_who_has_the_store_open(
    sticky_dir: Path, users: tuple[User, User]
) -> None:
    owner, reader = users
    path = str(sticky_dir / "memory.db")
    assert "ok" in owner("add", path, "a note about herons")
    assert _side_files(Path(path)) == ["memory.db-shm", "memory.db-wal"]
    assert reader("search", path, "herons") == {"ok": ["a note about herons"]}
    assert "ok" in owner("add", path, "herons nest in colonies")
    assert len(reader("search", path, "herons")["ok"]) == 2
    assert reader("close", path) == {"ok": "closed"}
    assert owner("close", path) == {"ok": "closed"}
    assert _side_files(Path(path)) == []


def test_a_reader_that_would_have_to_create_a_log_file_says_so(
    sticky_dir: Path, users: tuple[User, User]
) -> None:
    owner, reader = users
    path = str(sticky_dir / "memory.db")
    assert "ok" in owner("add", path, "a note about herons")
    assert owner("close", path) == {"ok": "closed"}
    shutil.copyfile(path, f"{path}-wal")  # any file: it is only looked at, never read
    os.chown(f"{path}-wal", OWNER, OWNER)
    refused = reader("search", path, "herons")["error"]
    assert refused.startswith(f"cannot read memory database '{path}' read-only: '{path}-wal'")
    assert f"without '{path}-shm'" in refused
    assert _side_files(Path(path)) == ["memory.db-wal"]


def test_the_owner_is_told_whose_log_files_stop_a_write(
    sticky_dir: Path, users: tuple[User, User]
) -> None:
    owner, _ = users
    path = str(sticky_dir / "memory.db")
    assert "ok" in owner("add", path, "a note about herons")
    assert owner("close", path) == {"ok": "closed"}
    # What a reader of another program (or of an older agentrecall) leaves behind.
    child = (
        "import os, sqlite3, sys\n"
        f"os.setgroups([]); os.setgid({READER}); os.setuid({READER})\n"
        f"db = sqlite3.connect('file:{path}?mode=ro', uri=True)\n"
        "db.execute('SELECT count(*) FROM sqlite_master').fetchall()\n"
        "db.close()\n"
    )
    subprocess.run([sys.executable, "-c", child], check=True, timeout=60)
    assert _side_files(Path(path)) == ["memory.db-shm", "memory.db-wal"]
    refused = owner("add", path, "a second note")["error"]
    assert refused.startswith(f"cannot write memory database '{path}': SQLite keeps its log in")
    assert f"'{path}-shm' (uid {READER})" in refused
    assert "belong to another user" in refused
    assert "permissions" not in refused


def test_unlocked_state_notices_a_write(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE t (x)")
    state = Unlocked.of(str(path))
    assert state is not None and state.unchanged()
    os.utime(path, ns=(0, 0))  # a checkpoint's write changes the file's times
    assert not state.unchanged()
    state = Unlocked.of(str(path))
    assert state is not None
    Path(f"{path}-wal").touch()  # a writer has begun
    assert not state.unchanged() and Unlocked.of(str(path)) is None


# --- what counts as a missing file ----------------------------------------------------------


async def test_a_path_through_a_file_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("not a directory")
    path = blocker / "memory.db"
    with pytest.raises(StorageError) as refused:
        await SQLiteStore(path, writable=False).search("anything")
    assert str(refused.value).startswith(f"cannot look at memory database '{path}': Not a direc")
    assert "is a file" in str(refused.value)


async def test_a_loop_of_links_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.symlink_to(tmp_path / "other.db")
    (tmp_path / "other.db").symlink_to(path)
    with pytest.raises(StorageError, match=f"cannot look at memory database '{path}': .*loop"):
        await SQLiteStore(path, writable=False).count()


def test_a_directory_the_reader_may_not_enter_is_an_error_not_an_empty_store(
    tmp_path: Path,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run the reader as another user")
    locked = Path(tempfile.mkdtemp(prefix="agentrecall-locked-"))
    try:
        path = str(locked / "memory.db")
        with closing(sqlite3.connect(path)) as db:
            db.execute("CREATE TABLE t (x)")
        locked.chmod(0o700)  # root's: nobody may not enter it
        reader = User(READER, tmp_path)
        try:
            refused = reader("search", path, "anything")["error"]
        finally:
            reader.close()
        assert refused.startswith(f"cannot look at memory database '{path}': Permission denied")
        assert "may not be entered" in refused
    finally:
        shutil.rmtree(locked)
