"""Conversation mode: a memory's score helped by its neighbours in the same session.

For stores whose memories are consecutive turns of a dialogue, the turn that answers a question
is often next to the one that matches it ("What did you adopt?" / "A puppy, Pepper."). Pure
functions over scored keys, so any backend can use them:

* :func:`adjacent` finds each memory's neighbours: the nearest memory before it and after it, in
  insertion order and within :data:`REACH` positions, of the same session;
* :func:`smooth` adds to a memory's score :data:`NEIGHBOUR_WEIGHT` times its best neighbour's;
* :func:`expand` takes the best half of the results by smoothed score and fills the rest with
  their neighbours, then with the next best.

Neighbours help questions answered by adjacent turns and cost questions whose evidence is spread
over a conversation (multi-hop), so the mode is for dialogue stores only, and opt-in.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

NEIGHBOUR_WEIGHT = 0.5
"""A memory gains this share of its best neighbour's score."""

REACH = 8
"""Neighbours are at most this many positions apart in insertion order (a few memories of
another session or scope may sit between two turns)."""


def adjacent(
    rows: Sequence[tuple[int, K, Hashable]], *, reach: int = REACH
) -> dict[K, tuple[K, ...]]:
    """Return each key's neighbours: the nearest row on each side of the same session.

    Args:
        rows: ``(position, key, session)``; ``session`` ``None`` means the row belongs to no
            session and has no neighbours. Positions are distinct.
        reach: the largest position difference between two neighbours.

    Keys without neighbours are left out; the neighbours of a key come before-first.
    """
    sessions: dict[Hashable, list[tuple[int, K]]] = {}
    for position, key, session in rows:
        if session is not None:
            sessions.setdefault(session, []).append((position, key))
    found: dict[K, list[K]] = {}
    for members in sessions.values():
        members.sort(key=lambda member: member[0])
        for (before, first), (after, second) in zip(members, members[1:], strict=False):
            if after - before <= reach:
                found.setdefault(first, []).append(second)
                found.setdefault(second, []).insert(0, first)
    return {key: tuple(keys) for key, keys in found.items()}


def smooth(
    scores: Mapping[K, float],
    neighbours: Mapping[K, Sequence[K]],
    *,
    weight: float = NEIGHBOUR_WEIGHT,
) -> dict[K, float]:
    """Return ``score + weight * best neighbour's score`` for every scored key and neighbour.

    A key without a score counts 0, so a neighbour of a hit that was not itself found scores
    ``weight`` times that hit's score.
    """
    keys = dict.fromkeys(scores)
    for key in scores:
        keys.update(dict.fromkeys(neighbours.get(key, ())))
    return {
        key: scores.get(key, 0.0)
        + weight * max((scores.get(other, 0.0) for other in neighbours.get(key, ())), default=0.0)
        for key in keys
    }


def expand(ranked: Sequence[K], neighbours: Mapping[K, Sequence[K]], limit: int) -> list[K]:
    """Return up to ``limit`` keys: the best half of ``ranked``, their neighbours, then the rest.

    Args:
        ranked: the keys found, best first (by smoothed score); neighbours need not be
            among them.
        neighbours: as :func:`adjacent` returns them.
        limit: how many keys to return.

    The anchors are the first ``ceil(limit / 2)`` keys; their neighbours follow in the anchors'
    order (before-first), and the remaining places go to the next keys of ``ranked``. No key is
    returned twice.
    """
    anchors = ranked[: (limit + 1) // 2]
    chosen = dict.fromkeys(anchors)
    for anchor in anchors:
        for other in neighbours.get(anchor, ()):
            if len(chosen) < limit:
                chosen.setdefault(other)
    for key in ranked:
        if len(chosen) >= limit:
            break
        chosen.setdefault(key)
    return list(chosen)
