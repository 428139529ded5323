"""Conversation mode: a memory's score helped by its neighbours in the same session.

For stores whose memories are consecutive turns of a dialogue, the turn that answers a question
is often next to the one that matches it ("What did you adopt?" / "A puppy, Pepper."). Pure
functions over scored keys, so any backend can use them:

* :func:`adjacent` finds each memory's neighbours: the :data:`WINDOW` nearest memories before it
  and after it, in insertion order, of the same session, with at most :data:`REACH` positions
  between consecutive ones;
* :func:`smooth` adds to a memory's score :data:`NEIGHBOUR_WEIGHT` times its best neighbour's;
* :func:`expand` takes the best :data:`ANCHOR_SHARE` of the results by smoothed score and fills
  the rest with their neighbours, then with the next best;
* :func:`conversation_ranking` puts the three together over what a backend's storage found.

The three settings were chosen by leave-one-conversation-out cross-validation on the LoCoMo dev
file (``benchmarks/tune_neighbours.py``): weight 0.3, two memories on each side, anchors 70% of
the results. There they raised hybrid recall@10 from 0.702 to 0.801 (0.775 cross-validated)
and lowered it on multi-hop questions from 0.480 to 0.430; with the fusion of
:mod:`agentrecall.retrieval.fusion` as it is now, from 0.706 to 0.800, and 0.484 to 0.423.

Neighbours help questions answered by adjacent turns and cost questions whose evidence is spread
over a conversation (multi-hop), so the mode is for dialogue stores only, and opt-in.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

NEIGHBOUR_WEIGHT = 0.3
"""A memory gains this share of its best neighbour's score."""

REACH = 8
"""Consecutive neighbours are at most this many positions apart in insertion order (a few
memories of another session or scope may sit between two turns)."""

WINDOW = 2
"""How many memories on each side of a memory are its neighbours."""

ANCHOR_SHARE = 0.7
"""The share of the results whose neighbours are brought in (see :func:`expand`)."""


def adjacent(
    rows: Sequence[tuple[int, K, Hashable]], *, reach: int = REACH, window: int = WINDOW
) -> dict[K, tuple[K, ...]]:
    """Return each key's neighbours: the ``window`` nearest rows on each side, same session.

    Args:
        rows: ``(position, key, session)``; ``session`` ``None`` means the row belongs to no
            session and has no neighbours. Positions are distinct.
        reach: the largest position difference between two consecutive rows of a session
            for them to be neighbours; a wider gap ends the run of neighbours.
        window: how many rows on each side are neighbours, at least 1.

    Keys without neighbours are left out; the neighbours of a key come nearest first, the one
    before ahead of the one after at the same distance.
    """
    sessions: dict[Hashable, list[tuple[int, K]]] = {}
    for position, key, session in rows:
        if session is not None:
            sessions.setdefault(session, []).append((position, key))
    found: dict[K, tuple[K, ...]] = {}
    for members in sessions.values():
        members.sort(key=lambda member: member[0])
        for run in _runs(members, reach):
            for index, key in enumerate(run):
                near = [
                    run[other]
                    for distance in range(1, window + 1)
                    for other in (index - distance, index + distance)
                    if 0 <= other < len(run)
                ]
                if near:
                    found[key] = tuple(near)
    return found


def _runs(members: Sequence[tuple[int, K]], reach: int) -> list[list[K]]:
    """Split position-sorted members where two consecutive ones are more than ``reach`` apart."""
    runs: list[list[K]] = []
    last: int | None = None
    for position, key in members:
        if last is None or position - last > reach:
            runs.append([])
        runs[-1].append(key)
        last = position
    return runs


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


def anchors_for(limit: int) -> int:
    """Return how many of the best hits bring their neighbours in, for ``limit`` results.

    :data:`ANCHOR_SHARE` of ``limit``, rounded down, and at least 1: 7 of 10, 2 of 3.
    """
    return max(1, int(ANCHOR_SHARE * limit + 1e-9))


def expand(
    ranked: Sequence[K],
    neighbours: Mapping[K, Sequence[K]],
    limit: int,
    *,
    anchors: int | None = None,
) -> list[K]:
    """Return up to ``limit`` keys: the best few of ``ranked``, their neighbours, then the rest.

    Args:
        ranked: the keys found, best first (by smoothed score); neighbours need not be
            among them.
        neighbours: as :func:`adjacent` returns them.
        limit: how many keys to return.
        anchors: how many of the first keys bring their neighbours in; ``None`` means
            :func:`anchors_for` ``(limit)``, 0 no expansion.

    The anchors' neighbours follow the anchors in the anchors' order (each anchor's nearest
    first), and the remaining places go to the next keys of ``ranked``. No key is returned
    twice.
    """
    count = anchors_for(limit) if anchors is None else anchors
    first = ranked[:count]
    chosen = dict.fromkeys(first)
    for anchor in first:
        for other in neighbours.get(anchor, ()):
            if len(chosen) < limit:
                chosen.setdefault(other)
    for key in ranked:
        if len(chosen) >= limit:
            break
        chosen.setdefault(key)
    return list(chosen)


def conversation_ranking(
    scores: Mapping[K, float], rows: Sequence[tuple[int, K, Hashable]], limit: int
) -> list[tuple[K, float]]:
    """Return up to ``limit`` ``(key, score)`` of a search in conversation mode, best first.

    Every backend's conversation mode is this function over what its storage finds.

    Args:
        scores: the keys found and their scores, best first (normalised if a single ranking
            produced them, as :func:`agentrecall.stores.hybrid.rank` does).
        rows: ``(position, key, session)`` of the memories around the keys found that meet
            the search's conditions, as :func:`adjacent` takes them; it must hold every such
            memory within ``WINDOW * REACH`` positions of each key found.
        limit: how many keys to return.

    The found keys are ordered by their score after :func:`smooth`, :func:`expand` picks the
    results (so memories found only as neighbours come in as neighbours of the best ones),
    and they are returned by that smoothed score.
    """
    neighbours = adjacent(rows)
    smoothed = smooth(scores, neighbours)
    order = sorted(scores, key=lambda key: -smoothed[key])
    chosen = expand(order, neighbours, limit)
    return sorted(((key, smoothed[key]) for key in chosen), key=lambda item: -item[1])
