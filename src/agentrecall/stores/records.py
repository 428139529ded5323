"""Rows of an SQL store decoded into the values stores return: records, versions, hits.

Also the pages of versions both SQL backends read from two sources, the history and the
memories that expired but are not purged yet (:data:`EXPIRED_SEQ`).

Every SQL backend selects its columns in the order these functions read them: a memory as
``(id, content, metadata, created_at, updated_at, expires_at, user_id, agent_id,
session_id, invalidated_at, superseded_by, valid_from, valid_until)``, a version as
``(content, metadata, changed_at, change, reason, memory id, user_id, agent_id, session_id,
created_at, invalidated_at, superseded_by, valid_from, valid_until)``, a keyword candidate as
``(seq, id, content, metadata)`` or, when retired memories may be among them, ``(seq, id,
content, metadata, invalidated_at, superseded_by)``; metadata as JSON text.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from agentrecall.types import JsonObject, MemoryEntry, MemoryRecord, MemoryVersion


def metadata(encoded: str | None) -> JsonObject | None:
    """Return stored metadata as a fresh dict, or ``None``."""
    if encoded is None:
        return None
    value: JsonObject = json.loads(encoded)
    return value


def record(row: Any) -> MemoryRecord:
    """Return the memory of a row selected with its backend's ``RECORD_COLUMNS``."""
    return MemoryRecord(
        id=row[0],
        content=row[1],
        metadata=metadata(row[2]),
        created_at=row[3],
        updated_at=row[4],
        expires_at=row[5],
        user_id=row[6],
        agent_id=row[7],
        session_id=row[8],
        invalidated_at=row[9],
        superseded_by=row[10],
        valid_from=row[11],
        valid_until=row[12],
    )


def version(row: Any) -> MemoryVersion:
    """Return the version of a row selected with its backend's ``VERSION_COLUMNS``."""
    return MemoryVersion(
        content=row[0],
        metadata=metadata(row[1]),
        changed_at=row[2],
        change=row[3],
        reason=row[4],
        memory_id=row[5],
        user_id=row[6],
        agent_id=row[7],
        session_id=row[8],
        created_at=row[9],
        invalidated_at=row[10],
        superseded_by=row[11],
        valid_from=row[12],
        valid_until=row[13],
    )


def hits(scored: Sequence[tuple[float, Any]]) -> list[MemoryEntry]:
    """Return the hits of scored candidate rows, the score in metadata.

    A row is ``(seq, id, content, metadata)``, or ``(seq, id, content, metadata,
    invalidated_at, superseded_by)``: a retired memory's hit then carries ``_invalidatedAt``
    and ``_supersededBy`` beside ``_relevanceScore``.
    """
    return [hit(score, row) for score, row in scored]


def hit(score: float, row: Sequence[Any]) -> MemoryEntry:
    """Return the hit of one scored candidate row (see :func:`hits`)."""
    values = {**(metadata(row[3]) or {}), "_relevanceScore": score}
    if len(row) > 4 and row[4] is not None:
        values["_invalidatedAt"] = row[4]
        values["_supersededBy"] = row[5]
    return MemoryEntry(content=row[2], metadata=values, id=row[1])


Cursor = tuple[str, int]
"""Where a page of versions ended: the last version's memory id and row number."""

EXPIRED_SEQ = 2**63 - 1
"""The row number of the version expiry makes of a memory no write has purged yet.

An SQL backend keeps an expired memory in its table until a write purges it, and shows its
final version from that row meanwhile, dated as the purge will date it: at its ``expires_at``
(the final one, after any add that dedupped to it moved it later), or when it was last
written if that is later (an expiry given already past). Such a version is the memory's last,
so its row number follows every other; it fits a signed 64-bit integer, as both SQLite and
PostgreSQL keep them.
"""

_SEQ, _MEMORY_ID = 0, 6
"""Where a version row ``(seq, *version columns)`` holds its row number and its memory id."""


def expired_from(after: Cursor) -> tuple[str, str]:
    """Return the comparison and id past which a page's expired memories come after ``after``.

    A cursor at :data:`EXPIRED_SEQ` ended on that memory's expiry, which must not come again;
    any other may have ended before it.
    """
    return (">" if after[1] == EXPIRED_SEQ else ">=", after[0])


def version_key(row: Any) -> tuple[str, int]:
    """Return how a version row ``(seq, *version columns)`` sorts: memory id, then row number."""
    return row[_MEMORY_ID], row[_SEQ]


def by_memory(kept: Iterable[Any], expired: Iterable[Any]) -> Iterator[Any]:
    """Merge version rows of the history and of expired memories by :func:`version_key`.

    Both are ``(seq, *version columns)`` rows, each sorted that way already.
    """
    return heapq.merge(kept, expired, key=version_key)


def versions_page(
    kept: list[Any], full: bool, expired: list[Any], limit: int
) -> tuple[list[MemoryVersion], Cursor | None]:
    """Return a page of versions and where it ended (``None``: last) from two sorted reads.

    ``kept`` is the history's next rows past the cursor, ``full`` whether their query reached
    ``limit`` (so more follow); ``expired`` the next at most ``limit`` expired memories' rows
    past the cursor (:func:`expired_from`). Both are ``(seq, *version columns)`` rows sorted
    as :func:`by_memory` merges them. The page holds every version up to the first memory
    either read may not have finished, so no version is skipped or given twice, and a
    memory's expiry always comes after all of its other versions.
    """
    more_expired = len(expired) == limit
    if full:
        # The last memory's later versions may be on the next page; its expiry follows them.
        last = kept[-1][_MEMORY_ID]
        shown = [row for row in expired if row[_MEMORY_ID] < last]
    else:
        shown = expired
    if more_expired:
        bound = expired[-1][_MEMORY_ID]
        kept = [row for row in kept if row[_MEMORY_ID] <= bound]
    rows = list(by_memory(kept, shown))
    ended = version_key(rows[-1]) if rows and (full or more_expired) else None
    return [version(row[1:]) for row in rows], ended
