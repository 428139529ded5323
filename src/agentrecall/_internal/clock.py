"""Timestamps in the one shape every store writes."""

from __future__ import annotations

from datetime import datetime, timezone


def utc_timestamp() -> str:
    """Return the current UTC time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    Milliseconds are truncated, not rounded, which is the shape of JavaScript's
    ``Date.prototype.toISOString()`` and of the Strands file format.
    """
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
