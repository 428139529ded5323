"""The corpus's ``LocalEmbedder`` vectors, computed once and kept in a cache directory.

Embedding 100,000 memories with the real model takes minutes on the project machine, so
:func:`corpus_vectors` computes them once, in chunks (a run that is stopped resumes where it
stopped), and keeps them as ``.npy`` files under ``$AGENTRECALL_BENCH_CACHE`` (default: the
system's temporary directory). The file name holds the model id and a digest of the texts, so a
changed corpus or model is never served old vectors.

:class:`CorpusEmbedder` then hands those vectors to a store's import as if the model had just
computed them: the database records the real model's id and dimension, and a store opened later
with a real ``LocalEmbedder`` searches them, its queries embedded by the model.

Run ``python benchmarks/vector_cache.py SIZE`` to fill the cache ahead of a benchmark.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy
from corpus import corpus

CHUNK = 4_096


def cache_dir() -> Path:
    root = os.environ.get("AGENTRECALL_BENCH_CACHE") or tempfile.gettempdir()
    path = Path(root) / "agentrecall-bench-vectors"
    path.mkdir(parents=True, exist_ok=True)
    return path


def corpus_vectors(size: int, embedder: Any) -> tuple[list[str], Any]:
    """Return the texts of ``corpus(size)`` and their vectors by ``embedder``, cached."""
    texts = [content for content, _ in itertools.islice(corpus(size), size)]
    digest = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]
    model = hashlib.sha256(embedder.model_id.encode("utf-8")).hexdigest()[:12]
    final = cache_dir() / f"corpus-{size}-{model}-{digest}.npy"
    if final.exists():
        return texts, numpy.load(final, mmap_mode="r")
    parts = []
    began = time.perf_counter()
    for start in range(0, size, CHUNK):
        part = final.with_suffix(f".{start}.npy")
        if not part.exists():
            rows = numpy.asarray(embedder.embed(texts[start : start + CHUNK]), numpy.float32)
            numpy.save(part.with_suffix(".tmp.npy"), rows)
            os.replace(part.with_suffix(".tmp.npy"), part)
            done = start + len(rows)
            rate = done / (time.perf_counter() - began)
            print(f"  embedded {done:,} / {size:,} ({rate:.0f}/s)", file=sys.stderr)
        parts.append(part)
    numpy.save(final.with_suffix(".tmp.npy"), numpy.concatenate([numpy.load(p) for p in parts]))
    os.replace(final.with_suffix(".tmp.npy"), final)
    for part in parts:
        part.unlink()
    return texts, numpy.load(final, mmap_mode="r")


class CorpusEmbedder:
    """Serves cached vectors under the real model's id; any other text gets a cached row.

    A text of the cache gets its own vector. Any other (the filler of a larger corpus than the
    cache's) gets the cached row its digest picks: a real vector of a real filler text, so the
    distribution of vectors and scores is the model's, though not that text's meaning.
    """

    def __init__(self, model: Any, texts: Sequence[str], vectors: Any) -> None:
        self.model_id = model.model_id
        self.dimension = model.dimension
        self._rows = {text: row for row, text in enumerate(texts)}
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> Any:
        rows = [self._row(text) for text in texts]
        return numpy.asarray(self._vectors[rows], dtype=numpy.float32)

    def _row(self, text: str) -> int:
        row = self._rows.get(text)
        if row is not None:
            return row
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "little") % len(self._rows)


if __name__ == "__main__":
    from agentrecall import LocalEmbedder

    corpus_vectors(int(sys.argv[1]), LocalEmbedder())
