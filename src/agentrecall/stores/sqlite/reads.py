"""The reads behind ``SQLiteStore``: the conditions every read applies, and record queries.

Search has its own module (:mod:`~agentrecall.stores.sqlite.search`); these are the plain
reads (``get``, ``list``, ``count``, ``history``, ``versions``). Each query function takes an
open connection and runs on the store's worker thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from agentrecall._internal.clock import utc_timestamp
from agentrecall.retrieval.filters import to_sql
from agentrecall.stores.front import Conditions
from agentrecall.stores.records import EXPIRED_SEQ, Cursor, expired_from, versions_page
from agentrecall.stores.records import record as to_record
from agentrecall.stores.records import version as to_version
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite.query import scope_where
from agentrecall.stores.sqlite.rows import (
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
    """Return the WHERE conditions every read applies: scope, expiry, filter, time bounds.

    Memories expired at ``now`` (default: the current time) are left out.
    """
    where, params = scope_where(found.scope, "m")
    more, values = found.filter_and_bounds(_metadata_filter, "?")
    parts = [where, "(m.expires_at IS NULL OR m.expires_at > ?)", *more]
    return " AND ".join(parts), [*params, now or utc_timestamp(), *values]


def _metadata_filter(filter: Mapping[str, Any]) -> tuple[str, Params]:
    return to_sql(filter, "m.metadata")


def get(
    connection: sqlite3.Connection, memory_id: str, where: str, params: Params
) -> MemoryRecord | None:
    """Return the memory with ``memory_id`` that meets ``where``, or ``None``."""
    row = connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {RECORDS} WHERE m.id = ? AND {where}",
        [memory_id, *params],
    ).fetchone()
    return None if row is None else to_record(row)


def page(
    connection: sqlite3.Connection, where: str, params: Params, offset: int, limit: int | None
) -> list[MemoryRecord]:
    """Return the memories that meet ``where``, oldest first, from ``offset``, at most ``limit``."""
    rows = connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {RECORDS} WHERE {where} ORDER BY m.seq LIMIT ? OFFSET ?",
        [*params, -1 if limit is None else limit, offset],
    ).fetchall()
    return [to_record(row) for row in rows]


def count(connection: sqlite3.Connection, where: str, params: Params) -> int:
    """Return how many memories meet ``where``."""
    return int(
        connection.execute(f"SELECT count(*) FROM memories AS m WHERE {where}", params).fetchone()[
            0
        ]
    )


def history(connection: sqlite3.Connection, scope: Scope, memory_id: str) -> list[MemoryVersion]:
    """Return the replaced versions of a memory of ``scope``, oldest first.

    A memory that expired is its last version even before a write moves it to the history.
    """
    where, params = scope_where(scope, "h")
    rows = connection.execute(
        f"SELECT {VERSION_COLUMNS} FROM {VERSIONS} WHERE h.id = ? AND {where} ORDER BY h.seq",
        [memory_id, *params],
    ).fetchall()
    where, params = scope_where(scope, "m")
    rows += connection.execute(
        f"SELECT {EXPIRY_VERSION_COLUMNS} FROM {RECORDS} WHERE m.id = ? AND {where} AND {EXPIRED}",
        [memory_id, *params, utc_timestamp()],
    ).fetchall()
    return [to_version(row) for row in rows]


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
