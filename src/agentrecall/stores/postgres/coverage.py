"""Counting ``PostgresStore``'s memories that have a vector (:class:`VectorCoverage`)."""

from __future__ import annotations

from agentrecall._internal.clock import utc_timestamp
from agentrecall.stores.coverage import VectorCoverage
from agentrecall.stores.front import Conditions
from agentrecall.stores.postgres.tables import Connection, Tables
from agentrecall.stores.scopes import Scope


async def coverage(connection: Connection, tables: Tables, scope: Scope) -> VectorCoverage:
    """Return how many unexpired memories of ``scope`` have a vector, and the store's model."""
    where, params = tables.where(Conditions(scope), utc_timestamp())
    cursor = await connection.execute(
        f"SELECT count(*), count(v.seq) FROM {tables.memories} AS m "
        f"LEFT JOIN {tables.schema}.vectors AS v ON v.seq = m.seq WHERE {where}",
        params,
    )
    memories, with_vectors = await cursor.fetchone() or (0, 0)
    cursor = await connection.execute(
        f"SELECT model, dimension FROM {tables.schema}.stores WHERE store = %s", [tables.store]
    )
    model, dimension = await cursor.fetchone() or (None, None)
    return VectorCoverage(
        int(memories), int(with_vectors), model, None if dimension is None else int(dimension)
    )
