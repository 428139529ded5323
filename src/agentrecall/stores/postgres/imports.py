"""The import transactions of ``PostgresStore``: copies of memories and of their history.

The checks and the scope each item goes to are shared with the other backends
(:mod:`agentrecall.stores.imports`); here they are stored, in one transaction of the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentrecall._internal.clock import utc_timestamp
from agentrecall.stores import imports as checks
from agentrecall.stores.postgres.rows import check_storable, new_row
from agentrecall.stores.postgres.tables import Connection, Tables
from agentrecall.stores.postgres.writes import (
    Row,
    insert,
    purge_expired,
    scope_number,
)
from agentrecall.stores.scopes import Scope
from agentrecall.types import MemoryRecord, MemoryVersion


def import_rows(records: Sequence[MemoryRecord]) -> list[Row]:
    """Check every record of an import and return its row (messages give its index)."""
    rows: list[Row] = []
    for index, item in enumerate(records):
        checks.check_import_record(index, item)
        text, key, encoded, terms, length = new_row(
            item.content, item.metadata, f" (record {index})"
        )
        rows.append(
            (item.id, text, key, encoded, item.created_at, item.updated_at, item.expires_at)
            + (terms, length)
        )
    return rows


async def import_records(
    connection: Connection,
    tables: Tables,
    view: Scope,
    records: Sequence[MemoryRecord],
    found: dict[str, str] | None = None,
) -> int:
    """Insert copies of memories with their ids, timestamps and scopes; return how many were new.

    A record whose id the store holds, whose content its scope holds, or that has expired is
    skipped. Consecutive records of one scope go in together, in order. With ``found`` (each
    content's vector), each new memory's vector goes in too.
    """
    runs = checks.scope_runs(view, records, MemoryRecord, "record")
    rows = import_rows(records)
    now = utc_timestamp()
    await purge_expired(connection, tables, now)
    added = 0
    for target, start, stop in runs:
        number = await scope_number(connection, tables, target)
        live = [row for row in rows[start:stop] if row[6] is None or row[6] > now]
        if live:
            conflict = "ON CONFLICT DO NOTHING"
            added += len(await insert(connection, tables, number, live, conflict, found))
    return added


async def import_versions(
    connection: Connection, tables: Tables, view: Scope, versions: Sequence[MemoryVersion]
) -> int:
    """Append copies of replaced versions to the history; return how many were new.

    Of ``n`` identical versions (memory, scope, content, metadata, time, change, reason) only
    as many as the history lacks are added.
    """
    runs = checks.scope_runs(view, versions, MemoryVersion, "version")
    rows = [checks.version_row(index, version) for index, version in enumerate(versions)]
    for index, version in enumerate(versions):
        where = f" (version {index})"
        check_storable(version.content, f"content{where}")
        check_storable(version.metadata, f"metadata{where}")
        check_storable(version.reason, f"reason{where}")
    keyed: list[checks.VersionRow] = []
    for target, start, stop in runs:
        number = await scope_number(connection, tables, target)
        keyed.extend((row[0], number, *row[1:]) for row in rows[start:stop])
    held: dict[checks.VersionRow, int] = {}
    for row in dict.fromkeys(keyed):
        cursor = await connection.execute(
            f"SELECT count(*) FROM {tables.history} WHERE store = %s AND id = %s AND scope = %s "
            "AND content = %s AND metadata IS NOT DISTINCT FROM %s::jsonb AND changed_at = %s "
            "AND change = %s AND reason IS NOT DISTINCT FROM %s",
            [tables.store, *row],
        )
        found = await cursor.fetchone()
        held[row] = int(found[0]) if found else 0
    fresh = checks.beyond_held(keyed, held)
    async with connection.cursor() as cursor:
        await cursor.executemany(
            f"INSERT INTO {tables.history} (store, id, scope, content, metadata, changed_at, "
            "change, reason) VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s)",
            [(tables.store, *row) for row in fresh],
        )
    return len(fresh)
