"""Rows of an SQL store decoded into the values stores return: records, versions, hits.

Every SQL backend selects its columns in the order these functions read them: a memory as
``(id, content, metadata, created_at, updated_at, expires_at, user_id, agent_id,
session_id)``, a version as ``(content, metadata, changed_at, change, reason, memory id,
user_id, agent_id, session_id)``, a keyword candidate as ``(seq, id, content, metadata)``,
metadata as JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentrecall.types import JsonObject, MemoryEntry, MemoryRecord, MemoryVersion


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


def hits(scored: Sequence[tuple[float, Any]]) -> list[MemoryEntry]:
    """Return the hits of scored ``(seq, id, content, metadata)`` rows, the score in metadata."""
    return [
        MemoryEntry(
            content=content,
            metadata={**(metadata(encoded) or {}), "_relevanceScore": score},
            id=memory_id,
        )
        for score, (_, memory_id, content, encoded) in scored
    ]
