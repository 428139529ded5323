"""The embedder protocol: a batch of texts in, one float32 vector per text out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy
    import numpy.typing

    Vectors = numpy.typing.NDArray[numpy.float32]
else:
    Vectors = Any
"""A ``numpy`` array of shape ``(len(texts), dimension)`` and dtype ``float32``."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose cosine similarity tells how close their meanings are.

    What a store relies on:

    * ``embed(texts)`` returns one row per text, in the order given, of length
      :attr:`dimension`; rows need not be normalised (stores normalise them).
    * The same text gives the same vector for the same :attr:`model_id`. A store records the
      ``model_id`` and ``dimension`` of the vectors it keeps and refuses to mix in vectors of
      another model.
    * It is called from a store's worker thread, one call at a time per store, with batches of
      any size (an import passes thousands); split large batches inside if the model needs to.
    * Failures raise; a store reports them with the texts' count and the model id.
    * Reading :attr:`model_id` is free. Reading :attr:`dimension` may cost one call to the
      model, once, for an embedder that learns it from its first answer
      (:class:`~agentrecall.embeddings.OpenAICompatibleEmbedder` without ``dimension=``):
      read it where blocking is fine.

    :func:`~agentrecall.embeddings.embedder_from` turns an ``embedder=`` argument into an
    embedder or a clear error, and :func:`~agentrecall.embeddings.embed_checked` checks the
    rows an embedder returns.
    """

    @property
    def model_id(self) -> str:
        """Names the model and every setting that changes its vectors."""
        ...

    @property
    def dimension(self) -> int:
        """The length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return the vectors of ``texts`` as a float32 array, one row per text."""
        ...
