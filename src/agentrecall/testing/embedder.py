"""A deterministic embedder for tests: words hashed into a vector, no model needed."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from agentrecall.embeddings.base import Vectors

_WORDS = re.compile(r"\w+")


class HashEmbedder:
    """Embeds a text as the signed sum of its lowercase words, each hashed to a position.

    Texts that share words get similar vectors and texts that share none get orthogonal ones
    (up to hash collisions), which is all a test of semantic or hybrid search needs: the
    results are the same on every machine and every run. Needs ``numpy``.

    Args:
        dimension: length of the vectors (default 64).
        synonyms: words counted as other words, e.g. ``{"chair": "seat"}``, so a test can
            show recall that keyword matching cannot give.
    """

    def __init__(self, dimension: int = 64, *, synonyms: dict[str, str] | None = None) -> None:
        self.dimension = dimension
        self._synonyms = dict(synonyms or {})
        self.model_id = f"agentrecall-test-hash-{dimension}"
        if self._synonyms:
            pairs = ",".join(f"{a}={b}" for a, b in sorted(self._synonyms.items()))
            self.model_id += "-" + hashlib.blake2b(pairs.encode(), digest_size=4).hexdigest()
        self.calls: list[int] = []
        """The batch size of every :meth:`embed` call, for tests that count model calls."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return one float32 row per text."""
        import numpy

        self.calls.append(len(texts))
        vectors = numpy.zeros((len(texts), self.dimension), dtype=numpy.float32)
        for row, text in enumerate(texts):
            for word in _WORDS.findall(text.lower()):
                word = self._synonyms.get(word, word)
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                position = int.from_bytes(digest[:4], "little") % self.dimension
                vectors[row, position] += 1.0 if digest[4] & 1 else -1.0
        return vectors
