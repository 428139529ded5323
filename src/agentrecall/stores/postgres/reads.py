"""The plain reads of ``PostgresStore``: get, list, count, history and the pages of versions.

Each takes a connection and the conditions' SQL (:meth:`Tables.where`); search has its own
module (:mod:`~agentrecall.stores.postgres.search`).
"""

from __future__ import annotations

from typing import Any

from agentrecall._internal.clock import utc_timestamp
from agentrecall.stores.front import Conditions
from agentrecall.stores.postgres import moments
from agentrecall.stores.postgres.moments import unmarked_after
from agentrecall.stores.postgres.tables import (
    RECORD_COLUMNS,
    VERSION_COLUMNS,
    Connection,
    Params,
    Tables,
)
from agentrecall.stores.records import (
    EXPIRED_SEQ,
    Cursor,
    expired_from,
    record,
    version,
    versions_page,
)
from agentrecall.stores.scopes import Scope
from agentrecall.types import MemoryRecord, MemoryVersion

EXPIRED = "m.expires_at IS NOT NULL AND m.expires_at <= %s"
"""The memories that expired by the time bound to its one parameter, over alias ``m``."""

EXPIRED_AT = "greatest(m.expires_at, coalesce(m.updated_at, m.created_at))"
"""When an expired memory's last version was replaced, over alias ``m``: at its (final)
expiry, or when it was last written if it was given a time already past. The purge dates the
version so, and reads show it so until then (:data:`~agentrecall.stores.records.EXPIRED_SEQ`)."""

EXPIRY_VERSION_COLUMNS = (
    f"m.content, m.metadata::text, {EXPIRED_AT}, 'expire'::text, NULL::text, m.id, "
    "s.user_id, s.agent_id, s.session_id, m.created_at, m.invalidated_at, m.superseded_by, "
    "m.valid_from, m.valid_until"
)
"""The columns of the version expiry makes of a memory, as ``VERSION_COLUMNS`` has them, over
``Tables.records``: what ``history`` shows of an expired memory no write has purged yet."""


async def get(
    connection: Connection, tables: Tables, memory_id: str, conditions: Conditions, now: str
) -> MemoryRecord | None:
    """Return the memory with ``memory_id`` that meets ``conditions`` at ``now``, or ``None``."""
    source, params = _source(tables, conditions, now)
    cursor = await connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {source} AND m.id = %s", [*params, memory_id]
    )
    row = await cursor.fetchone()
    return None if row is None else unmarked_after(record(row), conditions.as_of)


async def page(
    connection: Connection,
    tables: Tables,
    conditions: Conditions,
    now: str,
    offset: int,
    limit: int | None,
) -> list[MemoryRecord]:
    """Return the memories meeting ``conditions``, oldest first, from ``offset``, at most ``limit``.

    Oldest is first stored; with ``as_of``, first created (a version without ``created_at``
    before every memory), then by id.
    """
    source, params = _source(tables, conditions, now)
    order = "m.seq" if conditions.as_of is None else "m.created_at NULLS FIRST, m.id"
    cursor = await connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {source} ORDER BY {order} LIMIT %s OFFSET %s",
        [*params, limit, offset],
    )
    return [unmarked_after(record(row), conditions.as_of) for row in await cursor.fetchall()]


async def count(connection: Connection, tables: Tables, conditions: Conditions, now: str) -> int:
    """Return how many memories meet ``conditions``."""
    if conditions.as_of is None:
        where, params = tables.where(conditions, now)
        query = f"SELECT count(*) FROM {tables.memories} AS m WHERE {where}"
    else:
        live, live_params = moments.live_part(tables, conditions, now)
        kept, kept_params = moments.history_part(tables, conditions)
        query = f"SELECT count(*) FROM ({live} UNION ALL {kept}) AS m"
        params = [*live_params, *kept_params]
    cursor = await connection.execute(query, params)
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


def _source(tables: Tables, conditions: Conditions, now: str) -> tuple[str, Params]:
    """Return the FROM source of records meeting ``conditions`` and a WHERE clause begun."""
    if conditions.as_of is None:
        where, params = tables.where(conditions, now)
        return f"{tables.records} WHERE {where}", params
    source, params = moments.held(tables, conditions, now)
    return f"{source} WHERE TRUE", params


async def history(
    connection: Connection, tables: Tables, scope: Scope, memory_id: str
) -> list[MemoryVersion]:
    """Return the replaced versions of a memory of ``scope`` and of its chain, oldest first.

    The chain is every memory ``memory_id`` replaced or was replaced by, transitively
    (``superseded_by`` of the memories and, for deleted ones, of their versions), read by one
    recursive statement over the successor indexes. A memory that expired is its last version
    even before a write moves it to the history. A single memory's versions come in the order
    it kept them; a chain's by ``changed_at``, then memory id, then that order.
    """
    chain = await _chain(connection, tables, memory_id)
    where, params = tables.scope_where(scope, "h")
    cursor = await connection.execute(
        f"SELECT h.seq, {VERSION_COLUMNS} FROM {tables.versions} WHERE h.id = ANY(%s) "
        f"AND {where} ORDER BY h.seq",
        [chain, *params],
    )
    rows = await cursor.fetchall()
    where, params = tables.scope_where(scope, "m")
    cursor = await connection.execute(
        f"SELECT {EXPIRED_SEQ}::bigint, {EXPIRY_VERSION_COLUMNS} FROM {tables.records} "
        f"WHERE m.id = ANY(%s) AND {where} AND {EXPIRED}",
        [chain, *params, utc_timestamp()],
    )
    found = [*rows, *await cursor.fetchall()]
    if len(chain) > 1:
        found.sort(key=lambda row: (row[3], row[6], row[0]))
    return [version(row[1:]) for row in found]


async def _chain(connection: Connection, tables: Tables, memory_id: str) -> list[str]:
    """Return the ids of ``memory_id``'s chain: itself, its successors and its predecessors.

    Successors are followed forward only and predecessors backward only, each transitively:
    two memories retired by one are not each other's chain.
    """
    memories, history, store = tables.memories, tables.history, tables.store
    successors = (
        f"SELECT m.superseded_by FROM {memories} AS m WHERE m.store = %s AND m.id = c.id "
        "AND m.superseded_by IS NOT NULL "
        f"UNION ALL SELECT h.superseded_by FROM {history} AS h WHERE h.store = %s "
        "AND h.id = c.id AND h.superseded_by IS NOT NULL"
    )
    predecessors = (
        f"SELECT m.id FROM {memories} AS m WHERE m.store = %s AND m.superseded_by = c.id "
        f"UNION ALL SELECT h.id FROM {history} AS h WHERE h.store = %s "
        "AND h.superseded_by = c.id"
    )
    start = '%s::text COLLATE "C"'
    cursor = await connection.execute(
        f"WITH RECURSIVE later (id) AS (SELECT {start} UNION "
        f"SELECT n.id FROM later AS c CROSS JOIN LATERAL ({successors}) AS n (id)), "
        f"earlier (id) AS (SELECT {start} UNION "
        f"SELECT n.id FROM earlier AS c CROSS JOIN LATERAL ({predecessors}) AS n (id)) "
        "SELECT id FROM later UNION SELECT id FROM earlier",
        [memory_id, store, store, memory_id, store, store],
    )
    return [row[0] for row in await cursor.fetchall()]


async def versions(
    connection: Connection, tables: Tables, scope: Scope, after: Cursor | None, limit: int
) -> tuple[list[MemoryVersion], Cursor | None]:
    """Return the next page of every version of ``scope``, and where it ended (``None``: last).

    Versions come by memory id, then oldest first, from just past ``after``: ``limit`` of
    them, and then the further versions of the last one's memory replaced in the same
    millisecond, so a page never splits versions that could be identical. An expired memory
    no write has purged yet gives its last version as :func:`history` does.
    """
    where, params = tables.scope_where(scope, "h")
    select = f"SELECT h.seq, {VERSION_COLUMNS} FROM {tables.versions} WHERE {where}"
    if after is not None:
        select += " AND (h.id, h.seq) > (%s, %s)"
        params = [*params, *after]
    rows: list[Any] = await (
        await connection.execute(f"{select} ORDER BY h.id, h.seq LIMIT %s", [*params, limit])
    ).fetchall()
    full = len(rows) == limit
    if full:
        last = rows[-1]
        more = await connection.execute(
            f"{select} AND h.id = %s AND h.changed_at = %s AND h.seq > %s ORDER BY h.seq",
            [*params, last[6], last[3], last[0]],
        )
        rows += await more.fetchall()
    expired = await expired_versions(connection, tables, scope, after, limit)
    return versions_page(rows, full, expired, limit)


def expired_query(tables: Tables, scope: Scope, now: str) -> tuple[str, list[object]]:
    """Return the query of the version rows expiry made of ``scope``'s unpurged memories.

    Rows are ``(seq, *VERSION_COLUMNS)`` with :data:`~agentrecall.stores.records.EXPIRED_SEQ`
    for the row number, of the memories expired at ``now``; conditions may follow.
    """
    where, params = tables.scope_where(scope, "m")
    return (
        f"SELECT {EXPIRED_SEQ}::bigint, {EXPIRY_VERSION_COLUMNS} FROM {tables.records} "
        f"WHERE {where} AND {EXPIRED}",
        [*params, now],
    )


async def expired_versions(
    connection: Connection, tables: Tables, scope: Scope, after: Cursor | None, limit: int
) -> list[Any]:
    """Return the next at most ``limit`` rows of :func:`expired_query` past ``after``, by id."""
    query, params = expired_query(tables, scope, utc_timestamp())
    if after is not None:
        compare, memory_id = expired_from(after)
        query += f" AND m.id {compare} %s"
        params.append(memory_id)
    cursor = await connection.execute(f"{query} ORDER BY m.id LIMIT %s", [*params, limit])
    return await cursor.fetchall()
