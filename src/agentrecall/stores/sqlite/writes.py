"""The write transactions behind ``SQLiteStore``: add, update and delete.

Each function runs on the store's worker thread and is one transaction of
:meth:`Database.run`, retried as a whole when another process holds the database. Arguments
were checked by the store, except what a large batch checks chunk by chunk here. Imports,
which copy memories and history in, are in :mod:`~agentrecall.stores.sqlite.imports`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TypeVar

from agentrecall._internal.checks import check_item
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.ids import new_time_ordered_ids
from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.sqlite import Database
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.keywords import index_text
from agentrecall.stores.contentkeys import content_key
from agentrecall.stores.front import UNSAID, Validity
from agentrecall.stores.records import record as to_record
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite import vector_sql
from agentrecall.stores.sqlite.dedup import KEY_CHUNK, find_equal, free_key, insert_new
from agentrecall.stores.sqlite.query import scope_where
from agentrecall.stores.sqlite.rows import CURRENT, RECORD_COLUMNS, RECORDS
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
# Metadata was checked to be a finite, acyclic JSON object (see compact_encoder).
_encode = compact_encoder()


def add(
    db: Database,
    scope: Scope,
    durable: bool,
    items: Items,
    expires_at: str | None,
    checked: bool,
    vectors: vector_sql.PreparedVectors | None = None,
    validity: Validity = UNSAID,
) -> list[AddResult]:
    """Insert new memories, deduplicated per scope; return each item's id, in input order.

    ``checked`` says whether the items were checked already; if not, each chunk is checked as
    it is built, and a bad item still stores nothing (one transaction). With ``vectors`` (made
    from the items' contents), each new memory's vector is stored in the same transaction.
    New memories get ``validity`` as their world time; a content already current keeps its
    memory's.
    """
    now = utc_timestamp()
    return write_and_index(
        db, durable, adding(items, expires_at, checked, vectors, validity, scope, now), len(items)
    )


def adding(
    items: Items,
    expires_at: str | None,
    checked: bool,
    vectors: vector_sql.PreparedVectors | None,
    validity: Validity,
    scope: Scope,
    now: str,
) -> Callable[[sqlite3.Connection], list[AddResult]]:
    """Return the part of :func:`add`'s transaction that inserts, for a larger one to call."""
    # The results if every row goes in, made with the rows: for a large batch in the helper
    # thread, while SQLite works, rather than after it (a microsecond a memory).
    results: list[AddResult] = []

    def build(start: int, stop: int) -> list[Row]:
        part = items[start:stop]
        if not checked:
            for index, (content, metadata) in enumerate(part, start):
                check_item(content, metadata, f" (item {index})")
        ids = new_time_ordered_ids(len(part))
        results.extend([AddResult(id=memory_id, created=True) for memory_id in ids])
        return [
            (
                memory_id,
                content,
                content_key(content),
                None if metadata is None else _encode(metadata),
                index_text(content),
            )
            for memory_id, (content, metadata) in zip(ids, part, strict=True)
        ]

    def write(connection: sqlite3.Connection) -> list[AddResult]:
        results.clear()  # a retry after a busy database builds the rows again
        purge_expired(connection, now)
        base = last_seq(connection)
        number = scope_number(connection, scope)
        conflict = f"ON CONFLICT (scope, content_hash) WHERE {CURRENT} DO NOTHING"
        times = (now, None, expires_at, validity.valid_from, validity.valid_until)
        # An add's ids are new, so base 0 will do (see dedup.settle).
        ids = insert_new(connection, number, len(items), build, conflict, times, 0)[1]
        if vectors is not None:
            vector_sql.insert_new(connection, base, vectors)
        if ids is None:  # no duplicate, in the batch or before it
            return results
        built = {result.id for result in results}
        outlive(
            connection,
            [i for i in dict.fromkeys(ids) if i is not None and i not in built],
            expires_at,
        )
        # New: made by this add, and its first item with that content (as separate adds).
        seen: set[str] = set()
        resolved: list[AddResult] = []
        for memory_id in ids:
            fresh = _fresh(memory_id)
            resolved.append(AddResult(id=fresh, created=fresh in built and fresh not in seen))
            seen.add(fresh)
        return resolved

    return write


def outlive(connection: sqlite3.Connection, ids: Sequence[str], expires_at: str | None) -> None:
    """Let the memories an add found already stored live at least until its ``expires_at``.

    An add that dedups to an earlier copy must not be lost with it: the copy's expiry moves
    to the later of the two, and a copy that expires keeps none if the add asked for none.
    """
    for start in range(0, len(ids), KEY_CHUNK):
        chunk = ids[start : start + KEY_CHUNK]
        connection.execute(
            "UPDATE memories SET expires_at = CASE WHEN ? IS NULL THEN NULL "
            "ELSE max(expires_at, ?) END "
            f"WHERE expires_at IS NOT NULL AND id IN ({', '.join('?' * len(chunk))})",
            [expires_at, expires_at, *chunk],
        )


def update(
    db: Database,
    scope: Scope,
    durable: bool,
    memory_id: str,
    content: str | None,
    metadata: JsonObject | None,
    reason: str | None,
    vectors: vector_sql.PreparedVectors | None = None,
) -> MemoryRecord | None:
    """Replace a current memory's content and/or metadata, keeping the old version in history.

    A retired memory is not found. New content loses its old vector (a trigger removes it);
    with ``vectors`` (made from the new content) it gets its new one in the same transaction.
    """
    now = utc_timestamp()
    where, params = scope_where(scope, "m")

    def write(connection: sqlite3.Connection) -> MemoryRecord | None:
        purge_expired(connection, now)
        row = connection.execute(
            f"SELECT m.seq, m.content, m.metadata, m.scope, m.content_hash "
            f"FROM memories AS m WHERE m.id = ? AND {where} AND m.{CURRENT}",
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
        encoded = old_metadata if metadata is None else _encode(metadata)
        connection.execute(
            "UPDATE memories SET content = ?, index_text = ?, content_hash = ?, metadata = ?, "
            "updated_at = ? WHERE seq = ?",
            (new_content, index_text(new_content), key, encoded, now, seq),
        )
        if vectors is not None and content is not None:
            vector_sql.claim(connection, vectors.model, vectors.path)
            vector_sql.insert_at(connection, [(seq, vectors.blobs[content])])
        updated = connection.execute(
            f"SELECT {RECORD_COLUMNS} FROM {RECORDS} WHERE m.seq = ?", (seq,)
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
    where, params = scope_where(scope, "m")

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
        if removed:
            vector_sql.forget_old(connection)  # the delete trigger logged the vectors it removed
        return removed

    return db.run(write, write=True, durable=durable)


def write_and_index(
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
