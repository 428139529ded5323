"""Identifiers for new memories."""

from __future__ import annotations

import os
import threading
import time
import uuid


def new_id() -> str:
    """Return a fresh lowercase, hyphenated UUID v4 string (the Strands file store's ids)."""
    return str(uuid.uuid4())


def new_time_ordered_ids(count: int) -> list[str]:
    """Return ``count`` fresh UUID v7 strings, each greater than any this process made before.

    A UUID v7 holds 48 bits of Unix milliseconds, then random bits. Ids minted later sort
    later, so a database index on them grows at its end instead of taking inserts at random
    pages (which multiplied the pages every commit writes). Within one process the ids also
    increase strictly, inside a millisecond too: an id that would not exceed the previous one is
    the previous one plus one (RFC 9562's monotonic random method), so a batch is in order.
    """
    global _last
    with _lock:
        now = (time.time_ns() // 1_000_000 & (1 << 48) - 1) << 80 | _VERSION_AND_VARIANT
        noise = os.urandom(8 * count)
        ids = []
        last = _last
        for offset in range(0, 8 * count, 8):
            # 62 random bits below the variant; 12 more random bits (rand_a) are left at zero
            # so that the +1 step never carries into the version field.
            value = now | int.from_bytes(noise[offset : offset + 8], "big") >> 2
            if value <= last:
                value = last + 1
            last = value
            text = f"{value:032x}"
            ids.append(f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}")
        _last = last
    return ids


_VERSION_AND_VARIANT = 0x7 << 76 | 0x2 << 62
_last = 0
_lock = threading.Lock()
