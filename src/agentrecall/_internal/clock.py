"""The one clock every store reads, and timestamps in the one shape every store writes.

Stores date memories, work out expiries and decide what has expired through :func:`now`
alone, so a test can put a clock of its own in place of the system's
(:class:`agentrecall.testing.ManualClock`) and make a lifetime run out without waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone


def _system_now() -> datetime:
    return datetime.now(timezone.utc)


_source: Callable[[], datetime] = _system_now


def now() -> datetime:
    """Return the current time as an aware UTC datetime, from the clock in place."""
    return _source()


def utc_timestamp() -> str:
    """Return the current UTC time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    Milliseconds are truncated, not rounded, which is the shape of JavaScript's
    ``Date.prototype.toISOString()`` and of the Strands file format.
    """
    moment = now().astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def replace(source: Callable[[], datetime] | None) -> Callable[[], datetime]:
    """Make ``source`` the clock every store reads (``None``: the system's); return the old one.

    ``source`` must return aware datetimes. The clock is one for the whole process, every
    thread and event loop alike, as the system's is.
    """
    global _source
    previous = _source
    _source = _system_now if source is None else source
    return previous
