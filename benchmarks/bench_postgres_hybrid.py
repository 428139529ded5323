"""Benchmark: hybrid search of ``PostgresStore`` (pgvector HNSW) beside ``SQLiteStore``, one run.

Run: ``.venv/bin/python benchmarks/bench_postgres_hybrid.py [--sizes 100000 1000000]
[--incremental 5000] [--recall-queries 50]``. It starts a throwaway PostgreSQL 18 with pgvector
on 127.0.0.1 (``agentrecall.testing.postgres``, ``fsync`` on), or uses the server of
``AGENTRECALL_BENCH_POSTGRES_DSN``, and writes ``benchmarks/results/postgres-hybrid.md``.

Both stores get the same ``HashEmbedder(384)`` vectors of the same corpus (:mod:`corpus`:
LoCoMo dev turns among generated filler). Per size:

* SQLiteStore: ``add_many`` with the embedder, in calls of :data:`BATCH`;
* PostgresStore, as a large store with vectors is loaded: ``add_many`` without an embedder
  (``COPY``), then ``PostgresStore(dsn, embedder=...).reindex()``, which stores the vectors
  with ``COPY`` and builds the HNSW index once at the end; its two phases are timed apart;
* for both: median and p99 of :data:`QUERIES` LoCoMo questions, top 10, after :data:`WARMUP`
  other warm-up questions, in hybrid and in semantic mode (the query's embedding included);
* PostgresStore: HNSW recall@10 against exact search (the same SQL with index scans turned
  off) over ``--recall-queries`` of the questions. Ties count: a hit is right when its
  similarity is at least that of the exact tenth (hashed word vectors have many equal ones).

A 1M load takes about half an hour; ``--keep NAME`` (with ``AGENTRECALL_BENCH_POSTGRES_DSN``)
keeps each size's PostgreSQL store in the database ``NAME_<size>`` of that server, and a later
run with the same ``NAME`` searches it without loading it again, its loading figures those of
the run that loaded it. The server of a run without ``--keep`` has ``bench_postgres``'s
``SERVER_SETTINGS``.

Then ``--incremental`` memories added with vectors into a store whose HNSW index exists, in
calls of :data:`BATCH` (the index kept up to date row by row, as every load did before), and
four times as many in one ``add_many`` into another store (its index dropped and built once
after); ``--incremental 0`` skips this.

The load average over the last minute is noted beside each figure: the machine has 2 shared
vCPUs, so compare the two stores within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy  # noqa: E402
import psycopg  # noqa: E402
from bench_postgres import SERVER_SETTINGS, durable_database  # noqa: E402
from corpus import corpus, query_sample  # noqa: E402
from postgres_recall import DSN_VARIABLE  # noqa: E402
from psycopg import sql  # noqa: E402
from timing import load, ms, percentile, time_searches  # noqa: E402

from agentrecall import PostgresStore, SQLiteStore  # noqa: E402
from agentrecall.testing import HashEmbedder  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "postgres-hybrid.md"
DIMENSION = 384
BATCH = 5_000
QUERIES = 200
WARMUP = 200
"""Other questions searched before the timed ones: a store just loaded, or left idle, would
otherwise time its first reads of the index pages from disk."""
HYBRID = {"mode": "hybrid", "limit": 10}
SEMANTIC = {"mode": "semantic", "limit": 10}
KEYWORD = {"mode": "keyword", "limit": 10}


async def add_all(store: Any, items: Sequence[tuple[str, Any]]) -> float:
    """Return memories per second of adding ``items`` in calls of :data:`BATCH`."""
    await store.setup()
    began = time.perf_counter()
    for start in range(0, len(items), BATCH):
        await store.add_many(items[start : start + BATCH])
    return len(items) / (time.perf_counter() - began)


async def searches(store: Any) -> dict[str, str]:
    """Median and p99 of hybrid, semantic and keyword search, with the load after each."""
    questions, warmup = query_sample(QUERIES, WARMUP)
    found: dict[str, str] = {}
    for label, options in (("hybrid", HYBRID), ("semantic", SEMANTIC), ("keyword", KEYWORD)):
        times = await time_searches(store, questions, warmup, options)
        found[label] = (
            f"{ms(percentile(times, 50))} / {ms(percentile(times, 99))} ms (load {load()})"
        )
        print(f"  {label}: {found[label]}", flush=True)
    return found


async def sqlite(items: Sequence[tuple[str, Any]]) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(Path(directory) / "m.db", embedder=HashEmbedder(DIMENSION))
        rate = await add_all(store, items)
        figures = {"load": f"{rate:,.0f}/s with vectors (load {load()})"}
        print(f"SQLiteStore: {figures['load']}", flush=True)
        figures |= await searches(store)
        await store.aclose()
    return figures


async def postgres(size: int, keep: str | None, recall_queries: int) -> dict[str, str]:
    """Load ``size`` memories unless an earlier run kept them (``keep``), then search."""
    with postgres_database(keep, size) as (dsn, loaded):
        if loaded is None:
            loaded = await load_postgres(dsn, list(corpus(size)))
            if keep is not None:
                mark_loaded(dsn, loaded)
        return await postgres_searches(dsn, loaded, recall_queries)


async def postgres_searches(dsn: str, loaded: str, recall_queries: int) -> dict[str, str]:
    """Search the loaded store at ``dsn``; ``loaded`` is its loading figure."""
    figures = {"load": loaded}
    print(f"PostgresStore: {loaded}", flush=True)
    store = PostgresStore(dsn, embedder=HashEmbedder(DIMENSION))
    figures |= await searches(store)
    figures["recall"] = await recall(store, dsn, recall_queries)
    print(f"  recall: {figures['recall']}", flush=True)
    await store.aclose()
    return figures


async def load_postgres(dsn: str, items: Sequence[tuple[str, Any]]) -> str:
    """Load ``items`` keyword-only, then store their vectors; return the loading figures."""
    plain = PostgresStore(dsn)
    rate = await add_all(plain, items)
    await plain.aclose()
    store = PostgresStore(dsn, embedder=HashEmbedder(DIMENSION))
    began = time.perf_counter()
    stored = [began]
    await store.reindex(progress=lambda done, total: stored.append(time.perf_counter()))
    ended = time.perf_counter()
    await store.aclose()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        await connection.execute("ANALYZE agentrecall.memories")
        await connection.execute("ANALYZE agentrecall.vectors")
    vectors_s, build_s = stored[-1] - began, ended - stored[-1]
    return (
        f"{rate:,.0f}/s keyword-only `add_many`, then `reindex()` "
        f"{len(items) / (ended - began):,.0f}/s: vectors stored in {vectors_s:,.0f} s, HNSW "
        f"index built in {build_s:,.0f} s (load {load()})"
    )


@contextmanager
def postgres_database(keep: str | None, size: int) -> Iterator[tuple[str, str | None]]:
    """Yield a database's URL for the store of ``size`` memories, and its loading figure.

    Without ``keep``, a fresh database on a throwaway server (or on the server of
    ``AGENTRECALL_BENCH_POSTGRES_DSN``), dropped afterwards, and no figure. With ``keep``, the
    database ``keep_size`` on that server, kept, and the figure of the run that loaded it,
    ``None`` when no earlier run finished loading it (the database is then made afresh).
    """
    if keep is None:
        with durable_database(SERVER_SETTINGS) as dsn:
            yield dsn, None
        return
    server = os.environ.get(DSN_VARIABLE)
    if not server:
        raise SystemExit(f"--keep needs {DSN_VARIABLE}: the server to keep the stores on")
    database = f"{keep}_{size}"
    info = psycopg.conninfo.conninfo_to_dict(server)
    info["dbname"] = database
    dsn = psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
    figure = None
    with psycopg.connect(server, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            with psycopg.connect(dsn) as connection:
                marked = connection.execute("SELECT to_regclass('public.bench_loaded')").fetchone()
                if marked and marked[0]:
                    row = connection.execute("SELECT figure FROM public.bench_loaded").fetchone()
                    figure = None if row is None else str(row[0])
        if figure is None:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
            )
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    yield dsn, None if figure is None else f"{figure}, loaded by an earlier run"


def mark_loaded(dsn: str, figure: str) -> None:
    """Note in the database at ``dsn`` that it holds a loaded store, with its loading figure."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE public.bench_loaded (figure text NOT NULL)")
        connection.execute("INSERT INTO public.bench_loaded VALUES (%s)", [figure])


async def recall(store: PostgresStore, dsn: str, count: int) -> str:
    """HNSW recall@10 of the store's semantic search against an exact scan, ties counted."""
    questions, _ = query_sample(count, WARMUP)
    embedder = HashEmbedder(DIMENSION)
    right = exact_time = 0.0
    async with await psycopg.AsyncConnection.connect(dsn) as connection:
        for question in questions:
            hits = await store.search(question, SEMANTIC)
            began = time.perf_counter()
            best = await exact(connection, embedder, question)
            exact_time += time.perf_counter() - began
            tenth = best[-1] if best else 1.0
            scores = [float((hit.metadata or {})["_relevanceScore"]) for hit in hits]
            right += sum(score >= tenth - 1e-6 for score in scores) / max(len(best), 1)
    return (
        f"{right / len(questions):.3f} over {len(questions)} questions (exact scan "
        f"{exact_time / len(questions) * 1000:,.0f} ms a query; load {load()})"
    )


async def exact(connection: Any, embedder: HashEmbedder, question: str) -> list[float]:
    """The ten best positive cosine similarities to ``question``, by a full scan."""
    vector = embedder.embed([question])[0]
    norm = float(numpy.linalg.norm(vector))
    if norm == 0:
        return []
    text = "[" + ",".join(repr(float(x)) for x in vector / norm) + "]"
    cast = f"vector({DIMENSION})"
    async with connection.transaction():
        await connection.execute("SET LOCAL enable_indexscan = off")
        await connection.execute("SET LOCAL enable_bitmapscan = off")
        cursor = await connection.execute(
            f"SELECT 1 - ((embedding::{cast}) <=> %s::{cast}) AS s FROM agentrecall.vectors "
            f"WHERE cardinality(embedding) = {DIMENSION} ORDER BY s DESC LIMIT 10",
            [text],
        )
        rows = await cursor.fetchall()
    return [float(row[0]) for row in rows if row[0] > 0]


async def incremental(dsn: str, count: int) -> str:
    """Adding with vectors into a store whose index exists: in small calls, then in one call.

    Calls of :data:`BATCH` keep the HNSW index up to date row by row; one call of ``4 *
    count`` memories into another empty store drops its index and builds it after.
    """
    kept = PostgresStore(dsn, name="kept", embedder=HashEmbedder(DIMENSION))
    await kept.add("An indexed memory, so the store's index exists")
    rate = await add_all(kept, list(corpus(count)))
    await kept.aclose()
    deferred = PostgresStore(dsn, name="deferred", embedder=HashEmbedder(DIMENSION))
    await deferred.add("An indexed memory, so the store's index exists")
    items = list(corpus(4 * count))
    began = time.perf_counter()
    await deferred.add_many(items)
    once = len(items) / (time.perf_counter() - began)
    await deferred.aclose()
    return (
        f"{rate:,.0f}/s for {count:,} memories in calls of {BATCH:,}, the index kept up to "
        f"date (load {load()}); {once:,.0f}/s for {len(items):,} in one call, the index "
        f"built once after (load {load()})"
    )


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--incremental", type=int, default=5_000)
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument(
        "--keep",
        metavar="NAME",
        help=f"keep PostgreSQL's stores in databases NAME_<size> of {DSN_VARIABLE}'s server",
    )
    args = parser.parse_args(argv)
    rows: list[tuple[int, dict[str, str], dict[str, str]]] = []
    for size in args.sizes:
        print(f"{size:,} memories (load {load()})", flush=True)
        pg = await postgres(size, args.keep, args.recall_queries)
        rows.append((size, await sqlite(list(corpus(size))), pg))
        RESULTS.write_text(report(rows, None), encoding="utf-8")  # kept if a later size fails
    old = None
    if args.incremental:
        with durable_database(SERVER_SETTINGS) as dsn:
            old = await incremental(dsn, args.incremental)
    RESULTS.write_text(report(rows, old), encoding="utf-8")
    print(RESULTS.read_text(encoding="utf-8"))


def report(rows: Sequence[tuple[int, dict[str, str], dict[str, str]]], old: str | None) -> str:
    lines = [
        "# PostgresStore hybrid search beside SQLiteStore",
        "",
        "Written by `benchmarks/bench_postgres_hybrid.py` (see its docstring): `HashEmbedder(384)`",
        "vectors for both stores; PostgreSQL 18 with pgvector on 127.0.0.1 (fsync on, HNSW",
        "cosine, `ef_search` 100); SQLite in WAL. 2 shared vCPUs; load average beside each figure.",
        "",
        "| memories | store | loading with vectors | hybrid p50 / p99 | semantic p50 / p99 | "
        "keyword p50 / p99 | HNSW recall@10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for size, lite, pg in rows:
        for label, figures in (("SQLiteStore", lite), ("PostgresStore", pg)):
            lines.append(
                f"| {size:,} | {label} | {figures['load']} | {figures['hybrid']} | "
                f"{figures['semantic']} | {figures['keyword']} | {figures.get('recall', '')} |"
            )
    if old is not None:
        lines += ["", f"Adding with vectors into a PostgresStore: {old}."]
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    asyncio.run(main())
