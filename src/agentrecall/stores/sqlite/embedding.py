"""How ``SQLiteStore`` calls its embedder: checked, in batches, failures named; ``numpy`` lazily.

Importing this module needs the standard library only; the embedder is checked, and a missing
``numpy`` named, by :func:`agentrecall.embeddings.adapters.store_embedder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentrecall.embeddings.base import Embedder
from agentrecall.embeddings.vectors import check_dimension, embed_checked
from agentrecall.errors import ModelError
from agentrecall.stores.sqlite.vector_sql import PreparedVectors, VectorModel

if TYPE_CHECKING:
    from agentrecall.stores.sqlite.vector_index import Matrix

EMBED_BATCH = 1_024
"""Texts per ``embed`` call: the float32 vectors of a batch are quantized before the next."""


class Embedding:
    """A store's embedder, with the checks and batching every call needs.

    Runs on the store's worker thread, never inside a write transaction. The embedder's
    ``dimension`` is first read there too, when a vector is first needed: an embedder may
    learn it with a request to its server, which a store's constructor must not send.
    """

    def __init__(self, embedder: Embedder, path: str) -> None:
        self.embedder = embedder
        self.path = path
        self._model: VectorModel | None = None

    @property
    def model(self) -> VectorModel:
        """The embedder's model id and dimension, read on first use and kept.

        Raises:
            InvalidArgumentError: the embedder's ``dimension`` is not a usable integer.
            ModelError: the embedder failed while learning its dimension.
        """
        if self._model is None:
            model_id = self.embedder.model_id
            dimension = check_dimension(
                self.embedder.dimension, f"the dimension of embedder {model_id!r}"
            )
            self._model = VectorModel(model_id, dimension)
        return self._model

    def prepare(self, texts: Sequence[str]) -> PreparedVectors:
        """Return the quantized vector of each distinct text, for a write to store."""
        from agentrecall.stores.sqlite.vector_index import quantize

        distinct = list(dict.fromkeys(texts))
        blobs: dict[str, bytes] = {}
        for start in range(0, len(distinct), EMBED_BATCH):
            batch = distinct[start : start + EMBED_BATCH]
            blobs.update(zip(batch, quantize(self.vectors(batch)), strict=True))
        return PreparedVectors(self.model, self.path, blobs)

    def query(self, text: str) -> Matrix | None:
        """Return the unit vector of a query, or ``None`` when it has no direction."""
        from agentrecall.stores.sqlite.vector_index import direction

        return direction(self.vectors([text])[0])

    def vectors(self, texts: Sequence[str]) -> Matrix:
        """Return the embedder's float32 vectors of ``texts``, once they are sound.

        Raises:
            ModelError: the embedder raised something other than an agentrecall error
                (chained), or returned rows of the wrong count or length, something that is
                not numbers, NaN or infinity (:func:`~agentrecall.embeddings.embed_checked`).
            InvalidArgumentError: the embedder's ``dimension`` is not a usable integer.
        """
        # Embedded before the dimension is read: an embedder that learns it from its first
        # answer then needs no request of its own for it.
        vectors: Matrix = embed_checked(self.embedder, list(texts))
        if vectors.shape[1] != self.model.dimension:
            raise ModelError(
                f"embedder '{self.model.model_id}' returned vectors of length "
                f"{vectors.shape[1]}, but its dimension was {self.model.dimension}"
            )
        return vectors
