"""The import transactions of ``PostgresStore``: copies of memories and of their history.

The checks and the scope each item goes to are shared with the other backends
(:mod:`agentrecall.stores.imports`); here they are stored, in one transaction of the caller's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from agentrecall._internal.clock import utc_timestamp
from agentrecall.stores import imports as checks
from agentrecall.stores.postgres.rows import (
    check_storable,
    check_storable_ids,
    jsonb_text,
    new_row_terms,
)
from agentrecall.stores.postgres.tables import Connection, Tables
from agentrecall.stores.postgres.termcounts import TermCounts, Terms, tally
from agentrecall.stores.postgres.writes import (
    COPY_AFTER,
    SKIP_HELD,
    VERSION_FIELDS,
    Chunk,
    Row,
    built,
    insert,
    pieces,
    purge_expired,
    scope_number,
)
from agentrecall.stores.scopes import Scope
from agentrecall.types import MemoryRecord, MemoryVersion


@dataclass(frozen=True, slots=True)
class ImportRows:
    """The records of an import, and how their rows are built: checked, expired ones left out."""

    records: Sequence[MemoryRecord]
    now: str
    counted: bool

    def rows(self, start: int, stop: int) -> Chunk:
        """Check records ``start:stop`` and return the rows of those not expired by ``now``.

        With ``counted``, the chunk holds the terms of its contents, for the writer to count.
        """
        rows: list[Row] = []
        terms: Terms = {}
        for index in range(start, stop):
            item = self.records[index]
            checks.check_import_record(index, item)
            where = f" (record {index})"
            check_storable_ids(item, "id", where)
            check_storable(item.superseded_by, f"superseded_by{where}")
            computed, found = new_row_terms(item.content, item.metadata, where)
            if item.expires_at is not None and item.expires_at <= self.now:
                continue
            text, key, encoded, tsv, length = computed
            times = (item.created_at, item.updated_at, item.expires_at)
            changes = (item.invalidated_at, item.superseded_by, item.valid_from, item.valid_until)
            rows.append((item.id, text, key, encoded, *times, tsv, length, *changes))
            terms.setdefault(key, found)
        if not self.counted:
            return Chunk(rows, {}, Counter())
        return Chunk(rows, terms, tally(terms))


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
    content's vector), each new memory's vector goes in too. A large import builds its rows
    in a thread, a chunk ahead of the server, and counts their terms itself.
    """
    runs = checks.scope_runs(view, records, MemoryRecord, "record")
    source = ImportRows(records, utc_timestamp(), len(records) > COPY_AFTER)
    await purge_expired(connection, tables, source.now)
    counts = await TermCounts.begun(connection) if source.counted else None
    parts = [(target, *part) for target, start, stop in runs for part in pieces(start, stop)]
    targets = iter([target for target, _, _ in parts])
    added = 0
    scopes: dict[Scope, int] = {}
    async for chunk in built([(start, stop) for _, start, stop in parts], source.rows):
        target = next(targets)
        if target not in scopes:
            scopes[target] = await scope_number(connection, tables, target)
        if chunk.rows:
            number = scopes[target]
            new = await insert(connection, tables, number, chunk, SKIP_HELD, found, counts)
            added += len(new)
    if counts is not None:
        await counts.write(connection, tables)
    return added


async def import_versions(
    connection: Connection, tables: Tables, view: Scope, versions: Sequence[MemoryVersion]
) -> int:
    """Append copies of replaced versions to the history; return how many were new.

    Of ``n`` identical versions (memory, scope, content, metadata, time, change, reason and
    the memory's times and successor) only as many as the history lacks are added.
    """
    runs = checks.scope_runs(view, versions, MemoryVersion, "version")
    rows = [checks.version_row(index, version) for index, version in enumerate(versions)]
    # Purged first, as every write does: an expiry the store shows is then a row to compare.
    await purge_expired(connection, tables, utc_timestamp())
    for index, version in enumerate(versions):
        where = f" (version {index})"
        check_storable(version.content, f"content{where}")
        check_storable(version.metadata, f"metadata{where}")
        check_storable(version.reason, f"reason{where}")
        check_storable(version.superseded_by, f"superseded_by{where}")
        check_storable_ids(version, "memory_id", where)
        if version.metadata is not None:
            rows[index] = (*rows[index][:2], jsonb_text(version.metadata), *rows[index][3:])
    keyed: list[checks.VersionRow] = []
    for target, start, stop in runs:
        number = await scope_number(connection, tables, target)
        keyed.extend((row[0], number, *row[1:]) for row in rows[start:stop])
    held: dict[checks.VersionRow, int] = {}
    for row in dict.fromkeys(keyed):
        cursor = await connection.execute(
            f"SELECT count(*) FROM {tables.history} WHERE store = %s AND id = %s AND scope = %s "
            "AND content = %s AND metadata IS NOT DISTINCT FROM %s::jsonb AND changed_at = %s "
            "AND change = %s AND reason IS NOT DISTINCT FROM %s "
            "AND created_at IS NOT DISTINCT FROM %s AND invalidated_at IS NOT DISTINCT FROM %s "
            "AND superseded_by IS NOT DISTINCT FROM %s AND valid_from IS NOT DISTINCT FROM %s "
            "AND valid_until IS NOT DISTINCT FROM %s",
            [tables.store, *row],
        )
        found = await cursor.fetchone()
        held[row] = int(found[0]) if found else 0
    fresh = checks.beyond_held(keyed, held)
    async with connection.cursor() as cursor:
        await cursor.executemany(
            f"INSERT INTO {tables.history} ({VERSION_FIELDS}) "
            "VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(tables.store, *row) for row in fresh],
        )
    return len(fresh)
