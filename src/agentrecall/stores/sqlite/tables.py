"""SQL on the tables that the store's writes share: scopes, chunked inserts, history, expiry."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentrecall._internal.binding import binding
from agentrecall._internal.switching import short_turns
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite.longterms import count_inserted
from agentrecall.stores.sqlite.merging import merging_held
from agentrecall.stores.sqlite.rows import EXPIRED, EXPIRED_AT, ROW_FIELDS
from agentrecall.stores.sqlite.tags import tag
from agentrecall.stores.times import STORED_TIME

ROOT_SCOPE = 0
"""The scope number of memories written outside any scope (created by migration 5)."""

Times = tuple[str, None, str | None, str | None, str | None]
"""``(created_at, updated_at, expires_at, valid_from, valid_until)`` shared by every row of a
batch of new memories, which are current (no ``invalidated_at`` or ``superseded_by``)."""


def insert_statement(scope: int, conflict: str, times: Times | None) -> str:
    """Return the INSERT for rows of scope number ``scope``, skipping what ``conflict`` says.

    With ``times``, the batch's timestamps are written into the statement and a row is
    ``(id, content, content_hash, metadata, index_text)``: binding fewer values a row made
    inserting 16% faster (1.8 µs a row). Without, a row carries its own :data:`OWN_FIELDS`
    before ``index_text``. ``index_text`` is
    :func:`~agentrecall.retrieval.keywords.index_text` of the content.
    """
    if times is None:
        stamps = ", ".join("?" * len(OWN_FIELDS))
    else:
        # Only our own timestamps come here; checked anyway, as they go into SQL text.
        if not all(value is None or STORED_TIME.fullmatch(value) for value in times):
            raise ValueError(f"timestamps not in the stored shape: {times!r}")
        created, updated, expires, valid_from, valid_until = (
            "NULL" if value is None else f"'{value}'" for value in times
        )
        stamps = f"{created}, {updated}, {expires}, NULL, NULL, {valid_from}, {valid_until}"
    return (
        "INSERT INTO memories (id, scope, content, content_hash, metadata, "
        f"{', '.join(OWN_FIELDS)}, index_text) "
        f"VALUES (?, {int(scope)}, ?, ?, ?, {stamps}, ?) {conflict}"
    )


OWN_FIELDS = (
    "created_at",
    "updated_at",
    "expires_at",
    "invalidated_at",
    "superseded_by",
    "valid_from",
    "valid_until",
)
"""The fields an imported row carries after its metadata (see :func:`insert_statement`)."""

RETIRED_AT = 7
"""Where a row carrying its own fields holds ``invalidated_at``: set, it is retired."""


def retired(row: Sequence[Any]) -> bool:
    """Whether a new memory's row is retired (an imported one can be): it dedups with none."""
    return len(row) > RETIRED_AT + 1 and row[RETIRED_AT] is not None


def scope_number(db: sqlite3.Connection, scope: Scope) -> int:
    """Return the number of ``scope`` in ``memory_scopes``, adding its row the first time.

    Scope rows are never deleted, so a number, once given, keeps meaning that scope.
    """
    ids = scope.columns()
    if not any(ids.values()):
        return ROOT_SCOPE
    keys = [value or "" for value in ids.values()]
    found = db.execute(
        "SELECT scope FROM memory_scopes WHERE coalesce(user_id, '') = ? "
        "AND coalesce(agent_id, '') = ? AND coalesce(session_id, '') = ?",
        keys,
    ).fetchone()
    if found is not None:
        return int(found[0])
    cursor = db.execute(
        "INSERT INTO memory_scopes (user_id, agent_id, session_id) VALUES (?, ?, ?)",
        list(ids.values()),
    )
    return int(cursor.lastrowid or 0)


def insert_rows(
    db: sqlite3.Connection,
    scope: int,
    rows: Sequence[Sequence[Any]],
    conflict: str,
    times: Times | None = None,
) -> int:
    """Insert memory rows of scope number ``scope``; return how many were new.

    A row is ``(id, content, content_hash, metadata, *OWN_FIELDS, index_text)``, without
    those fields when ``times`` gives them for all of them (see :func:`insert_statement`).
    ``conflict`` is the ``ON CONFLICT`` clause that decides which rows are skipped. Up to
    :data:`DEFERRED_ROWS` new rows are listed in ``memories_unindexed`` for
    :func:`index_unindexed` to index later; a larger batch is fed to the full-text index in
    the same transaction, explicitly rather than by a trigger (three to four times faster).
    The long ones have their term counts kept (:func:`count_inserted`).
    """
    insert = insert_statement(scope, conflict, times)
    last = last_seq(db)
    if len(rows) <= DEFERRED_ROWS:
        added = []
        for row in rows:
            cursor = db.execute(insert, row)
            if cursor.rowcount == 1:
                added.append((cursor.lastrowid,))
        db.executemany("INSERT INTO memories_unindexed (seq) VALUES (?)", added)
        count_inserted(db, rows, last)
        return len(added)
    with binding():
        db.executemany(insert, rows)
    count_inserted(db, rows, last)
    return _index_after(db, last)


def last_seq(db: sqlite3.Connection) -> int:
    """Return the highest memory row number (0 when there are none)."""
    return int(db.execute("SELECT max(seq) FROM memories").fetchone()[0] or 0)


def index_later(db: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """Hand the memories ``seqs``, inserted outside :func:`insert_rows`, to the full-text index.

    Up to :data:`DEFERRED_ROWS` are listed for later, as a small insert's are; more are indexed
    now, with whatever else is listed.
    """
    db.executemany("INSERT INTO memories_unindexed (seq) VALUES (?)", [(seq,) for seq in seqs])
    if len(seqs) > DEFERRED_ROWS:
        index_unindexed(db)


def _index_after(db: sqlite3.Connection, last: int) -> int:
    """Feed the memories above row ``last`` to the full-text index; return how many.

    Row ids only grow inside a write transaction, so those are the rows it just inserted.
    The index's merges wait meanwhile (:func:`merging_held`).
    Their metadata values go to the index of metadata values with them (:func:`tag`).
    """
    indexed: int = merging_held(
        db,
        lambda: (
            db.execute(
                "INSERT INTO memories_fts (rowid, content, scope) "
                "SELECT seq, coalesce(index_text, content), scope FROM memories WHERE seq > ?",
                (last,),
            ).rowcount
        ),
    )
    tag(db, "seq > ?", (last,))
    return indexed


DEFERRED_ROWS = 16
"""Batches up to this size are inserted row by row and indexed later (see :func:`insert_rows`).

Indexing a memory in its own durable transaction made that transaction write and fsync the
index's pages as well: a median single add took 1.0 ms instead of 0.6 ms at 100,000 memories.
"""


def index_unindexed(db: sqlite3.Connection) -> int:
    """Index the memories listed in ``memories_unindexed`` and empty the list; return how many.

    Their metadata values go to the index of metadata values with them (:func:`tag`).

    Safe to run at any time, in any process, and to lose in a crash: the rows stay listed
    until the transaction that indexes them commits.
    """
    indexed: int = db.execute(
        "INSERT INTO memories_fts (rowid, content, scope) "
        "SELECT m.seq, coalesce(m.index_text, m.content), m.scope FROM memories_unindexed AS u "
        "JOIN memories AS m ON m.seq = u.seq"
    ).rowcount
    if indexed:
        tag(db, "seq IN (SELECT seq FROM memories_unindexed)", ())
        db.execute("DELETE FROM memories_unindexed")
    return indexed


Row = Sequence[Any]


FIRST_CHUNK = 1_000
"""Rows in the first chunk of a batch :func:`insert_pipelined` takes; built with nothing to
overlap it."""

CHUNK = 5_000
"""The most rows in one chunk; a batch of up to this many is a single chunk."""


def chunk_bounds(total: int) -> list[tuple[int, int]]:
    """Split ``total`` rows into the ``(start, stop)`` chunks of :func:`insert_pipelined`.

    Up to :data:`CHUNK` rows are one chunk: split up, they imported 15% slower in calls of
    5,000 (median of six imports of 100,000 memories each way). A larger batch starts with a
    small chunk (:data:`FIRST_CHUNK`), since the first chunk is built while nothing else runs: a
    first chunk of 5,000 kept SQLite waiting about 70 ms per call. Each later chunk is built
    while SQLite writes the one before, which takes two to three times as long per row as
    building, so a chunk may be up to three times the one before it, to at most :data:`CHUNK`.
    """
    if total <= CHUNK:
        return [(0, total)] if total else []
    bounds: list[tuple[int, int]] = []
    start, size = 0, FIRST_CHUNK
    while start < total:
        stop = min(start + size, total)
        bounds.append((start, stop))
        start, size = stop, min(3 * size, CHUNK)
    return bounds


def insert_pipelined(
    db: sqlite3.Connection,
    scope: int,
    bounds: Sequence[tuple[int, int]],
    build: Callable[[int, int], list[Row]],
    conflict: str,
    times: Times | None = None,
) -> tuple[int, list[Row]]:
    """Insert the rows ``build(start, stop)`` makes per chunk; return (rows added, all rows).

    ``bounds`` are the chunks' ``(start, stop)``, as :func:`chunk_bounds` gives them. Like
    :func:`insert_rows`, chunk after chunk, with one difference: while SQLite indexes one
    chunk (a single statement, during which Python's lock is free) a helper thread builds the
    next (checks, ids, dedup keys, JSON). Building never overlaps the row inserts, which need
    Python's lock for every row. An error in ``build`` surfaces here, before anything of its
    chunk is written.
    """
    insert = insert_statement(scope, conflict, times)
    built: list[Row] = []
    added = 0
    with (
        short_turns(),
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentrecall rows") as helper,
    ):
        pending = helper.submit(build, *bounds[0])
        for k in range(len(bounds)):
            rows = pending.result()
            built.extend(rows)
            last = last_seq(db)
            with binding():
                db.executemany(insert, rows)
            count_inserted(db, rows, last)
            if k + 1 < len(bounds):
                pending = helper.submit(build, *bounds[k + 1])
            added += _index_after(db, last)
    return added, built


def keep_versions(
    db: sqlite3.Connection,
    condition: str,
    params: list[object],
    now: str,
    change: str,
    reason: str | None,
    successor: str | None = None,
) -> None:
    """Copy the memories matching ``condition`` (over alias ``m``) into the history.

    Each version records the memory's row as it is; with ``successor``, as that memory
    retires it at ``now`` (a ``"supersede"`` version).
    """
    retired = "m.invalidated_at, m.superseded_by" if successor is None else "?, ?"
    db.execute(
        f"INSERT INTO memory_history (id, scope, content, metadata, changed_at, change, reason, "
        f"{ROW_FIELDS}) SELECT m.id, m.scope, m.content, m.metadata, ?, ?, ?, m.created_at, "
        f"{retired}, m.valid_from, m.valid_until FROM memories AS m WHERE {condition}",
        [now, change, reason, *([] if successor is None else [now, successor]), *params],
    )


def purge_expired(db: sqlite3.Connection, now: str) -> None:
    """Move expired memories to the history; the partial index makes this cheap when none are."""
    # One probe of the partial index; most writes find nothing and skip both statements.
    if db.execute(f"SELECT 1 FROM memories AS m WHERE {EXPIRED} LIMIT 1", [now]).fetchone() is None:
        return
    # Dated when the memory expired, not when this write came by, which may be much later.
    db.execute(
        f"INSERT INTO memory_history (id, scope, content, metadata, changed_at, change, reason, "
        f"{ROW_FIELDS}) SELECT m.id, m.scope, m.content, m.metadata, {EXPIRED_AT}, 'expire', "
        f"NULL, m.{ROW_FIELDS.replace(', ', ', m.')} FROM memories AS m WHERE {EXPIRED}",
        [now],
    )
    db.execute(f"DELETE FROM memories AS m WHERE {EXPIRED}", [now])
