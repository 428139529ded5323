"""Identifiers for new memories."""

from __future__ import annotations

import os
import struct
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
    increase strictly, inside a millisecond too, so a batch is in order: a batch's random parts
    are sorted, and an id that would still not exceed the one before it is that one plus one
    (RFC 9562's monotonic random method).
    """
    global _last
    if count <= 0:
        return []
    with _lock:
        millis = time.time_ns() // 1_000_000 & (1 << 48) - 1
        # 48 bits of milliseconds and the version; the 12 random bits of rand_a stay zero so
        # that a +1 step never carries into the version field.
        high = millis << 16 | _VERSION << 12
        layout = f">{count}Q"
        # 62 random bits below the variant, in order: the sort is done in C, not per id.
        lows = sorted(
            [_VARIANT | value >> 2 for value in struct.unpack(layout, os.urandom(8 * count))]
        )
        first = high << 64 | lows[0]
        if first > _last and len(set(lows)) == count:
            # Every id of the batch shares its first 16 hex digits, formatted once; the other
            # 16 are cut from one hex text of the whole batch: a third of the cost of
            # formatting each id on its own.
            head = f"{high:016x}"
            prefix = f"{head[:8]}-{head[8:12]}-{head[12:]}-"
            digits = struct.pack(layout, *lows).hex()
            ids = [
                f"{prefix}{digits[at : at + 4]}-{digits[at + 4 : at + 16]}"
                for at in range(0, 16 * count, 16)
            ]
            _last = high << 64 | lows[-1]
            return ids
        ids = []
        last = _last
        for low in lows:
            value = max(high << 64 | low, last + 1)
            last = value
            text = f"{value:032x}"
            ids.append(f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}")
        _last = last
    return ids


_VERSION = 0x7
_VARIANT = 0x2 << 62
_last = 0
_lock = threading.Lock()
