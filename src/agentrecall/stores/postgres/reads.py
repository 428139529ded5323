"""The plain reads of ``PostgresStore``: get, list, count, history and the pages of versions.

Each takes a connection and the conditions' SQL (:meth:`Tables.where`); search has its own
module (:mod:`~agentrecall.stores.postgres.search`).
"""

from __future__ import annotations

from typing import Any

from agentrecall.stores.postgres.tables import (
    RECORD_COLUMNS,
    VERSION_COLUMNS,
    Connection,
    Params,
    Tables,
)
from agentrecall.stores.records import record, version
from agentrecall.stores.scopes import Scope
from agentrecall.types import MemoryRecord, MemoryVersion

Cursor = tuple[str, int]
"""Where a page of versions ended: the last version's memory id and row number."""


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
    """Return the replaced versions of a memory of ``scope``, oldest first."""
    where, params = tables.scope_where(scope, "h")
    cursor = await connection.execute(
        f"SELECT {VERSION_COLUMNS} FROM {tables.versions} WHERE h.id = %s AND {where} "
        "ORDER BY h.seq",
        [memory_id, *params],
    )
    return [version(row) for row in await cursor.fetchall()]


async def versions(
    connection: Connection, tables: Tables, scope: Scope, after: Cursor | None, limit: int
) -> tuple[list[MemoryVersion], Cursor | None]:
    """Return the next page of every version of ``scope``, and where it ended (``None``: last).

    Versions come by memory id, then oldest first, from just past ``after``: ``limit`` of
    them, and then the further versions of the last one's memory replaced in the same
    millisecond, so a page never splits versions that could be identical.
    """
    where, params = tables.scope_where(scope, "h")
    select = f"SELECT h.seq, {VERSION_COLUMNS} FROM {tables.versions} WHERE {where}"
    if after is not None:
        select += " AND (h.id, h.seq) > (%s, %s)"
        params = [*params, *after]
    rows: list[Any] = await (
        await connection.execute(f"{select} ORDER BY h.id, h.seq LIMIT %s", [*params, limit])
    ).fetchall()
    if len(rows) == limit:
        last = rows[-1]
        more = await connection.execute(
            f"{select} AND h.id = %s AND h.changed_at = %s AND h.seq > %s ORDER BY h.seq",
            [*params, last[6], last[3], last[0]],
        )
        rows += await more.fetchall()
    ended = None if len(rows) < limit else (rows[-1][6], rows[-1][0])
    return [version(row[1:]) for row in rows], ended
