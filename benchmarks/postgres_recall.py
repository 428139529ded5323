"""Recall of ``PostgresStore``: its keyword ranking against ``ts_rank_cd``, and HNSW against exact.

Run: ``.venv/bin/python benchmarks/postgres_recall.py [--vectors N]`` (a few minutes). It starts
a throwaway PostgreSQL 18 with pgvector (``agentrecall.testing.postgres``), or uses the server
of ``AGENTRECALL_BENCH_POSTGRES_DSN`` (a superuser URL; a database is created and dropped), and
writes ``benchmarks/results/postgres-recall.md``.

1. LoCoMo dev (``data/locomo``), the task of :mod:`agentrecall.evaluation.locomo`: each
   conversation's turns in a fresh store, its questions searched, R@10 and the rest scored.
   Rows: ``SQLiteStore`` (BM25), ``PostgresStore`` keyword (the shared BM25 over the GIN
   index's candidates), the same memories ranked by PostgreSQL's ``ts_rank_cd`` instead (an
   OR of the query's terms over the same terms with their positions, normalisation 1, which
   divides by the log of the length), and ``PostgresStore`` semantic and hybrid with
   ``LocalEmbedder`` when its model is installed; then conversation mode (``neighbours=True``)
   of both stores, keyword and (with ``LocalEmbedder``) hybrid, side by side.
2. HNSW against exact search: :data:`VECTORS` synthetic 384-dimensional unit vectors (a
   32-dimensional latent space mapped linearly, plus noise, so that neighbours are not uniform),
   stored through ``add_many``; :data:`QUERIES` perturbed data points searched in semantic
   mode (the HNSW index, ``ef_search`` as the store sets it) and ranked exactly with numpy;
   recall@10 is the share of the exact top 10 the store returned.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import recall_task  # noqa: E402

from agentrecall import CallableEmbedder, PostgresStore, SQLiteStore  # noqa: E402
from agentrecall.evaluation import locomo  # noqa: E402
from agentrecall.retrieval.bm25 import query_terms  # noqa: E402
from agentrecall.retrieval.keywords import keyword_terms  # noqa: E402
from agentrecall.stores.postgres.rows import tsquery  # noqa: E402
from agentrecall.testing.postgres import TemporaryPostgres  # noqa: E402
from agentrecall.types import MemoryEntry  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "postgres-recall.md"
VECTORS = 20_000
QUERIES = 200
DIMENSION = 384
DSN_VARIABLE = "AGENTRECALL_BENCH_POSTGRES_DSN"


@contextmanager
def database(*, durable: bool = False) -> Iterator[str]:
    """Yield the URL of a fresh database on the benchmark's server, dropped afterwards.

    ``durable`` starts the throwaway server with ``fsync`` on, for timings of durable writes.
    """
    external = os.environ.get(DSN_VARIABLE)
    if external:
        yield from _fresh(external)
        return
    with TemporaryPostgres(durable=durable) as server:
        yield from _fresh(server.dsn)


def _fresh(dsn: str) -> Iterator[str]:
    name = f"agentrecall_bench_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["dbname"] = name
    try:
        yield psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def positional(content: str) -> str:
    """Return the ``tsvector`` of the store's terms of ``content``, with their positions.

    ``ts_rank_cd`` ranks by how near the query's terms stand, which the store's own column
    (terms without positions) does not say.
    """
    spots: dict[str, list[str]] = {}
    for number, term in enumerate(keyword_terms(content), start=1):
        spots.setdefault(term, []).append(str(min(number, 16_383)))
    return " ".join(f"'{term}':{','.join(at[:256])}" for term, at in spots.items())


class TsRankStore:
    """A ``PostgresStore`` whose searches rank by ``ts_rank_cd`` instead of BM25."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.name, self.description, self.max_search_results = store.name, None, None
        self.writable, self.extraction = True, None

    async def add_many(self, items: Sequence[tuple[str, Any]]) -> Any:
        """Add through the store, then give each memory's terms their positions."""
        results = await self.store.add_many(items)
        schema = self.store.schema
        async with await psycopg.AsyncConnection.connect(self.store_dsn) as connection:
            async with connection.cursor() as cursor:
                await cursor.executemany(
                    f"UPDATE {schema}.memories SET terms = %s::tsvector WHERE id = %s",
                    [(positional(c), r.id) for (c, _), r in zip(items, results, strict=True)],
                )
        return results

    async def add(self, content: str, metadata: Any = None) -> Any:
        return await self.store.add(content, metadata)

    async def search(self, query: str, options: Any = None) -> list[MemoryEntry]:
        terms = sorted(set(query_terms(query).values()))
        if not terms:
            return []
        schema = self.store.schema
        if self.connection is None:
            self.connection = await psycopg.AsyncConnection.connect(self.store_dsn)
        cursor = await self.connection.execute(
            f"SELECT m.id, m.content, m.metadata, ts_rank_cd(m.terms, q, 1) AS r "
            f"FROM {schema}.memories AS m, {schema}.stores AS s, CAST(%s AS tsquery) AS q "
            "WHERE s.name = %s AND m.store = s.store AND m.terms @@ q "
            "ORDER BY r DESC, m.seq DESC LIMIT %s",
            [tsquery(terms), self.store.name, locomo.TOP],
        )
        rows = await cursor.fetchall()
        return [
            MemoryEntry(content=c, metadata={**(m or {}), "_relevanceScore": r}, id=i)
            for i, c, m, r in rows
        ]

    async def aclose(self) -> None:
        if self.connection is not None:
            await self.connection.close()
        await self.store.aclose()

    store_dsn = ""
    connection: psycopg.AsyncConnection[Any] | None = None


async def locomo_rows(dsn: str) -> list[tuple[str, list[locomo.Row]]]:
    """Return the LoCoMo summary of every store and ranking compared."""
    conversations = recall_task()
    numbers = iter(range(10_000))

    def postgres(**options: Any) -> PostgresStore:
        return PostgresStore(dsn, name=f"locomo{next(numbers)}", **options)

    def ts_rank(_: Path) -> TsRankStore:
        wrapped = TsRankStore(postgres())
        wrapped.store_dsn = dsn
        return wrapped

    runs: list[tuple[str, Any]] = [
        ("SQLiteStore keyword (BM25)", lambda d: SQLiteStore(d / "m.db")),
        ("PostgresStore keyword (shared BM25)", lambda _: postgres()),
        ("PostgreSQL ts_rank_cd", ts_rank),
    ]
    runs += [
        ("SQLiteStore keyword, conversation", lambda d: SQLiteStore(d / "m.db", neighbours=True)),
        ("PostgresStore keyword, conversation", lambda _: postgres(neighbours=True)),
    ]
    embedder = _local_embedder()
    if embedder is not None:
        for mode in ("semantic", "hybrid"):
            runs.append(
                (
                    f"PostgresStore {mode} (LocalEmbedder)",
                    lambda _, m=mode: postgres(embedder=embedder, search_mode=m),
                )
            )
        runs += [
            (
                "SQLiteStore hybrid (LocalEmbedder), conversation",
                lambda d: SQLiteStore(d / "m.db", embedder=embedder, neighbours=True),
            ),
            (
                "PostgresStore hybrid (LocalEmbedder), conversation",
                lambda _: postgres(embedder=embedder, neighbours=True),
            ),
        ]
    rows = []
    for label, open_store in runs:
        began = time.perf_counter()
        rows.append((label, await locomo.evaluate(conversations, open_store)))
        print(f"{label}: {time.perf_counter() - began:.0f} s", flush=True)
    return rows


def _local_embedder() -> Any:
    try:
        from agentrecall import LocalEmbedder

        return LocalEmbedder()
    except ImportError:
        return None


def synthetic(count: int, seed: int) -> numpy.ndarray[Any, Any]:
    """Return ``count`` unit vectors of low intrinsic dimension."""
    rng = numpy.random.default_rng(seed)
    latent = rng.standard_normal((count, 32)).astype(numpy.float32)
    mapping = numpy.random.default_rng(0).standard_normal((32, DIMENSION)).astype(numpy.float32)
    vectors = latent @ mapping + 0.1 * rng.standard_normal((count, DIMENSION))
    norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
    unit: numpy.ndarray[Any, Any] = (vectors / norms).astype(numpy.float32)
    return unit


async def hnsw_recall(dsn: str, count: int) -> tuple[float, float, float]:
    """Return (recall@10 against exact search, median ms of a search, seconds to import)."""
    data = synthetic(count, 1)
    noise = numpy.random.default_rng(2).standard_normal((QUERIES, DIMENSION)) * 0.05
    picks = numpy.random.default_rng(3).choice(count, QUERIES, replace=False)
    queries = data[picks] + noise.astype(numpy.float32)
    by_text = {f"vector {i}": data[i] for i in range(count)}
    by_text.update({f"query {i}": queries[i] for i in range(QUERIES)})

    def embed(texts: list[str]) -> numpy.ndarray[Any, Any]:
        return numpy.stack([by_text[text] for text in texts])

    embedder = CallableEmbedder(embed, model_id="synthetic", dimension=DIMENSION)
    store = PostgresStore(dsn, name="vectors", embedder=embedder, search_mode="semantic")
    began = time.perf_counter()
    for start in range(0, count, 5_000):
        stop = min(start + 5_000, count)
        await store.add_many([(f"vector {i}", None) for i in range(start, stop)])
    imported = time.perf_counter() - began
    found, times = 0, []
    unit = queries / numpy.linalg.norm(queries, axis=1, keepdims=True)
    for i in range(QUERIES):
        exact = set(numpy.argsort(-(data @ unit[i]))[:10].tolist())
        began = time.perf_counter()
        hits = await store.search(f"query {i}", {"max_search_results": 10})
        times.append(time.perf_counter() - began)
        found += len(exact & {int(hit.content.split()[1]) for hit in hits})
    await store.aclose()
    return found / (10 * QUERIES), 1000 * float(numpy.median(times)), imported


def report(
    rows: list[tuple[str, list[locomo.Row]]], vectors: tuple[float, float, float], count: int
) -> str:
    lines = [
        "# PostgresStore recall",
        "",
        "Written by `benchmarks/postgres_recall.py` (see its docstring). PostgreSQL 18 with",
        "pgvector 0.8, on this machine (2 shared vCPUs).",
        "",
        "## LoCoMo dev, overall (495 questions)",
        "",
        "| ranking | R@5 | R@10 | hit@1 | MRR@10 | nDCG@10 | ms/query |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, summary in rows:
        overall = next(row for row in summary if row.group == "overall")
        means = overall.means
        lines.append(
            f"| {label} | {means['R@5']:.3f} | {means['R@10']:.3f} | {means['hit@1']:.3f} | "
            f"{means['MRR@10']:.3f} | {means['nDCG@10']:.3f} | {means.get('ms/query', 0):.2f} |"
        )
    recall, median, imported = vectors
    lines += [
        "",
        "## HNSW against exact search",
        "",
        f"{count:,} synthetic 384-dimensional vectors, {QUERIES} queries, top 10: recall@10 "
        f"**{recall:.3f}**, median search {median:.2f} ms (imported in {imported:.1f} s, the "
        "HNSW index kept up to date as they went in).",
        "",
    ]
    return "\n".join(lines)


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=VECTORS)
    args = parser.parse_args(argv)
    with database() as dsn:
        rows = await locomo_rows(dsn)
        vectors = await hnsw_recall(dsn, args.vectors)
    text = report(rows, vectors, args.vectors)
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    asyncio.run(main())
