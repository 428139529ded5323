"""Conversation mode in ``PostgresStore``: the memories around each hit, in one statement.

The ranking itself is the one every backend uses
(:func:`agentrecall.retrieval.neighbours.conversation_ranking`); this module reads what it
needs. One statement reads, for every memory found, the ``WINDOW * REACH`` memories of the store
before it and after it in insertion order (``seq``, walked backwards and forwards along the
``(store, seq)`` index, so its cost does not grow with the store), each with its scope, its
session (the JSON value of the session key) and whether it meets the search's conditions
(scope, expiry, filter, time bounds). A second statement reads the memories brought in only as
neighbours, again under the conditions.

Consecutive memories of a window are one position apart; between memories that no window
holds together the gap is wider than ``REACH``, so no run of neighbours crosses it (and no
memory of one window could be a neighbour of a found memory of another, wherever they lie).
Positions count the store's memories, every scope's, whatever the conditions: a memory of
another session, scope or filter between two turns counts as it does in ``SQLiteStore``, whose
row numbers are its file's. They do not count other stores' rows of the schema, values of the
shared identity that an add of a content already held consumed, or deleted memories, which
the identity skips; ``SQLiteStore`` counts the gaps deleted memories leave (see
``docs/postgres-internals.md``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from agentrecall.retrieval.neighbours import REACH, WINDOW, conversation_ranking
from agentrecall.stores.hybrid import Hit
from agentrecall.stores.postgres.tables import Connection, Params, Tables
from agentrecall.stores.postgres.vectors import with_marks
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
    marked: bool = False,
) -> list[tuple[str, float]]:
    """Return ``ranked`` (``(id, score)``, best first) with neighbours' help, at most ``limit``.

    Memories brought in only as neighbours are added to ``hits`` (with ``marked``, a retired
    one carries its marks, as :func:`~agentrecall.stores.postgres.vectors.with_marks` adds
    them); a neighbour deleted or changed out of the conditions between the two statements is
    left out.
    """
    if not ranked:
        return []
    rows = await _around(connection, tables, [key for key, _ in ranked], conditions, session_key)
    chosen = conversation_ranking(dict(ranked), rows, limit)
    added = [key for key, _ in chosen if key not in hits]
    if added:
        where, params = conditions
        cursor = await connection.execute(
            "SELECT m.id, m.content, m.metadata::text, m.invalidated_at, m.superseded_by "
            f"FROM {tables.memories} AS m WHERE m.id = ANY(%s) AND {where}",
            [added, *params],
        )
        for memory_id, content, encoded, *marks in await cursor.fetchall():
            hit = Hit(memory_id, content, metadata(encoded))
            hits[memory_id] = with_marks(hit, marks) if marked else hit
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
    # Each window is consecutive memories of the store, so the next seq in a window is the
    # memory after it; windows that hold a memory agree on its next one (max() keeps it).
    cursor = await connection.execute(
        f"WITH hit AS (SELECT seq FROM {memories} WHERE store = %s AND id = ANY(%s)), "
        "near AS (SELECT h.seq AS anchor, w.seq FROM hit AS h CROSS JOIN LATERAL ("
        f"(SELECT seq FROM {memories} WHERE store = %s AND seq < h.seq "
        "ORDER BY seq DESC LIMIT %s) UNION ALL SELECT h.seq UNION ALL "
        f"(SELECT seq FROM {memories} WHERE store = %s AND seq > h.seq "
        "ORDER BY seq LIMIT %s)) AS w), "
        "linked AS (SELECT seq, max(following) AS following FROM (SELECT seq, "
        "lead(seq) OVER (PARTITION BY anchor ORDER BY seq) AS following FROM near) AS l "
        "GROUP BY seq) "
        "SELECT l.seq, l.following, m.id, m.scope, (m.metadata -> %s)::text, "
        f"({where}) FROM linked AS l JOIN {memories} AS m ON m.seq = l.seq ORDER BY l.seq",
        [store, ids, store, SPAN, store, SPAN, session_key, *params],
    )
    found: list[Any] = await cursor.fetchall()
    rows: list[tuple[int, str, Hashable]] = []
    position, last = 0, None
    for seq, following, memory_id, scope, session, meets in found:
        position += 1 if last == seq else REACH + 1
        last = following
        if meets:
            rows.append((position, memory_id, None if session is None else (scope, session)))
    return rows
