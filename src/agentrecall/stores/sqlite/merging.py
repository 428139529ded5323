"""How the full-text index merges its segments while a bulk write feeds it.

FTS5 writes what it indexes as segments and merges them as it goes: with ``automerge`` 8
(set by the store's migrations), whenever eight segments of one level exist, and at any
commit that finds ``crisismerge`` (16 by default) segments on one level, all of them at once.
Feeding a million memories in batches of 50,000 rewrote every posting two to three times
that way: about two fifths of the index's work. :func:`merging_held` holds the merges off
while one statement feeds the index and puts the settings back as soon as it is done, so
the commit's own flush of what is still pending merges by them. Merging a level's segments in one
go instead of eight at a time writes each posting fewer times; searches right after such
an import measured as fast as after one merged as it went.

Only the settings change, never what the index holds, and they change inside the caller's
transaction: no other connection, and no file left by a crash, ever sees them changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

AUTOMERGE = 4
CRISIS_MERGE = 16
"""FTS5's own ``automerge`` and ``crisismerge``, put back where the file has none of its own."""

HELD_CRISIS_MERGE = 64
"""``crisismerge`` while merges are held: the most segments a level may reach meanwhile.

FTS5 refuses to hold more than 2,000 segments; this keeps far below that, at any size.
"""

_SETTINGS = ("automerge", "crisismerge")


def merging_held(db: sqlite3.Connection, feed: Callable[[], T]) -> T:
    """Call ``feed`` (statements feeding ``memories_fts``) with the index's merges held off.

    Runs inside the caller's write transaction. If ``feed`` raises, the settings are left
    as ``feed`` found them only once the transaction rolls back, which the caller's failure
    does.
    """
    held = dict(
        db.execute("SELECT k, v FROM memories_fts_config WHERE k IN (?, ?)", _SETTINGS).fetchall()
    )
    _set(db, "automerge", 0)
    _set(db, "crisismerge", HELD_CRISIS_MERGE)
    result = feed()
    _set(db, "automerge", int(held.get("automerge", AUTOMERGE)))
    _set(db, "crisismerge", int(held.get("crisismerge", CRISIS_MERGE)))
    return result


def _set(db: sqlite3.Connection, name: str, value: int) -> None:
    db.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES (?, ?)", (name, value))
