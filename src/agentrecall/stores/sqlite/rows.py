"""Decoding ``memories`` and ``memory_history`` rows into the values a store returns."""

from __future__ import annotations

import json
from typing import Any

from agentrecall.types import JsonObject, MemoryRecord, MemoryVersion

RECORD_COLUMNS = (
    "m.id, m.content, m.metadata, m.created_at, m.updated_at, m.expires_at, "
    "s.user_id, s.agent_id, s.session_id"
)
"""The columns :func:`record` reads, over :data:`RECORDS`."""

RECORDS = "memories AS m CROSS JOIN memory_scopes AS s ON s.scope = m.scope"
"""The memories with their scope's ids, as alias ``m`` and ``s``.

``CROSS JOIN`` keeps ``memories`` the outer loop, so a query plans as it would on
``memories`` alone and looks each row's scope up by its number (every memory's scope has a
row, and scope rows are never deleted).
"""

VERSION_COLUMNS = (
    "h.content, h.metadata, h.changed_at, h.change, h.reason, h.id, "
    "s.user_id, s.agent_id, s.session_id"
)
"""The columns :func:`version` reads, over :data:`VERSIONS`."""

VERSIONS = "memory_history AS h CROSS JOIN memory_scopes AS s ON s.scope = h.scope"
"""The replaced versions with their scope's ids, as alias ``h`` and ``s``."""


def metadata(encoded: str | None) -> JsonObject | None:
    """Return stored metadata as a fresh dict, or ``None``."""
    if encoded is None:
        return None
    value: JsonObject = json.loads(encoded)
    return value


def record(row: Any) -> MemoryRecord:
    """Return the memory of a row selected with :data:`RECORD_COLUMNS`."""
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
    )


def version(row: Any) -> MemoryVersion:
    """Return the version of a row selected with :data:`VERSION_COLUMNS`."""
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
    )
