"""When and how long to wait before retrying a request to a model server. No I/O here."""

from __future__ import annotations

import email.utils
import math
import random
from dataclasses import dataclass
from datetime import datetime, timezone

from agentrecall.errors import InvalidArgumentError

RETRY_STATUSES = frozenset({408, 409, 429})
"""Statuses below 500 worth retrying: request timeout, lock conflict, rate limit."""


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status signals a condition that may pass: 408, 409, 429 or any 5xx."""
    return status in RETRY_STATUSES or status >= 500


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with a little jitter.

    The wait before retry ``n`` (0-based) is ``initial_delay * 2**n``, capped at
    ``max_delay``, plus a random extra of up to ``jitter`` times that, so clients that failed
    together do not retry together. A server's ``Retry-After`` replaces the computed wait
    (without jitter; the server picked the time), still capped at ``max_delay``.

    Attributes:
        max_retries: retries after the first attempt; 0 disables retrying.
        initial_delay: seconds before the first retry.
        max_delay: upper bound in seconds on any wait, ``Retry-After`` included.
        jitter: the largest random extra, as a fraction of the wait.
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise InvalidArgumentError(
                f"max_retries must be an integer >= 0, got {self.max_retries!r}"
            )
        if self.max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be >= 0, got {self.max_retries}")
        for field in ("initial_delay", "max_delay", "jitter"):
            value = getattr(self, field)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise InvalidArgumentError(f"{field} must be a number >= 0, got {value!r}")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Return the seconds to wait before retry number ``retry`` (0-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        base = min(self.initial_delay * 2.0**retry, self.max_delay)
        return base + random.uniform(0, self.jitter * base)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Return the wait a ``Retry-After`` header asks for, in seconds, or ``None``.

    Accepts delay-seconds (fractions too, as some servers send them) and HTTP dates; a date
    in the past means no wait. Anything unreadable, negative or infinite is ignored.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = now or datetime.now(timezone.utc)
    return max(0.0, (when - current).total_seconds())
