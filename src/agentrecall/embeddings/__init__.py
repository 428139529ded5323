"""Text embedders: what a store takes to recall by meaning.

:class:`Embedder` is the protocol; any object with ``model_id``, ``dimension`` and
``embed(texts)`` plugs in. :class:`LocalEmbedder` runs all-MiniLM-L6-v2 on this machine (extra
``embeddings``).

Importing this package needs the standard library only; an embedder that needs an extra
imports it when it is created.
"""

from agentrecall.embeddings.base import Embedder, Vectors
from agentrecall.embeddings.local import LocalEmbedder

__all__ = ["Embedder", "LocalEmbedder", "Vectors"]
