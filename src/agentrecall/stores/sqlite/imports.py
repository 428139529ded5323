"""The import transactions behind ``SQLiteStore``: copies of memories and of their history.

Each function runs on the store's worker thread and is one transaction of
:meth:`Database.run`. Every item carries its own scope (``user_id``, ``agent_id``,
``session_id``), which :func:`scope_runs` resolves against the store view's.
"""

from __future__ import annotations

import functools
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

from agentrecall._internal.checks import check_content, check_record
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.jsonvalue import check_json_object
from agentrecall._internal.sqlite import Database
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.keywords import index_text
from agentrecall.stores.sqlite import vector_sql
from agentrecall.stores.sqlite.dedup import insert_new
from agentrecall.stores.sqlite.query import STORED_TIME, Scope, content_key
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
VersionRow = tuple[str | int | None, ...]
ScopeIds = tuple[str | None, str | None, str | None]
CHANGES = ("update", "delete", "expire")
"""The kinds of change that replace a version (``MemoryVersion.change``)."""
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
    where = check_record(index, record)
    for field in ("created_at", "updated_at", "expires_at"):
        value = getattr(record, field)
        if value is not None or field == "created_at":
            _check_time(where, field, value)
    metadata = record.metadata
    return (
        record.id,
        record.content,
        content_key(record.content),
        None if metadata is None else _encode(metadata),
        record.created_at,
        record.updated_at,
        record.expires_at,
        index_text(record.content),
    )


def import_versions(
    db: Database, scope: Scope, durable: bool, versions: Sequence[MemoryVersion]
) -> int:
    """Append copies of replaced versions to the history; return how many were new.

    A version identical to one the history holds (memory, scope, content, metadata, time,
    change and reason) is taken for that one: of ``n`` identical versions in the call, only
    as many as the history lacks are added.
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
            "reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
            fresh,
        )
        return len(fresh)

    return db.run(write, write=True, durable=durable)


def version_row(index: int, version: MemoryVersion) -> VersionRow:
    """Check one version of an import and return its history row, without the scope.

    The row is ``(id, content, metadata, changed_at, change, reason)``; messages give the
    version's index.
    """
    where = f"version {index}"
    if not isinstance(version.memory_id, str) or not version.memory_id.strip():
        raise InvalidArgumentError(f"{where}: memory_id must be a non-blank string")
    where = f"{where} (of {version.memory_id})"
    _check_content(where, version.content, version.metadata)
    _check_time(where, "changed_at", version.changed_at)
    if version.change not in CHANGES:
        raise InvalidArgumentError(
            f"{where}: change must be one of {', '.join(CHANGES)}, got {version.change!r}"
        )
    if version.reason is not None and not isinstance(version.reason, str):
        raise InvalidArgumentError(f"{where}: reason must be a string or None")
    metadata = version.metadata
    return (
        version.memory_id,
        version.content,
        None if metadata is None else _encode(metadata),
        version.changed_at,
        version.change,
        version.reason,
    )


def scope_runs(
    view: Scope,
    items: Sequence[MemoryRecord | MemoryVersion],
    kind: type[MemoryRecord | MemoryVersion],
    label: str,
) -> list[tuple[Scope, int, int]]:
    """Return the scope each of an import's items goes to, as runs ``(scope, start, stop)``.

    An item goes to the view's scope narrowed by the item's own ids: into its own scope from
    the root store, into the view's scope when it has none, and into the view's part of the
    item's scope otherwise.

    Raises:
        InvalidArgumentError: an item is not a ``kind``, has an id that is neither ``None``
            nor a non-empty string, or has an id that contradicts the view's (the message
            gives its index).
    """
    runs: list[tuple[Scope, int, int]] = []
    known: dict[ScopeIds, Scope] = {}
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise InvalidArgumentError(f"{label} {index} must be a {kind.__name__}, got {item!r}")
        ids = (item.user_id, item.agent_id, item.session_id)
        target = known.get(ids)
        if target is None:
            target = known[ids] = _holding(view, f"{label} {index}", ids)
        if runs and runs[-1][0] is target:
            runs[-1] = (target, runs[-1][1], index + 1)
        else:
            runs.append((target, index, index + 1))
    return runs


def _holding(view: Scope, where: str, ids: ScopeIds) -> Scope:
    """Return ``view`` narrowed by an item's ``(user_id, agent_id, session_id)``."""
    columns = dict(zip(view.columns(), ids, strict=True))
    for column, value in columns.items():
        held = getattr(view, column)
        if value is not None and held is not None and value != held:
            raise InvalidArgumentError(
                f"{where} belongs to {column}={value!r}, outside this view ({view.label()}); "
                "import it through the root store, or clear its ids to import it into this view"
            )
    try:
        return view.narrowed(**columns)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"{where}: {error}") from error


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
            "AND metadata IS ? AND changed_at = ? AND change = ? AND reason IS ?",
            row,
        ).fetchone()[0]
    seen: Counter[VersionRow] = Counter()
    fresh = []
    for row in rows:
        seen[row] += 1
        if seen[row] > held[row]:
            fresh.append(row)
    return fresh


def _check_content(where: str, content: object, metadata: object) -> None:
    check_content(content, f"{where}: content")
    if metadata is not None:
        check_json_object(metadata, f"{where}: metadata")


def _check_time(where: str, field: str, value: object) -> None:
    if not (isinstance(value, str) and STORED_TIME.fullmatch(value)):
        raise InvalidArgumentError(
            f"{where}: {field} must look like 2025-01-31T09:30:00.000Z, got {value!r}"
        )
