"""``as_of`` reads of ``PostgresStore``: the store as it was at a moment, in two parts.

A memory's state at moment ``T`` is its first version changed after ``T`` (a version holds the
memory as it was until ``changed_at``), else its row in ``memories``. So:

* the **live part** is the rows of ``memories`` created by ``T`` and not updated since (one
  retired since still has its content of then), not expired by then: a WHERE clause
  (:meth:`~agentrecall.stores.postgres.tables.Tables.where`), which every read, search
  included, applies as it applies its other conditions;
* the **history part** is, for each memory with an update, a deletion or an expiry after ``T``
  (the partial index ``history_changed``), its first version changed after ``T``, unless the
  memory's row is in the live part. Its cost grows with the versions changed since ``T``, not
  with the store. A version's ``updated_at`` is that of the last update by ``T``; an expiry's
  ``expires_at`` is its date; other versions have none.

Both parts keep only what was held then: created by ``T`` (a version kept before stores
recorded ``created_at`` counts as created before any moment) and, unless
``include_superseded``, not retired by then. A retirement after ``T`` is not shown: a record or
hit is marked only when it was retired by ``T`` (:func:`unmarked_after`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from agentrecall.stores.front import Conditions
from agentrecall.stores.hybrid import Hit
from agentrecall.stores.postgres.tables import Connection, Params, Tables, live_at
from agentrecall.types import MemoryRecord

HELD_COLUMNS = (
    "m.seq, m.id, m.content, m.metadata, m.created_at, m.updated_at, m.expires_at, m.scope, "
    "m.invalidated_at, m.superseded_by, m.valid_from, m.valid_until"
)
"""The columns of both parts, over alias ``m``; a version's ``seq`` is its history row's,
negated, so it sorts before every memory's and never equals one."""


def live_part(tables: Tables, conditions: Conditions, now: str) -> tuple[str, Params]:
    """Return the SELECT of :data:`HELD_COLUMNS` of the live part meeting ``conditions``."""
    where, params = tables.where(conditions, now)
    return f"SELECT {HELD_COLUMNS} FROM {tables.memories} AS m WHERE {where}", params


def history_part(tables: Tables, conditions: Conditions) -> tuple[str, Params]:
    """Return the SELECT of :data:`HELD_COLUMNS` of the history part meeting ``conditions``."""
    moment = conditions.as_of
    assert moment is not None, "only an as_of read has a history part"
    parts, params = tables.common(conditions)
    live, live_params = live_at(moment, "l")
    versions = (
        "SELECT DISTINCT ON (h.id) -h.seq AS seq, h.store, h.id, h.content, h.metadata, "
        "h.created_at, (SELECT max(u.changed_at) FROM "
        f"{tables.history} AS u WHERE u.store = h.store AND u.id = h.id "
        "AND u.change = 'update' AND u.changed_at <= %s) AS updated_at, "
        "CASE WHEN h.change = 'expire' THEN h.changed_at END AS expires_at, h.scope, "
        "h.invalidated_at, h.superseded_by, h.valid_from, h.valid_until "
        f"FROM {tables.history} AS h WHERE h.store = %s AND h.changed_at > %s "
        f"AND h.id IN (SELECT c.id FROM {tables.history} AS c WHERE c.store = %s "
        "AND c.changed_at > %s AND c.change <> 'supersede') "
        "ORDER BY h.id, h.changed_at, h.seq"
    )
    versions_params: Params = [moment, tables.store, moment, tables.store, moment]
    where = " AND ".join(
        [
            *parts,
            "(m.created_at IS NULL OR m.created_at <= %s)",
            f"NOT EXISTS (SELECT FROM {tables.memories} AS l WHERE l.store = m.store "
            f"AND l.id = m.id AND {live})",
        ]
    )
    return (
        f"SELECT {HELD_COLUMNS} FROM ({versions}) AS m WHERE {where}",
        [*versions_params, *params, moment, *live_params],
    )


def held(tables: Tables, conditions: Conditions, now: str) -> tuple[str, Params]:
    """Return a FROM source, alias ``m`` and ``s`` as ``Tables.records``, of both parts."""
    live, live_params = live_part(tables, conditions, now)
    kept, kept_params = history_part(tables, conditions)
    return (
        f"({live} UNION ALL {kept}) AS m JOIN {tables.scopes} AS s ON s.scope = m.scope",
        [*live_params, *kept_params],
    )


def unmarked_after(found: MemoryRecord, moment: str | None) -> MemoryRecord:
    """Return ``found`` as it was at ``moment``: not retired if that came after it."""
    if moment is None or found.invalidated_at is None or found.invalidated_at <= moment:
        return found
    return dataclasses.replace(found, invalidated_at=None, superseded_by=None)


async def versions_held(
    connection: Connection, tables: Tables, conditions: Conditions
) -> list[Any]:
    """Return the history part of an ``as_of`` search as candidate rows (none without one).

    Rows are ``(seq, id, content, metadata JSON)``, with ``invalidated_at, superseded_by``
    after them when ``include_superseded`` (:func:`marked`).
    """
    if conditions.as_of is None:
        return []
    kept, params = history_part(tables, conditions)
    marks = ", m.invalidated_at, m.superseded_by" if conditions.include_superseded else ""
    cursor = await connection.execute(
        f"SELECT m.seq, m.id, m.content, m.metadata::text{marks} FROM ({kept}) AS m", params
    )
    return list(await cursor.fetchall())


def marked(rows: Sequence[Any], conditions: Conditions) -> list[Any]:
    """Return candidate rows with the marks of a retirement after ``as_of`` taken off.

    Rows ``(seq, id, content, metadata, invalidated_at, superseded_by)`` keep their marks only
    when the memory was retired by the moment read (any time, without ``as_of``).
    """
    moment = conditions.as_of
    if moment is None:
        return list(rows)
    return [row if row[4] is None or row[4] <= moment else (*row[:4], None, None) for row in rows]


def marked_hit(hit: Hit, conditions: Conditions) -> Hit:
    """Return ``hit`` without the marks of a retirement after ``as_of`` (see :func:`marked`)."""
    values = hit.metadata or {}
    moment = conditions.as_of
    retired = values.get("_invalidatedAt")
    if moment is None or retired is None or retired <= moment:
        return hit
    hit.metadata = {
        key: value
        for key, value in values.items()
        if key not in ("_invalidatedAt", "_supersededBy")
    }
    return hit
