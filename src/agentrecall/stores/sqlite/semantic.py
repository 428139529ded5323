"""Search by meaning in ``SQLiteStore``: semantic, hybrid and conversation-mode searches.

The keyword ranking is :func:`~agentrecall.stores.sqlite.search.ranked_search`, called as it
is; this module adds the vectors (:mod:`~agentrecall.stores.sqlite.vector_index`), fuses the two
rankings (:func:`agentrecall.retrieval.fusion.fuse`) and, in conversation mode, lets neighbours
help (:mod:`agentrecall.retrieval.neighbours`). Importing it needs no ``numpy``: only the vector
index it is handed does.

Every mode applies the search's conditions (scope, expiry, metadata filter, time bounds): a
semantic search ranks the scope's vectors and reads the best of them through the conditions,
reading further down the ranking until enough pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentrecall._internal.sqlite import Database
from agentrecall.retrieval.neighbours import REACH, WINDOW, conversation_ranking
from agentrecall.stores.hybrid import (
    Hit,
    entries,
    keyword_hit,
    merged,
    pool_size,
    rank,
    semantic_hit,
)
from agentrecall.stores.records import hit as candidate_hit
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite import vector_sql
from agentrecall.stores.sqlite.embedding import Embedding
from agentrecall.stores.sqlite.moments import CANDIDATE_COLUMNS, NOW, Then, row_then
from agentrecall.stores.sqlite.narrowing import Narrowing
from agentrecall.stores.sqlite.query import scope_numbers
from agentrecall.stores.sqlite.search import ranked_search
from agentrecall.types import MemoryEntry

if TYPE_CHECKING:
    from agentrecall.stores.sqlite.vector_index import Matrix, VectorIndex

SCAN_AFTER = 16_384
"""A semantic search whose conditions let too few of this many best vectors through reads the
numbers of every memory meeting them instead, and ranks only those."""


@dataclass(frozen=True, slots=True)
class Request:
    """One search: what to look for, how many, under which conditions, in which mode."""

    terms: Mapping[str, str]
    vector: Matrix | None
    limit: int
    where: str
    params: list[object]
    scope: Scope
    filtered: bool
    narrowed: Sequence[Narrowing]
    tidy: bool
    mode: str
    neighbours: bool
    session_key: str
    then: Then = NOW


class Vectors:
    """A store's embedding and the in-memory index of its file's vectors (shared by its views)."""

    def __init__(self, embedding: Embedding) -> None:
        self.embedding = embedding
        self._index: VectorIndex | None = None

    def index(self) -> VectorIndex:
        """Return the index, made on first use."""
        if self._index is None:
            from agentrecall.stores.sqlite.vector_index import VectorIndex

            self._index = VectorIndex(self.embedding.model.dimension, self.embedding.path)
        return self._index


def search(database: Database, vectors: Vectors | None, request: Request) -> list[MemoryEntry]:
    """Run ``request`` in its mode; return the hits best first, scores in their metadata.

    ``_relevanceScore`` is the BM25 score (keyword), the cosine similarity (semantic) or the
    fused score (hybrid); hybrid hits also carry ``_keywordScore`` (BM25) and
    ``_semanticScore`` (cosine), ``None`` for a part that did not find the memory. In
    conversation mode ``_relevanceScore`` is the score after neighbours helped.
    """
    pool = pool_size(request.mode, request.neighbours, request.limit)
    keyword: list[Hit] = []
    if request.mode != "semantic" and request.terms:
        keyword = [keyword_hit(entry) for entry in _keyword(database, request, pool)]
    semantic: list[Hit] = []
    if request.mode != "keyword" and vectors is not None and request.vector is not None:
        semantic = semantic_hits(database, vectors, request, pool)
        if request.then.versions is not None:
            semantic = _with_past(database, vectors, request, semantic, pool)
    ranked = rank(request.mode, request.neighbours, keyword, semantic)
    hits = merged(keyword, semantic)
    if request.neighbours:
        ranked = database.run(lambda db: _with_neighbours(db, request, ranked, hits))
    return entries(hits, ranked[: request.limit], request.mode)


def semantic_hits(database: Database, vectors: Vectors, request: Request, wanted: int) -> list[Hit]:
    """Return the ``wanted`` memories meeting the conditions closest to the query vector.

    Only memories whose cosine similarity to the query is positive are returned.
    """
    embedding, query = vectors.embedding, request.vector

    def read(db: sqlite3.Connection) -> list[Hit]:
        vector_sql.check(db, embedding.model, embedding.path)
        index = vectors.index()
        index.refresh(db)
        scopes: list[int] | None = None
        numbers = scope_numbers(request.scope)
        if numbers is not None:
            scopes = [row[0] for row in db.execute(*numbers)]
            if not scopes:
                return []
        if query is None:
            return []
        similarity, seqs = index.scores(query, scopes)
        return _best_meeting(db, similarity, seqs, wanted, request)

    return database.run(read)


def _best_meeting(
    db: sqlite3.Connection, similarity: Matrix, seqs: Matrix, wanted: int, request: Request
) -> list[Hit]:
    """Return the best ``wanted`` rows that meet the conditions, reading down the ranking."""
    import numpy

    # A vector at a right angle to the query (or beyond) shares nothing with it: the best
    # ``count`` rows are the related ones (dropped rows score -inf).
    count = int(numpy.count_nonzero(similarity > 0))
    taken = wanted
    while True:
        order = _top(similarity, seqs, min(taken, count))
        rows = _rows(db, [int(seqs[i]) for i in order], request)
        hits = [
            _hit(rows[int(seqs[i])], float(similarity[i]), request.then)
            for i in order
            if rows[int(seqs[i])] is not None
        ]
        if len(hits) >= wanted or taken >= count:
            return hits[:wanted]
        if taken >= SCAN_AFTER:
            meeting = [
                row[0]
                for row in db.execute(
                    f"SELECT m.seq FROM memories AS m WHERE {request.where}", request.params
                )
            ]
            keep = numpy.isin(seqs, numpy.asarray(meeting, dtype=numpy.int64))
            similarity, seqs = similarity[keep], seqs[keep]
            count = int(numpy.count_nonzero(similarity > 0))
        taken *= 4


def _top(similarity: Matrix, seqs: Matrix, k: int) -> Matrix:
    """Return the positions of the ``k`` highest similarities, best first, newer first on ties."""
    import numpy

    if k <= 0:
        return numpy.empty(0, dtype=numpy.int64)
    if k < len(similarity):
        part = numpy.argpartition(-similarity, k - 1)[:k]
    else:
        part = numpy.arange(len(similarity))
    order: Matrix = part[numpy.lexsort((-seqs[part], -similarity[part]))]
    return order


def _rows(db: sqlite3.Connection, seqs: Sequence[int], request: Request) -> dict[int, Any]:
    """Return ``seq -> candidate row`` for those of ``seqs`` meeting the conditions."""
    found: dict[int, Any] = {}
    for start in range(0, len(seqs), vector_sql.KEY_CHUNK):
        chunk = seqs[start : start + vector_sql.KEY_CHUNK]
        for row in db.execute(
            f"SELECT {CANDIDATE_COLUMNS} FROM memories AS m "
            f"WHERE m.seq IN ({', '.join('?' * len(chunk))}) AND {request.where}",
            [*chunk, *request.params],
        ):
            found[row[0]] = row
    return {seq: found.get(seq) for seq in seqs}


def _hit(row: Any, similarity: float, then: Then) -> Hit:
    """Return the semantic hit of a candidate row, marked if its memory was retired then."""
    row = row_then(row, then.as_of)
    hit = semantic_hit(row[1:4], similarity)
    if row[4] is not None:
        # Marked as a keyword hit is (records.hit), the score left to the ranking.
        marked = dict(candidate_hit(similarity, row).metadata or {})
        del marked["_relevanceScore"]
        hit.metadata = marked
    return hit


def _with_past(
    database: Database, vectors: Vectors, request: Request, hits: list[Hit], wanted: int
) -> list[Hit]:
    """Return the best ``wanted`` of ``hits`` and the history part's versions, by similarity.

    The versions have no stored vectors: they are embedded now, as few as were replaced
    after the moment and meet the conditions.
    """
    import numpy

    versions = request.then.versions
    query = request.vector
    if versions is None or query is None:
        return hits
    rows = database.run(lambda db: db.execute(*versions).fetchall())
    if not rows:
        return hits
    matrix = vectors.embedding.vectors([row[2] for row in rows])
    norms = numpy.linalg.norm(matrix, axis=1)
    similarity = (matrix @ query) / numpy.where(norms > 0, norms, 1.0)
    found = [
        _hit(row, float(score), request.then)
        for row, score in zip(rows, similarity, strict=True)
        if score > 0
    ]
    ranked = sorted([*hits, *found], key=lambda hit: -(hit.semantic or 0.0))
    return ranked[:wanted]


def _keyword(database: Database, request: Request, limit: int) -> list[MemoryEntry]:
    return ranked_search(
        database,
        request.terms,
        limit,
        request.where,
        request.params,
        request.scope,
        request.filtered,
        request.narrowed,
        request.tidy,
        request.then,
    )


# A memory's session value as text, its JSON type first (so 1, "1" and true differ); NULL when
# the key is absent. Read inside SQLite: decoding each neighbour's metadata in Python took most
# of a search's time. json_each, as the metadata filters use it, needs no quoting of the key.
_SESSION = (
    "SELECT j.type || ':' || coalesce(j.atom, j.value, '') FROM json_each(m.metadata) AS j "
    "WHERE j.key = ?"
)


def _with_neighbours(
    db: sqlite3.Connection,
    request: Request,
    ranked: list[tuple[str, float]],
    hits: dict[str, Hit],
) -> list[tuple[str, float]]:
    """Return the ranking with neighbours' help (see :mod:`agentrecall.retrieval.neighbours`).

    Neighbours are memories meeting the search's conditions; those found only as neighbours
    are added to ``hits``.
    """
    scores = dict(ranked)
    ids = list(scores)
    places: dict[str, int] = {}
    for start in range(0, len(ids), vector_sql.KEY_CHUNK):
        chunk = ids[start : start + vector_sql.KEY_CHUNK]
        places.update(
            db.execute(
                f"SELECT id, seq FROM memories WHERE id IN ({', '.join('?' * len(chunk))})", chunk
            ).fetchall()
        )
    sessions: list[tuple[int, str, Any]] = []
    for low, high in _windows(sorted(places.values())):
        for seq, memory_id, scope, session in db.execute(
            f"SELECT m.seq, m.id, m.scope, ({_SESSION}) FROM memories AS m "
            f"WHERE m.seq BETWEEN ? AND ? AND {request.where}",
            [request.session_key, low, high, *request.params],
        ):
            sessions.append((seq, memory_id, None if session is None else (scope, session)))
    ranking = conversation_ranking(scores, sessions, request.limit)
    added = [memory_id for memory_id, _ in ranking if memory_id not in hits]
    if added:
        marks = ", ".join("?" * len(added))
        for row in db.execute(
            f"SELECT {CANDIDATE_COLUMNS} FROM memories AS m WHERE m.id IN ({marks})", added
        ):
            hit = _hit(row, 0.0, request.then)
            hits[hit.id] = Hit(hit.id, hit.content, hit.metadata)
    return [(key, score) for key, score in ranking if key in hits]


def _windows(seqs: Sequence[int]) -> list[tuple[int, int]]:
    """Return the merged ranges of row numbers that may hold a neighbour of one of ``seqs``.

    A neighbour ``WINDOW`` memories away is at most ``WINDOW * REACH`` rows away.
    """
    merged: list[tuple[int, int]] = []
    for seq in seqs:
        low, high = seq - WINDOW * REACH, seq + WINDOW * REACH
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged
