"""How much of a store search by meaning covers: :class:`VectorCoverage`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class VectorCoverage:
    """How many memories have a vector, and so can be found by a semantic or hybrid search.

    A memory gets its vector when a store with an embedder writes it; one written without an
    embedder, or while a ``reindex()`` was interrupted, has none until the next ``reindex()``.
    A semantic search never finds a memory without a vector (a hybrid one finds it by keyword
    only).

    Attributes:
        memories: the unexpired memories of the store, or of the view's scope.
        with_vectors: how many of them have a vector.
        model: the id of the model the store's vectors are made by, ``None`` before a store
            with an embedder wrote to it.
        dimension: the length of those vectors, ``None`` likewise.
    """

    memories: int
    with_vectors: int
    model: str | None = None
    dimension: int | None = None

    @property
    def missing(self) -> int:
        """How many memories have no vector: what a ``reindex()`` would compute."""
        return self.memories - self.with_vectors
