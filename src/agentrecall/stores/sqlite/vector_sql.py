"""SQL on ``SQLiteStore``'s vectors: which model made them, writing them, logging changes.

Needs no ``numpy``: vectors arrive here as bytes, quantized by
:mod:`~agentrecall.stores.sqlite.vector_index`. The tables (migration 8):

* ``memory_vectors (seq, vector)``: a memory's vector, ``dimension`` signed bytes;
* ``memory_settings``: the row ``vectors`` holds ``{"model", "dimension", "generation"}`` as
  JSON: the model that made every vector of the file, and a number that changes whenever the
  vectors are all replaced (a reader holding them in memory then loads them again);
* ``memory_vector_log (n, seq)``: memories whose vector was removed or written other than as the
  newest (deletes and content changes, by trigger; backfills and updates, here). A reader that
  saw the log up to ``n`` drops and re-reads just those. The log keeps the last
  :data:`LOG_KEEP` entries (never fewer than one once written, so ``n`` only grows); a reader
  further behind reloads everything.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agentrecall.errors import InvalidArgumentError

LOG_KEEP = 10_000
"""Entries of ``memory_vector_log`` kept; older ones are deleted by the writes that log more."""

KEY_CHUNK = 500
"""Row numbers per ``IN (...)`` list."""


@dataclass(frozen=True, slots=True)
class VectorModel:
    """What made a set of vectors: the embedder's model id and its vectors' length."""

    model_id: str
    dimension: int

    def label(self) -> str:
        """Return ``'model' (dimension 384)`` for messages."""
        return f"'{self.model_id}' (dimension {self.dimension})"


@dataclass(frozen=True, slots=True)
class Recorded:
    """The ``vectors`` setting of a database: its model (``None`` if none yet) and generation."""

    model: VectorModel | None
    generation: int


@dataclass(frozen=True, slots=True)
class PreparedVectors:
    """Vectors made before a write transaction, to be stored with the memories it inserts.

    Attributes:
        model: the model that made them.
        path: the database file, for messages.
        blobs: each text's quantized vector, by the exact text.
    """

    model: VectorModel
    path: str
    blobs: Mapping[str, bytes]


def recorded(db: sqlite3.Connection) -> Recorded:
    """Return the database's ``vectors`` setting."""
    row = db.execute("SELECT value FROM memory_settings WHERE key = 'vectors'").fetchone()
    if row is None:
        return Recorded(None, 0)
    value = json.loads(row[0])
    return Recorded(VectorModel(value["model"], int(value["dimension"])), int(value["generation"]))


def has_vectors(db: sqlite3.Connection) -> bool:
    """Return whether any memory has a vector."""
    return db.execute("SELECT 1 FROM memory_vectors LIMIT 1").fetchone() is not None


def mismatch(path: str, held: VectorModel, wanted: VectorModel) -> InvalidArgumentError:
    """Return the error for a store whose embedder is not the model of the file's vectors."""
    return InvalidArgumentError(
        f"memory database '{path}' holds vectors made by model {held.label()}, and this store "
        f"was given an embedder of model {wanted.label()}; vectors of two models cannot be "
        f"compared. Give the store an embedder of model '{held.model_id}', or rebuild the "
        f"vectors with the new one: run 'agentrecall reindex --db {path} --embedder NAME' "
        "naming it (or await store.reindex())"
    )


def check(db: sqlite3.Connection, model: VectorModel, path: str) -> Recorded:
    """Return the setting, refusing a file whose vectors another model made.

    A file with no vectors yet may be claimed by any model (:func:`claim`).

    Raises:
        InvalidArgumentError: the file holds vectors of another model (or dimension).
    """
    found = recorded(db)
    if found.model is not None and found.model != model and has_vectors(db):
        raise mismatch(path, found.model, model)
    return found


def claim(db: sqlite3.Connection, model: VectorModel, path: str) -> None:
    """In a write transaction, make ``model`` the file's vector model if it holds no vectors.

    Recording a model that differs from the one recorded starts a new generation.

    Raises:
        InvalidArgumentError: the file holds vectors of another model.
    """
    found = check(db, model, path)
    if found.model != model:
        record(db, model, found.generation + 1)


def record(db: sqlite3.Connection, model: VectorModel, generation: int) -> None:
    """Write the ``vectors`` setting."""
    value = {"model": model.model_id, "dimension": model.dimension, "generation": generation}
    db.execute(
        "INSERT INTO memory_settings (key, value) VALUES ('vectors', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (json.dumps(value),),
    )


def insert_new(db: sqlite3.Connection, base: int, vectors: PreparedVectors) -> None:
    """Store the vectors of the memories above row ``base``, which this transaction inserted.

    Each memory gets the vector of its exact content (every inserted content was prepared).
    """
    claim(db, vectors.model, vectors.path)
    rows = db.execute("SELECT seq, content FROM memories WHERE seq > ?", (base,)).fetchall()
    blobs = vectors.blobs
    db.executemany(
        "INSERT INTO memory_vectors (seq, vector) VALUES (?, ?)",
        [(seq, blobs[content]) for seq, content in rows],
    )


def insert_at(db: sqlite3.Connection, rows: Iterable[tuple[int, bytes]]) -> int:
    """Store vectors of existing memories (not the newest rows) and log them; return how many.

    A memory that already has a vector keeps it.
    """
    written = [
        seq
        for seq, blob in rows
        if db.execute(
            "INSERT INTO memory_vectors (seq, vector) VALUES (?, ?) ON CONFLICT (seq) DO NOTHING",
            (seq, blob),
        ).rowcount
    ]
    log(db, written)
    return len(written)


def log(db: sqlite3.Connection, seqs: Iterable[int]) -> None:
    """Log vectors written or removed other than as the newest, and forget old entries."""
    db.executemany("INSERT INTO memory_vector_log (seq) VALUES (?)", [(seq,) for seq in seqs])
    forget_old(db)


def forget_old(db: sqlite3.Connection) -> None:
    """Delete log entries beyond the newest :data:`LOG_KEEP`."""
    db.execute(
        "DELETE FROM memory_vector_log WHERE n <= (SELECT max(n) FROM memory_vector_log) - ?",
        (LOG_KEEP,),
    )


def drop_all(db: sqlite3.Connection, model: VectorModel) -> None:
    """Delete every vector and make ``model`` the file's, in a new generation."""
    db.execute("DELETE FROM memory_vectors")
    record(db, model, recorded(db).generation + 1)
