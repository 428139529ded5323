"""Vectors in ``PostgresStore``: kept as ``real[]``, searched through pgvector's HNSW index.

Storing a vector needs no extension: ``vectors (seq, store, embedding real[])`` is an ordinary
table (migration 2), so writes work on any server. Search by meaning needs pgvector: the
store's vectors are cast to ``vector(<dimension>)``, and an HNSW index (cosine) on exactly
that expression, partial to the store, makes a search a walk of the graph rather than a scan.
:func:`enable` creates the extension when it can, and the index; :func:`nearest` raises
:class:`SemanticUnavailableError` naming the extension when the server lacks it.

With a filter or a scope, pgvector's iterative scan (0.8 and later) reads further down the
graph until enough rows meet the conditions; an older pgvector may return fewer hits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import errors

from agentrecall.embeddings.base import Embedder
from agentrecall.embeddings.vectors import embed_checked, l2_normalize
from agentrecall.errors import InvalidArgumentError, StorageError
from agentrecall.stores.hybrid import Hit, semantic_hit
from agentrecall.stores.postgres.tables import Connection, Params, Tables

EMBED_BATCH = 1_024
"""Texts per ``embed`` call."""

EF_SEARCH = 100
"""``hnsw.ef_search`` of a search: the candidates the graph walk keeps (pgvector's default is
40); see ``docs/postgres.md`` for the recall measured against exact search."""

INSTALL = (
    "semantic and hybrid search need the pgvector extension ('vector') in the database: "
    "install it on the server and run CREATE EXTENSION vector (as a role allowed to), or "
    "search in keyword mode"
)


class SemanticUnavailableError(StorageError):
    """The database lacks the pgvector extension, which semantic and hybrid search need."""


@dataclass(frozen=True, slots=True)
class Vectors:
    """A store's embedder, and its vectors' dimension."""

    embedder: Embedder
    model_id: str
    dimension: int

    async def prepare(self, texts: Sequence[str]) -> dict[str, str]:
        """Return each distinct text's unit vector as ``real[]`` text, embedded off the loop."""
        distinct = list(dict.fromkeys(texts))
        found: dict[str, str] = {}
        for start in range(0, len(distinct), EMBED_BATCH):
            batch = distinct[start : start + EMBED_BATCH]
            rows = await asyncio.to_thread(self._unit, batch)
            found.update(zip(batch, ["{" + row + "}" for row in rows], strict=True))
        return found

    async def query(self, text: str) -> str | None:
        """Return the query's unit vector as ``vector`` text, ``None`` when it has none."""
        (row,) = await asyncio.to_thread(self._unit, [text])
        return None if not row else "[" + row + "]"

    def _unit(self, texts: list[str]) -> list[str]:
        """Return the unit vectors of ``texts`` as comma-separated numbers, ``""`` for zero."""
        vectors = l2_normalize(embed_checked(self.embedder, texts))
        return [",".join(map(repr, row)) if any(row) else "" for row in vectors.tolist()]


async def enable(connection: Connection, tables: Tables, vectors: Vectors) -> None:
    """Make the store's model this one if it holds no vectors; create the extension and index.

    Runs at setup, under the schema's advisory lock. A store holding vectors of another model
    keeps them: writes and searches with this model then raise (:func:`check_model`) until
    :func:`switch` (a reindex) replaces them. A server where the extension cannot be created
    keeps working in keyword mode.
    """
    held = await _held(connection, tables, " FOR UPDATE")
    if held != (vectors.model_id, vectors.dimension):
        cursor = await connection.execute(
            f"SELECT 1 FROM {tables.schema}.vectors WHERE store = %s LIMIT 1", [tables.store]
        )
        if await cursor.fetchone() is not None:
            return  # the index is the held model's, which a reindex replaces
        await _record(connection, tables, vectors, held[1])
    await _index(connection, tables, vectors.dimension)


async def switch(connection: Connection, tables: Tables, vectors: Vectors) -> None:
    """Make the store's model this one, deleting every vector another model made.

    Runs under the schema's advisory lock; the store's row stays locked until the transaction
    ends, so a write holding vectors of the old model (:func:`check_model`) finishes first.
    """
    held = await _held(connection, tables, " FOR UPDATE")
    if held != (vectors.model_id, vectors.dimension):
        await connection.execute(
            f"DELETE FROM {tables.schema}.vectors WHERE store = %s", [tables.store]
        )
        await _record(connection, tables, vectors, held[1])
    await _index(connection, tables, vectors.dimension)


async def check_model(connection: Connection, tables: Tables, vectors: Vectors, lock: str) -> None:
    """Refuse to write or search vectors unless the store's are this model's.

    ``lock`` is ``" FOR SHARE"`` in a write: the store's row then stays as read until the
    transaction ends, so a concurrent :func:`switch` waits for it.

    Raises:
        InvalidArgumentError: the store's vectors were made by another model or dimension.
    """
    held = await _held(connection, tables, lock)
    if held[0] is not None and held != (vectors.model_id, vectors.dimension):
        raise InvalidArgumentError(
            f"store number {tables.store} holds vectors of model '{held[0]}' (dimension "
            f"{held[1]}), and this store was given an embedder of model '{vectors.model_id}' "
            f"(dimension {vectors.dimension}); vectors of two models cannot be compared. Give "
            f"the store an embedder of model '{held[0]}', or rebuild the vectors with this "
            "one: await store.reindex()"
        )


async def _held(connection: Connection, tables: Tables, lock: str) -> tuple[Any, Any]:
    """Return the store's recorded ``(model, dimension)``, ``(None, None)`` before any."""
    cursor = await connection.execute(
        f"SELECT model, dimension FROM {tables.schema}.stores WHERE store = %s{lock}",
        [tables.store],
    )
    row = await cursor.fetchone()
    return (None, None) if row is None else (row[0], row[1])


async def _record(connection: Connection, tables: Tables, vectors: Vectors, old: Any) -> None:
    """Record the store's model, dropping the index of the old dimension (``old``)."""
    await connection.execute(
        f"UPDATE {tables.schema}.stores SET model = %s, dimension = %s WHERE store = %s",
        [vectors.model_id, vectors.dimension, tables.store],
    )
    if old is not None and int(old) != vectors.dimension:
        name = _index_name(tables, int(old))
        await connection.execute(f"DROP INDEX IF EXISTS {tables.schema}.{name}")


async def _index(connection: Connection, tables: Tables, dimension: int) -> None:
    """Create the extension if possible, and the store's HNSW index for ``dimension``.

    The index holds only vectors of that dimension: deleted vectors of another model that a
    snapshot may still see are left out rather than failing the cast (an index made before
    this condition, on the store alone, serves searches as well).
    """
    if not await _has_extension(connection):
        try:
            async with connection.transaction():
                await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except (errors.InsufficientPrivilege, errors.UndefinedFile, errors.FeatureNotSupported):
            return
    dimension = int(dimension)
    await connection.execute(
        f"CREATE INDEX IF NOT EXISTS {_index_name(tables, dimension)} "
        f"ON {tables.schema}.vectors USING hnsw ((embedding::vector({dimension})) "
        f"vector_cosine_ops) WHERE store = {int(tables.store)} "
        f"AND cardinality(embedding) = {dimension}"
    )


def _index_name(tables: Tables, dimension: int) -> str:
    """The quoted name (in the store's schema) of its HNSW index for vectors of ``dimension``."""
    return f'"vectors_hnsw_{int(tables.store)}_{int(dimension)}"'


async def store_new(
    connection: Connection, tables: Tables, rows: Sequence[tuple[int, str]], found: dict[str, str]
) -> None:
    """Store the vectors of new memories ``(seq, content)``, each its content's."""
    if rows:
        await connection.execute(
            f"INSERT INTO {tables.schema}.vectors (seq, store, embedding) "
            "SELECT seq, %s, embedding::real[] FROM unnest(%s::bigint[], %s::text[]) "
            "AS t (seq, embedding) ON CONFLICT (seq) DO UPDATE SET embedding = excluded.embedding",
            [tables.store, [seq for seq, _ in rows], [found[content] for _, content in rows]],
        )


async def nearest(
    connection: Connection,
    tables: Tables,
    vectors: Vectors,
    query: str,
    where: str,
    params: Params,
    wanted: int,
) -> list[Hit]:
    """Return the ``wanted`` memories meeting ``where`` closest to ``query``, best first.

    Only memories whose cosine similarity to the query is positive are returned.

    Raises:
        SemanticUnavailableError: the database lacks the pgvector extension.
        InvalidArgumentError: the store's vectors were made by another model.
    """
    if not await _has_extension(connection):
        raise SemanticUnavailableError(INSTALL)
    await check_model(connection, tables, vectors, "")
    dimension = int(vectors.dimension)
    cast = f"vector({dimension})"
    await connection.execute(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
    await connection.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    distance = f"(v.embedding::{cast}) <=> %s::{cast}"
    cursor = await connection.execute(
        f"SELECT m.id, m.content, m.metadata::text, 1 - ({distance}) FROM "
        f"{tables.schema}.vectors AS v JOIN {tables.memories} AS m ON m.seq = v.seq "
        f"WHERE v.store = %s AND cardinality(v.embedding) = {dimension} AND {where} "
        f"ORDER BY {distance} LIMIT %s",
        [query, tables.store, *params, query, wanted],
    )
    found: list[Any] = await cursor.fetchall()
    ranked = sorted((row for row in found if row[3] > 0), key=lambda row: -row[3])
    return [semantic_hit(row[:3], float(row[3])) for row in ranked]


async def _has_extension(connection: Connection) -> bool:
    cursor = await connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    return await cursor.fetchone() is not None
