"""Vectors in ``PostgresStore``: kept as ``real[]``, searched through pgvector's HNSW index.

Storing a vector needs no extension: ``vectors (seq, store, embedding real[])`` is an ordinary
table (migration 2), so writes work on any server. Search by meaning needs pgvector: the
store's vectors are cast to ``vector(<dimension>)``, and an HNSW index (cosine) on exactly
that expression, partial to the store, makes a search a walk of the graph rather than a scan.
:func:`enable` creates the extension when it can, and the index of an empty store;
:func:`nearest` raises :class:`SemanticUnavailableError` naming the extension when the server
lacks it.

Every vector stored while the index exists costs a search of the graph to link it in. A bulk
load (a large reindex, ``add_many`` or import) therefore drops the store's index
(:func:`drop_index`), stores its vectors, and builds the index once from them
(:func:`build_index`, ``CREATE INDEX CONCURRENTLY`` with the memory and workers for the
build). Without the index, searches scan the store's vectors: the same hits, slower.

A search narrowed by a scope, a filter or time bounds first counts the memories meeting its
conditions, reading at most :data:`EXACT_UNDER` + 1 of them (through the metadata or B-tree
index that serves the conditions); when they are that few, it compares the query with each of
them, which is exact and, for a selective filter, far cheaper than walking a graph in which few
rows meet the conditions. Otherwise, and for a search of the whole store (not counted), it
walks the graph: pgvector's iterative scan (0.8 and later) reads further down until enough
rows meet the conditions; an older pgvector may return fewer hits.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import errors

from agentrecall.embeddings.base import Embedder
from agentrecall.embeddings.vectors import check_dimension, embed_checked, l2_normalize
from agentrecall.errors import InvalidArgumentError, StorageError
from agentrecall.stores.hybrid import Hit, semantic_hit
from agentrecall.stores.postgres.tables import Connection, Params, Tables

EMBED_BATCH = 1_024
"""Texts per ``embed`` call."""

EF_SEARCH = 100
"""``hnsw.ef_search`` of a search: the candidates the graph walk keeps (pgvector's default is
40); see ``benchmarks/results/postgres-engineering.md`` for the recall measured against exact
search."""

INSTALL = (
    "semantic and hybrid search need the pgvector extension ('vector') in the database: "
    "install it on the server and run CREATE EXTENSION vector (as a role allowed to), or "
    "search in keyword mode"
)


class SemanticUnavailableError(StorageError):
    """The database lacks the pgvector extension, which semantic and hybrid search need."""


@dataclass(slots=True)
class Vectors:
    """A store's embedder, and its vectors' dimension once :meth:`learn` has read it.

    The dimension is not read when the store is made: an embedder may learn it by a request
    (:class:`~agentrecall.embeddings.OpenAICompatibleEmbedder` without ``dimension=``), and
    making a store does no I/O.
    """

    embedder: Embedder
    model_id: str
    learned: int | None = None

    @property
    def dimension(self) -> int:
        """The vectors' dimension; read only after :meth:`learn` (the store's setup)."""
        if self.learned is None:
            raise RuntimeError("Vectors.dimension is read before Vectors.learn")
        return self.learned

    async def learn(self) -> None:
        """Read the embedder's dimension, once, off the event loop, and check it.

        Raises:
            InvalidArgumentError: the dimension is not an integer from 1 to the most allowed.
            ModelError: the embedder failed to tell it.
        """
        if self.learned is None:
            value = await asyncio.to_thread(lambda: self.embedder.dimension)
            self.learned = check_dimension(value, f"the dimension of embedder '{self.model_id}'")

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

    async def nearest_of(self, query: str, rows: Sequence[Any], wanted: int) -> list[Hit]:
        """Return the ``wanted`` of candidate ``rows`` closest to ``query``, each embedded now.

        For the few versions an ``as_of`` search reads from the history, which have no stored
        vector: rows are ``(seq, id, content, metadata JSON)``, marks after them as
        :func:`nearest` takes them; ``query`` is :meth:`query`'s text. Only positive
        similarities count, as in :func:`nearest`.
        """
        if not rows:
            return []
        texts = [row[2] for row in rows]
        similarities = await asyncio.to_thread(self._similarities, query, texts)
        found = [
            with_marks(semantic_hit(row[1:4], similarity), row[4:])
            for row, similarity in zip(rows, similarities, strict=True)
            if similarity > 0
        ]
        return sorted(found, key=lambda hit: -(hit.semantic or 0.0))[:wanted]

    def _similarities(self, query: str, texts: list[str]) -> list[float]:
        """Return the cosine similarity of each text's vector to the unit vector ``query``."""
        import numpy

        unit = numpy.array([float(value) for value in query[1:-1].split(",")])
        vectors = l2_normalize(embed_checked(self.embedder, texts))
        return [float(value) for value in vectors @ unit]

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
    await index_if_empty(connection, tables, vectors.dimension)


async def switch(connection: Connection, tables: Tables, vectors: Vectors) -> None:
    """Make the store's model this one, deleting every vector another model made.

    Runs under the schema's advisory lock; the store's row stays locked until the transaction
    ends, so a write holding vectors of the old model (:func:`check_model`) finishes first.
    The index is left to the caller (:func:`index_if_empty` or :func:`build_index`).
    """
    held = await _held(connection, tables, " FOR UPDATE")
    if held != (vectors.model_id, vectors.dimension):
        await connection.execute(
            f"DELETE FROM {tables.schema}.vectors WHERE store = %s", [tables.store]
        )
        await _record(connection, tables, vectors, held[1])


async def check_model(connection: Connection, tables: Tables, vectors: Vectors, lock: str) -> None:
    """Refuse to write or search vectors unless the store's are this model's.

    ``lock`` is ``" FOR SHARE"`` in a write: the store's row then stays as read until the
    transaction ends, so a concurrent :func:`switch` waits for it.

    Raises:
        InvalidArgumentError: the store's vectors were made by another model or dimension.
    """
    _refuse_other(tables, vectors, await _held(connection, tables, lock))


def _refuse_other(tables: Tables, vectors: Vectors, held: tuple[Any, Any]) -> None:
    """Raise unless the store's recorded ``held`` model is none yet or that of ``vectors``."""
    if held[0] is not None and held != (vectors.model_id, vectors.dimension):
        raise InvalidArgumentError(
            f"the store holds vectors of model '{held[0]}' (dimension "
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


async def index_if_empty(connection: Connection, tables: Tables, dimension: int) -> None:
    """Create the extension if possible, and the store's HNSW index while it holds no vectors.

    Created in the caller's transaction, which is cheap only while the store holds no vectors
    of ``dimension``: a store holding some without an index (an interrupted bulk load) gets
    it from :func:`build_index` instead, without blocking writers; searches meanwhile scan.
    The index holds only vectors of that dimension: deleted vectors of another model that a
    snapshot may still see are left out rather than failing the cast (an index made before
    this condition, on the store alone, serves searches as well).
    """
    if not await _create_extension(connection):
        return
    dimension = int(dimension)
    # Looked up first: CREATE INDEX IF NOT EXISTS needs the table's owner even when the
    # index exists, and an application's role that an administrator set the store up for
    # owns nothing.
    name = f"{tables.schema}.{_index_name(tables, dimension)}"
    cursor = await connection.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
    if (await cursor.fetchone() or (False,))[0]:
        return
    cursor = await connection.execute(
        f"SELECT 1 FROM {tables.schema}.vectors WHERE store = %s "
        "AND cardinality(embedding) = %s LIMIT 1",
        [tables.store, dimension],
    )
    if await cursor.fetchone() is None:
        await connection.execute(_create_index(tables, dimension, ""))


async def _create_extension(connection: Connection) -> bool:
    """Create pgvector unless it is there; return whether it is (a role may not create it).

    Runs in the caller's transaction, under an advisory lock of the database held until it
    ends: ``IF NOT EXISTS`` does not keep two transactions that both found the extension
    missing (stores of two schemas set up at once) from both creating it, and the second
    would fail on the unique key of ``pg_extension``; under the lock it waits for the first,
    then finds the extension.
    """
    if await _has_extension(connection):
        return True
    # Schema names hold no '$' (check_schema), so no schema's lock has this key.
    await connection.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('agentrecall$vector', 0))"
    )
    if await _has_extension(connection):
        return True
    try:
        async with connection.transaction():
            await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except (errors.InsufficientPrivilege, errors.UndefinedFile, errors.FeatureNotSupported):
        return False
    return True


def _create_index(tables: Tables, dimension: int, how: str) -> str:
    """The statement creating the store's HNSW index for ``dimension`` (``how``: CONCURRENTLY)."""
    return (
        f"CREATE INDEX {how} IF NOT EXISTS {_index_name(tables, dimension)} "
        f"ON {tables.schema}.vectors USING hnsw ((embedding::vector({int(dimension)})) "
        f"vector_cosine_ops) WHERE store = {int(tables.store)} "
        f"AND cardinality(embedding) = {int(dimension)}"
    )


def _index_name(tables: Tables, dimension: int) -> str:
    """The quoted name (in the store's schema) of its HNSW index for vectors of ``dimension``."""
    return f'"vectors_hnsw_{int(tables.store)}_{int(dimension)}"'


BUILD_WORKERS = 4
"""Parallel workers PostgreSQL may add to the leader of an index build (its
``max_parallel_maintenance_workers`` and ``max_worker_processes`` still cap them)."""

BUILD_MEMORY_MB = (64, 8_192)
"""The least and most ``maintenance_work_mem`` of an index build, in MB. Between the two, the
graph's estimated size: pgvector builds in memory while the graph fits, several times as fast
as once it spills to the index's pages."""


def build_memory(count: int, dimension: int) -> int:
    """Return the ``maintenance_work_mem`` (MB) for an HNSW graph of ``count`` vectors.

    A graph element holds its vector (4 bytes a number) and up to 32 neighbours on the
    lowest layer (about 1 kB with their distances and the element's own fields).
    """
    estimate = count * (4 * dimension + 1_024) * 5 // 4 // 2**20
    low, high = BUILD_MEMORY_MB
    return max(low, min(high, estimate))


async def build_index(connection: Connection, tables: Tables, dimension: int) -> bool:
    """Build the store's HNSW index for ``dimension`` unless it is there; return whether built.

    Run outside any transaction (the connection in autocommit): ``CREATE INDEX CONCURRENTLY``
    builds the graph once from the stored vectors, with :func:`build_memory` and
    :data:`BUILD_WORKERS` set for this build only, while other clients keep reading and
    writing every store (vectors written meanwhile go into the index too). One build or drop
    per index at a time (:func:`_alone`): a caller finding another's returns, that build
    covering its vectors. An invalid index (a build interrupted) is dropped and built again.
    Without pgvector nothing is built.
    """
    if not await _has_extension(connection):
        return False
    dimension, name = int(dimension), _index_name(tables, dimension)
    async with _alone(connection, tables, dimension) as alone:
        valid = await _index_valid(connection, tables, name) if alone else True
        if valid:
            return False
        if valid is not None:
            await connection.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {tables.schema}.{name}")
        count = await _count(connection, tables, dimension)
        await connection.execute(f"SET maintenance_work_mem = '{build_memory(count, dimension)}MB'")
        await connection.execute(f"SET max_parallel_maintenance_workers = {BUILD_WORKERS}")
        try:
            await connection.execute(_create_index(tables, dimension, "CONCURRENTLY"))
        finally:
            await connection.execute("RESET maintenance_work_mem")
            await connection.execute("RESET max_parallel_maintenance_workers")
        return True


async def drop_index(connection: Connection, tables: Tables, dimension: int) -> bool:
    """Drop the store's HNSW index for ``dimension``, so a bulk load need not keep it up to date.

    Run outside any transaction: ``DROP INDEX CONCURRENTLY`` waits for the searches using the
    index and blocks no one. Until :func:`build_index` runs, searches scan the store's vectors
    (exact, slower); other stores' indexes are untouched. Returns ``False``, dropping nothing,
    while another client builds or drops the index (its build then covers the caller's
    vectors, and the caller need not build).
    """
    async with _alone(connection, tables, int(dimension)) as alone:
        if alone:
            name = _index_name(tables, int(dimension))
            await connection.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {tables.schema}.{name}")
        return alone


@contextlib.asynccontextmanager
async def _alone(connection: Connection, tables: Tables, dimension: int) -> AsyncIterator[bool]:
    """Hold the session advisory lock of the store's index for the block if free; yield whether.

    Only a try: a session waiting for the lock while another builds the index concurrently
    could deadlock with that build, which waits for older snapshots to end.
    """
    key = [f"agentrecall-index:{tables.schema}:{dimension}", int(tables.store)]
    cursor = await connection.execute("SELECT pg_try_advisory_lock(hashtext(%s), %s)", key)
    row = await cursor.fetchone()
    if not (row and row[0]):
        yield False
        return
    try:
        yield True
    finally:
        await connection.execute("SELECT pg_advisory_unlock(hashtext(%s), %s)", key)


async def held(connection: Connection, tables: Tables, model: Vectors) -> int:
    """Return how many memories the store holds, refusing a write of another model's vectors.

    The count (kept by triggers, so a cheap read) bounds the vectors the store holds.

    Raises:
        InvalidArgumentError: the store's vectors were made by another model or dimension.
    """
    await check_model(connection, tables, model, "")
    cursor = await connection.execute(
        f"SELECT coalesce(sum(memories), 0) FROM {tables.schema}.store_stats WHERE store = %s",
        [tables.store],
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def _index_valid(connection: Connection, tables: Tables, name: str) -> bool | None:
    """Return whether the index ``name`` (quoted) is valid, ``None`` when it does not exist."""
    cursor = await connection.execute(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)",
        [f"{tables.schema}.{name}"],
    )
    row = await cursor.fetchone()
    return None if row is None else bool(row[0])


async def _count(connection: Connection, tables: Tables, dimension: int) -> int:
    cursor = await connection.execute(
        f"SELECT count(*) FROM {tables.schema}.vectors WHERE store = %s "
        "AND cardinality(embedding) = %s",
        [tables.store, dimension],
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def store_new(
    connection: Connection, tables: Tables, rows: Sequence[tuple[int, str]], found: dict[str, str]
) -> None:
    """Store the vectors of new memories ``(seq, content)``, each its content's."""
    target = f"INSERT INTO {tables.schema}.vectors (seq, store, embedding) "
    replace = "ON CONFLICT (seq) DO UPDATE SET embedding = excluded.embedding"
    if len(rows) > COPY_AFTER:
        await stage(connection, [(seq, None, found[content]) for seq, content in rows])
        await connection.execute(
            f"{target} SELECT seq, %s, embedding FROM {STAGING} {replace}", [tables.store]
        )
    elif rows:
        await connection.execute(
            f"{target} SELECT seq, %s, embedding::real[] FROM unnest(%s::bigint[], %s::text[]) "
            f"AS t (seq, embedding) {replace}",
            [tables.store, [seq for seq, _ in rows], [found[content] for _, content in rows]],
        )


COPY_AFTER = 1_000
"""Vectors from which a write copies them in (:func:`stage`) rather than sending an array."""

STAGING = "agentrecall_vectors"
"""The temporary table vectors are copied into, ``(seq, content, embedding)``: emptied at the
end of each transaction."""


async def stage(connection: Connection, rows: Sequence[tuple[int, str | None, str]]) -> None:
    """Copy ``(seq, content, embedding as real[] text)`` rows into :data:`STAGING`, alone.

    ``COPY`` parses each vector straight into its array, so the server does not first parse
    a statement parameter holding them all.
    """
    await connection.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {STAGING} "
        "(seq bigint, content text, embedding real[]) ON COMMIT DELETE ROWS"
    )
    await connection.execute(f"TRUNCATE {STAGING}")  # a batch staged earlier in the transaction
    async with connection.cursor().copy(
        f"COPY {STAGING} (seq, content, embedding) FROM STDIN"
    ) as copy:
        for row in rows:
            await copy.write_row(row)


EXACT_UNDER = 2_000
"""Memories meeting a narrowed search's conditions up to which it computes every one's distance
exactly instead of walking the HNSW graph: measured at 100,000 memories in
``docs/postgres-internals.md`` ("Metadata filters")."""


async def nearest(
    connection: Connection,
    tables: Tables,
    vectors: Vectors,
    query: str,
    where: str,
    params: Params,
    wanted: int,
    narrowed: bool,
    marked: bool = False,
) -> list[Hit]:
    """Return the ``wanted`` memories meeting ``where`` closest to ``query``, best first.

    With ``marked``, a retired memory's hit carries ``_invalidatedAt`` and ``_supersededBy``.

    Only memories whose cosine similarity to the query is positive are returned. A search
    ``narrowed`` by a scope, a filter or time bounds (or leaving out the retired memories of a
    store that holds some, see :func:`_bounded_count`) to at most :data:`EXACT_UNDER` memories
    compares the query with each of them, and returns the exact nearest, newer first on equal
    distances (as ``SQLiteStore`` does); any other search walks the HNSW index. The search of
    a whole store is not counted: the store is what the index holds.

    Raises:
        SemanticUnavailableError: the database lacks the pgvector extension.
        InvalidArgumentError: the store's vectors were made by another model.
    """
    # One round trip before the search: the extension, the store's model, how many memories
    # meet a narrowed search's conditions (at most EXACT_UNDER + 1: planned with the session's
    # settings, so a selective filter's count reads the metadata index's bitmap), and the
    # settings of this transaction (set_config(..., true) is SET LOCAL). A walk of the graph
    # gets no bitmap scans, so no GIN index (B-trees keep plain index scans): pgvector's costs
    # do not charge the walk for a filter's selectivity, and with the metadata index's bitmap
    # at hand the planner hashed an HNSW scan run to its end (1% filter, 100,000 memories:
    # 168 ms against 111 for the nested loop it takes without;
    # benchmarks/results/postgres-engineering.md).
    cursor = await connection.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector'), model, dimension, "
        f"c.n, set_config('hnsw.ef_search', '{int(EF_SEARCH)}', true), "
        "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        f"set_config('enable_bitmapscan', CASE WHEN c.n <= {int(EXACT_UNDER)} "
        "THEN current_setting('enable_bitmapscan') ELSE 'off' END, true) "
        f"FROM {tables.schema}.stores, LATERAL ({_bounded_count(tables, where, narrowed, marked)}) "
        "AS c WHERE store = %s",
        [*_count_params(tables, params, narrowed, marked), tables.store],
    )
    row = await cursor.fetchone()
    if row is None or not row[0]:
        raise SemanticUnavailableError(INSTALL)
    _refuse_other(tables, vectors, (row[1], row[2]))
    search = _exact if row[3] is not None and int(row[3]) <= EXACT_UNDER else _walk
    marks = ", invalidated_at, superseded_by" if marked else ""
    text, values = search(tables, int(vectors.dimension), query, where, params, wanted, marks)
    cursor = await connection.execute(text, values)
    found: list[Any] = await cursor.fetchall()
    ranked = sorted((row for row in found if row[3] > 0), key=lambda row: -row[3])
    return [with_marks(semantic_hit(row[:3], float(row[3])), row[4:]) for row in ranked]


def with_marks(hit: Hit, marks: Sequence[Any]) -> Hit:
    """Return ``hit`` carrying its memory's retirement ``(invalidated_at, superseded_by)``.

    No marks (an empty ``marks``, or a current memory's) leave it as it is.
    """
    if not marks or marks[0] is None:
        return hit
    hit.metadata = {
        **(hit.metadata or {}),
        "_invalidatedAt": marks[0],
        "_supersededBy": marks[1],
    }
    return hit


def _bounded_count(tables: Tables, where: str, narrowed: bool, marked: bool) -> str:
    """A query of ``n``: the memories meeting ``where`` up to one too many, or NULL uncounted.

    A search that leaves retired memories out (not ``marked``) is counted too when the store
    holds any (one probe of their index): a walk keeps the nearest vectors before its
    conditions, and when many retired memories lie nearer than a current one (a fact
    superseded a hundred times) it may end before reaching it; counted, a search among few
    current memories compares the query with each of them instead.
    """
    counted = (
        f"(SELECT count(*) FROM (SELECT 1 FROM {tables.memories} AS m WHERE {where} "
        f"LIMIT {int(EXACT_UNDER) + 1}) AS c)"
    )
    if narrowed:
        return f"SELECT {counted} AS n"
    if not marked:
        return (
            f"SELECT CASE WHEN EXISTS (SELECT 1 FROM {tables.memories} WHERE store = %s "
            f"AND superseded_by IS NOT NULL) THEN {counted} END AS n"
        )
    return "SELECT NULL::bigint AS n"


def _count_params(tables: Tables, params: Params, narrowed: bool, marked: bool) -> Params:
    """The parameters of :func:`_bounded_count`'s query, in the order it takes them."""
    if narrowed:
        return list(params)
    return [] if marked else [tables.store, *params]


def _walk(
    tables: Tables,
    dimension: int,
    query: str,
    where: str,
    params: Params,
    wanted: int,
    marks: str = "",
) -> tuple[str, Params]:
    """The search walking the HNSW index, whose expression its ``ORDER BY`` repeats.

    ``marks`` is more columns of the memory to select (``", invalidated_at, ..."``).
    """
    cast = f"vector({dimension})"
    distance = f"(v.embedding::{cast}) <=> %s::{cast}"
    return (
        f"SELECT m.id, m.content, m.metadata::text, 1 - ({distance}){marks} FROM "
        f"{tables.schema}.vectors AS v JOIN {tables.memories} AS m ON m.seq = v.seq "
        f"WHERE v.store = %s AND cardinality(v.embedding) = {dimension} AND {where} "
        f"ORDER BY {distance} LIMIT %s"
    ), [query, tables.store, *params, query, wanted]


def _exact(
    tables: Tables,
    dimension: int,
    query: str,
    where: str,
    params: Params,
    wanted: int,
    marks: str = "",
) -> tuple[str, Params]:
    """The search comparing the query with every memory meeting ``where``.

    ``marks`` is more columns of the memory to select, as in :func:`_walk`.

    The memories are read first (a MATERIALIZED CTE, through whichever index serves the
    conditions), then their vectors by key. ``cosine_distance()`` is the function behind
    ``<=>``: an index orders only by an operator, so the HNSW index cannot serve this ordering.
    """
    cast = f"vector({dimension})"
    return (
        f"WITH f AS MATERIALIZED (SELECT m.seq, m.id, m.content, m.metadata{marks} "
        f"FROM {tables.memories} AS m WHERE {where}), "
        f"d AS (SELECT f.*, "
        f"cosine_distance(v.embedding::{cast}, %s::{cast}) AS distance "
        f"FROM f JOIN {tables.schema}.vectors AS v ON v.seq = f.seq "
        f"WHERE v.store = %s AND cardinality(v.embedding) = {dimension}) "
        f"SELECT id, content, metadata::text, 1 - distance{marks} FROM d "
        "ORDER BY distance, seq DESC LIMIT %s"
    ), [*params, query, tables.store, wanted]


async def _has_extension(connection: Connection) -> bool:
    cursor = await connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    return await cursor.fetchone() is not None
