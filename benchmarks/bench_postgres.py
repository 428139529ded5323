"""Benchmark: ``PostgresStore`` beside ``SQLiteStore``, in one run, on the same corpus.

Run: ``.venv/bin/python benchmarks/bench_postgres.py [--sizes 100000 1000000] [--hybrid N]``;
``--only import`` runs only the two bulk imports, for both stores, and writes
``benchmarks/results/postgres-import.md`` instead.
It starts a throwaway PostgreSQL 18 with pgvector on 127.0.0.1 (``agentrecall.testing.postgres``;
``synchronous_commit`` on and ``fsync`` on, so a commit is durable as on a real server), or uses
the server of ``AGENTRECALL_BENCH_POSTGRES_DSN``, and writes ``benchmarks/results/postgres.md``.

Per size, for each store, in a fresh database or file:

* bulk import: memories per second of ``add_many`` in calls of :data:`BATCH` (PostgreSQL:
  ``COPY`` into a temporary table, then one ``INSERT ... ON CONFLICT DO NOTHING``), and of
  ``import_records`` of the same memories as records (ids, times, one user per call) in
  calls of :data:`BATCH`, into another fresh database or file;
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
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from corpus import corpus, query_sample  # noqa: E402
from postgres_recall import database  # noqa: E402
from timing import ms, percentile, time_adds, time_searches  # noqa: E402

from agentrecall import MemoryRecord, PostgresStore, SQLiteStore  # noqa: E402
from agentrecall.testing import HashEmbedder  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "postgres.md"
IMPORT_RESULTS = RESULTS.with_name("postgres-import.md")
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


def as_records(items: Sequence[tuple[str, Any]]) -> list[MemoryRecord]:
    """Return ``items`` as records to import: fixed ids and times, one user per call's worth."""
    began = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return [
        MemoryRecord(
            id=f"imported-{n:08d}",
            content=content,
            metadata=metadata,
            created_at=(began + timedelta(milliseconds=n)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
            + "Z",
            user_id=f"user-{n // BATCH % 10}",
        )
        for n, (content, metadata) in enumerate(items)
    ]


async def records_rate(store: Any, records: Sequence[MemoryRecord]) -> float:
    """Return memories per second of importing ``records`` in calls of :data:`BATCH`."""
    await store.setup()
    began = time.perf_counter()
    for start in range(0, len(records), BATCH):
        await store.import_records(records[start : start + BATCH])
    return len(records) / (time.perf_counter() - began)


@contextlib.asynccontextmanager
async def fresh(label: str) -> AsyncIterator[Any]:
    """Yield a store of kind ``label`` in a fresh file or database, closed afterwards."""
    with contextlib.ExitStack() as stack:
        if label == "SQLiteStore":
            where = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            store: Any = SQLiteStore(where / "m.db")
        else:
            store = PostgresStore(stack.enter_context(database(durable=True)))
        try:
            yield store
        finally:
            await store.aclose()


async def records_fresh(label: str, items: Sequence[tuple[str, Any]]) -> float:
    """Return the rate of ``import_records`` of ``items`` into a fresh store of kind ``label``."""
    async with fresh(label) as store:
        return await records_rate(store, as_records(items))


async def imports(label: str, items: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """Return the rates of both bulk imports of ``items``, each into a fresh store."""
    async with fresh(label) as store:
        rate = await import_rate(store, items)
    copied = await records_fresh(label, items)
    print(f"{label}: add_many {rate:,.0f}/s, import_records {copied:,.0f}/s", flush=True)
    return {"import": f"{rate:,.0f}/s", "records": f"{copied:,.0f}/s"}


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


async def import_section(sizes: Sequence[int]) -> None:
    """Run only the two bulk imports of each size, for both stores; write their table."""
    lines = [
        "# Bulk imports: PostgresStore beside SQLiteStore",
        "",
        "Written by `benchmarks/bench_postgres.py --only import` (see its docstring): PostgreSQL",
        "18 on 127.0.0.1 (fsync on), SQLite in WAL with `fsync=True`; 2 shared vCPUs. Load is",
        "the 1-minute load average before and after each row.",
        "",
        f"| memories | store | `add_many` ({BATCH:,} a call) | `import_records` | load |",
        "|---|---|---|---|---|",
    ]
    for size in sizes:
        items = list(corpus(size))
        for label in ("SQLiteStore", "PostgresStore"):
            before = os.getloadavg()[0]
            figures = await imports(label, items)
            lines.append(
                f"| {size:,} | {label} | {figures['import']} | {figures['records']} | "
                f"{before:.1f} → {os.getloadavg()[0]:.1f} |"
            )
    IMPORT_RESULTS.write_text("\n".join([*lines, ""]), encoding="utf-8")
    print("\n".join(lines))


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
    parser.add_argument("--only", choices=["import"], help="run only this section")
    args = parser.parse_args(argv)
    if args.only == "import":
        await import_section(args.sizes)
        return
    rows: list[tuple[int, str, dict[str, str]]] = []
    for size in args.sizes:
        items = list(corpus(size))
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "m.db"
            rows.append(
                (
                    size,
                    "SQLiteStore",
                    await measure(
                        "sqlite", lambda n="memory", p=path: SQLiteStore(p, name=n), items
                    ),
                )
            )
        with database(durable=True) as dsn:
            rows.append(
                (
                    size,
                    "PostgresStore",
                    await measure("postgres", lambda d=dsn: PostgresStore(d), items, dsn),
                )
            )
        for _, label, figures in rows[-2:]:
            figures["records"] = f"{await records_fresh(label, items):,.0f}/s"
    with database() as dsn:
        mixed = await hybrid(dsn, args.hybrid)
    lines = [
        "# PostgresStore beside SQLiteStore",
        "",
        "Written by `benchmarks/bench_postgres.py` (see its docstring): PostgreSQL 18 on",
        "127.0.0.1 (fsync on), SQLite in WAL with `fsync=True`; 2 shared vCPUs.",
        "",
        "| memories | store | bulk import | import_records | durable add p50 / p99 | "
        f"keyword search p50 / p99 | 1 → {CLIENTS} clients |",
        "|---|---|---|---|---|---|---|",
    ]
    for size, label, figures in rows:
        lines.append(
            f"| {size:,} | {label} | {figures['import']} | {figures['records']} | "
            f"{figures['add']} | "
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
