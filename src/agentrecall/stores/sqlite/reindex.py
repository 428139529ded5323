"""Rebuilding ``SQLiteStore``'s vectors: backfilling memories without one, or switching model.

The store drives the loop (:meth:`SQLiteStore.reindex`): :func:`start` once, then
:func:`pending` and :func:`store` a batch at a time, embedding each batch between the two, out
of any transaction. Each batch is its own transaction, so an interrupted reindex keeps the
batches done and running it again does the rest. Vectors are derived data: their transactions
are not fsynced, and one lost to a power cut is rebuilt by the next reindex.
"""

from __future__ import annotations

import sqlite3

from agentrecall._internal.sqlite import Database
from agentrecall.stores.sqlite import vector_sql
from agentrecall.stores.sqlite.vector_sql import PreparedVectors, VectorModel

BATCH = 1_000
"""Memories per batch when the caller gives none."""

_LACKING = "NOT EXISTS (SELECT 1 FROM memory_vectors AS v WHERE v.seq = m.seq)"


def start(db: Database, model: VectorModel) -> int:
    """Make ``model`` the file's vector model; return how many memories lack a vector then.

    Vectors another model made are all deleted, in the same transaction that records the new
    model, so the file never holds vectors of two models.
    """

    def write(connection: sqlite3.Connection) -> int:
        if vector_sql.recorded(connection).model != model:
            vector_sql.drop_all(connection, model)
        count: int = connection.execute(
            f"SELECT count(*) FROM memories AS m WHERE {_LACKING}"
        ).fetchone()[0]
        return count

    return db.run(write, write=True, durable=False)


def pending(db: Database, after: int, limit: int) -> list[tuple[int, str]]:
    """Return ``(seq, content)`` of up to ``limit`` memories past row ``after`` with no vector."""
    return db.run(
        lambda connection: connection.execute(
            f"SELECT m.seq, m.content FROM memories AS m WHERE m.seq > ? AND {_LACKING} "
            "ORDER BY m.seq LIMIT ?",
            (after, limit),
        ).fetchall()
    )


def store(db: Database, vectors: PreparedVectors, rows: list[tuple[int, str]]) -> int:
    """Store the vectors of ``rows`` whose memory still has that content; return how many.

    Raises:
        InvalidArgumentError: another process switched the file to another model meanwhile.
    """

    def write(connection: sqlite3.Connection) -> int:
        vector_sql.claim(connection, vectors.model, vectors.path)
        current: dict[int, str] = {}
        for start in range(0, len(rows), vector_sql.KEY_CHUNK):
            seqs = [seq for seq, _ in rows[start : start + vector_sql.KEY_CHUNK]]
            marks = ", ".join("?" * len(seqs))
            current.update(
                connection.execute(
                    f"SELECT seq, content FROM memories WHERE seq IN ({marks})", seqs
                ).fetchall()
            )
        fresh = [
            (seq, vectors.blobs[content]) for seq, content in rows if current.get(seq) == content
        ]
        return vector_sql.insert_at(connection, fresh)

    return db.run(write, write=True, durable=False)
