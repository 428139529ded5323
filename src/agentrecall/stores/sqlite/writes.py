"""Write-side SQL shared by ``SQLiteStore``'s operations: inserts, history, expiry."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

_INSERT = (
    "INSERT INTO memories (id, scope, user_id, agent_id, session_id, content, content_hash, "
    "metadata, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
)


def insert_rows(db: sqlite3.Connection, rows: Sequence[Sequence[Any]], conflict: str) -> int:
    """Insert memory rows (the 11 columns of ``_INSERT``), index the new ones, return how many.

    ``conflict`` is the ``ON CONFLICT`` clause that decides which rows are skipped. The new rows
    are fed to the full-text index explicitly rather than by a trigger (three to four times
    faster in bulk).
    """
    # Row ids only grow inside this write transaction: the new rows are those above ``last``.
    last = db.execute("SELECT max(seq) FROM memories").fetchone()[0] or 0
    db.executemany(_INSERT + conflict, rows)
    added: int = db.execute(
        "INSERT INTO memories_fts (rowid, content) SELECT seq, content FROM memories WHERE seq > ?",
        (last,),
    ).rowcount
    return added


def keep_versions(
    db: sqlite3.Connection,
    condition: str,
    params: list[object],
    now: str,
    change: str,
    reason: str | None,
) -> None:
    """Copy the memories matching ``condition`` (over alias ``m``) into the history."""
    db.execute(
        "INSERT INTO memory_history (id, user_id, agent_id, session_id, content, metadata, "
        "changed_at, change, reason) "
        "SELECT m.id, m.user_id, m.agent_id, m.session_id, m.content, m.metadata, ?, ?, ? "
        f"FROM memories AS m WHERE {condition}",
        [now, change, reason, *params],
    )


def purge_expired(db: sqlite3.Connection, now: str) -> None:
    """Move expired memories to the history; the partial index makes this cheap when none are."""
    expired = "m.expires_at IS NOT NULL AND m.expires_at <= ?"
    keep_versions(db, expired, [now], now, "expire", None)
    db.execute(f"DELETE FROM memories AS m WHERE {expired}", [now])
