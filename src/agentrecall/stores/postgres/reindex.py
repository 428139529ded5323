"""Rebuilding ``PostgresStore``'s vectors: backfilling memories without one, or switching model.

The store drives the loop (:meth:`PostgresStore.reindex`): :func:`start` once, then
:func:`pending` and :func:`store` a batch at a time, embedding each batch between the two, out
of any transaction. Each is its own transaction, so an interrupted reindex keeps the batches
done and running it again does the rest.

Keeping an HNSW graph up to date costs a graph search per vector stored (a few hundred a
second at 384 dimensions); building it once from stored vectors is many times cheaper. So a
reindex with many vectors to store (:func:`defers`) drops the store's index first
(:func:`.vectors.drop_index`), stores the vectors with ``COPY``, and builds the index once at
the end (:func:`.vectors.build_index`, which every reindex runs, so an interrupted one leaves
the next to build it). Meanwhile semantic search scans the store's vectors: exact, slower.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from agentrecall.stores.postgres import vectors
from agentrecall.stores.postgres.schema import lock_schema
from agentrecall.stores.postgres.tables import Connection, Tables
from agentrecall.stores.postgres.vectors import Vectors

BATCH = 5_000
"""Memories per batch when the caller gives none."""

DEFER_AT = 10_000
"""Vectors to store from which a reindex builds the index afterwards rather than keeping it up
to date (also only when they are at least :data:`DEFER_SHARE` of the vectors then held)."""

DEFER_SHARE = 0.5
"""Building the graph from stored vectors ran three to six times as fast, per vector, as
keeping it up to date (``benchmarks/bench_postgres_hybrid.py``, 384 dimensions: 2,500/s
against 873/s at 20,000, 1,087/s against 170/s at 100,000 under heavier load): for fewer new
vectors than this share of those held, updating the index in place is the cheaper."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What a reindex has to do.

    Attributes:
        total: how many memories lack a vector.
        defer: drop the index, store the vectors, then build the index once.
    """

    total: int
    defer: bool


def _lacking(tables: Tables) -> str:
    return f"NOT EXISTS (SELECT 1 FROM {tables.schema}.vectors AS v WHERE v.seq = m.seq)"


async def start(connection: Connection, tables: Tables, schema: str, model: Vectors) -> Plan:
    """Make ``model`` the store's; return how many memories lack a vector, and how to index.

    Vectors another model made are deleted in the same transaction that records the new
    model, so the store never holds vectors of two models. Runs under the advisory lock of
    ``schema`` (unquoted), which also serialises the creation of the store's index.
    """
    await lock_schema(connection, schema)
    await vectors.switch(connection, tables, model)
    cursor = await connection.execute(
        f"SELECT count(*) FILTER (WHERE {_lacking(tables)}), count(*) "
        f"FROM {tables.memories} AS m WHERE m.store = %s",
        [tables.store],
    )
    row = await cursor.fetchone()
    total, memories = (int(row[0]), int(row[1])) if row else (0, 0)
    plan = Plan(total, defers(total, memories - total))
    if not plan.defer:
        await vectors.index_if_empty(connection, tables, model.dimension)
    return plan


def defers(new: int, held: int) -> bool:
    """Whether storing ``new`` vectors beside ``held`` ones should rebuild the index after."""
    return new >= DEFER_AT and new >= DEFER_SHARE * held


async def pending(
    connection: Connection, tables: Tables, after: int, limit: int
) -> list[tuple[int, str]]:
    """Return ``(seq, content)`` of up to ``limit`` memories past row ``after`` with no vector."""
    cursor = await connection.execute(
        f"SELECT m.seq, m.content FROM {tables.memories} AS m WHERE m.store = %s "
        f"AND m.seq > %s AND {_lacking(tables)} ORDER BY m.seq LIMIT %s",
        [tables.store, after, limit],
    )
    return [(int(seq), str(content)) for seq, content in await cursor.fetchall()]


async def store(
    connection: Connection,
    tables: Tables,
    model: Vectors,
    rows: Sequence[tuple[int, str]],
    found: dict[str, str],
) -> int:
    """Store the vectors of ``rows`` whose memory still has that content; return how many.

    Raises:
        InvalidArgumentError: another process switched the store to another model meanwhile.
    """
    await vectors.check_model(connection, tables, model, " FOR SHARE")
    await vectors.stage(connection, [(seq, content, found[content]) for seq, content in rows])
    cursor = await connection.execute(
        f"INSERT INTO {tables.schema}.vectors (seq, store, embedding) "
        f"SELECT m.seq, m.store, t.embedding FROM {vectors.STAGING} AS t "
        f"JOIN {tables.memories} AS m ON m.seq = t.seq AND m.content = t.content "
        "WHERE m.store = %s ON CONFLICT (seq) DO NOTHING",
        [tables.store],
    )
    return max(cursor.rowcount, 0)


Rows = list[tuple[int, str]]


async def fill(
    read: Callable[[int], Awaitable[Rows]],
    write: Callable[[Rows, dict[str, str]], Awaitable[int]],
    model: Vectors,
    progress: Callable[[int, int], None] | None,
    total: int,
) -> int:
    """Embed and store every batch ``read(after)`` gives; return how many vectors were stored.

    ``read`` and ``write`` are :func:`pending` and :func:`store`, each in a transaction. The
    next batch is read and embedded (in a thread) while the server stores the one before.
    """
    done = added = 0
    rows = await read(0)
    embedding = asyncio.ensure_future(model.prepare([content for _, content in rows]))
    try:
        while rows:
            found = await embedding
            following = await read(rows[-1][0])
            embedding = asyncio.ensure_future(model.prepare([content for _, content in following]))
            added += await write(rows, found)
            done += len(rows)
            if progress is not None:
                progress(done, max(total, done))
            rows = following
    finally:
        if not embedding.done():
            # A failed write leaves the next batch embedding: wait for it, whatever it raises.
            await asyncio.gather(embedding, return_exceptions=True)
    return added
