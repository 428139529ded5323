"""Times as stores keep them: one sortable UTC shape, time bounds and expiry in it."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone

from agentrecall._internal import clock
from agentrecall.errors import InvalidArgumentError

STORED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
"""The stored shape of a time; filters and expiry compare these strings, so only it sorts right."""


def timestamp(value: datetime | str | None, argument: str) -> str | None:
    """Return a time bound in the stored shape (``YYYY-MM-DDTHH:MM:SS.mmmZ``, UTC).

    Accepts an aware ``datetime``; an ISO 8601 date (``2025-01-31``, midnight UTC); or an ISO
    8601 time with an offset (``2025-01-31T09:30:00Z``, ``2025-01-31T09:30:00+02:00``). A
    naive time (a ``datetime`` or a string without an offset) is refused, since guessing its
    zone would shift the bound. The time must fall within the years 1 to 9999 in UTC.

    Raises:
        InvalidArgumentError: any other value; the message names ``argument`` and the forms
            accepted.
    """
    if value is None:
        return None
    moment = _parsed(value, argument) if isinstance(value, str) else value
    # Aware means an offset, not just a tzinfo: one whose utcoffset() is None leaves the time
    # naive, and astimezone would read it as local time.
    if not isinstance(moment, datetime) or moment.utcoffset() is None:
        raise InvalidArgumentError(f"{argument} must be {_TIME_FORMS}, got {value!r}")
    try:
        return stored_time(moment)
    except OverflowError:
        raise InvalidArgumentError(
            f"{argument} must fall within the years 1 to 9999 in UTC, got {value!r}"
        ) from None


def expiry_after(lifetime: float, argument: str) -> str:
    """Return the stored time ``lifetime`` seconds from now, refusing one past the year 9999."""
    try:
        return stored_time(clock.now() + timedelta(seconds=lifetime))
    except OverflowError:
        raise InvalidArgumentError(
            f"{argument} of {lifetime:.0f} seconds would expire past the year 9999; "
            "give a shorter one, or None for no expiry"
        ) from None


def stored_time(moment: datetime) -> str:
    """Return an aware ``moment`` in the stored shape; ``OverflowError`` if UTC cannot hold it."""
    utc = moment.astimezone(timezone.utc)
    # Spelled out rather than strftime, whose ``%Y`` does not pad years below 1000 everywhere.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z"
    )


_TIME_FORMS = (
    "a timezone-aware datetime, an ISO 8601 date such as '2025-01-31' (midnight UTC), or an "
    "ISO 8601 time with an offset such as '2025-01-31T09:30:00Z' or '2025-01-31T09:30:00+02:00'"
)

_DATE = re.compile(r"\d{4}-\d\d-\d\d")


def _parsed(text: str, argument: str) -> datetime:
    try:
        if _DATE.fullmatch(text):
            return datetime.combine(date.fromisoformat(text), time(), timezone.utc)
        # Python 3.10 reads no ``Z``; it means UTC, as ``+00:00`` does.
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(f"{argument} must be {_TIME_FORMS}, got {text!r}") from None
