"""Benchmark: ``PostgresStore``'s metadata filters with the SQL before and after the GIN fix.

Run: ``.venv/bin/python benchmarks/bench_postgres_filters.py [--size 100000] [--questions 100]``.
It starts a throwaway PostgreSQL 18 with pgvector on 127.0.0.1 (``fsync`` on, ``bench_postgres``'s
``SERVER_SETTINGS``) and writes ``benchmarks/results/postgres-filters.md``.

The store holds the benchmark corpus (:mod:`corpus`) with ``filtered_search``'s two extra
fields: ``tenant``, one of 100 values in turn (``{"tenant": "t07"}`` matches 1%, spread evenly
through the store), and ``half`` (``{"half": "even"}``: 50%), plus ``{"tenant": {"$in": [...]}}``
of two tenants (2%). It is loaded keyword-only with ``add_many``, then ``reindex()`` stores
``HashEmbedder(384)`` vectors and builds the HNSW index, and the tables are analyzed.

Each timed question is searched in keyword and in hybrid mode (top 10), unfiltered and with
each filter, each filtered search once with the SQL before (the filter's tests wrapped in
``coalesce(..., FALSE)``, which the planner cannot match to the ``jsonb_path_ops`` index; see
:func:`old_sql`) and once with the SQL now (a bare ``@>``), in turns, the order of the two
alternating by question, so both meet the same load of this shared machine. The figures are
the medians (and p90) of wall time and of this process's CPU time per search.

Then one selective search (1%, keyword and hybrid) is run once more with each SQL under
``auto_explain`` (``log_analyze``, ``log_buffers``) and the plans of its main statements are
copied from the server's log into the results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from bench_postgres import SERVER_SETTINGS  # noqa: E402
from corpus import corpus, query_sample  # noqa: E402
from psycopg import sql  # noqa: E402
from timing import load, ms, percentile  # noqa: E402

from agentrecall import PostgresStore  # noqa: E402
from agentrecall.retrieval.filters import parse  # noqa: E402
from agentrecall.stores.postgres import tables as postgres_tables  # noqa: E402
from agentrecall.testing import HashEmbedder  # noqa: E402
from agentrecall.testing.postgres import TemporaryPostgres  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "postgres-filters.md"
DIMENSION = 384
BATCH = 5_000
WARMUP = 30
FILTERS: dict[str, dict[str, Any] | None] = {
    "unfiltered": None,
    "tenant, 1%": {"tenant": "t07"},
    "tenant $in, 2%": {"tenant": {"$in": ["t07", "t42"]}},
    "half, 50%": {"half": "even"},
}
MODES = ("keyword", "hybrid")
EXPLAINED = "tenant, 1%"
EXPLAIN_OPTIONS = (
    "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 "
    "-c auto_explain.log_analyze=on -c auto_explain.log_buffers=on"
)


def old_sql(filter: Mapping[str, Any] | None, column: str) -> tuple[str, list[object]]:
    """The SQL of ``$eq`` and ``$in`` filters before the fix (only what the cases use)."""
    parts: list[str] = []
    params: list[object] = []
    for field in parse(filter):
        for test in field.tests:
            if test.operator == "$eq":
                params.append(json.dumps({field.name: test.operand}))
                parts.append(f"coalesce({column} @> %s::jsonb, FALSE)")
            elif test.operator == "$in":
                params += [field.name, [json.dumps(value) for value in test.operand]]
                parts.append(f"coalesce(({column} -> %s) = ANY(%s::jsonb[]), FALSE)")
            else:
                raise ValueError(f"old_sql renders only $eq and $in, not {test.operator}")
    return ("(" + " AND ".join(parts) + ")" if parts else "TRUE"), params


@contextmanager
def rendering(variant: str) -> Iterator[None]:
    """Make the stores of this process render filters with the ``old`` or the ``new`` SQL."""
    if variant == "new":
        yield
        return
    with mock.patch.object(postgres_tables, "to_postgres", old_sql):
        yield


def items(size: int) -> list[tuple[str, dict[str, Any]]]:
    """The corpus with ``tenant`` and ``half``, as ``add_many`` items."""
    return [
        (content, {**metadata, "tenant": f"t{n % 100:02d}", "half": ("even", "odd")[n % 2]})
        for n, (content, metadata) in enumerate(corpus(size))
    ]


async def load_store(dsn: str, size: int) -> str:
    """Load the store; return how long each phase took."""
    began = time.perf_counter()
    plain = PostgresStore(dsn)
    await plain.setup()
    rows = items(size)
    for start in range(0, len(rows), BATCH):
        await plain.add_many(rows[start : start + BATCH])
    await plain.aclose()
    added = time.perf_counter()
    store = PostgresStore(dsn, embedder=HashEmbedder(DIMENSION))
    await store.reindex()
    await store.aclose()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        await connection.execute("VACUUM ANALYZE agentrecall.memories")
        await connection.execute("VACUUM ANALYZE agentrecall.vectors")
    ended = time.perf_counter()
    return f"added in {added - began:,.0f} s, vectors and HNSW in {ended - added:,.0f} s"


Timings = dict[tuple[str, str, str], list[tuple[float, float]]]


async def timed(store: PostgresStore, question: str, mode: str, filter: Any) -> tuple[float, float]:
    """Return the wall and CPU seconds of one search."""
    began, cpu = time.perf_counter(), time.process_time()
    await store.search(question, {"mode": mode, "limit": 10}, filter=filter)
    return time.perf_counter() - began, time.process_time() - cpu


async def searches(dsn: str, questions: Sequence[str], warmup: Sequence[str]) -> Timings:
    """Time every (mode, filter, variant) per question, in turns."""
    store = PostgresStore(dsn, embedder=HashEmbedder(DIMENSION))
    found: Timings = {}
    try:
        for question in warmup:
            for mode in MODES:
                for variant in ("old", "new"):
                    with rendering(variant):
                        for filter in FILTERS.values():
                            await store.search(question, {"mode": mode}, filter=filter)
        for number, question in enumerate(questions):
            order = ("old", "new") if number % 2 == 0 else ("new", "old")
            for mode in MODES:
                for name, filter in FILTERS.items():
                    for variant in order if filter is not None else ("new",):
                        with rendering(variant):
                            times = await timed(store, question, mode, filter)
                        found.setdefault((mode, name, variant), []).append(times)
    finally:
        await store.aclose()
    return found


async def explained(server: TemporaryPostgres, dsn: str, question: str) -> list[str]:
    """Return the logged plans of the main statements of the selective case, per variant."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["options"] = EXPLAIN_OPTIONS
    traced = psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})
    sections = []
    for mode in MODES:
        for variant in ("old", "new"):
            store = PostgresStore(traced, embedder=HashEmbedder(DIMENSION))
            await store.search(question, {"mode": mode}, filter=FILTERS[EXPLAINED])  # warm
            start = server.log_path.stat().st_size
            with rendering(variant):
                await store.search(question, {"mode": mode}, filter=FILTERS[EXPLAINED])
            await store.aclose()
            with server.log_path.open(errors="replace") as log:
                log.seek(start)
                text = log.read()
            plans = [
                "duration:" + chunk.split("\n20", 1)[0].rstrip()
                for chunk in text.split("duration:")[1:]
                if "Query Text: WITH" in chunk or "<=>" in chunk
            ]
            sections.append(
                f"### {mode}, {EXPLAINED}, {variant} SQL\n\n```\n" + "\n\n".join(plans) + "\n```\n"
            )
    return sections


def table(found: Timings) -> list[str]:
    lines = [
        "| mode | filter | old SQL: p50 / p90 ms | new SQL: p50 / p90 ms | new / old p50 "
        "| CPU p50 old / new ms |",
        "|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        for name in FILTERS:
            new = found[(mode, name, "new")]
            old = found.get((mode, name, "old"), new)
            walls = [[t[0] for t in old], [t[0] for t in new]]
            cpus = [statistics.median(t[1] for t in side) for side in (old, new)]
            ratio = statistics.median(walls[1]) / statistics.median(walls[0])
            cells = [f"{ms(percentile(w, 50))} / {ms(percentile(w, 90))}" for w in walls]
            lines.append(
                f"| {mode} | {name} | {cells[0]} | {cells[1]} | {ratio:.2f} "
                f"| {ms(cpus[0])} / {ms(cpus[1])} |"
            )
    return lines


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=100)
    args = parser.parse_args(argv)
    questions, warmup = query_sample(args.questions, WARMUP)
    with TemporaryPostgres(durable=True) as server:
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            for name, value in SERVER_SETTINGS.items():
                admin.execute(
                    sql.SQL("ALTER SYSTEM SET {} = {}").format(
                        sql.Identifier(name), sql.Literal(value)
                    )
                )
        server.restart()
        loaded = await load_store(server.dsn, args.size)
        print(f"{args.size:,} memories: {loaded} (load {load()})", flush=True)
        found = await searches(server.dsn, questions, warmup)
        rows = table(found)
        print("\n".join(rows), flush=True)
        plans = await explained(server, server.dsn, questions[0])
    report = [
        "# PostgresStore metadata filters: the SQL before and after",
        "",
        f"Written by `benchmarks/bench_postgres_filters.py` (see its docstring): {args.size:,} "
        f"memories ({loaded}), {len(questions)} questions, top 10, old and new SQL in turns "
        f"per question; PostgreSQL 18 on 127.0.0.1, 2 shared vCPUs, load {load()} at the end "
        f"({os.cpu_count()} CPUs seen). CPU is this client process's.",
        "",
        *rows,
        "",
        f"## Plans of one selective search (question: {questions[0]!r})",
        "",
        *plans,
    ]
    RESULTS.write_text("\n".join(report) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    asyncio.run(main())
