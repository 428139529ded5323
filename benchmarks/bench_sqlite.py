"""Benchmark: ``SQLiteStore`` at 10k, 100k and 1M memories, with the JSON stores beside it at 10k.

What is measured, per size, each in its own fresh temp database:

* bulk import: entries per second importing the corpus with ``add_many``, :data:`BATCH`
  entries per call (one transaction each), into a store whose tables ``setup()`` created; only
  the time inside ``add_many`` counts, not the corpus generation. At every size the median of
  :data:`IMPORT_RUNS` imports into fresh databases: on this shared machine one import's rate
  moves by a tenth or more from run to run, at a million memories too. And,
  once the searches are done, the rate of :data:`SMALL_BATCHES` more calls of
  :data:`SMALL_BATCH` entries each;
* one durable ``add``: median and p99 of :data:`ADDS` single adds of new memories right after
  the import, through the store that imported (after :data:`ADD_WARMUP` warm-up adds), with
  the default ``fsync=True``; then, once it is closed, as many through a store opened on the
  same file with ``fsync=False`` (survives a crash of the process, not of the machine). The two
  do not take turns: two connections writing one file make each other wait and reload their
  caches, and a store opened afresh first grows SQLite's log file, which makes each fsync
  dearer for its first few hundred adds; neither is what one add of a running store costs;
* search: median and p99 of :data:`QUERIES` questions, top 10, after :data:`QUERY_WARMUP`
  warm-up questions, run in a fresh child process (``sys.executable``) that opens the
  database, so that its peak RSS (``VmHWM``, see :func:`peak_rss_mb`) is that of a process
  that only searches;
  then the same questions in a scope view holding :data:`SCOPED` of the memories (added to
  the store in one ``add_many`` after the import), to show what a small scope in a large
  store costs;
* the floor beside it: the same corpus in the same batches, inserted with ``sqlite3`` alone
  into the least an FTS5 store needs (the ``table + FTS5`` case of :mod:`bench_import_floor`:
  a table and an FTS5 index over the text, same tokenizer, WAL, ``synchronous=FULL``), with
  every row built before the clock starts: what SQLite itself costs on this machine, without
  unique ids, dedup, scopes or checks;
* at 10k only, in the same run: agentrecall ``JsonFileStore`` and Strands' reference
  ``TestMemoryStore`` on a JSON file written directly in the shared format, median ``add``
  (:data:`JSON_ADDS` samples) and median search over the same questions.

Data: :mod:`corpus` (LoCoMo dev turns spread among generated English-like filler; queries are
the LoCoMo dev questions). LoCoMo: Maharana, Lee, Tulyakov, Bansal, Barbieri, Fang, "Evaluating
Very Long-Term Conversational Memory of LLM Agents", ACL 2024, arXiv 2402.17753, CC BY-NC 4.0.

Each timed call is one ``await`` timed alone with ``time.perf_counter`` (so it includes the
store's hop to a worker thread). The machine is shared and noisy: read medians.

Then, at each size of at least 100k, filtered searches beside the unfiltered one in the same
run (:mod:`filtered_search`: a selective and a non-selective metadata filter, a selective time
bound; median, p99 and the ratio to the unfiltered median), in a database of their own.

Run: ``.venv/bin/python benchmarks/bench_sqlite.py [--sizes 10000,100000,1000000]``. Writes
``benchmarks/results/sqlite.md`` and ``benchmarks/results/sqlite-filters.md`` and prints the
same tables. With ``--filters``, only the filtered searches run (at 100k and 1M unless
``--sizes`` says otherwise; a few minutes) and only the second file is written.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filtered_search
from bench_import_floor import prepared_rows, sqlite_rate
from corpus import SIZES, corpus, query_sample
from strands.vended_memory_stores import TestMemoryStore
from timing import ms, peak_rss_mb, percentile, search_in_child, time_adds, time_searches

from agentrecall import JsonFileStore, SQLiteStore

RESULTS = Path(__file__).resolve().parent / "results" / "sqlite.md"
FILTER_RESULTS = RESULTS.with_name("sqlite-filters.md")
BATCH = 50_000
SMALL_BATCH, SMALL_BATCHES = 5_000, 4
ADDS, ADD_WARMUP = 200, 5
JSON_ADDS = 50
QUERIES, QUERY_WARMUP = 200, 20
SCOPED, SCOPE_USER = 2_000, "bench-user"
IMPORT_RUNS = 3
OPTIONS = {"max_search_results": 10}
IMPORT_TARGET = 30_000  # entries/s
ADD_TARGET_MS = 1.0  # median
FLAT = 2.0  # "flat": median add at the largest size at most this times the smallest's
SEARCH_TARGET_MS = (20.0, 100.0)  # median, p99 at 1M
RSS_TARGET_MB = 300.0

Item = tuple[str, dict[str, Any]]


async def bulk_import(store: Any, items: Iterator[Item], size: int, per_call: int) -> float:
    """Import ``size`` items, ``per_call`` at a time; return the seconds inside ``add_many``."""
    spent = 0.0
    for start in range(0, size, per_call):
        batch = list(itertools.islice(items, min(per_call, size - start)))
        began = time.perf_counter()
        await store.add_many(batch)
        spent += time.perf_counter() - began
    return spent


def search_child(path: str) -> None:
    """Child process: search the database with the questions on stdin; print timings, RSS."""
    job = json.load(sys.stdin)

    async def run() -> tuple[list[float], list[float]]:
        store = SQLiteStore(path)
        try:
            everyone = await time_searches(store, job["questions"], job["warmup"], OPTIONS)
            scoped = store.scope(user_id=SCOPE_USER)
            return everyone, await time_searches(scoped, job["questions"], job["warmup"], OPTIONS)
        finally:
            await store.aclose()

    timings, scoped = asyncio.run(run())
    peak_mb = peak_rss_mb()
    json.dump({"timings": timings, "scoped": scoped, "peak_mb": peak_mb}, sys.stdout)


async def fresh_import_rate(size: int) -> float:
    """Entries per second importing the corpus into a fresh database of its own."""
    with tempfile.TemporaryDirectory(prefix=f"bench-sqlite-import-{size}-") as tmp:
        store = SQLiteStore(os.path.join(tmp, "memory.db"))
        try:
            await store.setup()
            return size / await bulk_import(store, corpus(size), size, BATCH)
        finally:
            await store.aclose()


def bench_sqlite(size: int, questions: list[str], warmup: list[str]) -> dict[str, Any]:
    """Import, add and search at one size in a fresh temp database."""
    extra = 2 * (ADD_WARMUP + ADDS) + SMALL_BATCH * SMALL_BATCHES + SCOPED
    items = corpus(size + extra)
    with tempfile.TemporaryDirectory(prefix=f"bench-sqlite-{size}-") as tmp:
        path = os.path.join(tmp, "memory.db")

        async def write() -> tuple[float, list[float]]:
            store = SQLiteStore(path)
            try:
                await store.setup()  # creating the tables is not part of the import
                spent = await bulk_import(store, items, size, BATCH)
                user = store.scope(user_id=SCOPE_USER)
                await user.add_many(list(itertools.islice(items, SCOPED)))
                adds = list(itertools.islice(items, ADD_WARMUP + ADDS))
                return spent, await time_adds(store, adds, ADD_WARMUP)
            finally:
                await store.aclose()

        async def write_fast() -> list[float]:
            store = SQLiteStore(path, fsync=False)
            try:
                adds = list(itertools.islice(items, ADD_WARMUP + ADDS))
                return await time_adds(store, adds, ADD_WARMUP)
            finally:
                await store.aclose()

        spent, adds = asyncio.run(write())
        fast_adds = asyncio.run(write_fast())
        found = search_in_child(__file__, path, questions, warmup)
        megabytes = os.path.getsize(path) / 1e6

        async def small_batches() -> float:
            store = SQLiteStore(path)
            try:
                count = SMALL_BATCH * SMALL_BATCHES
                return count / await bulk_import(store, items, count, SMALL_BATCH)
            finally:
                await store.aclose()

        small_rate = asyncio.run(small_batches())
        # Last: a million-memory import leaves about a gigabyte for the disk to write back,
        # which made the next fsyncs dearer (a median add of 1.03 against 0.5-0.7 ms).
        more_rates = [asyncio.run(fresh_import_rate(size)) for _ in range(IMPORT_RUNS - 1)]
    return {
        "store": "SQLiteStore",
        "size": size,
        "rate": statistics.median([size / spent, *more_rates]),
        "small_rate": small_rate,
        "adds": adds,
        "fast_adds": fast_adds,
        "searches": found["timings"],
        "scoped": found["scoped"],
        "peak_mb": found["peak_mb"],
        "file_mb": megabytes,
    }


def floor_rate(size: int) -> float:
    """Entries per second for bare SQLite + FTS5 importing the corpus, rows prepared first."""
    return sqlite_rate(prepared_rows(size), unique=False, fts=True)


def write_json_file(path: Path, items: list[Item]) -> None:
    """Write ``items`` as a memory file in the shared format, one millisecond apart."""
    rng = random.Random(7)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    records = [
        {
            "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "content": content,
            "createdAt": f"{start + dt.timedelta(milliseconds=i):%Y-%m-%dT%H:%M:%S.}"
            f"{i % 1000:03d}Z",
            "metadata": metadata,
        }
        for i, (content, metadata) in enumerate(items)
    ]
    path.write_text(json.dumps(records, indent=2, ensure_ascii=False), encoding="utf-8")


def bench_json_stores(size: int, questions: list[str], warmup: list[str]) -> list[dict[str, Any]]:
    """Median add and search of the two JSON stores on a ``size``-entry file."""
    everything = list(corpus(size + ADD_WARMUP + JSON_ADDS))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-json-") as tmp:
        source = Path(tmp) / "start.json"
        write_json_file(source, everything[:size])
        for label, store_class in (
            ("JsonFileStore", JsonFileStore),
            ("TestMemoryStore", TestMemoryStore),
        ):
            timings = {}
            for op in ("add", "search"):
                copy = Path(tmp) / f"{label}-{op}.json"
                copy.write_bytes(source.read_bytes())
                store = store_class(name="bench", path=str(copy))
                if op == "add":
                    job = time_adds(store, everything[size:], ADD_WARMUP)
                else:
                    job = time_searches(store, questions, warmup, OPTIONS)
                timings[op] = asyncio.run(job)
            rows.append(
                {
                    "store": label,
                    "size": size,
                    "adds": timings["add"],
                    "searches": timings["search"],
                }
            )
    return rows


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """Return one line per target: what was measured, and met or NOT met."""
    ours = [r for r in rows if r["store"] == "SQLiteStore"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "**NOT met**"

    lines = []
    worst = min(ours, key=lambda r: r["rate"])
    lines.append(
        f"* Bulk import ≥ {IMPORT_TARGET:,}/s at every size ({BATCH:,} per call): slowest "
        f"{worst['rate']:,.0f}/s at {worst['size']:,}: {verdict(worst['rate'] >= IMPORT_TARGET)} "
        f"(bare SQLite + FTS5 there: {worst['floor_rate']:,.0f}/s, so "
        f"{worst['rate'] / worst['floor_rate']:.0%} of what SQLite itself allows)."
    )
    medians = {r["size"]: statistics.median(r["adds"]) for r in ours}
    slowest = max(medians.values())
    fastest_kept = max(statistics.median(r["fast_adds"]) for r in ours)
    lines.append(
        f"* Durable add median < {ADD_TARGET_MS:g} ms at every size: slowest {ms(slowest)} ms "
        f"with fsync: {verdict(slowest * 1000 < ADD_TARGET_MS)}; {ms(fastest_kept)} ms with "
        f"`fsync=False` (kept through a crash of the process): "
        f"{verdict(fastest_kept * 1000 < ADD_TARGET_MS)}."
    )
    small, large = medians[min(medians)], medians[max(medians)]
    if len(medians) > 1:
        lines.append(
            f"* Add flat (median at {max(medians):,} ≤ {FLAT:g}× median at {min(medians):,}): "
            f"{large / small:.2f}×: {verdict(large <= FLAT * small)}."
        )
    million = [r for r in ours if r["size"] == 1_000_000]
    if not million:
        lines.append("* Search and peak RSS at 1,000,000: not measured in this run.")
        return lines
    top = million[0]
    median, p99 = statistics.median(top["searches"]), percentile(top["searches"], 99)
    lines.append(
        f"* Search at 1M median < {SEARCH_TARGET_MS[0]:g} ms: {ms(median)} ms: "
        f"{verdict(median * 1000 < SEARCH_TARGET_MS[0])}; p99 < {SEARCH_TARGET_MS[1]:g} ms: "
        f"{ms(p99)} ms: {verdict(p99 * 1000 < SEARCH_TARGET_MS[1])}."
    )
    lines.append(
        f"* Peak RSS of the searching process at 1M < {RSS_TARGET_MB:g} MB: "
        f"{top['peak_mb']:.0f} MB: {verdict(top['peak_mb'] < RSS_TARGET_MB)}."
    )
    return lines


def render(rows: list[dict[str, Any]], elapsed: float, load: tuple[float, ...]) -> str:
    """Return the Markdown report."""
    lines = [
        *header("SQLiteStore: import, durable add and search at scale", elapsed, load),
        f"* Samples: import in `add_many` batches of {BATCH:,} (median of {IMPORT_RUNS} imports "
        f"at each size), then {SMALL_BATCHES} more batches "
        f"of {SMALL_BATCH:,} after the searches; {ADDS} single adds after {ADD_WARMUP} warm-up "
        "with fsync through the store that imported, then as many without through a store "
        f"opened next on the same file ({JSON_ADDS} for the JSON stores); "
        f"{QUERIES} LoCoMo questions "
        f"after {QUERY_WARMUP} warm-up, top 10. SQLite searches run in a fresh child process "
        "that opens the database (page cache warm from the import); peak RSS is its `VmHWM`.",
        "* Data: `benchmarks/corpus.py`, LoCoMo dev turns among English-like filler; queries are "
        "LoCoMo dev questions (Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0).",
        "",
        f"| store | entries | import /s ({BATCH // 1000}k per call) | bare SQLite + FTS5 /s "
        f"({BATCH // 1000}k per call) | import /s "
        f"({SMALL_BATCH // 1000}k per call) | add median ms | add p99 ms | add median ms, "
        f"fsync=False | search median ms | search p99 ms | scoped search ({SCOPED // 1000}k "
        "memories) median / p99 ms | peak RSS MB | file MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        rate = f"{r['rate']:,.0f}" if "rate" in r else "–"
        small_rate = f"{r['small_rate']:,.0f}" if "small_rate" in r else "–"
        floor = f"{r['floor_rate']:,.0f}" if "floor_rate" in r else "–"
        fast = ms(statistics.median(r["fast_adds"])) if "fast_adds" in r else "–"
        rss = f"{r['peak_mb']:.0f}" if "peak_mb" in r else "–"
        size_mb = f"{r['file_mb']:.0f}" if "file_mb" in r else "–"
        scoped = (
            f"{ms(statistics.median(r['scoped']))} / {ms(percentile(r['scoped'], 99))}"
            if "scoped" in r
            else "–"
        )
        lines.append(
            f"| {r['store']} | {r['size']:,} | {rate} | {floor} | {small_rate} "
            f"| {ms(statistics.median(r['adds']))} | {ms(percentile(r['adds'], 99))} | {fast} "
            f"| {ms(statistics.median(r['searches']))} "
            f"| {ms(percentile(r['searches'], 99))} | {scoped} | {rss} | {size_mb} |"
        )
    lines += ["", "Targets (issue #5, Speed and scale):", "", *verdicts(rows)]
    return "\n".join(lines) + "\n"


def header(title: str, elapsed: float, load: tuple[float, ...]) -> list[str]:
    """Return the title, date, machine and data lines of a report."""
    return [
        f"# {title}",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took {elapsed:.0f} s.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}, {platform.system()} {platform.machine()}; load average "
        f"{load[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end (shared, noisy machine).",
    ]


def render_filters(rows: list[dict[str, Any]], elapsed: float, load: tuple[float, ...]) -> str:
    """Return the Markdown report of the filtered searches."""
    lines = [
        *header("SQLiteStore: filtered searches beside the unfiltered one", elapsed, load),
        f"* Samples: {QUERIES} LoCoMo questions after {QUERY_WARMUP} warm-up, top 10, each "
        "question searched once per row in turn, in a fresh child process that opens the "
        "database (page cache warm from the import). Each size has a database of its own: "
        "the corpus imported with `import_records`, one memory a second, plus two fields "
        "(`benchmarks/filtered_search.py`).",
        "* Data: `benchmarks/corpus.py`, LoCoMo dev turns among English-like filler; queries are "
        "LoCoMo dev questions (Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0).",
        "",
        *filtered_search.render(rows),
    ]
    return "\n".join(lines) + "\n"


def run_filters(sizes: list[int], questions: list[str], warmup: list[str]) -> list[dict[str, Any]]:
    """Time the filtered searches at each size; return their rows."""
    rows = []
    began = time.perf_counter()
    for size in sizes:
        rows.append(filtered_search.bench(size, questions, warmup, __file__))
        print(
            f"... filtered searches {size:,} done ({time.perf_counter() - began:.0f} s)",
            file=sys.stderr,
        )
    return rows


def write(path: Path, report: str) -> None:
    """Write ``report`` to ``path`` and print it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report, encoding="utf-8")
    print(report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", help="comma-separated sizes")
    parser.add_argument("--filters", action="store_true", help="only the filtered searches")
    parser.add_argument("--search-child", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--filters-child", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.search_child:
        search_child(args.search_child)
        return
    if args.filters_child:
        filtered_search.search_child(args.filters_child)
        return
    default = filtered_search.SIZES if args.filters else SIZES
    sizes = sorted(int(s) for s in args.sizes.split(",")) if args.sizes else list(default)
    began, load = time.perf_counter(), os.getloadavg()
    questions, warmup = query_sample(QUERIES, QUERY_WARMUP)
    if args.filters:
        filter_rows = run_filters(sizes, questions, warmup)
        write(FILTER_RESULTS, render_filters(filter_rows, time.perf_counter() - began, load))
        return
    rows = []
    for size in sizes:
        rows.append(bench_sqlite(size, questions, warmup))
        rows[-1]["floor_rate"] = floor_rate(size)
        print(
            f"... SQLiteStore {size:,} done ({time.perf_counter() - began:.0f} s)", file=sys.stderr
        )
        if size == 10_000:
            rows += bench_json_stores(size, questions, warmup)
            print(f"... JSON stores done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    write(RESULTS, render(rows, time.perf_counter() - began, load))
    filter_began = time.perf_counter()
    filter_rows = run_filters([s for s in sizes if s >= 100_000], questions, warmup)
    write(FILTER_RESULTS, render_filters(filter_rows, time.perf_counter() - filter_began, load))


if __name__ == "__main__":
    main()
