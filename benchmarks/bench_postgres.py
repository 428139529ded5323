"""Benchmark: ``PostgresStore`` beside ``SQLiteStore``, in one run, on the same corpus.

Run: ``.venv/bin/python benchmarks/bench_postgres.py [--sizes 100000 1000000] [--hybrid N]``
(``--hybrid 0`` skips the hybrid part). It starts a throwaway PostgreSQL 18 with pgvector on
127.0.0.1 (``agentrecall.testing.postgres``; ``synchronous_commit`` on and ``fsync`` on, so a
commit is durable as on a real server) with the settings of :data:`SERVER_SETTINGS`, or uses
the server of ``AGENTRECALL_BENCH_POSTGRES_DSN`` as it is, and writes
``benchmarks/results/postgres.md``. ``--only import`` runs only the two bulk imports, for
both stores (each on a server with PostgreSQL's defaults), and writes
``benchmarks/results/postgres-import.md`` instead. ``--only adds`` runs only PostgresStore's
durable add and its 1 → :data:`CLIENTS` clients, with the CPU each add cost in the clients and
in the server (its processes' time from ``/proc``, when the server runs on this machine), and
writes ``benchmarks/results/postgres-adds.md``; ``PYTHONPATH=<other checkout>/src`` runs the
same measurement over other code, for an A/B.

Per size, for each store, in a fresh database or file:

* bulk import: memories per second of ``add_many`` in calls of :data:`BATCH` (PostgreSQL:
  chunks read for held contents, then ``COPY`` straight into the table), and of
  ``import_records`` of the same memories as records (ids, times, one user per call) in
  calls of :data:`BATCH`, into another fresh database or file;
* one durable add: median and p99 of :data:`ADDS` single adds after the import;
* keyword search: median and p99 of :data:`QUERIES` LoCoMo questions, top 10, after
  :data:`WARMUP` warm-up questions;
* concurrency: :data:`CLIENTS` clients, each a process of its own with its own store (as
  agents on several machines would be; PostgreSQL: a pool each; SQLite: one file), each
  adding :data:`CLIENT_ADDS` memories one at a time, durably, against one such client alone:
  aggregate adds per second, from the first client's start to the last one's end (all start
  together, once every process has connected).

Then hybrid search (``HashEmbedder(384)``, HNSW) at ``--hybrid`` memories: import rate with the
vectors and the index kept up to date, and the median of the same questions.

Data: :mod:`corpus` (LoCoMo dev turns spread among generated filler). The machine is shared
and noisy (2 vCPUs): read medians, and compare the two stores within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil  # noqa: E402
import psycopg  # noqa: E402
from corpus import corpus, query_sample  # noqa: E402
from postgres_recall import DSN_VARIABLE, database  # noqa: E402
from psycopg import sql  # noqa: E402
from timing import load, ms, percentile, time_adds, time_searches  # noqa: E402

from agentrecall import MemoryRecord, PostgresStore, SQLiteStore  # noqa: E402
from agentrecall.testing import HashEmbedder  # noqa: E402
from agentrecall.testing.postgres import TemporaryPostgres  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "postgres.md"
IMPORT_RESULTS = RESULTS.with_name("postgres-import.md")
ADDS_RESULTS = RESULTS.with_name("postgres-adds.md")
BATCH = 5_000
ADDS = 300
ADD_WARMUP = 20
QUERIES = 200
WARMUP = 20
CLIENTS = 8
SERVER_SETTINGS: dict[str, str] = {"shared_buffers": "1GB", "max_wal_size": "4GB"}
"""Settings of the throwaway server beyond PostgreSQL's defaults, as a deployment tunes them
(see ``benchmarks/results/postgres-engineering.md``): buffers that hold a million-memory
store's hot index pages (the default, 128 MB, is sized for any small machine), and fewer
checkpoints during a bulk load."""
CLIENT_ADDS = 500


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


def concurrent_rate(kind: str, target: str, clients: int, tag: str) -> float:
    """Return aggregate adds per second of ``clients`` processes adding at once."""
    return concurrent_run(kind, target, clients, tag)[0]


def concurrent_run(kind: str, target: str, clients: int, tag: str) -> tuple[float, float]:
    """Return aggregate adds per second of ``clients`` processes adding at once, and their CPU.

    Each process (:func:`client`) opens its store, says it is ready, and waits for the word
    to start; the rate counts from the first one's start to the last one's end. The CPU is
    the clients' process time (seconds) over their adds, summed.
    """
    command = [sys.executable, __file__, "--client", kind, target, tag]
    children = [
        subprocess.Popen(
            [*command, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for n in range(clients)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a {kind} client failed to start (its error is above)")
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        spans = [json.loads(child.stdout.readline()) for child in children if child.stdout]
    finally:
        for child in children:
            if child.stdin is not None:
                child.stdin.close()
            if child.wait() != 0:
                raise RuntimeError(f"a {kind} client failed (its error is above)")
    span = max(end for _, end, _ in spans) - min(start for start, _, _ in spans)
    return clients * CLIENT_ADDS / span, sum(cpu for _, _, cpu in spans)


async def client(kind: str, target: str, tag: str, number: int) -> None:
    """One client process of :func:`concurrent_rate`: open, wait for the start, add, report."""
    store: Any = PostgresStore(target) if kind == "postgres" else SQLiteStore(Path(target))
    await store.setup()
    print("ready", flush=True)
    sys.stdin.readline()
    # CLOCK_MONOTONIC: one clock for every process of the machine.
    began, cpu = time.monotonic(), time.process_time()
    for n in range(CLIENT_ADDS):
        await store.add(f"{tag} client {number} says note number {n}")
    print(json.dumps([began, time.monotonic(), time.process_time() - cpu]), flush=True)
    await store.aclose()


async def measure(
    label: str, make: Any, target: str, items: Sequence[tuple[str, Any]], dsn: str | None = None
) -> dict[str, str]:
    """Return the figures of one store, made by ``make`` over ``target`` (a path or a DSN)."""
    began = load()
    store = make()
    rate = import_rate_value = await import_rate(store, items, dsn)
    size = await settle(dsn) if dsn is not None else ""
    extra = [(f"durable add {label} {n}", None) for n in range(ADDS + ADD_WARMUP)]
    adds = await time_adds(store, extra, ADD_WARMUP)
    searches = await search_times(store)
    await store.aclose()
    one = concurrent_rate(label, target, 1, f"{label} alone")
    many = concurrent_rate(label, target, CLIENTS, f"{label} together")
    print(f"{label}: import {import_rate_value:,.0f}/s", flush=True)
    return {
        "import": f"{rate:,.0f}/s",
        "add": f"{ms(percentile(adds, 50))} / {ms(percentile(adds, 99))} ms",
        "search": f"{ms(percentile(searches, 50))} / {ms(percentile(searches, 99))} ms",
        "clients": f"{one:,.0f} → {many:,.0f} adds/s ({many / one:.1f}×)",
        "load": f"{began} → {load()}",
        "size": size,
    }


async def settle(dsn: str) -> str:
    """Vacuum and write out the bulk load (``VACUUM (ANALYZE)``, ``CHECKPOINT``); return its size.

    The durable adds and the clients then meet a server at rest, as a store that was not just
    bulk-loaded has: not one whose checkpoint is still writing the import's pages out while
    the adds' commits wait for the same disk, nor one whose autovacuum starts on the new rows
    (and GIN's pending list) during a timed run, taking CPU that would be counted as the
    adds' (a run without the vacuum put 11 ms of server CPU on each add of one client).
    """
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        await connection.execute("VACUUM (ANALYZE)")
        await connection.execute("CHECKPOINT")
        cursor = await connection.execute(
            "SELECT pg_size_pretty(pg_database_size(current_database()))"
        )
        row = await cursor.fetchone()
    return str(row[0]) if row else ""


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
            before = load()
            figures = await imports(label, items)
            lines.append(
                f"| {size:,} | {label} | {figures['import']} | {figures['records']} | "
                f"{before} → {load()} |"
            )
    IMPORT_RESULTS.write_text("\n".join([*lines, ""]), encoding="utf-8")
    print("\n".join(lines))


def server_cpu(dsn: str) -> float | None:
    """Return the CPU seconds the server of ``dsn`` has used, ``None`` if it is not readable.

    The postmaster's own time, that of its children that ended and that of those still
    running (``psutil``): the server must run on this machine.
    """
    with psycopg.connect(dsn) as connection:
        row = connection.execute("SHOW data_directory").fetchone()
    try:
        pid_file = Path(str(row[0] if row else "")) / "postmaster.pid"
        postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
        times = postmaster.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in postmaster.children():
            with contextlib.suppress(psutil.Error):
                running = child.cpu_times()
                total += running.user + running.system
    except (OSError, ValueError, IndexError, psutil.Error):
        return None
    return float(total)


def cpu_text(client: float, server: float | None, adds: int) -> str:
    """Format CPU seconds over ``adds`` adds as milliseconds per add, client / server."""
    shown = "n/a" if server is None else f"{server / adds * 1000:.2f}"
    return f"{client / adds * 1000:.2f} / {shown} ms"


def cpu_between(dsn: str, run: Any) -> tuple[Any, float | None]:
    """Return what ``run()`` returns and the server CPU seconds it took (``None``: unknown)."""
    before = server_cpu(dsn)
    result = run()
    after = server_cpu(dsn)
    return result, None if before is None or after is None else after - before


async def adds_figures(dsn: str, items: Sequence[tuple[str, Any]]) -> dict[str, str]:
    """Return the durable add and clients figures of a store of ``items``, with their CPU."""
    began = load()
    store = PostgresStore(dsn)
    await import_rate(store, items, dsn)
    await settle(dsn)
    extra = [(f"durable add {n}", None) for n in range(ADDS + ADD_WARMUP)]
    await time_adds(store, extra[:ADD_WARMUP], 0)
    before, cpu = server_cpu(dsn), time.process_time()
    adds = await time_adds(store, extra[ADD_WARMUP:], 0)
    cpu, after = time.process_time() - cpu, server_cpu(dsn)
    await store.aclose()
    used = None if before is None or after is None else after - before
    (one, one_cpu), one_server = cpu_between(
        dsn, lambda: concurrent_run("postgres", dsn, 1, "alone")
    )
    (many, many_cpu), many_server = cpu_between(
        dsn, lambda: concurrent_run("postgres", dsn, CLIENTS, "together")
    )
    return {
        "add": f"{ms(percentile(adds, 50))} / {ms(percentile(adds, 99))} ms",
        "add cpu": cpu_text(cpu, used, ADDS),
        "clients": f"{one:,.0f} → {many:,.0f} adds/s ({many / one:.1f}×)",
        "one cpu": cpu_text(one_cpu, one_server, CLIENT_ADDS),
        "many cpu": cpu_text(many_cpu, many_server, CLIENTS * CLIENT_ADDS),
        "load": f"{began} → {load()}",
    }


async def adds_section(sizes: Sequence[int], settings: dict[str, str]) -> None:
    """Run only PostgresStore's durable add and clients at each size; write their table."""
    shown = ", ".join(f"`{name} = {value}`" for name, value in settings.items()) or "defaults"
    lines = [
        "# Durable adds of PostgresStore, one client and several",
        "",
        "Written by `benchmarks/bench_postgres.py --only adds` (see its docstring): PostgreSQL",
        f"18 on 127.0.0.1 (fsync on; {shown}); 2 shared vCPUs. CPU per add: the",
        "clients' process time / the server's processes' time (from `/proc`), in ms. Load:",
        "the load average at the start and the end of each row.",
        "",
        f"| memories | durable add p50 / p99 | its CPU | 1 → {CLIENTS} clients (processes) | "
        f"CPU at 1 | CPU at {CLIENTS} | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        with durable_database(settings) as dsn:
            f = await adds_figures(dsn, list(corpus(size)))
        lines.append(
            f"| {size:,} | {f['add']} | {f['add cpu']} | {f['clients']} | {f['one cpu']} | "
            f"{f['many cpu']} | {f['load']} |"
        )
    ADDS_RESULTS.write_text("\n".join([*lines, ""]), encoding="utf-8")
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


@contextlib.contextmanager
def durable_database(settings: dict[str, str]) -> Iterator[str]:
    """Yield the URL of a fresh database on a durable throwaway server with ``settings``.

    With ``AGENTRECALL_BENCH_POSTGRES_DSN`` set, a database on that server instead, as it is.
    """
    if os.environ.get(DSN_VARIABLE):
        with database(durable=True) as dsn:
            yield dsn
        return
    with TemporaryPostgres(durable=True) as server:
        if settings:
            with psycopg.connect(server.dsn, autocommit=True) as admin:
                for name, value in settings.items():
                    admin.execute(
                        sql.SQL("ALTER SYSTEM SET {} = {}").format(
                            sql.Identifier(name), sql.Literal(value)
                        )
                    )
            server.restart()  # shared_buffers takes effect only at a start
        with mock.patch.dict(os.environ, {DSN_VARIABLE: server.dsn}), database() as dsn:
            yield dsn


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--hybrid", type=int, default=20_000)
    parser.add_argument(
        "--default-settings",
        action="store_true",
        help="start the server with PostgreSQL's defaults, not SERVER_SETTINGS",
    )
    parser.add_argument("--only", choices=["import", "adds"], help="run only this section")
    args = parser.parse_args(argv)
    if args.only == "import":
        await import_section(args.sizes)
        return
    settings = {} if args.default_settings else SERVER_SETTINGS
    if args.only == "adds":
        await adds_section(args.sizes, settings)
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
                    await measure("sqlite", lambda p=path: SQLiteStore(p), str(path), items),
                )
            )
        rows[-1][2]["records"] = f"{await records_fresh('SQLiteStore', items):,.0f}/s"
        with durable_database(settings) as dsn:
            rows.append(
                (
                    size,
                    "PostgresStore",
                    await measure("postgres", lambda d=dsn: PostgresStore(d), dsn, items, dsn),
                )
            )
            # A fresh database on the same server (the DSN variable points there meanwhile).
            rows[-1][2]["records"] = f"{await records_fresh('PostgresStore', items):,.0f}/s"
    mixed = None
    if args.hybrid:
        with database() as dsn:
            mixed = await hybrid(dsn, args.hybrid)
    shown = ", ".join(f"`{name} = {value}`" for name, value in settings.items()) or "defaults"
    lines = [
        "# PostgresStore beside SQLiteStore",
        "",
        "Written by `benchmarks/bench_postgres.py` (see its docstring): PostgreSQL 18 on",
        "127.0.0.1 (fsync on), SQLite in WAL with `fsync=True`; 2 shared vCPUs. Server",
        f"settings: {shown}. Load: the load average at the start and the end of each row.",
        "",
        "| memories | store | bulk import | import_records | durable add p50 / p99 | "
        f"keyword search p50 / p99 | 1 → {CLIENTS} clients (processes) | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, label, figures in rows:
        lines.append(
            f"| {size:,} | {label} | {figures['import']} | {figures['records']} | "
            f"{figures['add']} | {figures['search']} | {figures['clients']} | {figures['load']} |"
        )
    lines.append("")
    sizes = [f"{size:,}: {figures['size']}" for size, _, figures in rows if figures["size"]]
    lines += [f"PostgreSQL database after the import ({', '.join(sizes)}).", ""]
    if mixed is not None:
        lines += [
            f"Hybrid search (`HashEmbedder(384)`, HNSW) at {args.hybrid:,} memories: import "
            f"with vectors {mixed['import']}, search p50 / p99 {mixed['search']}.",
            "",
        ]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--client"]:
        kind, target, tag, number = sys.argv[2:]
        asyncio.run(client(kind, target, tag, int(number)))
    else:
        asyncio.run(main())
