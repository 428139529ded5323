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
    """Record the store's model, and create the extension and the store's index if possible.

    Runs at setup, under the schema's advisory lock. A server where the extension cannot be
    created keeps working in keyword mode.

    Raises:
        InvalidArgumentError: the store's vectors were made by another model or dimension.
    """
    cursor = await connection.execute(
        f"UPDATE {tables.schema}.stores SET model = coalesce(model, %s), "
        "dimension = coalesce(dimension, %s) WHERE store = %s RETURNING model, dimension",
        [vectors.model_id, vectors.dimension, tables.store],
    )
    row = await cursor.fetchone()
    if row is not None and (row[0], row[1]) != (vectors.model_id, vectors.dimension):
        raise InvalidArgumentError(
            f"store number {tables.store} holds vectors of model '{row[0]}' (dimension "
            f"{row[1]}), and this store was given an embedder of model '{vectors.model_id}' "
            f"(dimension {vectors.dimension}); vectors of two models cannot be compared"
        )
    if not await _has_extension(connection):
        try:
            async with connection.transaction():
                await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except (errors.InsufficientPrivilege, errors.UndefinedFile, errors.FeatureNotSupported):
            return
    dimension = int(vectors.dimension)
    await connection.execute(
        f'CREATE INDEX IF NOT EXISTS "vectors_hnsw_{tables.store}_{dimension}" '
        f"ON {tables.schema}.vectors USING hnsw ((embedding::vector({dimension})) "
        f"vector_cosine_ops) WHERE store = {int(tables.store)}"
    )


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
    """
    if not await _has_extension(connection):
        raise SemanticUnavailableError(INSTALL)
    dimension = int(vectors.dimension)
    cast = f"vector({dimension})"
    await connection.execute(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
    await connection.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    distance = f"(v.embedding::{cast}) <=> %s::{cast}"
    cursor = await connection.execute(
        f"SELECT m.id, m.content, m.metadata::text, 1 - ({distance}) FROM "
        f"{tables.schema}.vectors AS v JOIN {tables.memories} AS m ON m.seq = v.seq "
        f"WHERE v.store = %s AND {where} ORDER BY {distance} LIMIT %s",
        [query, tables.store, *params, query, wanted],
    )
    found: list[Any] = await cursor.fetchall()
    ranked = sorted((row for row in found if row[3] > 0), key=lambda row: -row[3])
    return [semantic_hit(row[:3], float(row[3])) for row in ranked]


async def _has_extension(connection: Connection) -> bool:
    cursor = await connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    return await cursor.fetchone() is not None
