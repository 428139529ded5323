"""Reading a whole ``PostgresStore`` for an export: one snapshot, handed on a batch at a time.

:func:`snapshot` runs in one ``REPEATABLE READ`` read-only transaction, so everything it reads
is one consistent state of the store however long the reading takes and whatever other
clients write meanwhile; rows come through a server-side cursor, ``batch`` at a time, so an
export holds one batch in memory, never the store.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from agentrecall._internal.clock import utc_timestamp
from agentrecall.stores.front import Conditions
from agentrecall.stores.postgres import reads
from agentrecall.stores.postgres.tables import (
    RECORD_COLUMNS,
    VERSION_COLUMNS,
    Connection,
    Tables,
)
from agentrecall.stores.records import by_memory, version_key
from agentrecall.stores.records import record as to_record
from agentrecall.stores.records import version as to_version
from agentrecall.stores.scopes import Scope

if TYPE_CHECKING:
    # The sink protocol an export writer implements for both backends.
    from agentrecall.stores.sqlite.export import SnapshotSink


async def snapshot(
    connection: Connection, tables: Tables, scope: Scope, batch: int, sink: SnapshotSink
) -> None:
    """Hand ``sink`` every unexpired memory of ``scope``, retired ones too, and every version.

    An expired memory that no write has moved to the history yet is handed on as the version
    its expiry makes, as :func:`~agentrecall.stores.postgres.reads.history` shows it.

    Memories come in the order ``list`` gives them, versions by memory id, then oldest first,
    at most ``batch`` per call; the counts are those of exactly what follows. Must run inside
    a transaction that has not read yet (it fixes the isolation level). ``sink``'s methods
    run in a worker thread, so a slow reader of the output never blocks the event loop.
    """
    await connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    # One time for both: a memory expiring meanwhile is then a record or a version, once.
    now = utc_timestamp()
    where, params = tables.where(Conditions(scope, include_superseded=True), now)
    history, history_params = tables.scope_where(scope, "h")
    expired, expired_params = reads.expired_query(tables, scope, now)
    memories = await _one(
        connection, f"SELECT count(*) FROM {tables.memories} AS m WHERE {where}", params
    )
    versions = await _one(
        connection,
        f"SELECT (SELECT count(*) FROM {tables.history} AS h WHERE {history}) "
        f"+ (SELECT count(*) FROM ({expired}) AS e)",
        [*history_params, *expired_params],
    )
    await asyncio.to_thread(sink.counts, memories, versions)
    records = f"SELECT {RECORD_COLUMNS} FROM {tables.records} WHERE {where} ORDER BY m.seq"
    async for rows in _pages(connection, records, params, batch):
        await asyncio.to_thread(sink.records, [to_record(row) for row in rows])
    # Few memories wait for a purge: read whole, they are merged into the history as it streams
    # in index order (PostgreSQL would sort the whole history for an ordered UNION ALL).
    cursor = await connection.execute(f"{expired} ORDER BY m.id", expired_params)
    expiries = await cursor.fetchall()
    replaced = (
        f"SELECT h.seq, {VERSION_COLUMNS} FROM {tables.versions} WHERE {history} "
        "ORDER BY h.id, h.seq"
    )
    pages = _pages(connection, replaced, history_params, batch)
    async for rows in _merged(pages, expiries, batch):
        await asyncio.to_thread(sink.versions, [to_version(row[1:]) for row in rows])


async def existing_ids(connection: Connection, tables: Tables, ids: Sequence[str]) -> set[str]:
    """Return which of ``ids`` belong to an unexpired memory of the store, in any scope.

    Ids are unique in a store, and an import purges expired memories before it inserts, so
    these are exactly the ids an import would skip as taken.
    """
    cursor = await connection.execute(
        f"SELECT id FROM {tables.memories} WHERE store = %s AND id = ANY(%s) "
        "AND (expires_at IS NULL OR expires_at > %s)",
        [tables.store, list(ids), utc_timestamp()],
    )
    return {row[0] for row in await cursor.fetchall()}


async def _one(connection: Connection, query: str, params: list[object]) -> int:
    row = await (await connection.execute(query, params)).fetchone()
    return int(row[0]) if row else 0


async def _merged(
    pages: AsyncIterator[list[Any]], expiries: list[Any], batch: int
) -> AsyncIterator[list[Any]]:
    """Yield the rows of ``pages`` with ``expiries`` merged in, ``batch`` at a time.

    Both are sorted by :func:`~agentrecall.stores.records.version_key`, and so is the output.
    """
    ready: list[Any] = []
    start = 0
    async for rows in pages:
        # The expiries before this page's last row belong in it; the rest may go with later ones.
        stop = bisect.bisect_left(expiries, version_key(rows[-1]), lo=start, key=version_key)
        ready += by_memory(rows, expiries[start:stop])
        start = stop
        while len(ready) >= batch:
            yield ready[:batch]
            ready = ready[batch:]
    ready += expiries[start:]
    for first in range(0, len(ready), batch):
        yield ready[first : first + batch]


async def _pages(connection: Connection, query: str, params: list[object], batch: int) -> Any:
    """Yield the rows of ``query`` in lists of at most ``batch``, from a server-side cursor."""
    async with connection.cursor(name="agentrecall_export") as cursor:
        await cursor.execute(query, params)
        while rows := await cursor.fetchmany(batch):
            yield rows
