"""Fusing a keyword ranking and a semantic ranking into one, by normalised scores.

Pure functions over ``(key, score)`` lists, best first, so every backend that has both a keyword
and a vector search fuses them the same way.

The fusion: the keyword list's scores are divided by its best (:func:`scaled_by_best`), the
semantic list's min-max normalised over that list (:func:`min_max`: its best hit becomes 1, its
worst 0, over a span of at least :data:`SEMANTIC_SPAN`), and a hit's fused score is
``keyword_weight * keyword part + (1 - keyword_weight) * semantic part``, a part being 0 for a
hit that list did not return. With the default weight of 0.5 a memory found first by both lists
scores 1.0, one found first by one list only 0.5.

Why the two lists differ: a BM25 score has a true zero, a memory sharing no word with the
query, and every memory the keyword list returns shares one. Min-max put its worst hit level
with a memory not found at all and, in a store of a few memories, turned near-equal scores
(two memories sharing only the word "user" with the query) into 1 and 0, so that one common
word weighed as much as the whole semantic ranking. A cosine similarity has no such zero
within a pool (most texts are somewhat alike), and min-max over the pool spreads it best;
but similarities within a few hundredths of each other differ by noise (int8 storage moves
them in the third digit), which a span of at least 0.1 keeps from deciding the ranking. On the
LoCoMo dev file this gives hybrid recall@10 0.706 (0.702 with min-max on both lists) and
conversation mode 0.800 (0.801); dividing the semantic scores by their best too loses 0.016.
Min-max fusion beat reciprocal-rank fusion (k = 60) by more than 0.1 recall@10 on that file:
ranks throw away how much better the best keyword hit is than the rest, which is most of what
BM25 knows.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

KEYWORD_WEIGHT = 0.5
"""The keyword list's share of a fused score; the semantic list has the rest."""

SEMANTIC_SPAN = 0.1
"""The least span the semantic list's similarities are normalised over (see the module
docstring)."""


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


def min_max(scores: Sequence[tuple[K, float]], *, least_span: float = 0.0) -> dict[K, float]:
    """Return each key's score scaled to [0, 1] over the list: the best 1, the worst 0.

    With ``least_span``, scores closer together than that are scaled as if the worst were
    ``least_span`` below the best: the worst then gets more than 0, and differences smaller
    than ``least_span`` stay small. When every score is the same (one hit, say) each key gets
    1: nothing in the list ranks it below another. A key listed twice keeps its first score.
    """
    first = _first_scores(scores)
    if not first:
        return {}
    low, high = min(first.values()), max(first.values())
    if high <= low:
        return dict.fromkeys(first, 1.0)
    low = min(low, high - least_span)
    return {key: (value - low) / (high - low) for key, value in first.items()}


def scaled_by_best(scores: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Return each key's score divided by the list's best, for scores whose zero means no match.

    Scores are clamped to [0, 1]; when the best is not above zero each key gets 1 (nothing in
    the list ranks it below another). A key listed twice keeps its first score.
    """
    first = _first_scores(scores)
    if not first:
        return {}
    high = max(first.values())
    if high <= 0.0:
        return dict.fromkeys(first, 1.0)
    return {key: min(max(value / high, 0.0), 1.0) for key, value in first.items()}


def keyword_parts(scores: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Return a keyword (BM25) list's scores as fusion weighs them: :func:`scaled_by_best`."""
    return scaled_by_best(scores)


def semantic_parts(scores: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Return a semantic (cosine) list's scores as fusion weighs them.

    That is :func:`min_max` over a span of at least :data:`SEMANTIC_SPAN`.
    """
    return min_max(scores, least_span=SEMANTIC_SPAN)


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
    keyword_norm, semantic_norm = keyword_parts(keyword), semantic_parts(semantic)
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
