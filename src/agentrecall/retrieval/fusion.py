"""Fusing a keyword ranking and a semantic ranking into one, by normalised scores.

Pure functions over ``(key, score)`` lists, best first, so every backend that has both a keyword
and a vector search fuses them the same way.

The fusion: each list's scores are min-max normalised over that list (its best hit becomes 1,
its worst 0; a list whose scores are all equal gives each hit 1), and a hit's fused score is
``keyword_weight * keyword part + (1 - keyword_weight) * semantic part``, a part being 0 for a
hit that list did not return. With the default weight of 0.5 a memory found first by both lists
scores 1.0, one found first by one list only 0.5. Min-max fusion with 0.5 / 0.5 beat
reciprocal-rank fusion (k = 60) by more than 0.1 recall@10 on the LoCoMo dev file: ranks throw
away how much better the best keyword hit is than the rest, which is most of what BM25 knows.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

KEYWORD_WEIGHT = 0.5
"""The keyword list's share of a fused score; the semantic list has the rest."""


@dataclass(frozen=True, slots=True)
class Fused(Generic[K]):
    """One fused hit.

    Attributes:
        key: what identifies the hit (a memory id, say).
        score: the fused score, from 0 to 1.
        keyword: the hit's score in the keyword list as given, ``None`` if it was not there.
        semantic: the hit's score in the semantic list as given, ``None`` if it was not there.
    """

    key: K
    score: float
    keyword: float | None
    semantic: float | None


def min_max(scores: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Return each key's score scaled to [0, 1] over the list: the best 1, the worst 0.

    When every score is the same (one hit, say) each key gets 1: nothing in the list ranks it
    below another. A key listed twice keeps its first score.
    """
    first = _first_scores(scores)
    if not first:
        return {}
    low, high = min(first.values()), max(first.values())
    if high <= low:
        return dict.fromkeys(first, 1.0)
    return {key: (value - low) / (high - low) for key, value in first.items()}


def fuse(
    keyword: Sequence[tuple[K, float]],
    semantic: Sequence[tuple[K, float]],
    *,
    keyword_weight: float = KEYWORD_WEIGHT,
) -> list[Fused[K]]:
    """Return the union of two rankings ordered by fused score, best first.

    Args:
        keyword: ``(key, score)`` of the keyword search, higher is better.
        semantic: ``(key, score)`` of the semantic search, higher is better.
        keyword_weight: the keyword part's weight, from 0 to 1 (see the module docstring).

    Ties keep the order of first appearance: the keyword list's order, then the semantic
    list's for keys only it has, so the result is the same on every run.

    Raises:
        ValueError: ``keyword_weight`` is outside [0, 1].
    """
    if not 0.0 <= keyword_weight <= 1.0:
        raise ValueError(f"keyword_weight must be from 0 to 1, got {keyword_weight!r}")
    keyword_norm, semantic_norm = min_max(keyword), min_max(semantic)
    keyword_raw, semantic_raw = _first_scores(keyword), _first_scores(semantic)
    keys = list(dict.fromkeys([*keyword_raw, *semantic_raw]))
    fused = [
        Fused(
            key=key,
            score=keyword_weight * keyword_norm.get(key, 0.0)
            + (1.0 - keyword_weight) * semantic_norm.get(key, 0.0),
            keyword=keyword_raw.get(key),
            semantic=semantic_raw.get(key),
        )
        for key in keys
    ]
    # sorted() is stable: equal scores keep the order of first appearance.
    return sorted(fused, key=lambda hit: -hit.score)


def _first_scores(scores: Sequence[tuple[K, float]]) -> Mapping[K, float]:
    first: dict[K, float] = {}
    for key, value in scores:
        first.setdefault(key, value)
    return first
