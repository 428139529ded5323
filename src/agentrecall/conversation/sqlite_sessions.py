"""Sessions in an SQLite file: durable, shared by every process that opens the file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from agentrecall._internal.checks import check_busy_timeout
from agentrecall._internal.sqlite import Database
from agentrecall._internal.sqlite_errors import is_full, is_read_only
from agentrecall.conversation.sessions import (
    COLUMNS,
    SessionRecord,
    record_from_row,
    row_from_record,
)
from agentrecall.errors import StorageError

T = TypeVar("T")

# Append-only: migration N brings a database from version N to N + 1.
_MIGRATIONS = [
    """
    CREATE TABLE buffer_sessions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL UNIQUE,
        entry_id TEXT NOT NULL,
        messages TEXT NOT NULL,
        created_at REAL NOT NULL,
        accessed_at REAL NOT NULL,
        agent_name TEXT,
        tags TEXT,
        token_count INTEGER NOT NULL
    );
    CREATE INDEX buffer_sessions_accessed ON buffer_sessions (accessed_at);
    """,
]


class SQLiteSessions:
    """Sessions in one SQLite file, in WAL mode.

    Guarantees: a ``put`` that returned is on disk (``synchronous=FULL``); every operation is
    one transaction, so processes sharing the file never see half a write and lose no write;
    a busy database is waited for (up to ``busy_timeout`` seconds), never reported as locked.
    Access times are updated without an fsync: losing one to a power cut only makes a session
    look idle a little earlier. For the same reason a read on a full disk, or of a file this
    process may not write, returns the session without recording the access, rather than
    failing. Nothing is opened until the first call.
    """

    blocking = True

    def __init__(self, path: str, *, busy_timeout: float = 30.0) -> None:
        """Configure the backend; ``busy_timeout`` is in seconds, above 0 (checked here)."""
        self.path = path
        self._db = Database(
            path,
            component="buffer",
            migrations=_MIGRATIONS,
            what="conversation database",
            busy_timeout=check_busy_timeout(busy_timeout),
        )

    def get(self, session_id: str) -> SessionRecord | None:
        """Return the session, or ``None``."""
        rows = self._run(
            lambda db: db.execute(
                f"SELECT {COLUMNS} FROM buffer_sessions WHERE session_id = ?", (session_id,)
            ).fetchall()
        )
        return record_from_row(rows[0]) if rows else None

    def put(self, record: SessionRecord, idle_before: float | None) -> SessionRecord:
        """Store ``record`` durably (see ``SessionBackend.put``)."""
        row = row_from_record(record, f"'{self.path}'")

        def write(db: sqlite3.Connection) -> SessionRecord:
            if idle_before is not None:
                db.execute(
                    "DELETE FROM buffer_sessions WHERE session_id = ? AND accessed_at < ?",
                    (record.session_id, idle_before),
                )
            stored = db.execute(
                f"INSERT INTO buffer_sessions ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET messages = excluded.messages, "
                "accessed_at = excluded.accessed_at, agent_name = excluded.agent_name, "
                "tags = excluded.tags, token_count = excluded.token_count "
                "RETURNING entry_id, created_at",
                row,
            ).fetchone()
            return replace(record, entry_id=stored[0], created_at=stored[1])

        return self._run(write, write=True)

    def access(
        self, session_id: str, when: float, idle_before: float | None
    ) -> SessionRecord | None:
        """Return the session marked accessed at ``when``, in one transaction (not fsynced)."""

        def touch(db: sqlite3.Connection) -> list[Any]:
            if idle_before is not None:
                db.execute(
                    "DELETE FROM buffer_sessions WHERE session_id = ? AND accessed_at < ?",
                    (session_id, idle_before),
                )
            return db.execute(
                "UPDATE buffer_sessions SET accessed_at = ? WHERE session_id = ? "
                f"RETURNING {COLUMNS}",
                (when, session_id),
            ).fetchall()

        try:
            rows = self._run(touch, write=True, durable=False)
        except StorageError as error:
            if not is_full(error) and not is_read_only(error):
                raise
            # The access time is a hint (it is not even fsynced), so a read must not fail for
            # want of room, or of permission, to record it: serve the session as stored, idle
            # rules applied.
            record = self.get(session_id)
            if record is None or (idle_before is not None and record.accessed_at < idle_before):
                return None
            return record
        return record_from_row(rows[0]) if rows else None

    def delete(self, session_id: str | None) -> None:
        """Remove one session, or all."""
        if session_id is None:
            self._run(lambda db: db.execute("DELETE FROM buffer_sessions"), write=True)
        else:
            self._run(
                lambda db: db.execute(
                    "DELETE FROM buffer_sessions WHERE session_id = ?", (session_id,)
                ),
                write=True,
            )

    def records(self, session_id: str | None) -> list[SessionRecord]:
        """Return one session's record (or none), or all in order of first write."""
        if session_id is not None:
            record = self.get(session_id)
            return [] if record is None else [record]
        rows = self._run(
            lambda db: db.execute(f"SELECT {COLUMNS} FROM buffer_sessions ORDER BY seq").fetchall()
        )
        return [record_from_row(row) for row in rows]

    def session_ids(self) -> set[str]:
        """Return the ids of every stored session."""
        rows = self._run(lambda db: db.execute("SELECT session_id FROM buffer_sessions").fetchall())
        return {row[0] for row in rows}

    def purge_idle(self, idle_before: float) -> None:
        """Remove sessions last accessed before ``idle_before``."""
        self._run(
            lambda db: db.execute(
                "DELETE FROM buffer_sessions WHERE accessed_at < ?", (idle_before,)
            ),
            write=True,
        )

    def close(self) -> None:
        """Close the connection; the next call opens it again."""
        self._db.close()

    def _run(
        self,
        operation: Callable[[sqlite3.Connection], T],
        *,
        write: bool = False,
        durable: bool = True,
    ) -> T:
        return self._db.run(operation, write=write, durable=durable)
