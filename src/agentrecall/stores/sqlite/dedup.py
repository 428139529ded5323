"""Dedup in ``SQLiteStore``: which memory a new content duplicates, and the key it is kept under.

Two current memories of one scope are duplicates when their stripped contents are equal (a
memory retired by ``supersede`` duplicates nothing). The unique index ``memories_dedup (scope,
content_hash)``, which holds the current memories only, enforces it through a key per memory:

* normally the content's :func:`~agentrecall.stores.contentkeys.content_key`, a 64-bit
  integer, which keeps the index small and bulk inserts fast;
* when a different content of the scope already holds that integer (a collision, about one
  pair in 2**64), the content's 128-bit :func:`~agentrecall.stores.contentkeys.content_hash`
  instead, a blob.

So a content is kept under one of its two keys, and a lookup checks both and compares the
texts. A bulk insert relies on the unique index alone while its scope holds no blob key
(:func:`has_collisions`): a duplicate then necessarily holds the same integer and is skipped
by ``ON CONFLICT``. The rows it skipped are settled here one by one (:func:`settle`), and in a
scope that holds a blob key every new row is (:func:`add_checked`). :func:`insert_new` does
it all for a batch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from agentrecall.stores.contentkeys import content_hash
from agentrecall.stores.sqlite.longterms import count_inserted
from agentrecall.stores.sqlite.tables import (
    Times,
    chunk_bounds,
    index_later,
    insert_pipelined,
    insert_rows,
    insert_statement,
    retired,
)

Row = Sequence[Any]
"""A new memory's row: ``(id, content, content key, metadata, ...)``."""

KEY_CHUNK = 500
"""Keys per ``IN (...)`` list, well under SQLite's limit on bound parameters."""


def has_collisions(db: sqlite3.Connection, scope: int) -> bool:
    """Return whether a memory of scope number ``scope`` is kept under its blob key."""
    # The partial index is empty unless keys collided; left to itself, SQLite would rather
    # walk the scope's part of the dedup index, all of it.
    found = db.execute(
        "SELECT 1 FROM memories INDEXED BY memories_collided "
        "WHERE scope = ? AND typeof(content_hash) = 'blob' LIMIT 1",
        (scope,),
    ).fetchone()
    return found is not None


def find_equal(
    db: sqlite3.Connection, scope: int, content: str, key: int, *, other_than: int | None = None
) -> str | None:
    """Return the id of the current memory of ``scope`` whose stripped content equals ``content``'s.

    ``key`` is ``content``'s integer key; the memory with row number ``other_than`` is ignored.
    """
    stripped = content.strip()
    rows = db.execute(
        "SELECT seq, id, content FROM memories "
        "WHERE scope = ? AND content_hash IN (?, ?) AND invalidated_at IS NULL",
        (scope, key, content_hash(content)),
    ).fetchall()
    for seq, memory_id, held in rows:
        if seq != other_than and held.strip() == stripped:
            return str(memory_id)
    return None


def free_key(
    db: sqlite3.Connection, scope: int, content: str, key: int, *, other_than: int | None = None
) -> int | bytes:
    """Return the key to keep ``content`` under in ``scope``: ``key``, or its blob if taken.

    Call only once :func:`find_equal` found no duplicate.
    """
    holder = db.execute(
        "SELECT seq FROM memories WHERE scope = ? AND content_hash = ? AND invalidated_at IS NULL",
        (scope, key),
    ).fetchone()
    if holder is None or holder[0] == other_than:
        return key
    return content_hash(content)


def add_checked(
    db: sqlite3.Connection, scope: int, insert: str, row: Row
) -> tuple[str | None, int | None]:
    """Insert ``row`` with ``insert`` unless its content is current in ``scope`` already.

    Returns ``(id of the memory holding the content, row number if inserted)``; the id is
    ``None`` when the insert skipped the row for another reason (an import whose id is taken).
    A retired row (imported) is inserted as it is: it dedups with nothing.
    """
    values = list(row)
    if not retired(row):
        equal = find_equal(db, scope, row[1], row[2])
        if equal is not None:
            return equal, None
        values[2] = free_key(db, scope, row[1], row[2])
    cursor = db.execute(insert, values)
    if cursor.rowcount != 1:
        return None, None
    seq = int(cursor.lastrowid or 0)
    count_inserted(db, [row], seq - 1)
    return str(row[0]), seq


def add_each(
    db: sqlite3.Connection, scope: int, insert: str, rows: Sequence[Row]
) -> tuple[list[str | None], list[int]]:
    """Insert ``rows`` one at a time with :func:`add_checked`, each checked against the last.

    Returns, per row, the id of the memory holding its content (``None`` for an import skipped
    for its id), and the row numbers inserted.
    """
    ids: list[str | None] = []
    added: list[int] = []
    for row in rows:
        memory_id, seq = add_checked(db, scope, insert, row)
        ids.append(memory_id)
        if seq is not None:
            added.append(seq)
    return ids, added


def settle(
    db: sqlite3.Connection, scope: int, insert: str, rows: Sequence[Row], base: int
) -> tuple[list[str | None], list[int]]:
    """Decide the fate of rows a bulk insert into ``scope`` just attempted, some skipped.

    ``base`` is the highest row number before the insert; 0 will do when every row's id is
    new, as an add's are, since a memory with a row's id is then that row. A row the insert
    stored keeps its id; a row whose key is held by an equal content is a duplicate; any other
    row was skipped for a collision (or, in an import, for its taken id) and is inserted now
    with :func:`add_checked`. Returns, per row, the id of the memory holding its content
    (``None`` for an import skipped for its id), and the row numbers inserted here.
    """
    holders: dict[Any, tuple[int, str, str]] = {}
    keys = list(dict.fromkeys(row[2] for row in rows))
    for start in range(0, len(keys), KEY_CHUNK):
        chunk = keys[start : start + KEY_CHUNK]
        marks = ", ".join("?" * len(chunk))
        for seq, memory_id, content, key in db.execute(
            "SELECT seq, id, content, content_hash FROM memories "
            f"WHERE scope = ? AND content_hash IN ({marks}) AND invalidated_at IS NULL",
            [scope, *chunk],
        ):
            holders[key] = (seq, memory_id, content)
    ids: list[str | None] = []
    unsettled: list[int] = []  # positions of the rows to insert one by one, in order
    for at, row in enumerate(rows):
        holder = holders.get(row[2])
        # Either the insert stored this very row, or an equal content holds its key.
        if holder is not None and (
            (holder[1] == row[0] and holder[0] > base) or holder[2].strip() == row[1].strip()
        ):
            ids.append(holder[1])
        else:
            ids.append(None)
            unsettled.append(at)
    # Settled rows change nothing in the database, so inserting the others after them all
    # leaves each insert seeing what it would have seen in row order.
    late, added = add_each(db, scope, insert, [rows[at] for at in unsettled])
    for at, memory_id in zip(unsettled, late, strict=True):
        ids[at] = memory_id
    return ids, added


def insert_new(
    db: sqlite3.Connection,
    scope: int,
    total: int,
    build: Callable[[int, int], list[Row]],
    conflict: str,
    times: Times | None,
    base: int,
) -> tuple[int, list[str | None] | None]:
    """Insert the rows ``build(start, stop)`` makes for ``total`` items, duplicates skipped.

    ``conflict``, ``times`` and the rows are as ``writes.insert_statement`` takes them, and
    ``base`` as :func:`settle` takes it. Returns how many rows are new, and, unless every row
    went in as built, per row the id of the memory holding its content (``None`` for an import
    skipped for its id). Every new row reaches the full-text index, now or through the waiting
    list.
    """
    insert = insert_statement(scope, conflict, times)
    if has_collisions(db, scope):
        ids, late = add_each(db, scope, insert, build(0, total))
        index_later(db, late)
        return len(late), ids
    bounds = chunk_bounds(total)
    if len(bounds) == 1:
        rows = build(*bounds[0])
        added = insert_rows(db, scope, rows, conflict, times)
    else:
        added, rows = insert_pipelined(db, scope, bounds, build, conflict, times)
    if added == len(rows):
        return added, None
    ids, late = settle(db, scope, insert, rows, base)
    index_later(db, late)
    return added + len(late), ids
