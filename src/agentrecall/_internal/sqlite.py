"""One SQLite file used with care: WAL, durable commits, waits instead of "locked", migrations.

Every agentrecall component that keeps data in SQLite goes through :class:`Database`, so they
share one discipline and may share one file: each component records its schema version in the
``agentrecall_schema`` table and applies its own append-only migrations.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

from agentrecall._internal.checkpoint import Checkpointer
from agentrecall._internal.debounce import Debouncer
from agentrecall.errors import StorageError

T = TypeVar("T")

CACHE_KIB = 64 * 1024
"""Page cache per connection, in KiB."""

CHECKPOINT_PAGES = 1_000
"""Log size (pages) past which a small write's ``COMMIT`` checkpoints (SQLite's default).

Small writes keep the log small: it is then rewritten in place, and an fsync of a file that
does not grow costs less than one that extends it (measured: a median durable add 25% faster
than with the log kept to 64 MiB and checkpointed in the background)."""

BULK_ROWS = 1_000
"""Rows one write must change to be bulk: its ``COMMIT`` does not checkpoint, a background
:class:`~agentrecall._internal.checkpoint.Checkpointer` does it while the next batch is
prepared (up to :data:`BULK_CHECKPOINT_PAGES`, when the writer does it itself)."""

BULK_CHECKPOINT_PAGES = 16_384
"""The log size (pages) past which even a bulk write's ``COMMIT`` checkpoints."""

TIDY_SETTLE = 0.02
"""Seconds without a :meth:`Database.tidy_soon` after which the deferred work runs."""

TIDY_LONGEST = 0.1
"""Seconds after a first :meth:`Database.tidy_soon` by which the deferred work runs, however
many more requests keep coming."""

# How often a statement that found the database busy beyond the busy timeout is tried again.
_BUSY_RETRIES = 5

# Primary result codes (https://www.sqlite.org/rescode.html), and the text SQLite gives each,
# for Python 3.10, whose sqlite3 exceptions carry no code.
_IOERR, _CORRUPT, _FULL, _NOTADB = 10, 11, 13, 26
_CODE_TEXTS = [
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


class Database:
    """A lazily opened connection to one SQLite file, for one component's tables.

    Guarantees:

    * nothing touches the file until the first :meth:`run`; opening creates the directory,
      refuses files that are not SQLite or belong to another application (tables but no
      ``agentrecall_schema``), refuses a schema newer than ``migrations`` know, and applies
      the missing migrations in one transaction;
    * each :meth:`run` is one transaction: it all happens or none of it does, also for
      other processes sharing the file (WAL mode);
    * a durable write is fsynced before :meth:`run` returns (``synchronous=FULL``);
    * a bulk write (:data:`BULK_ROWS`) does not wait for a checkpoint: a background thread
      copies the log into the file (:class:`~agentrecall._internal.checkpoint.Checkpointer`);
    * ``tidy``, the component's deferred upkeep, runs in a write transaction that is not
      fsynced, off the caller's path: shortly after :meth:`tidy_soon`, and when the database
      is closed (also at interpreter exit). It must leave the data correct whether it runs or
      not; a failure is left for the next request. It never waits for another connection's
      write: while one holds the file, it is tried again shortly, and this object's calls
      (a search, say) are not held up behind it;
    * a busy database is waited for (``busy_timeout`` seconds, then a few retries); SQLite's
      "database is locked" does not reach the caller unless the wait is really exhausted;
    * every SQLite failure is raised as :class:`~agentrecall.errors.StorageError` naming the
      file, with the ``sqlite3`` error chained; the message says so when the file is not an
      SQLite database, is damaged, or sits on a full disk (also when SQLite only reports a
      "disk I/O error" there). Calls are serialized per object and may come from any thread.
    """

    def __init__(
        self,
        path: str,
        *,
        component: str,
        migrations: Sequence[str],
        what: str = "database",
        busy_timeout: float = 30.0,
        functions: Mapping[str, Callable[[str], bytes | int]] | None = None,
        tidy: Callable[[sqlite3.Connection], object] | None = None,
    ) -> None:
        self.path = path
        self._tidy = tidy
        self._tidier = Debouncer(
            self._run_tidy,
            settle=TIDY_SETTLE,
            longest=TIDY_LONGEST,
            name=f"agentrecall tidy {path}",
        )
        self._functions = dict(functions or {})
        self._component = component
        self._migrations = migrations
        self._what = what
        self._busy_timeout = busy_timeout
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._checkpointer = Checkpointer(path, busy_timeout=busy_timeout)
        self._durable = True  # the connection's synchronous setting: FULL (True) or NORMAL

    def run(
        self,
        operation: Callable[[sqlite3.Connection], T],
        *,
        write: bool = False,
        durable: bool = True,
    ) -> T:
        """Run ``operation`` in one transaction and return its result.

        Args:
            operation: receives the connection; must not commit or roll back itself.
            write: take the write lock up front (``BEGIN IMMEDIATE``).
            durable: fsync the commit of a write.
        """
        with self._lock:
            for attempt in range(_BUSY_RETRIES + 1):
                try:
                    db = self._connection or self._open()
                    return self._attempt(db, operation, write=write, durable=durable)
                except sqlite3.OperationalError as error:
                    if not _is_busy(error) or attempt == _BUSY_RETRIES:
                        raise self._error(error) from error
                    time.sleep(0.05 * 2**attempt)
                except sqlite3.Error as error:
                    raise self._error(error) from error
        raise AssertionError("unreachable: the loop returns or raises")

    def _attempt(
        self,
        db: sqlite3.Connection,
        operation: Callable[[sqlite3.Connection], T],
        *,
        write: bool,
        durable: bool,
    ) -> T:
        if write and durable != self._durable:
            # Set only on a change: the pragma costs as much as a small insert.
            db.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            self._durable = durable
        before = db.total_changes
        bulk = False
        try:
            with transaction(db, write=write):
                result = operation(db)
                bulk = write and db.total_changes - before >= BULK_ROWS
                if bulk:
                    db.execute(f"PRAGMA wal_autocheckpoint = {BULK_CHECKPOINT_PAGES}")
        finally:
            if bulk:
                db.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
        if bulk:
            self._checkpointer.nudge()
        return result

    def tidy_soon(self) -> None:
        """Ask for the deferred upkeep (``tidy``) to run soon, in a background thread."""
        if self._tidy is not None:
            self._tidier.nudge()

    def _run_tidy(self) -> None:
        busy = False
        with self._lock:
            db = self._connection
            if db is None or self._tidy is None:
                return  # closed since the request, and closing did the work
            # Waiting for another writer here would hold this object's lock, and every call
            # behind it, for as long as that writer takes (a bulk import: seconds).
            db.execute("PRAGMA busy_timeout = 0")
            try:
                self._attempt(db, self._tidy, write=True, durable=False)
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise
                busy = True
            finally:
                db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        if busy:
            self._tidier.nudge()

    def close(self) -> None:
        """Run the deferred upkeep, then close the connection; the next :meth:`run` reopens."""
        # Stopped before taking the lock: its thread may be waiting for that lock.
        unserved = self._tidier.stop()
        with self._lock:
            self._close(tidy=unserved)

    def _close(self, *, tidy: bool) -> None:
        self._checkpointer.stop()
        if self._connection is not None:
            if tidy and self._tidy is not None:
                try:
                    self._attempt(self._connection, self._tidy, write=True, durable=False)
                except sqlite3.Error:
                    pass  # left for whoever opens the file next; nothing depends on it
            self._connection.close()
            self._connection = None
        _OPEN.discard(self)

    def _close_at_exit(self) -> None:
        # A daemon thread may hold the lock forever at exit; then the file stays as SQLite
        # leaves it after a crash, which the next open recovers.
        unserved = self._tidier.stop(timeout=1.0)
        if self._lock.acquire(timeout=1.0):
            try:
                self._close(tidy=unserved)
            finally:
                self._lock.release()

    def _error(self, error: sqlite3.Error) -> StorageError:
        code = primary_code(error)
        if code == _NOTADB:
            return StorageError(
                f"'{self.path}' is not an SQLite database; point the {self._what} at a new file "
                f"or at one agentrecall created ({error})"
            )
        if code == _CORRUPT:
            return StorageError(
                f"{self._what} '{self.path}' is damaged ({error}); agentrecall leaves it as it "
                f"is: restore it from a backup, or point the {self._what} at a new file"
            )
        if code in (_FULL, _IOERR):
            free = _free_bytes(self.path)
            if free is not None and free < _NEARLY_FULL_BYTES:
                left = "no space left" if free < 1024 else f"{free // 1024} KiB free"
                return StorageError(
                    f"{self._what} '{self.path}': the disk is full ({left}); make room and try "
                    f"again ({error})"
                )
        return StorageError(f"{self._what} '{self.path}': {error}")

    def _open(self) -> sqlite3.Connection:
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise StorageError(
                f"cannot create the directory of {self._what} '{self.path}': "
                f"{error.strerror or error}"
            ) from error
        db = sqlite3.connect(
            self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            for name, function in self._functions.items():
                # Deterministic, one argument: the component's own helpers for its SQL.
                db.create_function(name, 1, function, deterministic=True)
            self._check_is_ours(db)
            db.execute("PRAGMA journal_mode = WAL")
            # SQLite's default page cache is 2 MiB; B-tree inserts into large indexes then go
            # to the OS for most pages. 64 MiB keeps the hot part of a million-row store cached.
            db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            db.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
            db.execute("PRAGMA synchronous = FULL")
            self._durable = True
            self._migrate(db)
        except BaseException:
            db.close()
            raise
        self._connection = db
        _OPEN.add(self)
        return db

    def _check_is_ours(self, db: sqlite3.Connection) -> None:
        # The first read of the file: a foreign or damaged file fails here, and so does a full
        # disk (no room for the WAL index); _error tells them apart.
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if tables and "agentrecall_schema" not in tables:
            raise StorageError(
                f"'{self.path}' is an SQLite database of another application (it has tables but "
                f"none of agentrecall's); point the {self._what} at a new file"
            )

    def _migrate(self, db: sqlite3.Connection) -> None:
        latest = len(self._migrations)
        with transaction(db, write=True):
            db.execute(
                "CREATE TABLE IF NOT EXISTS agentrecall_schema "
                "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            row = db.execute(
                "SELECT version FROM agentrecall_schema WHERE component = ?", (self._component,)
            ).fetchone()
            version = 0 if row is None else row[0]
            if version > latest:
                raise StorageError(
                    f"{self._what} '{self.path}' has {self._component} schema version {version}, "
                    f"newer than this agentrecall knows ({latest}); upgrade agentrecall to open it"
                )
            for step in range(version, latest):
                for statement in _statements(self._migrations[step]):
                    db.execute(statement)
            db.execute(
                "INSERT INTO agentrecall_schema (component, version) VALUES (?, ?) "
                "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (self._component, latest),
            )


@contextmanager
def transaction(db: sqlite3.Connection, *, write: bool) -> Iterator[None]:
    """Run the ``with`` block as one transaction; roll back on any exception."""
    if write:
        # IMMEDIATE takes the write lock up front, so two writers wait instead of deadlocking.
        db.execute("BEGIN IMMEDIATE")
    else:
        db.execute("BEGIN")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        # Also after a failed COMMIT: a transaction left open would break every later call.
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies (``BEGIN ... END;``) whole."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip())
            pending = ""
    return statements


def primary_code(error: sqlite3.Error) -> int | None:
    """Return the primary SQLite result code of ``error`` (``SQLITE_FULL`` is 13), if known."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    message = str(error)
    return next((code for code, text in _CODE_TEXTS if text in message), None)


def is_full(error: BaseException) -> bool:
    """Whether ``error``, a :class:`StorageError` from :meth:`Database.run`, is SQLITE_FULL.

    SQLite says "database or disk is full": no room on the disk, or the page limit reached.
    """
    cause = error.__cause__
    return isinstance(cause, sqlite3.Error) and primary_code(cause) == _FULL


def _free_bytes(path: str) -> int | None:
    try:
        return shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
    except OSError:
        return None


_OPEN: weakref.WeakSet[Database] = weakref.WeakSet()
"""Databases with an open connection, closed at interpreter exit."""


@atexit.register
def _close_open_databases() -> None:
    """Close what is still open when Python exits.

    The last connection to close folds the write-ahead log into the database file and removes
    the ``-wal`` and ``-shm`` files, so a program that never closed its store still leaves one
    tidy file behind (nothing would be lost either way).
    """
    for database in list(_OPEN):
        database._close_at_exit()


def _is_busy(error: sqlite3.OperationalError) -> bool:
    message = str(error).lower()
    return "locked" in message or "busy" in message
