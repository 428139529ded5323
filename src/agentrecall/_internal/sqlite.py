"""One SQLite file used with care: WAL, durable commits, waits instead of "locked", migrations.

Every agentrecall component that keeps data in SQLite goes through :class:`Database`, so they
share one discipline and may share one file: each component records its schema version in the
``agentrecall_schema`` table and applies its own append-only migrations. A migration is an SQL
script, or a :data:`MigrationStep` for work SQL alone cannot do (or that takes long enough to
report its progress).
"""

from __future__ import annotations

import atexit
import errno
import logging
import os
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

from agentrecall._internal import forks
from agentrecall._internal.checkpoint import Checkpointer
from agentrecall._internal.debounce import Debouncer
from agentrecall._internal.sqlite_errors import damaged, describe, is_damage, is_read_only
from agentrecall._internal.sqlite_reading import Unlocked, needs_unlocked_read
from agentrecall.errors import StorageError

T = TypeVar("T")

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` while a long migration step works."""

MigrationStep = Callable[[sqlite3.Connection, str, Progress | None], None]
"""A migration written in Python: ``step(connection, path, progress)``.

It runs inside the migration's transaction and must neither commit nor roll back; ``path`` is
the database file, for messages; ``progress`` is the caller's, or ``None`` when none was given
(:meth:`Database.run`)."""

Migration = str | MigrationStep
"""One entry of a component's migrations: an SQL script or a :data:`MigrationStep`."""

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

QUICK_CHECK_BYTES = 32 * 1024 * 1024
"""Files up to this size are checked (``PRAGMA quick_check``) before this object first writes.

The check reads the whole file: measured at 1M memories (406 MiB), 0.39 s with the file in
the page cache and 1.0 s without, about 30 ms and 80 ms at this size. Larger files are not
checked up front; their damage is found when a statement reads a damaged page."""

logger = logging.getLogger(__name__)


class Database:
    """A lazily opened connection to one SQLite file, for one component's tables.

    Guarantees:

    * nothing touches the file until the first :meth:`run`; opening creates the directory,
      refuses files that are not SQLite or belong to another application (tables but no
      ``agentrecall_schema``), refuses a schema newer than ``migrations`` know (leaving the
      file byte for byte as it was), and applies the missing migrations in one transaction;
    * opening only reads unless a migration is due: a reader never waits for another
      connection's write, and a file this process may not write can still be read;
    * ``readonly`` opens the file read-only and never creates or changes anything; while the
      file does not exist (or is empty) it reads as an empty database of the latest schema,
      and a file of an older schema is refused (a writable open upgrades it). Only a missing
      file reads as empty: one that cannot be looked at (a directory this process may not
      enter, a loop of links) is a :class:`~agentrecall.errors.StorageError` naming it;
    * a read-only reader that is not the file's owner never creates its ``-wal`` and ``-shm``
      files, which the owner could then not write or (in a sticky directory such as
      ``/tmp``) remove: it uses them when they exist and otherwise reads the file without
      SQLite's locks, reading again should a write have overlapped the read
      (:mod:`~agentrecall._internal.sqlite_reading`);
    * a zero-length file is taken for a new database; when this object creates its tables
      in one, it logs that at INFO, the record carrying the path as ``agentrecall_empty_file``;
    * damage is refused: before this object first writes, a file of up to
      :data:`QUICK_CHECK_BYTES` is checked; once the check or any statement finds the file
      damaged (or not a database), every later write is refused, for the life of this object,
      with a :class:`~agentrecall.errors.StorageError` saying how to recover the data. Reads
      go on, and fail where they meet the damage;
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
      SQLite database, is damaged, may not be written (or its directory, where SQLite keeps
      the ``-wal`` and ``-shm`` files), or sits on a full disk (also when SQLite only reports
      a "disk I/O error" there). Calls are serialized per object and may come from any thread;
    * ``os.fork()`` is safe: the fork waits for a transaction in progress in another thread
      and closes the connection first (the parent reopens on its next call); the child starts
      with a fresh lock and connection and no background threads (started again on demand).
    """

    def __init__(
        self,
        path: str,
        *,
        component: str,
        migrations: Sequence[Migration],
        what: str = "database",
        busy_timeout: float = 30.0,
        functions: Mapping[str, Callable[[str], bytes | int | str]] | None = None,
        tidy: Callable[[sqlite3.Connection], object] | None = None,
        readonly: bool = False,
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
        self._readonly = readonly
        self._connection: sqlite3.Connection | None = None
        self._unlocked: Unlocked | None = None  # the file's state when read without locks
        self._stand_in = False  # the connection is an empty in-memory database: no file yet
        self._checked = False  # whether the file was checked for damage before a write
        self._damage: str | None = None  # what SQLite said when it first found damage
        self._lock = threading.Lock()
        self._checkpointer = Checkpointer(path, busy_timeout=busy_timeout)
        self._durable = True  # the connection's synchronous setting: FULL (True) or NORMAL
        forks.register(
            self,
            before=Database._before_fork,
            in_parent=Database._after_fork_in_parent,
            in_child=Database._after_fork_in_child,
        )

    def run(
        self,
        operation: Callable[[sqlite3.Connection], T],
        *,
        write: bool = False,
        durable: bool = True,
        progress: Progress | None = None,
    ) -> T:
        """Run ``operation`` in one transaction and return its result.

        Args:
            operation: receives the connection; must not commit or roll back itself.
            write: take the write lock up front (``BEGIN IMMEDIATE``).
            durable: fsync the commit of a write.
            progress: handed to the migration steps, should opening the file migrate it.
        """
        with self._lock:
            for attempt in range(_BUSY_RETRIES + 1):
                try:
                    db = self._connect_for(write, progress)
                    result = self._attempt(db, operation, write=write, durable=durable)
                    if not self._overlapped_a_write():
                        return result
                except sqlite3.OperationalError as error:
                    if self._overlapped_a_write():
                        continue
                    if not _is_busy(error) or attempt == _BUSY_RETRIES:
                        raise self._failure(error) from error
                    time.sleep(0.05 * 2**attempt)
                except sqlite3.Error as error:
                    if not self._overlapped_a_write():
                        raise self._failure(error) from error
        raise StorageError(
            f"{self._what} '{self.path}' was written to by another process during each of "
            f"{_BUSY_RETRIES + 1} reads without SQLite's locks; try again"
        )

    def _overlapped_a_write(self) -> bool:
        """Whether the last read was made without locks and may have met a write.

        If so, the connection is closed, so the next one sees the file as it is now.
        """
        if self._unlocked is None or self._unlocked.unchanged():
            return False
        self._close(tidy=False)
        return True

    def _connect_for(self, write: bool, progress: Progress | None) -> sqlite3.Connection:
        if self._stand_in and not self._absent():
            self._close(tidy=False)  # the file has appeared since: read it
        elif self._unlocked is not None and not self._unlocked.unchanged():
            self._close(tidy=False)  # written since: an immutable connection would not see it
        db = self._connection or self._open(progress)
        if write:
            self._refuse_if_damaged(db)
        return db

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

    def _refuse_if_damaged(self, db: sqlite3.Connection) -> None:
        """Raise the damage found so far; check the file first if this is the first write."""
        if not self._checked:
            self._checked = True
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            size = db.execute("PRAGMA page_size").fetchone()[0]
            if pages * size <= QUICK_CHECK_BYTES:
                # A damaged page the check meets may also raise; run() records that too.
                found = db.execute("PRAGMA quick_check(1)").fetchone()[0]
                if found != "ok":
                    self._damage = found
        if self._damage is not None:
            raise damaged(self.path, self._what, self._damage)

    def _failure(self, error: sqlite3.Error) -> StorageError:
        if is_damage(error) and self._damage is None:
            self._damage = str(error)
        return describe(error, self.path, self._what)

    def tidy_soon(self) -> None:
        """Ask for the deferred upkeep (``tidy``) to run soon, in a background thread."""
        if self._tidy is not None:
            self._tidier.nudge()

    def _run_tidy(self) -> None:
        busy = False
        with self._lock:
            db = self._connection
            if db is None or self._tidy is None:
                # Closed since the request: by close(), which did the work, or before a fork,
                # and then the next search or small write asks again.
                return
            # Waiting for another writer here would hold this object's lock, and every call
            # behind it, for as long as that writer takes (a bulk import: seconds).
            db.execute("PRAGMA busy_timeout = 0")
            try:
                self._refuse_if_damaged(db)
                self._attempt(db, self._tidy, write=True, durable=False)
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise self._failure(error) from error
                busy = True
            except sqlite3.Error as error:
                raise self._failure(error) from error
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
            if tidy and self._tidy is not None and not self._stand_in:
                try:
                    self._refuse_if_damaged(self._connection)
                    self._attempt(self._connection, self._tidy, write=True, durable=False)
                except (sqlite3.Error, StorageError):
                    pass  # left for whoever opens the file next; nothing depends on it
            self._connection.close()
            self._connection = None
            self._stand_in = False
        self._unlocked = None
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

    def _before_fork(self) -> None:
        # SQLite keeps, per process, which locks the process holds on each file it has open,
        # but POSIX locks are not inherited: a child that inherited an open connection would
        # believe it holds locks it does not, and the parent, closing last, would delete the
        # log the child still writes to. So nothing of ours is open at the fork: this waits for
        # a transaction in progress in another thread, and the next call here opens again.
        self._lock.acquire()
        try:
            self._close(tidy=False)
        except sqlite3.Error:
            pass  # the child forgets the connection instead

    def _after_fork_in_parent(self) -> None:
        self._lock.release()

    def _after_fork_in_child(self) -> None:
        # The forking thread held the lock, and now the child's only thread does.
        self._lock = threading.Lock()
        if self._connection is not None:
            # Only if the parent could not close it; closing it here would roll back or
            # checkpoint on the parent's behalf. It is kept referenced so it is never closed.
            _INHERITED.append(self._connection)
            self._connection = None
        _OPEN.discard(self)

    def _open(self, progress: Progress | None) -> sqlite3.Connection:
        if self._readonly and self._absent():
            return self._open_stand_in()
        if not self._readonly:
            self._make_directory()
        empty = os.path.isfile(self.path) and self._absent()
        db = self._connect()
        try:
            version = self._stored_version(db)
            if self._readonly and version == 0:
                db.close()  # another component's tables, or none: nothing of ours to read
                return self._open_stand_in()
            self._configure(db)
            if version < len(self._migrations):
                self._refuse_if_damaged(db)
                if self._migrate(db, progress) == 0 and empty:
                    _log_adopted(self.path, self._what)
        except BaseException:
            db.close()
            raise
        return self._opened(db)

    def _open_stand_in(self) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._add_functions(db)
        self._migrate(db, None)
        self._stand_in = True
        return self._opened(db)

    def _opened(self, db: sqlite3.Connection) -> sqlite3.Connection:
        self._connection = db
        _OPEN.add(self)
        return db

    def _absent(self) -> bool:
        """Whether the file holds no database yet: missing, or empty with no log beside it.

        Raises:
            StorageError: the file cannot be looked at (a directory on its path that this
                process may not enter, a loop of symbolic links, a file where a directory
                should be): nothing says it is missing, so it is not read as empty.
        """
        try:
            return os.path.getsize(self.path) == 0 and not os.path.lexists(f"{self.path}-wal")
        except FileNotFoundError:
            return True
        except OSError as error:
            raise StorageError(
                f"cannot look at {self._what} '{self.path}': {error.strerror or error}"
                f"{_FIXES.get(error.errno or 0, '')}"
            ) from error

    def _make_directory(self) -> None:
        directory = os.path.dirname(os.path.abspath(self.path))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise StorageError(
                f"cannot create the directory of {self._what} '{self.path}': "
                f"{error.strerror or error}"
            ) from error

    def _connect(self) -> sqlite3.Connection:
        # A file this process may not write is opened read-only by SQLite itself.
        target, uri = self.path, False
        if self._readonly:
            target, uri = f"file:{urllib.parse.quote(os.path.abspath(self.path))}?mode=ro", True
            if needs_unlocked_read(self.path, self._what):
                self._unlocked = Unlocked.of(self.path)
                if self._unlocked is not None:
                    target += "&immutable=1"
        db = sqlite3.connect(
            target,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
            uri=uri,
        )
        self._add_functions(db)
        return db

    def _add_functions(self, db: sqlite3.Connection) -> None:
        for name, function in self._functions.items():
            # Deterministic, one argument: the component's own helpers for its SQL.
            db.create_function(name, 1, function, deterministic=True)

    def _configure(self, db: sqlite3.Connection) -> None:
        if not self._readonly and db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                db.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as error:
                # A file this process may not write is read in the mode it has.
                if not is_read_only(self._failure(error)):
                    raise
        # SQLite's default page cache is 2 MiB; B-tree inserts into large indexes then go
        # to the OS for most pages. 64 MiB keeps the hot part of a million-row store cached.
        db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        db.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
        db.execute("PRAGMA synchronous = FULL")
        self._durable = True

    def _stored_version(self, db: sqlite3.Connection) -> int:
        """Return the component's schema version with plain reads, refusing foreign files.

        The first read of the file: a foreign or damaged file fails here, and so does a full
        disk (no room for the WAL index); :func:`describe` tells them apart. Nothing is written
        before the version is known to be one this code can open.
        """
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if tables and "agentrecall_schema" not in tables:
            raise StorageError(
                f"'{self.path}' is an SQLite database of another application (it has tables but "
                f"none of agentrecall's); point the {self._what} at a new file"
            )
        if not tables:
            return 0
        row = db.execute(
            "SELECT version FROM agentrecall_schema WHERE component = ?", (self._component,)
        ).fetchone()
        version = 0 if row is None else int(row[0])
        self._check_version(version)
        return version

    def _check_version(self, version: int) -> None:
        latest = len(self._migrations)
        if version > latest:
            raise StorageError(
                f"{self._what} '{self.path}' has {self._component} schema version {version}, "
                f"newer than this agentrecall knows ({latest}); upgrade agentrecall to open it"
            )
        if self._readonly and 0 < version < latest:
            raise StorageError(
                f"{self._what} '{self.path}' has {self._component} schema version {version}, "
                f"older than this agentrecall's ({latest}), and is opened read-only; open it "
                f"once with write access to upgrade it"
            )

    def _migrate(self, db: sqlite3.Connection, progress: Progress | None) -> int:
        """Bring the component's tables to the latest version; return the version found."""
        latest = len(self._migrations)
        with transaction(db, write=True):
            db.execute(
                "CREATE TABLE IF NOT EXISTS agentrecall_schema "
                "(component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            # Read again under the write lock: another process may have migrated meanwhile.
            row = db.execute(
                "SELECT version FROM agentrecall_schema WHERE component = ?", (self._component,)
            ).fetchone()
            version = 0 if row is None else row[0]
            self._check_version(version)
            for migration in self._migrations[version:]:
                if callable(migration):
                    migration(db, self.path, progress)
                    continue
                for statement in split_statements(migration):
                    db.execute(statement)
            db.execute(
                "INSERT INTO agentrecall_schema (component, version) VALUES (?, ?) "
                "ON CONFLICT (component) DO UPDATE SET version = excluded.version",
                (self._component, latest),
            )
        return int(version)


def _log_adopted(path: str, what: str) -> None:
    # A zero-length file may be a new database another process is creating this very moment,
    # or one whose contents were lost (a failed copy, a stray ``touch``): a note, not a warning.
    logger.info(
        "%s '%s' was an empty file; agentrecall created its tables in it",
        what,
        path,
        extra={"agentrecall_empty_file": path},
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


def split_statements(script: str) -> list[str]:
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


_FIXES = {
    errno.EACCES: " (a directory on its path may not be entered by this process; change the "
    "permissions or run as a user who may)",
    errno.ENOTDIR: " (a part of the path that should be a directory is a file)",
    errno.ELOOP: " (the symbolic links on its path form a loop)",
}
"""What the message of an error looking at the file adds, by ``errno``."""

_OPEN: weakref.WeakSet[Database] = weakref.WeakSet()
"""Databases with an open connection, closed at interpreter exit."""

_INHERITED: list[sqlite3.Connection] = []
"""Connections a forked child inherited open: the parent's, never to be used or closed here."""


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
