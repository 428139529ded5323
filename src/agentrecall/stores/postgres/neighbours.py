"""Conversation mode in ``PostgresStore``: the memories around each hit, in one statement.

The ranking itself is the one every backend uses
(:func:`agentrecall.retrieval.neighbours.conversation_ranking`); this module reads what it
needs. One statement reads, for every memory found, the ``WINDOW * REACH`` memories of the store
before it and after it in insertion order (``seq``, walked backwards and forwards along the
``(store, seq)`` index, so its cost does not grow with the store), each with its scope, its
session (the JSON value of the session key) and whether it meets the search's conditions
(scope, expiry, filter, time bounds). A second statement reads the memories brought in only as
neighbours, again under the conditions.

Positions count the store's memories, every scope's, whatever the conditions: a memory of
another session, scope or filter between two turns counts as it does in ``SQLiteStore``, whose
row numbers are its file's. They do not count other stores' rows of the schema, values of the
shared identity that an add of a content already held consumed, or deleted memories, which
the identity skips; ``SQLiteStore`` counts the gaps deleted memories leave (see
``docs/postgres.md``). Windows that share no memory are kept out of reach of each other: no
memory of one can be a neighbour of a found memory of the other, wherever they lie.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from agentrecall.retrieval.neighbours import REACH, WINDOW, conversation_ranking
from agentrecall.stores.hybrid import Hit
from agentrecall.stores.postgres.tables import Connection, Params, Tables
from agentrecall.stores.records import metadata

SPAN = WINDOW * REACH
"""Memories read on each side of a hit: a neighbour ``WINDOW`` turns away is at most this far."""


async def with_neighbours(
    connection: Connection,
    tables: Tables,
    ranked: list[tuple[str, float]],
    hits: dict[str, Hit],
    conditions: tuple[str, Params],
    session_key: str,
    limit: int,
) -> list[tuple[str, float]]:
    """Return ``ranked`` (``(id, score)``, best first) with neighbours' help, at most ``limit``.

    Memories brought in only as neighbours are added to ``hits``; a neighbour deleted or
    changed out of the conditions between the two statements is left out.
    """
    if not ranked:
        return []
    rows = await _around(connection, tables, [key for key, _ in ranked], conditions, session_key)
    chosen = conversation_ranking(dict(ranked), rows, limit)
    added = [key for key, _ in chosen if key not in hits]
    if added:
        where, params = conditions
        cursor = await connection.execute(
            f"SELECT m.id, m.content, m.metadata::text FROM {tables.memories} AS m "
            f"WHERE m.id = ANY(%s) AND {where}",
            [added, *params],
        )
        for memory_id, content, encoded in await cursor.fetchall():
            hits[memory_id] = Hit(memory_id, content, metadata(encoded))
    return [(key, score) for key, score in chosen if key in hits]


async def _around(
    connection: Connection,
    tables: Tables,
    ids: list[str],
    conditions: tuple[str, Params],
    session_key: str,
) -> list[tuple[int, str, Hashable]]:
    """Return ``(position, id, session)`` of the memories around ``ids`` meeting the conditions.

    ``session`` is ``(scope, JSON text of the session value)``, or ``None`` for a memory
    without the session key.
    """
    where, params = conditions
    memories, store = tables.memories, tables.store
    # row_number() runs over each side's LIMIT, not over the store.
    cursor = await connection.execute(
        f"WITH hit AS (SELECT seq FROM {memories} WHERE store = %s AND id = ANY(%s)) "
        "SELECT n.anchor, n.step, m.seq, m.id, m.scope, (m.metadata -> %s)::text, "
        f"({where}) FROM (SELECT h.seq AS anchor, w.seq, w.step FROM hit AS h "
        "CROSS JOIN LATERAL ("
        "SELECT b.seq, -row_number() OVER (ORDER BY b.seq DESC) AS step FROM ("
        f"SELECT seq FROM {memories} WHERE store = %s AND seq < h.seq "
        "ORDER BY seq DESC LIMIT %s) AS b "
        "UNION ALL SELECT h.seq, 0 UNION ALL "
        "SELECT a.seq, row_number() OVER (ORDER BY a.seq) FROM ("
        f"SELECT seq FROM {memories} WHERE store = %s AND seq > h.seq "
        "ORDER BY seq LIMIT %s) AS a) AS w) AS n "
        f"JOIN {memories} AS m ON m.seq = n.seq",
        [store, ids, session_key, *params, store, SPAN, store, SPAN],
    )
    found: list[Any] = await cursor.fetchall()
    windows: dict[int, list[tuple[int, int]]] = {}
    rows: dict[int, tuple[str, Hashable]] = {}
    for anchor, step, seq, memory_id, scope, session, meets in found:
        windows.setdefault(anchor, []).append((step, seq))
        if meets:
            rows[seq] = (memory_id, None if session is None else (scope, session))
    positions = _positions(windows)
    return [(positions[seq], memory_id, session) for seq, (memory_id, session) in rows.items()]


def _positions(windows: dict[int, list[tuple[int, int]]]) -> dict[int, int]:
    """Number the rows of the windows in store order, from each window's ``(step, seq)``.

    Rows next to each other in some window are one apart; between rows no window links, the
    gap is wider than ``REACH``, so no run of neighbours crosses it.
    """
    links: set[tuple[int, int]] = set()
    for members in windows.values():
        members.sort()
        links.update((a, b) for (_, a), (_, b) in zip(members, members[1:], strict=False))
    positions: dict[int, int] = {}
    position = last = 0  # seq starts at 1: no link ends at 0
    for seq in sorted({seq for members in windows.values() for _, seq in members}):
        position += 1 if (last, seq) in links else REACH + 1
        positions[seq] = position
        last = seq
    return positions
