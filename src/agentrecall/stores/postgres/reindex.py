"""Rebuilding ``PostgresStore``'s vectors: backfilling memories without one, or switching model.

The store drives the loop (:meth:`PostgresStore.reindex`): :func:`start` once, then
:func:`pending` and :func:`store` a batch at a time, embedding each batch between the two, out
of any transaction. Each is its own transaction, so an interrupted reindex keeps the batches
done and running it again does the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentrecall.stores.postgres import vectors
from agentrecall.stores.postgres.schema import lock_schema
from agentrecall.stores.postgres.tables import Connection, Tables
from agentrecall.stores.postgres.vectors import Vectors

BATCH = 1_000
"""Memories per batch when the caller gives none."""


def _lacking(tables: Tables) -> str:
    return f"NOT EXISTS (SELECT 1 FROM {tables.schema}.vectors AS v WHERE v.seq = m.seq)"


async def start(connection: Connection, tables: Tables, schema: str, model: Vectors) -> int:
    """Make ``model`` the store's; return how many of its memories lack a vector then.

    Vectors another model made are deleted in the same transaction that records the new
    model, so the store never holds vectors of two models. Runs under the advisory lock of
    ``schema`` (unquoted), which also serialises the creation of the store's index.
    """
    await lock_schema(connection, schema)
    await vectors.switch(connection, tables, model)
    cursor = await connection.execute(
        f"SELECT count(*) FROM {tables.memories} AS m WHERE m.store = %s AND {_lacking(tables)}",
        [tables.store],
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


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
    cursor = await connection.execute(
        f"INSERT INTO {tables.schema}.vectors (seq, store, embedding) "
        "SELECT m.seq, m.store, t.embedding::real[] "
        "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS t (seq, content, embedding) "
        f"JOIN {tables.memories} AS m ON m.seq = t.seq AND m.content = t.content "
        "WHERE m.store = %s ON CONFLICT (seq) DO NOTHING",
        [
            [seq for seq, _ in rows],
            [content for _, content in rows],
            [found[content] for _, content in rows],
            tables.store,
        ],
    )
    return max(cursor.rowcount, 0)
