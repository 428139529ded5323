"""Identifiers for new memories."""

from __future__ import annotations

import os
import time
import uuid


def new_id() -> str:
    """Return a fresh lowercase, hyphenated UUID v4 string (the Strands file store's ids)."""
    return str(uuid.uuid4())


def new_time_ordered_id() -> str:
    """Return a fresh UUID v7 string: 48 bits of Unix milliseconds, then random bits.

    Ids minted later sort later, so a database index on them grows at its end instead of
    taking inserts at random pages (which multiplied the pages every commit writes).
    """
    value = (time.time_ns() // 1_000_000 & (1 << 48) - 1) << 80
    value |= int.from_bytes(os.urandom(10), "big")
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # RFC 4122 variant
    return str(uuid.UUID(int=value))
