"""The write transactions behind ``SQLiteStore``: add, import, update and delete.

Each function runs on the store's worker thread and is one transaction of
:meth:`Database.run`, retried as a whole when another process holds the database. Arguments
were checked by the store, except what a large batch checks chunk by chunk here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TypeVar

from agentrecall._internal.checks import check_item, check_record
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.ids import new_time_ordered_ids
from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.sqlite import Database
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.sqlite.dedup import KEY_CHUNK, find_equal, free_key, insert_new
from agentrecall.stores.sqlite.query import STORED_TIME, Scope, content_key
from agentrecall.stores.sqlite.rows import RECORD_COLUMNS
from agentrecall.stores.sqlite.rows import record as to_record
from agentrecall.stores.sqlite.tables import (
    DEFERRED_ROWS,
    Row,
    keep_versions,
    last_seq,
    purge_expired,
    scope_number,
)
from agentrecall.types import AddResult, JsonObject, MemoryRecord

T = TypeVar("T")

Items = Sequence[tuple[str, JsonObject | None]]
ImportRow = tuple[str | int | None, ...]
# Metadata was checked to be a finite, acyclic JSON object (see compact_encoder).
_encode = compact_encoder()


def add(
    db: Database,
    scope: Scope,
    durable: bool,
    items: Items,
    expires_at: str | None,
    checked: bool,
) -> list[AddResult]:
    """Insert new memories, deduplicated per scope; return each item's id, in input order.

    ``checked`` says whether the items were checked already; if not, each chunk is checked as
    it is built, and a bad item still stores nothing (one transaction).
    """
    now = utc_timestamp()
    # The results if every row goes in, made with the rows: for a large batch in the helper
    # thread, while SQLite works, rather than after it (a microsecond a memory).
    results: list[AddResult] = []

    def build(start: int, stop: int) -> list[Row]:
        part = items[start:stop]
        if not checked:
            for index, (content, metadata) in enumerate(part, start):
                check_item(content, metadata, f" (item {index})")
        ids = new_time_ordered_ids(len(part))
        results.extend([AddResult(id=memory_id) for memory_id in ids])
        return [
            (
                memory_id,
                content,
                content_key(content),
                None if metadata is None else _encode(metadata),
            )
            for memory_id, (content, metadata) in zip(ids, part, strict=True)
        ]

    def write(connection: sqlite3.Connection) -> list[AddResult]:
        results.clear()  # a retry after a busy database builds the rows again
        purge_expired(connection, now)
        number = scope_number(connection, scope)
        conflict = "ON CONFLICT (scope, content_hash) DO NOTHING"
        times = (now, None, expires_at)
        # An add's ids are new, so base 0 will do (see dedup.settle).
        ids = insert_new(connection, number, len(items), build, conflict, times, 0)[1]
        if ids is None:  # no duplicate, in the batch or before it
            return results
        return [AddResult(id=_fresh(memory_id)) for memory_id in ids]

    return _write_and_index(db, durable, write, len(items))


def import_records(
    db: Database, scope: Scope, durable: bool, records: Sequence[MemoryRecord]
) -> int:
    """Insert copies of memories with their ids and timestamps; return how many were new."""
    now = utc_timestamp()

    def build(start: int, stop: int) -> list[Row]:
        part = records[start:stop]
        rows = (import_row(index, record) for index, record in enumerate(part, start))
        return [row for row in rows if not isinstance(row[6], str) or row[6] > now]

    def write(connection: sqlite3.Connection) -> int:
        purge_expired(connection, now)
        number = scope_number(connection, scope)
        # No conflict target: a taken id and a duplicate content both skip the row.
        conflict = "ON CONFLICT DO NOTHING"
        base = last_seq(connection)
        return insert_new(connection, number, len(records), build, conflict, None, base)[0]

    return _write_and_index(db, durable, write, len(records))


def import_row(index: int, record: MemoryRecord) -> ImportRow:
    """Check one record of an import and return its row; messages give the record's index."""
    where = check_record(index, record)
    for field in ("created_at", "updated_at", "expires_at"):
        value = getattr(record, field)
        if (value is not None or field == "created_at") and not (
            isinstance(value, str) and STORED_TIME.fullmatch(value)
        ):
            raise InvalidArgumentError(
                f"{where}: {field} must look like 2025-01-31T09:30:00.000Z, got {value!r}"
            )
    metadata = record.metadata
    return (
        record.id,
        record.content,
        content_key(record.content),
        None if metadata is None else _encode(metadata),
        record.created_at,
        record.updated_at,
        record.expires_at,
    )


def update(
    db: Database,
    scope: Scope,
    durable: bool,
    memory_id: str,
    content: str | None,
    metadata: JsonObject | None,
    reason: str | None,
) -> MemoryRecord | None:
    """Replace a memory's content and/or metadata, keeping the old version in its history."""
    now = utc_timestamp()
    where, params = scope.where("m")

    def write(connection: sqlite3.Connection) -> MemoryRecord | None:
        purge_expired(connection, now)
        row = connection.execute(
            f"SELECT m.seq, m.content, m.metadata, m.scope, m.content_hash "
            f"FROM memories AS m WHERE m.id = ? AND {where}",
            [memory_id, *params],
        ).fetchone()
        if row is None:
            return None
        seq, old_content, old_metadata, number, key = row
        keep_versions(connection, "m.seq = ?", [seq], now, "update", reason)
        new_content = old_content if content is None else content
        if content is not None:
            key = content_key(content)
            if find_equal(connection, number, content, key, other_than=seq) is not None:
                raise InvalidArgumentError(
                    "another memory of this scope already has that content; update would "
                    "duplicate it"
                )
            key = free_key(connection, number, content, key, other_than=seq)
        connection.execute(
            "UPDATE memories SET content = ?, content_hash = ?, metadata = ?, "
            "updated_at = ? WHERE seq = ?",
            (new_content, key, old_metadata if metadata is None else _encode(metadata), now, seq),
        )
        updated = connection.execute(
            f"SELECT {RECORD_COLUMNS} FROM memories AS m WHERE m.seq = ?", (seq,)
        ).fetchone()
        return to_record(updated)

    return db.run(write, write=True, durable=durable)


def remove(
    db: Database,
    scope: Scope,
    durable: bool,
    ids: Sequence[str] | None,
    reason: str | None,
) -> int:
    """Delete the memories of ``scope`` with these ids (all of them for ``None``); count them.

    Each deleted memory's last version goes to its history.
    """
    now = utc_timestamp()
    where, params = scope.where("m")

    def write(connection: sqlite3.Connection) -> int:
        purge_expired(connection, now)
        removed = 0
        chunks = (
            [None]
            if ids is None
            else [ids[i : i + KEY_CHUNK] for i in range(0, len(ids), KEY_CHUNK)]
        )
        for chunk in chunks:
            condition, values = where, list(params)
            if chunk is not None:
                condition += f" AND m.id IN ({', '.join('?' * len(chunk))})"
                values.extend(chunk)
            keep_versions(connection, condition, values, now, "delete", reason)
            removed += connection.execute(
                f"DELETE FROM memories AS m WHERE {condition}", values
            ).rowcount
        return removed

    return db.run(write, write=True, durable=durable)


def _write_and_index(
    db: Database, durable: bool, write: Callable[[sqlite3.Connection], T], batch: int
) -> T:
    """Run an insert of ``batch`` memories; ask for the index to catch up if it deferred."""
    result = db.run(write, write=True, durable=durable)
    if batch <= DEFERRED_ROWS:
        db.tidy_soon()
    return result


def _fresh(memory_id: str | None) -> str:
    """Return the id an add resolved to; an add's own ids are new, so never skipped."""
    if memory_id is None:
        raise AssertionError("an add was skipped for its id, which it made itself")
    return memory_id
