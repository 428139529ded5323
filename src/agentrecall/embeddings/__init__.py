"""Text embedders: what a store takes to recall by meaning.

:class:`Embedder` is the protocol; any object with ``model_id``, ``dimension`` and
``embed(texts)`` plugs in, and :class:`CallableEmbedder` makes one of a plain function.
:class:`LocalEmbedder` runs all-MiniLM-L6-v2 on this machine (extra ``embeddings``);
:class:`OpenAICompatibleEmbedder` asks an embeddings server (extras ``http`` and
``embeddings``). :func:`embedder_from` turns an ``embedder=`` argument into an embedder or a
clear error, and :func:`embed_checked` checks what an embedder returns.

Importing this package needs the standard library only; an embedder that needs an extra
imports it when it is created. :class:`LocalEmbedder` and :class:`OpenAICompatibleEmbedder`
are imported on first use, so a store that embeds nothing does not load an HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentrecall._internal.lazy import lazy_names
from agentrecall.embeddings.adapters import CallableEmbedder, EmbedFunction, embedder_from
from agentrecall.embeddings.base import Embedder, Vectors
from agentrecall.embeddings.vectors import embed_checked

if TYPE_CHECKING:
    from agentrecall.embeddings.local import LocalEmbedder
    from agentrecall.embeddings.openai import OpenAICompatibleEmbedder

_LAZY = {
    "LocalEmbedder": "agentrecall.embeddings.local",
    "OpenAICompatibleEmbedder": "agentrecall.embeddings.openai",
}

__all__ = [
    "CallableEmbedder",
    "EmbedFunction",
    "Embedder",
    "LocalEmbedder",
    "OpenAICompatibleEmbedder",
    "Vectors",
    "embed_checked",
    "embedder_from",
]


__getattr__ = lazy_names(__name__, _LAZY, globals())
