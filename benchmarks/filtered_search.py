"""Filtered searches of ``SQLiteStore`` beside the unfiltered one, for :mod:`bench_sqlite`.

Per size, a fresh database holds the benchmark corpus (:mod:`corpus`) imported with
``import_records`` in calls of :data:`BATCH`, one memory a second in corpus order, each with
two more metadata fields: ``tenant``, one of 100 values in turn (a filter on one matches 1% of
the memories, spread evenly through the store), and ``half``, ``even`` or ``odd`` (50%). A
fresh child process opens it (page cache warm from the import), runs the warm-up questions,
then each timed question :data:`CASES` times in turn, once per case:

* unfiltered;
* a selective metadata filter, ``{"tenant": "t07"}`` (1%);
* a non-selective one, ``{"half": "even"}`` (50%);
* a selective time bound, ``created_after`` the creation time of the memory at 99% (the
  newest 1%).

Taking turns per question puts every case under the same load of this shared machine; the
ratio of each case's median to the unfiltered median comes from the same run.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

from corpus import corpus
from timing import ms, percentile

from agentrecall import SQLiteStore
from agentrecall.types import MemoryRecord

SIZES = (100_000, 1_000_000)
BATCH = 50_000
START = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
RECENT = 0.99
"""The time bound admits the memories created after this share of the corpus."""
RATIO_TARGET = 2.0
"""A selective filter or time bound at 1M costs at most this times the unfiltered search."""
OPTIONS = {"max_search_results": 10}


def _moment(position: int) -> dt.datetime:
    return START + dt.timedelta(seconds=position)


def cases(size: int) -> dict[str, dict[str, Any]]:
    """Return the search keyword arguments of each case, by name."""
    return {
        "unfiltered": {},
        "metadata filter, 1%": {"filter": {"tenant": "t07"}},
        "metadata filter, 50%": {"filter": {"half": "even"}},
        "time bound, newest 1%": {"created_after": _moment(int(RECENT * size)).isoformat()},
    }


SELECTIVE = ("metadata filter, 1%", "time bound, newest 1%")


def records(size: int) -> Iterator[MemoryRecord]:
    """Yield the corpus as records with their creation times and the two extra fields."""
    rng = random.Random(11)
    for position, (content, metadata) in enumerate(corpus(size)):
        moment = _moment(position)
        yield MemoryRecord(
            id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            content=content,
            created_at=f"{moment:%Y-%m-%dT%H:%M:%S}.000Z",
            metadata={
                **metadata,
                "tenant": f"t{position % 100:02d}",
                "half": ("even", "odd")[position % 2],
            },
        )


async def _import(path: str, size: int) -> None:
    store = SQLiteStore(path)
    try:
        rows = records(size)
        while batch := list(itertools.islice(rows, BATCH)):
            await store.import_records(batch)
    finally:
        await store.aclose()


def search_child(path: str) -> None:
    """Child process: time each case per question (JSON job on stdin); print the timings."""
    job = json.load(sys.stdin)

    async def run() -> dict[str, list[float]]:
        store = SQLiteStore(path)
        try:
            chosen = cases(job["size"])
            for question in job["warmup"]:
                for arguments in chosen.values():
                    await store.search(question, OPTIONS, **arguments)
            timings: dict[str, list[float]] = {name: [] for name in chosen}
            for question in job["questions"]:
                for name, arguments in chosen.items():
                    began = time.perf_counter()
                    await store.search(question, OPTIONS, **arguments)
                    timings[name].append(time.perf_counter() - began)
            return timings
        finally:
            await store.aclose()

    json.dump(asyncio.run(run()), sys.stdout)


def bench(size: int, questions: list[str], warmup: list[str], script: str) -> dict[str, Any]:
    """Build the database of ``size`` memories and time the cases in a child of ``script``."""
    with tempfile.TemporaryDirectory(prefix=f"bench-sqlite-filters-{size}-") as tmp:
        path = os.path.join(tmp, "memory.db")
        asyncio.run(_import(path, size))
        job = {"size": size, "questions": questions, "warmup": warmup}
        child = subprocess.run(
            [sys.executable, script, "--filters-child", path],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            check=True,
        )
    return {"size": size, "timings": json.loads(child.stdout)}


def render(rows: list[dict[str, Any]]) -> list[str]:
    """Return the Markdown lines of the filtered-search table and its verdicts."""
    lines = [
        "| entries | search | median ms | p99 ms | median / unfiltered median |",
        "|---:|---|---:|---:|---:|",
    ]
    verdicts = []
    for row in rows:
        timings = row["timings"]
        base = statistics.median(timings["unfiltered"])
        for name, values in timings.items():
            median = statistics.median(values)
            lines.append(
                f"| {row['size']:,} | {name} | {ms(median)} | {ms(percentile(values, 99))} "
                f"| {median / base:.2f}× |"
            )
            if row["size"] == 1_000_000 and name in SELECTIVE:
                met = "met" if median / base <= RATIO_TARGET else "**NOT met**"
                verdicts.append(
                    f"* {name} at 1M ≤ {RATIO_TARGET:g}× the unfiltered median: "
                    f"{median / base:.2f}× ({ms(median)} against {ms(base)} ms): {met}."
                )
    if not verdicts:
        verdicts.append("* Filtered searches at 1,000,000: not measured in this run.")
    return [*lines, "", "Target (filters and time bounds at 1M):", "", *verdicts]
