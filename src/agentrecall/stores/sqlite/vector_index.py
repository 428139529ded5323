"""The vectors of one database file in memory, kept in step with its writers; exact cosine search.

Needs ``numpy``; :mod:`agentrecall.stores.sqlite.store` imports this module only once a store
uses vectors.

Vectors are kept as int8, one byte per dimension, each row scaled so that its largest
component is 127: a quarter of float32's size, in the file and in memory (384 MB for a million
384-dimensional vectors), and faster to search than float16, which numpy computes with in
software (``benchmarks/results/hybrid.md`` has the figures, and the recall against float32).
A search multiplies the rows by the float32 query a block at a time, converted in a small
buffer, so the matrix is never converted whole.

:class:`VectorIndex` holds the rows in blocks, each with its rows' memory numbers (``seq``),
scope numbers and inverse norms. Before each search, :meth:`VectorIndex.refresh` reads, in the
search's own read transaction, three numbers: the generation of the file's vectors, the last
entry of the change log and the highest ``seq`` with a vector. Then it reads only what changed:
the rows above the highest ``seq`` it holds, the rows the change log names, or everything when
the generation moved or the log no longer reaches back to what it last saw.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy
import numpy.typing

from agentrecall.errors import StorageError
from agentrecall.stores.sqlite.vector_sql import KEY_CHUNK, recorded

Matrix = numpy.typing.NDArray[Any]

BLOCK_ROWS = 65_536
"""Rows per block: growing by a block copies nothing that is already held."""

PASS_ROWS = 1_024
"""Rows converted to float32 at a time in a search: 1.5 MB at 384 dimensions, which stays in
the processor's cache; measured fastest of 256 to 4,096 rows."""

READ_ROWS = 8_192
"""Rows fetched from SQLite at a time when loading."""

_VECTORS = (
    "SELECT v.seq, m.scope, v.vector FROM memory_vectors AS v "
    "JOIN memories AS m ON m.seq = v.seq WHERE {where} ORDER BY v.seq"
)


def quantize(vectors: Matrix) -> list[bytes]:
    """Return each row of a float matrix as int8 bytes, scaled so its largest component is 127.

    Only directions matter (search divides by each row's norm), so the scale is not kept. A
    row of zeros, or one that is not finite, stays zeros and matches nothing.
    """
    rows = numpy.asarray(vectors, dtype=numpy.float32)
    largest = numpy.abs(rows).max(axis=1, keepdims=True) if rows.size else rows[:, :1]
    usable = numpy.isfinite(largest) & (largest > 0)
    scaled = numpy.where(usable, rows * (127.0 / numpy.where(usable, largest, 1.0)), 0.0)
    codes = numpy.rint(numpy.nan_to_num(scaled)).clip(-127, 127).astype(numpy.int8)
    return [row.tobytes() for row in codes]


def direction(vector: Matrix) -> Matrix | None:
    """Return ``vector`` as a unit float32 vector, or ``None`` if it has no direction."""
    flat = numpy.asarray(vector, dtype=numpy.float32).reshape(-1)
    norm = float(numpy.linalg.norm(flat))
    if not numpy.isfinite(norm) or norm == 0.0:
        return None
    result: Matrix = flat / norm
    return result


class _Block:
    """Up to :data:`BLOCK_ROWS` rows: int8 vectors, their seqs (-1 once dropped), scopes, norms."""

    __slots__ = ("inverse_norms", "scopes", "seqs", "used", "vectors")

    def __init__(self, dimension: int) -> None:
        self.vectors = numpy.zeros((BLOCK_ROWS, dimension), dtype=numpy.int8)
        self.seqs = numpy.full(BLOCK_ROWS, -1, dtype=numpy.int64)
        self.scopes = numpy.zeros(BLOCK_ROWS, dtype=numpy.int64)
        self.inverse_norms = numpy.zeros(BLOCK_ROWS, dtype=numpy.float32)
        self.used = 0


class VectorIndex:
    """The vectors of one file, for exact cosine search; see the module docstring.

    Not thread-safe: the store calls it from its worker thread, inside ``Database.run``.
    """

    def __init__(self, dimension: int, path: str) -> None:
        self.dimension = dimension
        self._path = path
        self._blocks: list[_Block] = []
        self._live = 0
        self._dropped = 0
        self._generation: int | None = None  # None: nothing loaded yet
        self._logged = 0  # the last change-log entry applied
        self._last_seq = 0  # the highest seq read as a new row
        self._all_seqs: Matrix | None = None  # every row's seq, in order, until rows change

    def __len__(self) -> int:
        """How many memories have a vector here."""
        return self._live

    def refresh(self, db: sqlite3.Connection) -> None:
        """Bring the rows in step with the file, reading only what changed since last time."""
        generation = recorded(db).generation
        # Separate subqueries: min and max in one SELECT would scan the table.
        oldest, newest, last_seq = db.execute(
            "SELECT (SELECT min(n) FROM memory_vector_log), (SELECT max(n) FROM memory_vector_log),"
            " (SELECT max(seq) FROM memory_vectors)"
        ).fetchone()
        behind = oldest is not None and oldest > self._logged + 1
        if generation != self._generation or behind:
            self._reload(db, generation, newest or 0)
        else:
            if newest is not None and newest > self._logged:
                changed = [
                    row[0]
                    for row in db.execute(
                        "SELECT DISTINCT seq FROM memory_vector_log WHERE n > ?", (self._logged,)
                    )
                ]
                self._logged = newest
                self._drop(changed)
                # Rows above the last seq read come in below, with the new rows.
                self._reread(db, [seq for seq in changed if seq <= self._last_seq])
            if last_seq is not None and last_seq > self._last_seq:
                self._read(db, "v.seq > ?", [self._last_seq])
        # The file's highest seq now, lower than before if the newest rows were deleted (which
        # the log said): a new memory may take their numbers, and must then count as new.
        self._last_seq = int(last_seq or 0)

    def scores(self, query: Matrix, scopes: Sequence[int] | None) -> tuple[Matrix, Matrix]:
        """Return the cosine similarity of ``query`` (a unit vector) to the rows, and their seqs.

        With ``scopes``, only rows of those scope numbers are returned. Rows dropped since the
        last compaction may be returned, with similarity ``-inf``.
        """
        query = numpy.ascontiguousarray(query, dtype=numpy.float32)
        buffer = numpy.empty((PASS_ROWS, self.dimension), dtype=numpy.float32)
        seqs = self._seqs()
        similarity = numpy.empty(len(seqs), dtype=numpy.float32)
        offset = 0
        for block in self._blocks:
            used = block.used
            for start in range(0, used, PASS_ROWS):
                stop = min(start + PASS_ROWS, used)
                rows = buffer[: stop - start]
                numpy.copyto(rows, block.vectors[start:stop], casting="unsafe")
                numpy.dot(rows, query, out=similarity[offset + start : offset + stop])
            similarity[offset : offset + used] *= block.inverse_norms[:used]
            offset += used
        if self._dropped:
            similarity[seqs < 0] = -numpy.inf
        if scopes is None:
            return similarity, seqs
        held = numpy.concatenate([block.scopes[: block.used] for block in self._blocks])
        keep = numpy.isin(held, numpy.asarray(scopes, dtype=numpy.int64))
        return similarity[keep], seqs[keep]

    def _seqs(self) -> Matrix:
        """Return the seqs of all rows in order (-1 for dropped ones), kept until they change."""
        if self._all_seqs is None:
            parts = [block.seqs[: block.used] for block in self._blocks]
            self._all_seqs = numpy.concatenate(parts) if parts else numpy.empty(0, numpy.int64)
        return self._all_seqs

    def _reload(self, db: sqlite3.Connection, generation: int, logged: int) -> None:
        self._blocks, self._live, self._dropped, self._all_seqs = [], 0, 0, None
        self._generation, self._logged = generation, logged
        self._read(db, "1", [])

    def _read(self, db: sqlite3.Connection, where: str, params: list[object]) -> None:
        cursor = db.execute(_VECTORS.format(where=where), params)
        while rows := cursor.fetchmany(READ_ROWS):
            self._append(rows)

    def _reread(self, db: sqlite3.Connection, seqs: Sequence[int]) -> None:
        for start in range(0, len(seqs), KEY_CHUNK):
            chunk = seqs[start : start + KEY_CHUNK]
            self._read(db, f"v.seq IN ({', '.join('?' * len(chunk))})", list(chunk))

    def _append(self, rows: Sequence[tuple[int, int, bytes]]) -> None:
        dimension = self.dimension
        for seq, _, blob in rows:
            if len(blob) != dimension:
                raise StorageError(
                    f"memory database '{self._path}': the vector of memory row {seq} has "
                    f"{len(blob)} values, not {dimension}; rebuild the vectors with "
                    f"'agentrecall reindex --db {self._path}'"
                )
        vectors = numpy.frombuffer(b"".join(row[2] for row in rows), dtype=numpy.int8)
        vectors = vectors.reshape(len(rows), dimension)
        seqs = numpy.fromiter((row[0] for row in rows), dtype=numpy.int64, count=len(rows))
        scopes = numpy.fromiter((row[1] for row in rows), dtype=numpy.int64, count=len(rows))
        squares = numpy.einsum("ij,ij->i", vectors, vectors, dtype=numpy.float32)
        with numpy.errstate(divide="ignore"):
            inverse = numpy.where(squares > 0, 1.0 / numpy.sqrt(squares), 0.0)
        self._place(vectors, seqs, scopes, inverse.astype(numpy.float32))

    def _drop(self, seqs: Sequence[int]) -> None:
        """Forget the rows of ``seqs``; compact once a quarter of the rows are dropped."""
        if not seqs:
            return
        self._all_seqs = None
        gone = numpy.asarray(seqs, dtype=numpy.int64)
        for block in self._blocks:
            hit = numpy.isin(block.seqs[: block.used], gone)
            count = int(hit.sum())
            if count:
                block.seqs[: block.used][hit] = -1
                self._live -= count
                self._dropped += count
        if self._dropped > max(BLOCK_ROWS, self._live) // 4:
            self._compact()

    def _compact(self) -> None:
        old, self._blocks, self._all_seqs = self._blocks, [], None
        self._live = self._dropped = 0
        for block in old:
            keep = block.seqs[: block.used] >= 0
            count = int(keep.sum())
            if count:
                self._place(
                    block.vectors[: block.used][keep],
                    block.seqs[: block.used][keep],
                    block.scopes[: block.used][keep],
                    block.inverse_norms[: block.used][keep],
                )

    def _place(self, vectors: Matrix, seqs: Matrix, scopes: Matrix, inverse: Matrix) -> None:
        self._all_seqs = None
        done = 0
        while done < len(seqs):
            if not self._blocks or self._blocks[-1].used == BLOCK_ROWS:
                self._blocks.append(_Block(self.dimension))
            block = self._blocks[-1]
            take = min(BLOCK_ROWS - block.used, len(seqs) - done)
            at = slice(block.used, block.used + take)
            block.vectors[at] = vectors[done : done + take]
            block.seqs[at] = seqs[done : done + take]
            block.scopes[at] = scopes[done : done + take]
            block.inverse_norms[at] = inverse[done : done + take]
            block.used += take
            done += take
        self._live += len(seqs)
