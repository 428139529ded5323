"""Benchmark: ``PostgresStore``'s semantic search under metadata filters, walk against exact.

Run: ``.venv/bin/python benchmarks/bench_postgres_filters.py [--size 100000] [--questions 100]``.
It starts a throwaway PostgreSQL 18 with pgvector on 127.0.0.1 (``fsync`` on, ``bench_postgres``'s
``SERVER_SETTINGS``) and writes ``benchmarks/results/postgres-filters.md``.

The store holds the benchmark corpus (:mod:`corpus`) with ``filtered_search``'s two extra
fields: ``tenant``, one of 100 values in turn (``{"tenant": "t07"}`` matches 1%, spread evenly
through the store), and ``half`` (``{"half": "even"}``: 50%), plus ``$in`` filters of two, five
and ten tenants (2%, 5%, 10%). It is loaded keyword-only with ``add_many``, then ``reindex()``
stores ``HashEmbedder(384)`` vectors and builds the HNSW index, and the tables are analyzed.

Each timed question is searched in semantic and in hybrid mode (top 10), unfiltered and with
each filter, each filtered search with the semantic part as it was (``walk``: always the HNSW
walk, its count stopped at once; see :func:`choosing`), as it is (``chosen``: the bounded
count, then exact search over at most ``vectors.EXACT_UNDER`` matching memories, else the
walk) and, in semantic mode, always exact (``exact``: the threshold raised past the store,
so the count is a full one), in turns, the order rotating by question, so all meet the same
load of this shared machine. The figures are the medians (and p90) of wall time and of this
process's CPU time per search. The ``exact`` column against the ``walk`` column is what the
threshold is chosen by.

Then one selective search (1%, semantic) is run once more each way under ``auto_explain``
(``log_analyze``, ``log_buffers``) and the plans of its statements are copied from the server's
log into the results.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
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
from agentrecall.stores.postgres import vectors as postgres_vectors  # noqa: E402
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
    "tenant $in, 5%": {"tenant": {"$in": [f"t{n:02d}" for n in range(10, 15)]}},
    "tenant $in, 10%": {"tenant": {"$in": [f"t{n:02d}" for n in range(20, 30)]}},
    "half, 50%": {"half": "even"},
}
MODES = ("semantic", "hybrid")
VARIANTS = {"semantic": ("walk", "chosen", "exact"), "hybrid": ("walk", "chosen")}
EXPLAINED = "tenant, 1%"
EXPLAIN_OPTIONS = (
    "-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 "
    "-c auto_explain.log_analyze=on -c auto_explain.log_buffers=on"
)


@contextmanager
def choosing(variant: str) -> Iterator[None]:
    """Make the stores of this process search as ``walk``, ``chosen`` or ``exact`` (above)."""
    if variant == "walk":
        # No memory is few enough: the count stops at once (LIMIT 0) and the graph is walked.
        with mock.patch.object(postgres_vectors, "EXACT_UNDER", -1):
            yield
    elif variant == "exact":
        with mock.patch.object(postgres_vectors, "EXACT_UNDER", 10**9):
            yield
    else:
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
    await store.search(question, {"mode": mode, "max_search_results": 10}, filter=filter)
    return time.perf_counter() - began, time.process_time() - cpu


async def searches(dsn: str, questions: Sequence[str], warmup: Sequence[str]) -> Timings:
    """Time every (mode, filter, variant) per question, in turns."""
    store = PostgresStore(dsn, embedder=HashEmbedder(DIMENSION))
    found: Timings = {}
    try:
        for question in warmup:
            for mode in MODES:
                for variant in VARIANTS[mode]:
                    with choosing(variant):
                        for filter in FILTERS.values():
                            await store.search(question, {"mode": mode}, filter=filter)
        for number, question in enumerate(questions):
            for mode in MODES:
                turn = number % len(VARIANTS[mode])
                order = VARIANTS[mode][turn:] + VARIANTS[mode][:turn]
                for name, filter in FILTERS.items():
                    for variant in order if filter is not None else ("chosen",):
                        with choosing(variant):
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
    mode = "semantic"
    for variant in ("walk", "chosen"):
        store = PostgresStore(traced, embedder=HashEmbedder(DIMENSION))
        await store.search(question, {"mode": mode}, filter=FILTERS[EXPLAINED])  # warm
        start = server.log_path.stat().st_size
        with choosing(variant):
            await store.search(question, {"mode": mode}, filter=FILTERS[EXPLAINED])
        await store.aclose()
        with server.log_path.open(errors="replace") as log:
            log.seek(start)
            text = log.read()
        plans = [
            "duration:" + chunk.split("\n20", 1)[0].rstrip()
            for chunk in text.split("duration:")[1:]
            if "hnsw.ef_search" in chunk or "vectors AS v" in chunk
        ]
        sections.append(
            f"### {mode}, {EXPLAINED}, {variant}\n\n```\n" + "\n\n".join(plans) + "\n```\n"
        )
    return sections


def table(found: Timings) -> list[str]:
    lines = [
        "| mode | filter | walk: p50 / p90 ms | chosen: p50 / p90 ms | exact: p50 / p90 ms "
        "| chosen / walk p50 | CPU p50 walk / chosen ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        for name in FILTERS:
            chosen = found[(mode, name, "chosen")]
            sides = [found.get((mode, name, variant), chosen) for variant in VARIANTS[mode]]
            walls = [[t[0] for t in side] for side in sides]
            cells = [f"{ms(percentile(w, 50))} / {ms(percentile(w, 90))}" for w in walls]
            cells += ["-"] * (3 - len(cells))
            cpus = [statistics.median(t[1] for t in side) for side in sides[:2]]
            ratio = statistics.median(walls[1]) / statistics.median(walls[0])
            lines.append(
                f"| {mode} | {name} | {' | '.join(cells)} | {ratio:.2f} "
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
        "# PostgresStore semantic search under metadata filters: HNSW walk or exact",
        "",
        f"Written by `benchmarks/bench_postgres_filters.py` (see its docstring): {args.size:,} "
        f"memories ({loaded}), {len(questions)} questions, top 10, the variants in turns "
        f"per question, `vectors.EXACT_UNDER` = {postgres_vectors.EXACT_UNDER:,}; PostgreSQL 18 "
        f"on 127.0.0.1, 2 shared vCPUs, load {load()} at the end "
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
