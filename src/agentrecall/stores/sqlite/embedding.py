"""How ``SQLiteStore`` calls its embedder: checked, in batches, failures named; ``numpy`` lazily.

Importing this module needs the standard library only; the embedder is checked, and a missing
``numpy`` named, by :func:`agentrecall.embeddings.adapters.store_embedder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentrecall.embeddings.base import Embedder
from agentrecall.errors import AgentRecallError, InvalidArgumentError, ModelError
from agentrecall.stores.sqlite.vector_sql import PreparedVectors, VectorModel

if TYPE_CHECKING:
    from agentrecall.stores.sqlite.vector_index import Matrix

EMBED_BATCH = 1_024
"""Texts per ``embed`` call: the float32 vectors of a batch are quantized before the next."""


class Embedding:
    """A store's embedder, with the checks and batching every call needs.

    Runs on the store's worker thread, never inside a write transaction.
    """

    def __init__(self, embedder: Embedder, path: str) -> None:
        self.embedder = embedder
        self.model = VectorModel(embedder.model_id, embedder.dimension)
        self.path = path

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
        """Return the embedder's float32 vectors of ``texts``, checked for shape.

        Raises:
            ModelError: the embedder raised something other than an agentrecall error (chained).
            InvalidArgumentError: it returned an array of the wrong shape.
        """
        import numpy

        try:
            result: Any = self.embedder.embed(list(texts))
        except AgentRecallError:
            raise
        except Exception as error:
            raise ModelError(
                f"embedder '{self.model.model_id}' failed on {len(texts)} texts: {error}"
            ) from error
        vectors = numpy.asarray(result, dtype=numpy.float32)
        expected = (len(texts), self.model.dimension)
        if vectors.shape != expected:
            raise InvalidArgumentError(
                f"embedder '{self.model.model_id}' returned an array of shape {vectors.shape} "
                f"for {len(texts)} texts; expected {expected}"
            )
        matrix: Matrix = vectors
        return matrix
