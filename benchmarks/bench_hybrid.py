"""Benchmark: ``SQLiteStore`` with vectors: import, semantic and hybrid search at 100k and 1M.

What is measured:

* vector encodings: recall@10 of int8 (one byte a dimension, each row scaled to its largest
  component) and float16 against exact float32 cosine search, over :data:`ENCODING_ROWS`
  vectors and :data:`QUERIES` queries, for two kinds of vectors: the ``HashEmbedder(384)``
  vectors of the corpus (sparse word counts) and dense vectors with a shared direction, as
  sentence models make them (a common component of weight 0.7 plus Gaussian noise), whose
  neighbours are closer together and so harder to keep apart; and the time to score 100,000
  rows each way, as the store does it (rows converted a block at a time, then a float32
  matrix-vector product);
* per size: bulk import through ``add_many`` (:data:`BATCH` per call) of vectors that
  ``LocalEmbedder`` computed once (:mod:`vector_cache`: the first :data:`CACHED` memories'
  own vectors, then for the filler of a larger corpus a cached filler vector each), entries
  per second, and without an embedder beside it (the cost of the vectors to the store:
  quantizing and the vector rows; the model's own time is in ``bench_embeddings.py``);
* search, in a fresh child process that opens the database: the first search (which loads
  every vector), then median and p99 of :data:`QUERIES` LoCoMo questions (after
  :data:`QUERY_WARMUP` warm-up) in keyword, semantic and hybrid mode, top 10, the query's
  embedding by a loaded ``LocalEmbedder`` included, and in hybrid mode with neighbours; then
  the search right after another connection deleted 100 memories and added 100 (the index
  follows by the change log), and the child's peak RSS (``VmHWM``);
* the query embedding alone with ``LocalEmbedder`` when agentrecall has it; otherwise the hash
  embedder's, which is what the search figures include.

Data: :mod:`corpus` (LoCoMo dev turns among English-like filler; LoCoMo: Maharana, Lee,
Tulyakov, Bansal, Barbieri, Fang, ACL 2024, arXiv 2402.17753, CC BY-NC 4.0).

Run: ``.venv/bin/python benchmarks/bench_hybrid.py [--sizes 100000,1000000]``. Writes
``benchmarks/results/hybrid.md`` and prints the same text.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy
from bench_sqlite import bulk_import, peak_rss_mb
from corpus import corpus, query_sample
from timing import ms, percentile, search_in_child, time_searches
from vector_cache import CorpusEmbedder, corpus_vectors

from agentrecall import LocalEmbedder, SQLiteStore
from agentrecall.stores.sqlite.vector_index import PASS_ROWS, quantize
from agentrecall.testing import HashEmbedder

RESULTS = Path(__file__).resolve().parent / "results" / "hybrid.md"
SIZES = (100_000, 1_000_000)
BATCH = 50_000
QUERIES, QUERY_WARMUP = 200, 20
ENCODING_ROWS = 100_000
DIMENSION = 384
CHURN = 100
CACHED = 100_000
"""Memories whose LocalEmbedder vectors are computed (once, then cached; see vector_cache)."""
MODES: list[tuple[str, dict[str, Any]]] = [
    ("keyword", {"mode": "keyword"}),
    ("semantic", {"mode": "semantic"}),
    ("hybrid", {"mode": "hybrid"}),
    ("hybrid + neighbours", {"mode": "hybrid", "neighbours": True}),
]
TARGET_MS = (30.0, 100.0)  # hybrid median, p99 at 100k
RSS_TARGET_MB = 1_000.0  # searching process at 1M


def _unit(rows: Any) -> Any:
    return rows / numpy.maximum(numpy.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def _top10(scores: Any) -> set[int]:
    return set(numpy.argpartition(-scores, 10)[:10].tolist())


def _score_encoded(rows: Any, query: Any) -> Any:
    """Score ``rows`` (any dtype) against ``query`` as the store does: blocks cast, then a dot."""
    out = numpy.empty(len(rows), dtype=numpy.float32)
    buffer = numpy.empty((PASS_ROWS, rows.shape[1]), dtype=numpy.float32)
    for start in range(0, len(rows), PASS_ROWS):
        part = rows[start : start + PASS_ROWS]
        numpy.copyto(buffer[: len(part)], part, casting="unsafe")
        numpy.dot(buffer[: len(part)], query, out=out[start : start + len(part)])
    return out


def encodings(questions: list[str]) -> list[dict[str, Any]]:
    """Recall@10 of int8 and float16 against float32, and scoring time, per kind of vector."""
    texts = [content for content, _ in itertools.islice(corpus(ENCODING_ROWS), ENCODING_ROWS)]
    embedder = HashEmbedder(DIMENSION)
    rng = numpy.random.default_rng(2402)
    shared = rng.standard_normal(DIMENSION).astype(numpy.float32)
    dense = 0.7 * _unit(shared[None, :]) + 0.3 * _unit(
        rng.standard_normal((ENCODING_ROWS, DIMENSION)).astype(numpy.float32)
    )
    _, local = corpus_vectors(CACHED, LocalEmbedder())
    kinds = {
        "LocalEmbedder, corpus": (numpy.asarray(local[:ENCODING_ROWS]), _local(questions)),
        "HashEmbedder(384), corpus": (embedder.embed(texts), embedder.embed(questions)),
        "dense, shared direction": (dense, dense[rng.choice(ENCODING_ROWS, len(questions))]),
    }
    results = []
    for kind, (rows, queries) in kinds.items():
        exact = _unit(rows.astype(numpy.float32))
        codes = numpy.frombuffer(b"".join(quantize(rows)), dtype=numpy.int8).reshape(rows.shape)
        norms = 1 / numpy.maximum(numpy.linalg.norm(codes.astype(numpy.float32), axis=1), 1e-12)
        half = exact.astype(numpy.float16)
        found = {"int8": 0.0, "float16": 0.0}
        for query in _unit(queries.astype(numpy.float32)):
            truth = _top10(exact @ query)
            found["int8"] += len(truth & _top10(_score_encoded(codes, query) * norms)) / 10
            found["float16"] += len(truth & _top10(_score_encoded(half, query))) / 10
        first = _unit(queries[:1].astype(numpy.float32))[0]
        timing = {
            name: _median_time(lambda m=matrix, q=first: _score_encoded(m, q))
            for name, matrix in (("float32", exact), ("float16", half), ("int8", codes))
        }
        results.append(
            {
                "kind": kind,
                "int8": found["int8"] / len(queries),
                "float16": found["float16"] / len(queries),
                "ms": timing,
            }
        )
    return results


def _local(texts: list[str]) -> Any:
    return LocalEmbedder().embed(texts)


def _median_time(function: Any, runs: int = 9) -> float:
    timings = []
    for _ in range(runs):
        began = time.perf_counter()
        function()
        timings.append(time.perf_counter() - began)
    return sorted(timings)[runs // 2]


class TimedEmbedder:
    """An embedder adding up the seconds spent in its ``embed``."""

    def __init__(self, inner: Any) -> None:
        self.model_id, self.dimension = inner.model_id, inner.dimension
        self._inner = inner
        self.spent = 0.0

    def embed(self, texts: Any) -> Any:
        began = time.perf_counter()
        try:
            return self._inner.embed(texts)
        finally:
            self.spent += time.perf_counter() - began


def corpus_embedder() -> CorpusEmbedder:
    """LocalEmbedder's vectors of the first :data:`CACHED` memories, under its model id."""
    model = LocalEmbedder()
    texts, vectors = corpus_vectors(CACHED, model)
    return CorpusEmbedder(model, texts, vectors)


async def _import(path: str, size: int, embedder: TimedEmbedder | None) -> float:
    """Import ``size`` memories; return the seconds inside ``add_many``."""
    store = SQLiteStore(path, embedder=embedder)
    try:
        await store.setup()
        return await bulk_import(store, corpus(size), size, BATCH)
    finally:
        await store.aclose()


def search_child(path: str) -> None:
    """Child process: time the searches of the job on stdin; print the figures as JSON."""
    job = json.load(sys.stdin)
    questions, warmup = job["questions"], job["warmup"]

    async def run() -> dict[str, Any]:
        model = LocalEmbedder()
        model.load()
        store = SQLiteStore(path, embedder=model)
        found: dict[str, Any] = {}
        try:
            began = time.perf_counter()
            await store.search(warmup[0], {"mode": "semantic"})
            found["first"] = time.perf_counter() - began
            for name, options in MODES:
                found[name] = await time_searches(store, questions, warmup, options)
            found["churn"] = await _after_churn(path, store, model, questions[0])
            return found
        finally:
            await store.aclose()

    found = asyncio.run(run())
    found["peak_mb"] = peak_rss_mb()
    json.dump(found, sys.stdout)


async def _after_churn(path: str, store: SQLiteStore, model: Any, question: str) -> float:
    """The hybrid search's time after another connection deleted and added memories."""
    other = SQLiteStore(path, embedder=model)
    try:
        doomed = [record.id for record in await other.list(limit=CHURN)]
        await other.delete_many(doomed)
        await other.add_many([(f"a fresh memory number {i}", None) for i in range(CHURN)])
    finally:
        await other.aclose()
    began = time.perf_counter()
    await store.search(question)
    return time.perf_counter() - began


def bench_size(size: int, questions: list[str], warmup: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-hybrid-{size}-") as tmp:
        plain = os.path.join(tmp, "plain.db")
        plain_seconds = asyncio.run(_import(plain, size, None))
        os.remove(plain)
        path = os.path.join(tmp, "memory.db")
        timed = TimedEmbedder(corpus_embedder())
        seconds = asyncio.run(_import(path, size, timed))
        with sqlite3.connect(path) as db:
            vectors = db.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
        found = search_in_child(__file__, path, questions, warmup)
        found.update(size=size, rate=size / seconds, plain_rate=size / plain_seconds)
        # What the vectors cost the store itself, beyond the model: quantizing, the vector
        # rows, the check of the model (per memory, in microseconds).
        found["overhead_us"] = (seconds - timed.spent - plain_seconds) / size * 1e6
        found["vectors"] = vectors
        found["file_mb"] = os.path.getsize(path) / 1e6
        return found


def query_embedding(questions: list[str]) -> tuple[str, float]:
    """Median time to embed one question: LocalEmbedder if agentrecall has it, else the hash."""
    from agentrecall import embeddings

    local = getattr(embeddings, "LocalEmbedder", None)
    model: Any = local() if local is not None else HashEmbedder(DIMENSION)
    name = "LocalEmbedder" if local is not None else "HashEmbedder(384) (LocalEmbedder not here)"
    model.embed(questions[:5])
    timings = []
    for question in questions:
        began = time.perf_counter()
        model.embed([question])
        timings.append(time.perf_counter() - began)
    return name, percentile(timings, 50)


def report(
    sizes: list[dict[str, Any]], encoded: list[dict[str, Any]], embedding: tuple[str, float]
) -> str:
    lines = [
        "# SQLiteStore with vectors: import, semantic and hybrid search",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}, numpy {numpy.__version__}, {platform.system()} "
        f"{platform.machine()}; load average {os.getloadavg()[0]:.2f} at the end (shared).",
        "* Embedder: `LocalEmbedder()` (all-MiniLM-L6-v2 int8 ONNX). The vectors of the first "
        f"{CACHED:,} memories were computed by it once and cached (`benchmarks/vector_cache.py`);"
        " at 1M the other filler memories get a cached filler vector each (the turns keep "
        "their own). Queries: 200 LoCoMo dev questions after 20 warm-up, top 10, each timed "
        "alone in a child process that opened the database with a loaded `LocalEmbedder`: "
        "the query's embedding by the model included. Import rates exclude the model (cached "
        "vectors).",
        "* Data: `benchmarks/corpus.py` (LoCoMo dev turns among English-like filler; "
        "Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0).",
        "",
        "## Vector encodings against float32",
        "",
        f"{ENCODING_ROWS:,} vectors, {QUERIES} queries; recall@10 of the encoding's top 10 "
        "against exact float32 cosine, and the time to score 100,000 rows as the store does.",
        "",
        "| vectors | int8 recall@10 | float16 recall@10 | float32 ms | float16 ms | int8 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in encoded:
        t = row["ms"]
        lines.append(
            f"| {row['kind']} | {row['int8']:.3f} | {row['float16']:.3f} | "
            f"{ms(t['float32'])} | {ms(t['float16'])} | {ms(t['int8'])} |"
        )
    lines += [
        "",
        "## Import and search",
        "",
        "| memories | import /s with vectors | import /s without | vectors' cost beyond the "
        "embedder µs/memory | first search (loads the vectors) ms | "
        + " | ".join(f"{name} median / p99 ms" for name, _ in MODES)
        + " | hybrid after 100 deletes + 100 adds elsewhere ms | peak RSS MB | file MB |",
        "|---:|---:|---:|---:|---:|" + "---:|" * len(MODES) + "---:|---:|---:|",
    ]
    for row in sizes:
        cells = [
            f"{ms(percentile(row[name], 50))} / {ms(percentile(row[name], 99))}"
            for name, _ in MODES
        ]
        lines.append(
            f"| {row['size']:,} | {row['rate']:,.0f} | {row['plain_rate']:,.0f} | "
            f"{row['overhead_us']:.1f} | {ms(row['first'])} | "
            + " | ".join(cells)
            + f" | {ms(row['churn'])} | {row['peak_mb']:.0f} | {row['file_mb']:.0f} |"
        )
    lines += ["", f"Query embedding alone, {embedding[0]}: median {ms(embedding[1])} ms.", ""]
    lines += _targets(sizes)
    return "\n".join(lines) + "\n"


def _targets(sizes: list[dict[str, Any]]) -> list[str]:
    lines = ["Targets:", ""]
    for row in sizes:
        median, p99 = percentile(row["hybrid"], 50) * 1000, percentile(row["hybrid"], 99) * 1000
        if row["size"] == 100_000:
            met = median <= TARGET_MS[0] and p99 <= TARGET_MS[1]
            lines.append(
                f"* Hybrid at 100k, median ≤ {TARGET_MS[0]:.0f} ms and p99 ≤ {TARGET_MS[1]:.0f} "
                f"ms: {median:.1f} / {p99:.1f} ms: {'met' if met else 'NOT met'}."
            )
        if row["size"] == 1_000_000:
            lines.append(f"* Hybrid at 1M (stated): median {median:.1f} ms, p99 {p99:.1f} ms.")
            met = row["peak_mb"] <= RSS_TARGET_MB
            lines.append(
                f"* RSS of the searching process at 1M ≤ {RSS_TARGET_MB:.0f} MB: "
                f"{row['peak_mb']:.0f} MB: {'met' if met else 'NOT met'}."
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default=",".join(str(size) for size in SIZES))
    parser.add_argument("--search-child", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.search_child:
        search_child(args.search_child)
        return
    questions, warmup = query_sample(QUERIES, QUERY_WARMUP)
    encoded = encodings(questions)
    sizes = [bench_size(int(size), questions, warmup) for size in args.sizes.split(",")]
    text = report(sizes, encoded, query_embedding(questions))
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
