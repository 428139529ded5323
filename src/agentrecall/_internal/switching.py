"""Shorter turns at Python's lock while a bulk write passes work between threads.

A bulk write runs SQLite statements in one thread while a helper thread builds the next
rows (and, in an import, another thread parses the file). Each statement lets go of Python's
lock; when it returns, its thread waits for the lock until the thread holding it is made to
let go, which the interpreter does after its switch interval, 5 ms by default. A chunk of
5,000 rows runs about eight statements, so the writing thread lost up to 40 ms a chunk, 8 µs
a row, waiting for its turn. With 0.5 ms turns, ``import_records`` of 100,000 memories took
a median 16.1 µs a memory instead of 20.5 (seven runs each, in turns).

:func:`short_turns` sets the interval for as long as any such write runs, in any thread, and
then puts back the interval it found. A program that sets its own interval meanwhile keeps
it: the interval is put back only if it is still the one set here.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

__all__ = ["SWITCH_INTERVAL", "short_turns"]

SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold Python's lock, while a bulk write runs, before it must let go."""

_lock = threading.Lock()
_active = 0  # writes under way, in any thread
_found = 0.0  # the interval before the first of them
_set: float | None = None  # the interval as set here (as read back), if it was


@contextlib.contextmanager
def short_turns() -> Iterator[None]:
    """Run the block with turns of at most :data:`SWITCH_INTERVAL` at Python's lock."""
    global _active, _found, _set
    with _lock:
        if not _active:
            _found, _set = sys.getswitchinterval(), None
            if _found > SWITCH_INTERVAL:  # a shorter one is kept, and never set again
                sys.setswitchinterval(SWITCH_INTERVAL)
                _set = sys.getswitchinterval()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if not _active and _set is not None and sys.getswitchinterval() == _set:
                sys.setswitchinterval(_found)
