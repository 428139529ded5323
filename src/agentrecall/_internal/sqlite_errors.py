"""Naming SQLite failures: which file, what went wrong, and what the user can do about it."""

from __future__ import annotations

import os
import shutil
import sqlite3

from agentrecall._internal.sqlite_reading import SIDE_FILES
from agentrecall.errors import StorageError

# Primary result codes (https://www.sqlite.org/rescode.html), and the text SQLite gives each,
# for Python 3.10, whose sqlite3 exceptions carry no code.
_READONLY, _IOERR, _CORRUPT, _FULL, _NOTADB = 8, 10, 11, 13, 26
_CODE_TEXTS = [
    (_READONLY, "attempt to write a readonly database"),
    (_IOERR, "disk I/O error"),
    (_CORRUPT, "database disk image is malformed"),
    (_CORRUPT, "malformed database schema"),
    (_FULL, "database or disk is full"),
    (_NOTADB, "file is not a database"),
]

# Below this much free space, an I/O error is put down to the full disk: SQLite needs 32 KiB
# for the WAL index (-shm) and a page per WAL frame, and reports some failures to get them as
# "disk I/O error" (e.g. SQLITE_IOERR_SHMSIZE), not as SQLITE_FULL.
_NEARLY_FULL_BYTES = 1024 * 1024


def primary_code(error: sqlite3.Error) -> int | None:
    """Return the primary SQLite result code of ``error`` (``SQLITE_FULL`` is 13), if known."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    message = str(error)
    return next((code for code, text in _CODE_TEXTS if text in message), None)


def is_full(error: BaseException) -> bool:
    """Whether ``error``, a :class:`StorageError` from a database call, is SQLITE_FULL.

    SQLite says "database or disk is full": no room on the disk, or the page limit reached.
    """
    return _cause_code(error) == _FULL


def is_read_only(error: BaseException) -> bool:
    """Whether ``error``, a :class:`StorageError` from a database call, is SQLITE_READONLY.

    The file (or its directory) may not be written by this process, or it was opened read-only.
    """
    return _cause_code(error) == _READONLY


def is_damage(error: sqlite3.Error) -> bool:
    """Whether SQLite found the file damaged, or not a database at all."""
    return primary_code(error) in (_CORRUPT, _NOTADB)


def damaged(path: str, what: str, detail: str) -> StorageError:
    """The error for a damaged file, saying how to get its contents back."""
    return StorageError(
        f"{what} '{path}' is damaged ({detail}); agentrecall does not write to it: restore it "
        f"from a backup, or save what it still holds with `sqlite3 '{path}' .recover | sqlite3 "
        f"recovered.db` and point the {what} at the recovered file"
    )


def describe(error: sqlite3.Error, path: str, what: str) -> StorageError:
    """Return ``error`` as a :class:`StorageError` that names ``path`` and the likely cause."""
    code = primary_code(error)
    if code == _NOTADB:
        return StorageError(
            f"'{path}' is not an SQLite database; point the {what} at a new file "
            f"or at one agentrecall created ({error})"
        )
    if code == _CORRUPT:
        return damaged(path, what, str(error))
    if code == _READONLY:
        return _read_only(error, path, what)
    if code in (_FULL, _IOERR):
        free = _free_bytes(path)
        if free is not None and free < _NEARLY_FULL_BYTES:
            left = "no space left" if free < 1024 else f"{free // 1024} KiB free"
            return StorageError(
                f"{what} '{path}': the disk is full ({left}); make room and try again ({error})"
            )
    return StorageError(f"{what} '{path}': {error}")


def _read_only(error: sqlite3.Error, path: str, what: str) -> StorageError:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(f"{path}-shm") and not os.access(directory, os.W_OK):
        # SQLite reports a directory it cannot create these files in as a read-only database,
        # even for a read (SQLITE_READONLY_DIRECTORY).
        return StorageError(
            f"cannot use {what} '{path}': SQLite keeps '{path}-wal' and '{path}-shm' beside a "
            f"WAL database, also to read it, and cannot create them because directory "
            f"'{directory}' is not writable by this process; make the directory writable ({error})"
        )
    foreign = _foreign_side_files(path)
    if foreign:
        named = " and ".join(f"'{name}' (uid {uid})" for name, uid in foreign)
        return StorageError(
            f"cannot write {what} '{path}': SQLite keeps its log in {named}, which belong to "
            f"another user and may not be written by this process (a read-only reader running "
            f"as that user created them); have that user or an administrator remove them while "
            f"no process has the database open ({error})"
        )
    return StorageError(
        f"{what} '{path}' is not writable by this process; change the file's permissions to "
        f"write to it ({error})"
    )


def _foreign_side_files(path: str) -> list[tuple[str, int]]:
    """Return the ``-wal`` and ``-shm`` files beside ``path`` this process may not write.

    Only those another user owns, each with its owner's uid.
    """
    found = []
    for suffix in SIDE_FILES:
        name = f"{path}{suffix}"
        try:
            owner = os.stat(name).st_uid
        except OSError:
            continue
        if owner != os.geteuid() and not os.access(name, os.W_OK):
            found.append((name, owner))
    return found


def _cause_code(error: BaseException) -> int | None:
    cause = error.__cause__
    return primary_code(cause) if isinstance(cause, sqlite3.Error) else None


def _free_bytes(path: str) -> int | None:
    try:
        return shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
    except OSError:
        return None
