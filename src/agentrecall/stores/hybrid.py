"""The part of semantic and hybrid search that is not storage: hits, their ranking, entries.

A backend finds keyword hits (BM25) and semantic hits (cosine similarity), each its best
:func:`pool_size`; this module fuses or orders them (:mod:`agentrecall.retrieval.fusion`) and
turns the best into the entries a search returns, so every backend scores alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrecall.retrieval.fusion import fuse, keyword_parts, semantic_parts
from agentrecall.stores.records import metadata
from agentrecall.types import JsonObject, MemoryEntry

POOL = 100
"""Each ranking fused (or smoothed) contributes its best ``max(POOL, 4 * limit)`` memories."""


def pool_size(mode: str, neighbours: bool, limit: int) -> int:
    """Return how many hits each ranking contributes to a search of ``limit`` hits."""
    return max(POOL, 4 * limit) if mode == "hybrid" or neighbours else limit


@dataclass(slots=True)
class Hit:
    """A memory found, with its stored metadata and its scores so far."""

    id: str
    content: str
    metadata: JsonObject | None
    keyword: float | None = None
    semantic: float | None = None


def rank(
    mode: str, neighbours: bool, keyword: list[Hit], semantic: list[Hit]
) -> list[tuple[str, float]]:
    """Return ``(id, score)`` best first: fused in hybrid mode, else the one ranking's scores.

    For neighbours to help, a single ranking's scores are normalised first, as fusion
    normalises that ranking's (:func:`~agentrecall.retrieval.fusion.keyword_parts`,
    :func:`~agentrecall.retrieval.fusion.semantic_parts`).
    """
    if mode == "hybrid":
        fused = fuse(
            [(hit.id, hit.keyword or 0.0) for hit in keyword],
            [(hit.id, hit.semantic or 0.0) for hit in semantic],
        )
        return [(item.key, item.score) for item in fused]
    scores = [(hit.id, _score(hit)) for hit in keyword or semantic]
    if not neighbours:
        return scores
    normalised = keyword_parts(scores) if keyword else semantic_parts(scores)
    return [(key, normalised[key]) for key, _ in scores]


def merged(keyword: list[Hit], semantic: list[Hit]) -> dict[str, Hit]:
    """Return every hit by id, one per memory, holding both of its scores."""
    hits = {hit.id: hit for hit in semantic}
    for hit in keyword:
        hits.setdefault(hit.id, hit).keyword = hit.keyword
    return hits


def entries(hits: dict[str, Hit], ranked: list[tuple[str, float]], mode: str) -> list[MemoryEntry]:
    """Return the entries of ``ranked`` ``(id, score)``, best first."""
    return [entry(hits[key], score, mode) for key, score in ranked]


def keyword_hit(entry: MemoryEntry) -> Hit:
    """Return the hit of a keyword search's entry, its BM25 score taken out of its metadata."""
    metadata = dict(entry.metadata or {})
    score = metadata.pop("_relevanceScore")
    return Hit(str(entry.id), entry.content, metadata, keyword=float(score))


def _score(hit: Hit) -> float:
    return hit.keyword if hit.keyword is not None else hit.semantic or 0.0


def entry(hit: Hit, score: float, mode: str) -> MemoryEntry:
    """Return a hit as the entry a search returns: ``score`` and, in hybrid mode, its parts."""
    metadata: JsonObject = {**(hit.metadata or {}), "_relevanceScore": score}
    if mode == "hybrid":
        metadata["_keywordScore"] = hit.keyword
        metadata["_semanticScore"] = hit.semantic
    return MemoryEntry(content=hit.content, metadata=metadata, id=hit.id)


def semantic_hit(row: Any, similarity: float) -> Hit:
    """Return the hit of a row ``(id, content, metadata JSON)`` found by its vector."""
    memory_id, content, encoded = row
    return Hit(memory_id, content, metadata(encoded), semantic=similarity)
