"""Benchmark: ``PostgresStore`` beside ``SQLiteStore``, in one run, on the same corpus.

Run: ``.venv/bin/python benchmarks/bench_postgres.py [--sizes 100000 1000000] [--hybrid N]``.
It starts a throwaway PostgreSQL 18 with pgvector on 127.0.0.1 (``agentrecall.testing.postgres``;
``synchronous_commit`` on and ``fsync`` on, so a commit is durable as on a real server), or uses
the server of ``AGENTRECALL_BENCH_POSTGRES_DSN``, and writes ``benchmarks/results/postgres.md``.

Per size, for each store, in a fresh database or file:

* bulk import: memories per second of ``add_many`` in calls of :data:`BATCH` (PostgreSQL:
  ``COPY`` into a temporary table, then one ``INSERT ... ON CONFLICT DO NOTHING``);
* one durable add: median and p99 of :data:`ADDS` single adds after the import;
* keyword search: median and p99 of :data:`QUERIES` LoCoMo questions, top 10, after
  :data:`WARMUP` warm-up questions;
* concurrency: :data:`CLIENTS` clients (PostgreSQL: a store and pool each; SQLite: a store
  each, one file) each adding :data:`CLIENT_ADDS` memories one at a time, against one client
  alone: aggregate adds per second.

Then hybrid search (``HashEmbedder(384)``, HNSW) at ``--hybrid`` memories: import rate with the
vectors and the index kept up to date, and the median of the same questions.

Data: :mod:`corpus` (LoCoMo dev turns spread among generated filler). The machine is shared
and noisy (2 vCPUs): read medians, and compare the two stores within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from corpus import corpus, query_sample  # noqa: E402
from postgres_recall import database  # noqa: E402
from timing import ms, percentile, time_adds, time_searches  # noqa: E402

from agentrecall import PostgresStore, SQLiteStore  # noqa: E402
from agentrecall.testing import HashEmbedder  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "postgres.md"
BATCH = 5_000
ADDS = 300
ADD_WARMUP = 20
QUERIES = 200
WARMUP = 20
CLIENTS = 8
CLIENT_ADDS = 250


async def import_rate(
    store: Any, items: Sequence[tuple[str, Any]], dsn: str | None = None
) -> float:
    """Return memories per second of importing ``items`` in calls of :data:`BATCH`.

    With ``dsn``, PostgreSQL's tables are then analyzed, as autovacuum does within a minute
    of a bulk load: until then the planner misjudges how many memories hold a word.
    """
    await store.setup()
    began = time.perf_counter()
    for start in range(0, len(items), BATCH):
        await store.add_many(items[start : start + BATCH])
    rate = len(items) / (time.perf_counter() - began)
    if dsn is not None:
        async with await psycopg.AsyncConnection.connect(dsn) as connection:
            await connection.execute(f"ANALYZE {store.schema}.memories")
    return rate


async def search_times(store: Any) -> list[float]:
    questions, warmup = query_sample(QUERIES, WARMUP)
    return await time_searches(store, questions, warmup)


async def concurrent_rate(make: Any, clients: int, tag: str) -> float:
    """Return aggregate adds per second of ``clients`` stores adding at once."""
    stores = [make() for _ in range(clients)]
    for store in stores:
        await store.setup()

    async def client(number: int) -> None:
        for n in range(CLIENT_ADDS):
            await stores[number].add(f"{tag} client {number} says note number {n}")

    began = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    rate = clients * CLIENT_ADDS / (time.perf_counter() - began)
    for store in stores:
        await store.aclose()
    return rate


async def measure(
    label: str, make: Any, items: Sequence[tuple[str, Any]], dsn: str | None = None
) -> dict[str, str]:
    store = make()
    rate = import_rate_value = await import_rate(store, items, dsn)
    extra = [(f"durable add {label} {n}", None) for n in range(ADDS + ADD_WARMUP)]
    adds = await time_adds(store, extra, ADD_WARMUP)
    searches = await search_times(store)
    await store.aclose()
    one = await concurrent_rate(make, 1, f"{label} alone")
    many = await concurrent_rate(make, CLIENTS, f"{label} together")
    print(f"{label}: import {import_rate_value:,.0f}/s", flush=True)
    return {
        "import": f"{rate:,.0f}/s",
        "add": f"{ms(percentile(adds, 50))} / {ms(percentile(adds, 99))} ms",
        "search": f"{ms(percentile(searches, 50))} / {ms(percentile(searches, 99))} ms",
        "clients": f"{one:,.0f} → {many:,.0f} adds/s ({many / one:.1f}×)",
    }


async def hybrid(dsn: str, size: int) -> dict[str, str]:
    items = list(corpus(size))
    store = PostgresStore(dsn, name="hybrid", embedder=HashEmbedder(384), search_mode="hybrid")
    rate = await import_rate(store, items, dsn)
    searches = await search_times(store)
    await store.aclose()
    return {
        "import": f"{rate:,.0f}/s",
        "search": f"{ms(percentile(searches, 50))} / {ms(percentile(searches, 99))} ms",
    }


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--hybrid", type=int, default=20_000)
    args = parser.parse_args(argv)
    rows: list[tuple[int, str, dict[str, str]]] = []
    for size in args.sizes:
        items = list(corpus(size))
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "m.db"
            rows.append(
                (size, "SQLiteStore", await measure("sqlite", lambda p=path: SQLiteStore(p), items))
            )
        with database(durable=True) as dsn:
            rows.append(
                (
                    size,
                    "PostgresStore",
                    await measure("postgres", lambda d=dsn: PostgresStore(d), items, dsn),
                )
            )
    with database() as dsn:
        mixed = await hybrid(dsn, args.hybrid)
    lines = [
        "# PostgresStore beside SQLiteStore",
        "",
        "Written by `benchmarks/bench_postgres.py` (see its docstring): PostgreSQL 18 on",
        "127.0.0.1 (fsync on), SQLite in WAL with `fsync=True`; 2 shared vCPUs.",
        "",
        "| memories | store | bulk import | durable add p50 / p99 | keyword search p50 / p99 | "
        f"1 → {CLIENTS} clients |",
        "|---|---|---|---|---|---|",
    ]
    for size, label, figures in rows:
        lines.append(
            f"| {size:,} | {label} | {figures['import']} | {figures['add']} | "
            f"{figures['search']} | {figures['clients']} |"
        )
    lines += [
        "",
        f"Hybrid search (`HashEmbedder(384)`, HNSW) at {args.hybrid:,} memories: import with "
        f"vectors {mixed['import']}, search p50 / p99 {mixed['search']}.",
        "",
    ]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
