"""The import transactions behind ``SQLiteStore``: copies of memories and of their history.

Each function runs on the store's worker thread and is one transaction of
:meth:`Database.run`. Every item carries its own scope (``user_id``, ``agent_id``,
``session_id``), which :func:`~agentrecall.stores.imports.scope_runs` resolves against the
store view's; the checks of records and versions are shared with the other backends there.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from typing import TypeVar

from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.sqlite import Database
from agentrecall.retrieval.keywords import index_text
from agentrecall.stores.contentkeys import content_key
from agentrecall.stores.imports import (
    VersionRow,
    beyond_held,
    check_import_record,
    scope_runs,
    version_row,
)
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite import vector_sql
from agentrecall.stores.sqlite.dedup import insert_new
from agentrecall.stores.sqlite.rows import ROW_FIELDS
from agentrecall.stores.sqlite.tables import (
    Row,
    index_unindexed,
    last_seq,
    purge_expired,
    scope_number,
)
from agentrecall.stores.sqlite.writes import write_and_index
from agentrecall.types import MemoryRecord, MemoryVersion

T = TypeVar("T")

ImportRow = tuple[str | int | None, ...]
# Metadata was checked to be a finite, acyclic JSON object (see compact_encoder).
_encode = compact_encoder()


def import_records(
    db: Database,
    scope: Scope,
    durable: bool,
    records: Sequence[MemoryRecord],
    vectors: vector_sql.PreparedVectors | None = None,
) -> int:
    """Insert copies of memories with their ids, timestamps and scopes; return how many were new.

    Consecutive records of one scope go in together, one run after another, so the memories
    keep their order across scopes as well as within each. With ``vectors`` (made from the
    records' contents), each new memory's vector is stored in the same transaction.
    """
    now = utc_timestamp()
    runs = scope_runs(scope, records, MemoryRecord, "record")

    def build(start: int, stop: int) -> list[Row]:
        part = records[start:stop]
        rows = (import_row(index, record) for index, record in enumerate(part, start))
        return [row for row in rows if not isinstance(row[6], str) or row[6] > now]

    def write(connection: sqlite3.Connection) -> int:
        purge_expired(connection, now)
        first = last_seq(connection)
        numbers: dict[Scope, int] = {}
        # No conflict target: a taken id and a duplicate content both skip the row.
        conflict = "ON CONFLICT DO NOTHING"
        added = 0
        for target, start, stop in runs:
            number = _number(connection, numbers, target)
            part = functools.partial(_shifted, build, start)
            base = last_seq(connection)
            added += insert_new(connection, number, stop - start, part, conflict, None, base)[0]
        if len(runs) > 1:
            # Short runs list their rows for the index to take later; many of them, now.
            index_unindexed(connection)
        if vectors is not None:
            vector_sql.insert_new(connection, first, vectors)
        return added

    return write_and_index(db, durable, write, len(records))


def import_row(index: int, record: MemoryRecord) -> ImportRow:
    """Check one record of an import and return its row; messages give the record's index.

    The record's type and scope were checked by :func:`scope_runs`.
    """
    check_import_record(index, record)
    metadata = record.metadata
    return (
        record.id,
        record.content,
        content_key(record.content),
        None if metadata is None else _encode(metadata),
        record.created_at,
        record.updated_at,
        record.expires_at,
        record.invalidated_at,
        record.superseded_by,
        record.valid_from,
        record.valid_until,
        index_text(record.content),
    )


def import_versions(
    db: Database, scope: Scope, durable: bool, versions: Sequence[MemoryVersion]
) -> int:
    """Append copies of replaced versions to the history; return how many were new.

    A version identical to one the history holds (memory, scope, content, metadata, time,
    change, reason and the memory's row fields it records) is taken for that one: of ``n``
    identical versions in the call, only as many as the history lacks are added.
    """
    now = utc_timestamp()
    runs = scope_runs(scope, versions, MemoryVersion, "version")
    rows = [version_row(index, version) for index, version in enumerate(versions)]

    def write(connection: sqlite3.Connection) -> int:
        purge_expired(connection, now)
        numbers: dict[Scope, int] = {}
        keyed: list[VersionRow] = []
        for target, start, stop in runs:
            number = _number(connection, numbers, target)
            keyed.extend((row[0], number, *row[1:]) for row in rows[start:stop])
        fresh = _not_held(connection, keyed)
        connection.executemany(
            "INSERT INTO memory_history (id, scope, content, metadata, changed_at, change, "
            f"reason, {ROW_FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            fresh,
        )
        return len(fresh)

    return db.run(write, write=True, durable=durable)


def _number(connection: sqlite3.Connection, numbers: dict[Scope, int], scope: Scope) -> int:
    """Return ``scope``'s number, looked up (or added) once per transaction."""
    if scope not in numbers:
        numbers[scope] = scope_number(connection, scope)
    return numbers[scope]


def _shifted(build: Callable[[int, int], T], offset: int, start: int, stop: int) -> T:
    """Call ``build`` on a run's positions ``start:stop``, the run starting at ``offset``."""
    return build(offset + start, offset + stop)


def _not_held(connection: sqlite3.Connection, rows: Sequence[VersionRow]) -> list[VersionRow]:
    """Return the history rows to add: each beyond the copies of it the history holds."""
    held: dict[VersionRow, int] = {}
    for row in dict.fromkeys(rows):
        held[row] = connection.execute(
            "SELECT count(*) FROM memory_history WHERE id = ? AND scope = ? AND content = ? "
            "AND metadata IS ? AND changed_at = ? AND change = ? AND reason IS ? "
            "AND created_at IS ? AND invalidated_at IS ? AND superseded_by IS ? "
            "AND valid_from IS ? AND valid_until IS ?",
            row,
        ).fetchone()[0]
    return beyond_held(rows, held)
