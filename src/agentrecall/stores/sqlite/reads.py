"""The reads behind ``SQLiteStore``: the conditions every read applies, and record queries.

Search has its own module (:mod:`~agentrecall.stores.sqlite.search`); these are the plain
reads (``get``, ``list``, ``count``, ``history``, ``versions``). Each query function takes an
open connection and runs on the store's worker thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from agentrecall._internal.clock import utc_timestamp
from agentrecall.retrieval.filters import to_sql
from agentrecall.stores.front import Conditions
from agentrecall.stores.records import EXPIRED_SEQ, Cursor, expired_from, versions_page
from agentrecall.stores.records import record as to_record
from agentrecall.stores.records import version as to_version
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite.moments import as_then, live_at, moment_conditions, past
from agentrecall.stores.sqlite.query import scope_where
from agentrecall.stores.sqlite.rows import (
    CURRENT,
    EXPIRED,
    EXPIRY_VERSION_COLUMNS,
    RECORD_COLUMNS,
    RECORDS,
    VERSION_COLUMNS,
    VERSIONS,
)
from agentrecall.types import MemoryRecord, MemoryVersion

Params = list[object]


def conditions(found: Conditions, now: str | None = None) -> tuple[str, Params]:
    """Return the WHERE conditions every read of ``memories`` applies (over alias ``m``).

    Scope, current memories only unless ``include_superseded``, expiry, filter, time bounds,
    world time. Memories expired at ``now`` (default: the current time) are left out; with
    ``as_of``, these are the conditions of its live part (:mod:`.moments`), expiry included.
    """
    where, params = scope_where(found.scope, "m")
    if params and (found.include_superseded or found.as_of is not None):
        # Current memories are in the scope's part of the dedup index, retired ones in that
        # of memories_retired: stated this way, SQLite reads both instead of every memory.
        where = f"((m.{CURRENT} AND {where}) OR (m.invalidated_at IS NOT NULL AND {where}))"
        params = [*params, *params]
    more, values = found.filter_and_bounds(_metadata_filter, "?")
    moments, moment_params = moment_conditions(found)
    live, live_params = live_at(found)
    moment = found.as_of or now or utc_timestamp()
    parts = [where, *moments, "(m.expires_at IS NULL OR m.expires_at > ?)", *more, *live]
    return " AND ".join(parts), [*params, *moment_params, moment, *values, *live_params]


def _metadata_filter(filter: Mapping[str, Any]) -> tuple[str, Params]:
    return to_sql(filter, "m.metadata")


def get(connection: sqlite3.Connection, memory_id: str, found: Conditions) -> MemoryRecord | None:
    """Return the memory with ``memory_id`` that meets ``found``, or ``None``."""
    rows = _records(connection, found, "m.id = ?", [memory_id], "")
    return rows[0] if rows else None


def page(
    connection: sqlite3.Connection, found: Conditions, offset: int, limit: int | None
) -> list[MemoryRecord]:
    """Return the memories that meet ``found`` from ``offset``, at most ``limit``.

    Oldest row first; with ``as_of``, by ``created_at`` then id (some come from the history).
    """
    order = "ORDER BY 4, 1" if found.as_of is not None else "ORDER BY m.seq"
    return _records(connection, found, "1", [], f"{order} LIMIT ? OFFSET ?", [limit or -1, offset])


def _records(
    connection: sqlite3.Connection,
    found: Conditions,
    more: str,
    values: Params,
    tail: str,
    tail_params: Sequence[object] = (),
) -> list[MemoryRecord]:
    """Return the records meeting ``found`` and ``more`` (over ``m``), then ``tail``."""
    where, params = conditions(found)
    sql = f"SELECT {RECORD_COLUMNS} FROM {RECORDS} WHERE {more} AND {where}"
    params = [*values, *params]
    if found.as_of is not None:
        history, history_params = past(found, RECORD_COLUMNS)
        sql += f" UNION ALL {history} AND {more}"
        params += [*history_params, *values]
    rows = connection.execute(f"{sql} {tail}", [*params, *tail_params]).fetchall()
    return [as_then(to_record(row), found.as_of) for row in rows]


def count(connection: sqlite3.Connection, found: Conditions) -> int:
    """Return how many memories meet ``found``."""
    where, params = conditions(found)
    sql = f"SELECT count(*) FROM memories AS m WHERE {where}"
    if found.as_of is not None:
        history, history_params = past(found, "1")
        sql = f"SELECT ({sql}) + (SELECT count(*) FROM ({history}))"
        params += history_params
    return int(connection.execute(sql, params).fetchone()[0])


def history(connection: sqlite3.Connection, scope: Scope, memory_id: str) -> list[MemoryVersion]:
    """Return the replaced versions of a memory of ``scope`` and of its chain, oldest first.

    The chain is the memories ``memory_id`` superseded and those that superseded it, each way
    as far as it goes (:func:`chain`). Alone, a memory's versions come in the order they were
    kept; with a chain, by ``changed_at``, then memory id, then that order. A memory that
    expired is its last version even before a write moves it to the history.
    """
    ids = chain(connection, memory_id)
    marks = ", ".join("?" * len(ids))
    where, params = scope_where(scope, "h")
    rows = connection.execute(
        f"SELECT h.seq, {VERSION_COLUMNS} FROM {VERSIONS} WHERE h.id IN ({marks}) AND {where}",
        [*ids, *params],
    ).fetchall()
    where, params = scope_where(scope, "m")
    rows += connection.execute(
        f"SELECT {EXPIRED_SEQ}, {EXPIRY_VERSION_COLUMNS} FROM {RECORDS} "
        f"WHERE m.id IN ({marks}) AND {where} AND {EXPIRED}",
        [*ids, *params, utc_timestamp()],
    ).fetchall()
    if len(ids) == 1:
        rows.sort(key=lambda row: row[0])
    else:
        rows.sort(key=lambda row: (row[3], row[6], row[0]))
    return [to_version(row[1:]) for row in rows]


_SUCCESSORS = (
    "SELECT superseded_by FROM memories WHERE id = ? AND superseded_by IS NOT NULL "
    "UNION SELECT superseded_by FROM memory_history WHERE id = ? AND superseded_by IS NOT NULL"
)
_PREDECESSORS = (
    "SELECT id FROM memories WHERE superseded_by = ? "
    "UNION SELECT id FROM memory_history WHERE superseded_by = ?"
)


def chain(connection: sqlite3.Connection, memory_id: str) -> list[str]:
    """Return ``memory_id`` and the memories linked to it by supersession, each way.

    Forward: the memory that superseded it, the one that superseded that, and so on;
    backward: the memories it superseded, those they superseded, and so on (not the others
    its successor superseded: they are not its chain). A deleted memory is followed through
    its versions' ``superseded_by``. Each step is a lookup in an index on ``superseded_by``.
    """
    found = {memory_id: None}
    for query in (_SUCCESSORS, _PREDECESSORS):
        pending = [memory_id]
        while pending:
            current = pending.pop()
            for (linked,) in connection.execute(query, (current, current)):
                if linked not in found:
                    found[linked] = None
                    pending.append(linked)
    return list(found)


def versions(
    connection: sqlite3.Connection, *, scope: Scope, after: Cursor | None, limit: int
) -> tuple[list[MemoryVersion], Cursor | None]:
    """Return the next page of every version of ``scope``, and where it ended (``None``: last).

    Versions come by memory id, then oldest first, from just past ``after``: about ``limit``
    of them, more when the last one's memory has further versions replaced in the same
    millisecond, which the page then holds too. So a page never splits versions that could
    be identical, which lets an import tell a version sent again from a new one. An expired
    memory no write has purged yet gives its last version as :func:`history` does.
    """
    where, params = scope_where(scope, "h")
    select = f"SELECT h.seq, {VERSION_COLUMNS} FROM {VERSIONS} WHERE {where}"
    if after is None:
        rows = connection.execute(f"{select} ORDER BY h.id, h.seq LIMIT ?", [*params, limit])
    else:
        rows = connection.execute(
            f"{select} AND (h.id, h.seq) > (?, ?) ORDER BY h.id, h.seq LIMIT ?",
            [*params, *after, limit],
        )
    page = rows.fetchall()
    full = len(page) == limit
    if full:
        last = page[-1]
        page += connection.execute(
            f"{select} AND h.id = ? AND h.changed_at = ? AND h.seq > ? ORDER BY h.seq",
            [*params, last[6], last[3], last[0]],
        ).fetchall()
    expired = expired_versions(connection, scope, after, limit).fetchall()
    return versions_page(page, full, expired, limit)


def expired_versions(
    connection: sqlite3.Connection,
    scope: Scope,
    after: Cursor | None = None,
    limit: int | None = None,
    now: str | None = None,
) -> sqlite3.Cursor:
    """Return the versions expiry made of memories no write has moved to the history yet.

    Rows are shaped as :func:`versions` reads them, ``(seq, *VERSION_COLUMNS)``, by memory id,
    with :data:`~agentrecall.stores.records.EXPIRED_SEQ` for the row number: a memory's
    expiry is its last version. Only memories past cursor ``after`` are read, at most
    ``limit`` of them (when given), as the returned cursor is iterated.
    """
    where, scoped = scope_where(scope, "m")
    params = list(scoped)
    if after is not None:
        compare, memory_id = expired_from(after)
        where += f" AND m.id {compare} ?"
        params.append(memory_id)
    return connection.execute(
        f"SELECT {EXPIRED_SEQ}, {EXPIRY_VERSION_COLUMNS} FROM {RECORDS} "
        f"WHERE {where} AND {EXPIRED} ORDER BY m.id LIMIT ?",
        [*params, now or utc_timestamp(), -1 if limit is None else limit],
    )


def expired_count(connection: sqlite3.Connection, scope: Scope, now: str) -> int:
    """Return how many rows :func:`expired_versions` gives for ``scope`` at ``now``."""
    where, params = scope_where(scope, "m")
    query = f"SELECT count(*) FROM memories AS m WHERE {where} AND {EXPIRED}"
    return int(connection.execute(query, [*params, now]).fetchone()[0])
