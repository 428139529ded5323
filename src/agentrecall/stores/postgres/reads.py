"""The plain reads of ``PostgresStore``: get, list, count, history and the pages of versions.

Each takes a connection and the conditions' SQL (:meth:`Tables.where`); search has its own
module (:mod:`~agentrecall.stores.postgres.search`).
"""

from __future__ import annotations

from typing import Any

from agentrecall._internal.clock import utc_timestamp
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
    connection: Connection, tables: Tables, memory_id: str, where: str, params: Params
) -> MemoryRecord | None:
    """Return the memory with ``memory_id`` that meets ``where``, or ``None``."""
    cursor = await connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {tables.records} WHERE m.id = %s AND {where}",
        [memory_id, *params],
    )
    row = await cursor.fetchone()
    return None if row is None else record(row)


async def page(
    connection: Connection,
    tables: Tables,
    where: str,
    params: Params,
    offset: int,
    limit: int | None,
) -> list[MemoryRecord]:
    """Return the memories meeting ``where``, oldest first, from ``offset``, at most ``limit``."""
    cursor = await connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {tables.records} WHERE {where} "
        "ORDER BY m.seq LIMIT %s OFFSET %s",
        [*params, limit, offset],
    )
    return [record(row) for row in await cursor.fetchall()]


async def count(connection: Connection, tables: Tables, where: str, params: Params) -> int:
    """Return how many memories meet ``where``."""
    cursor = await connection.execute(
        f"SELECT count(*) FROM {tables.memories} AS m WHERE {where}", params
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def history(
    connection: Connection, tables: Tables, scope: Scope, memory_id: str
) -> list[MemoryVersion]:
    """Return the replaced versions of a memory of ``scope``, oldest first.

    A memory that expired is its last version even before a write moves it to the history.
    """
    where, params = tables.scope_where(scope, "h")
    cursor = await connection.execute(
        f"SELECT {VERSION_COLUMNS} FROM {tables.versions} WHERE h.id = %s AND {where} "
        "ORDER BY h.seq",
        [memory_id, *params],
    )
    rows = await cursor.fetchall()
    where, params = tables.scope_where(scope, "m")
    cursor = await connection.execute(
        f"SELECT {EXPIRY_VERSION_COLUMNS} FROM {tables.records} "
        f"WHERE m.id = %s AND {where} AND {EXPIRED}",
        [memory_id, *params, utc_timestamp()],
    )
    return [version(row) for row in [*rows, *await cursor.fetchall()]]


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
