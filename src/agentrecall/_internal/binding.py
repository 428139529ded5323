"""Keeping Python-heavy threads out of the way of SQLite's row-by-row inserts.

``sqlite3``'s ``executemany`` lets go of Python's lock while SQLite steps each row and takes
it back to bind the next. A thread that keeps Python busy meanwhile holds the lock when the
insert wants it back, so every row waits for that thread's turn to end (a lock convoy): with
one such thread beside it, a bulk import's row inserts took five times as long. Bulk inserts
run inside :func:`binding`; a thread doing long Python work (parsing an import file) calls
:func:`wait_for_binding` between small steps, so that it runs while SQLite works without
Python's lock (indexing the rows just inserted) rather than during the inserts.

Waiting is cooperative and process-wide; a thread that never calls :func:`wait_for_binding`
is not held up, and nothing is held across a failure.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["binding", "wait_for_binding"]

_done = threading.Condition()
_active = 0  # bulk inserts under way, in any thread


@contextlib.contextmanager
def binding() -> Iterator[None]:
    """Mark the block as a bulk insert binding rows: :func:`wait_for_binding` waits it out."""
    global _active
    with _done:
        _active += 1
    try:
        yield
    finally:
        with _done:
            _active -= 1
            if not _active:
                _done.notify_all()


def wait_for_binding() -> None:
    """Return once no bulk insert is binding rows (at once when none is: one global read)."""
    if _active:
        with _done:
            _done.wait_for(lambda: not _active)
