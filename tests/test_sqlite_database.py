"""How Database names SQLite failures: a foreign file, a damaged one, a full database.

The full disk itself needs a mounted tmpfs and is tested in test_full_disk.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrecall import StorageError
from agentrecall._internal.sqlite import Database
from agentrecall._internal.sqlite_errors import is_full, primary_code

MIGRATIONS = ["CREATE TABLE notes (body BLOB NOT NULL)"]


def _database(path: Path) -> Database:
    return Database(str(path), component="notes", migrations=MIGRATIONS, what="notes database")


def _fail(path: Path, operation: Callable[[sqlite3.Connection], object]) -> StorageError:
    db = _database(path)
    try:
        with pytest.raises(StorageError) as caught:
            db.run(operation, write=True)
    finally:
        db.close()
    assert str(path) in str(caught.value)
    return caught.value


def _written(path: Path, pages: int) -> bytes:
    """Return the bytes of a sound database of ``pages`` or more pages, written by Database."""
    db = _database(path)
    db.run(
        lambda c: c.executemany("INSERT INTO notes VALUES (zeroblob(4000))", [()] * pages),
        write=True,
    )
    db.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    "content",
    [b"not a database, " * 512, b"[]", bytes(range(256)) * 32],
    ids=["text", "json", "binary"],
)
def test_a_file_that_is_not_sqlite_is_called_so(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    error = _fail(path, lambda c: None)
    assert str(error) == (
        f"'{path}' is not an SQLite database; point the notes database at a new file or at one "
        "agentrecall created (file is not a database)"
    )
    assert path.read_bytes() == content


def test_a_truncated_database_is_called_damaged_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    truncated = _written(path, 20)[: 8 * 4096]
    path.write_bytes(truncated)
    error = _fail(path, lambda c: c.execute("SELECT count(*) FROM notes").fetchall())
    assert str(error) == (
        f"notes database '{path}' is damaged (database disk image is malformed); agentrecall "
        f"does not write to it: restore it from a backup, or save what it still holds with "
        f"`sqlite3 '{path}' .recover | sqlite3 recovered.db` and point the notes database at "
        "the recovered file"
    )
    assert path.read_bytes() == truncated


def test_a_full_database_on_a_roomy_disk_is_not_called_a_full_disk(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"

    def overfill(db: sqlite3.Connection) -> None:
        # SQLITE_FULL without a full disk: the database may not grow past its page limit.
        db.execute("PRAGMA max_page_count = 8")
        db.execute("INSERT INTO notes VALUES (zeroblob(100000))")

    error = _fail(path, overfill)
    assert str(error) == f"notes database '{path}': database or disk is full"
    assert is_full(error)


def test_an_io_error_on_a_roomy_disk_keeps_sqlites_words(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"

    def fail(db: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    error = _fail(path, fail)
    assert str(error) == f"notes database '{path}': disk I/O error"
    assert not is_full(error)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("disk I/O error", 10),
        ("database disk image is malformed", 11),
        ("malformed database schema (notes)", 11),
        ("database or disk is full", 13),
        ("file is not a database", 26),
        ("no such table: notes", None),
        ('fts5: malformed MATCH expression: ["a]', None),
    ],
)
def test_codes_come_from_the_message_where_python_gives_none(
    message: str, code: int | None
) -> None:
    # Python 3.10's sqlite3 exceptions carry no sqlite_errorcode.
    assert primary_code(sqlite3.OperationalError(message)) == code
