"""A clock a test moves by hand, so that lifetimes run out without waiting."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from types import TracebackType

from agentrecall._internal import clock

_STORED_SHAPE = "%Y-%m-%dT%H:%M:%S.%fZ"


class ManualClock:
    """A clock that stands still until the test moves it; every agentrecall store reads it.

    While the clock is in place (``with ManualClock() as clock:``), every store of this
    process dates new memories, works out ``ttl`` expiries and decides what has expired by
    :meth:`now`, in every thread and event loop. Time moves only when :meth:`advance` or
    :meth:`advance_past` is called, so a test of expiry holds whatever the machine's load:
    a memory given a minute to live is visible until the test moves the clock past that
    minute, and gone at once after.

    On leaving the ``with`` block the clock that was in place before is restored. Clocks may
    be nested; each restores the one it replaced.

    Args:
        start: the time the clock shows at first, an aware datetime; the system's time now
            by default.

    Raises:
        ValueError: ``start`` is naive.
    """

    def __init__(self, start: datetime | None = None) -> None:
        moment = start if start is not None else datetime.now(timezone.utc)
        if moment.utcoffset() is None:
            raise ValueError(f"start must be a timezone-aware datetime, got {start!r}")
        self._now = moment.astimezone(timezone.utc)
        self._lock = threading.Lock()
        self._replaced: list[Callable[[], datetime]] = []

    def now(self) -> datetime:
        """Return the time the clock shows, an aware UTC datetime."""
        with self._lock:
            return self._now

    def advance(self, seconds: float | timedelta) -> datetime:
        """Move the clock forward by ``seconds`` (a number or a timedelta); return the new time.

        Raises:
            ValueError: a negative amount: this clock, like the stores' sense of time, only
                moves forward.
        """
        step = seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds)
        if step < timedelta(0):
            raise ValueError(f"a clock only moves forward; got {seconds!r}")
        with self._lock:
            self._now += step
            return self._now

    def advance_past(self, timestamp: str) -> datetime:
        """Move the clock to one millisecond after a stored ``timestamp``, unless it is later.

        ``timestamp`` is in the stored shape (``2025-01-31T09:30:00.000Z``), as a memory's
        ``expires_at`` is. Stores compare times to the millisecond, so afterwards a memory
        expiring at ``timestamp`` has expired.
        """
        moment = datetime.strptime(timestamp, _STORED_SHAPE).replace(tzinfo=timezone.utc)
        with self._lock:
            self._now = max(self._now, moment + timedelta(milliseconds=1))
            return self._now

    def __enter__(self) -> ManualClock:
        self._replaced.append(clock.replace(self.now))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        clock.replace(self._replaced.pop())
