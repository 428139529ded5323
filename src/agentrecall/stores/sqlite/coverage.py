"""Counting ``SQLiteStore``'s memories that have a vector (:class:`VectorCoverage`)."""

from __future__ import annotations

import sqlite3

from agentrecall.stores.coverage import VectorCoverage
from agentrecall.stores.front import Conditions
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite import reads, vector_sql


def coverage(connection: sqlite3.Connection, scope: Scope) -> VectorCoverage:
    """Return how many unexpired memories of ``scope`` have a vector, and the file's model."""
    where, params = reads.conditions(Conditions(scope))
    memories, with_vectors = connection.execute(
        "SELECT count(*), count(v.seq) FROM memories AS m "
        f"LEFT JOIN memory_vectors AS v ON v.seq = m.seq WHERE {where}",
        params,
    ).fetchone()
    model = vector_sql.recorded(connection).model
    if model is None:
        return VectorCoverage(int(memories), int(with_vectors))
    return VectorCoverage(int(memories), int(with_vectors), model.model_id, model.dimension)
