"""Decoding ``memories`` rows into the values a store returns."""

from __future__ import annotations

import json
from typing import Any

from agentrecall.types import JsonObject, MemoryRecord

RECORD_COLUMNS = "m.id, m.content, m.metadata, m.created_at, m.updated_at, m.expires_at"
"""The columns :func:`record` reads, over the alias ``m``."""


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
    )
