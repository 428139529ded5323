"""Benchmark: the ``agentrecall`` command line as a person runs it, one process per command.

Three things, each a whole process started the way a shell starts it (the wall time from
start to exit, so Python's start-up, the imports and opening the store all count):

* ``agentrecall --db X search "..."`` on a store of :data:`SEARCH_SIZE` memories: the median
  and p90 of :data:`SEARCHES` LoCoMo questions after :data:`WARMUP` warm-up ones, next to the
  median start-up of a bare ``python -c pass`` (what no command can go below);
* ``agentrecall --db X export -o FILE`` and ``agentrecall --db NEW import FILE`` of stores of
  :data:`TRANSFER_SIZES` memories: memories per second, and each process's peak resident set
  size, which stays flat when both stream;
* each round trip is checked: the new store holds as many memories as the old.

Commands run with Python's bytecode cached (``PYTHONPYCACHEPREFIX`` in the run's temporary
directory, ``PYTHONDONTWRITEBYTECODE`` cleared), as an installed package runs; searches are
also timed without a cache, where every start compiles every module it imports. Peak RSS is
the command's own: each command is started by a small launcher process (this
script with ``--measure``) that reads its child's ``ru_maxrss``, since Linux carries a forking
parent's size into that figure and this script's own process is large.

Run: ``.venv/bin/python benchmarks/bench_cli.py [--sizes 100000 1000000]`` (``make bench``
runs it). Writes ``benchmarks/results/cli.md`` and prints the same text. Data:
``benchmarks/corpus.py`` (LoCoMo dev, CC BY-NC 4.0).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from corpus import corpus, query_sample
from timing import percentile

from agentrecall import SQLiteStore
from agentrecall._internal.sqlite import CACHE_KIB
from agentrecall.export_format import parse_line
from agentrecall.transfer import DEFAULT_BATCH
from agentrecall.types import MemoryRecord

RESULTS = Path(__file__).resolve().parent / "results" / "cli.md"
SEARCH_SIZE = 100_000
SEARCHES = 30
WARMUP = 3
TRANSFER_SIZES = (100_000, 300_000, 1_000_000)
LOAD_BATCH = 50_000
FLAT = 1.2
"""The most a peak RSS may grow from the second largest store to the largest."""


def agentrecall() -> list[str]:
    """The ``agentrecall`` command installed beside this Python, else ``python -m``."""
    script = Path(sys.executable).with_name("agentrecall")
    return [str(script)] if script.exists() else [sys.executable, "-m", "agentrecall"]


def environment(pycache: Path, *, cached: bool = True) -> dict[str, str]:
    """The commands' environment: bytecode cached in ``pycache``, as an installed package has it.

    With ``cached=False`` nothing is written there, so every start compiles every module,
    as it does where ``PYTHONDONTWRITEBYTECODE`` is set and no ``.pyc`` files exist.
    """
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not cached:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


ENV: dict[str, str] = dict(os.environ)
"""The environment :func:`measure` runs commands in; :func:`main` sets it."""


def measure(command: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``command`` from a fresh launcher; return its wall seconds and peak RSS in MB."""
    launched = subprocess.run(
        [sys.executable, __file__, "--measure", *command],
        capture_output=True,
        text=True,
        check=True,
        env=ENV if env is None else env,
    )
    result: dict[str, float] = json.loads(launched.stdout.splitlines()[-1])
    return result


def launcher(command: list[str]) -> None:
    """The ``--measure`` mode: run ``command`` and print what :func:`measure` returns."""
    began = time.perf_counter()
    child = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - began
    if child.returncode != 0:
        sys.exit(f"{command} failed ({child.returncode}): {child.stderr.decode()}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak}))


async def build(path: Path, size: int) -> None:
    """Fill a new store at ``path`` with ``size`` memories of the corpus."""
    async with SQLiteStore(path, fsync=False) as store:
        batch: list[tuple[str, dict[str, Any] | None]] = []
        for item in corpus(size):
            batch.append(item)
            if len(batch) == LOAD_BATCH:
                await store.add_many(batch)
                batch = []
        if batch:
            await store.add_many(batch)


def count(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM memories").fetchone()[0])


def search_times(path: Path, cold: Path) -> dict[str, float]:
    """Time searches with bytecode cached, then a few compiling every module (``cold``)."""
    questions, warmup = query_sample(SEARCHES, WARMUP)
    for question in warmup:
        measure([*agentrecall(), "--db", str(path), "search", question])
    command = [*agentrecall(), "--db", str(path), "search"]
    times = [measure([*command, q])["seconds"] for q in questions]
    uncached = environment(cold, cached=False)
    compiling = [measure([*command, q], uncached)["seconds"] for q in questions[:10]]
    bare = [measure([sys.executable, "-c", "pass"])["seconds"] for _ in range(10)]
    return {
        "median": percentile(times, 50),
        "p90": percentile(times, 90),
        "compiling": percentile(compiling, 50),
        "bare": percentile(bare, 50),
    }


async def store_import_seconds(file: Path, path: Path) -> float:
    """Time ``SQLiteStore.import_records`` of the export's memories, parsed beforehand.

    The same batches as the command's import, into a new file without fsync as its staged
    copy is: what the store itself takes, on the machine as loaded at that moment.
    """
    with file.open("rb") as lines:
        next(lines)
        parsed = (parse_line(line, "x", n) for n, line in enumerate(lines, 2))
        records = [item for item in parsed if isinstance(item, MemoryRecord)]
    async with SQLiteStore(path, fsync=False) as store:
        began = time.perf_counter()
        for start in range(0, len(records), DEFAULT_BATCH):
            await store.import_records(records[start : start + DEFAULT_BATCH])
        return time.perf_counter() - began


def transfer(directory: Path, size: int) -> dict[str, float]:
    source, copy, file = directory / f"s{size}.db", directory / f"c{size}.db", directory / "x"
    asyncio.run(build(source, size))
    exported = measure([*agentrecall(), "--db", str(source), "export", "-o", str(file)])
    imported = measure([*agentrecall(), "--db", str(copy), "import", str(file)])
    if count(copy) != size:
        raise AssertionError(f"the copy holds {count(copy)} memories, not {size}")
    reference = directory / f"r{size}.db"
    store_s = asyncio.run(store_import_seconds(file, reference))
    figures = {
        "store_s": store_s,
        "export_s": exported["seconds"],
        "export_rss": exported["peak_rss_mb"],
        "import_s": imported["seconds"],
        "import_rss": imported["peak_rss_mb"],
        "file_mb": file.stat().st_size / 2**20,
    }
    for path in (source, copy, file, reference):
        path.unlink()
    return figures


def report(
    search: dict[str, float], rows: dict[int, dict[str, float]], took: float, start_load: float
) -> str:
    load = os.getloadavg()
    lines = [
        "# The command line: search, export and import, each a whole process",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took {took:.0f} s.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}; load average {start_load:.2f} at start, {load[0]:.2f} at the "
        "end (shared, noisy machine: other processes share the cores).",
        "* `benchmarks/bench_cli.py`; data `benchmarks/corpus.py` (LoCoMo dev turns among "
        "filler, Maharana et al., ACL 2024, CC BY-NC 4.0). Wall time of each process from "
        "start to exit; peak RSS of the process itself.",
        "",
        f'## `agentrecall --db X search "..."` at {SEARCH_SIZE:,} memories',
        "",
        "| median ms | p90 ms | median ms, no bytecode cache | `python -c pass` median ms |",
        "|---:|---:|---:|---:|",
        f"| {search['median'] * 1000:.0f} | {search['p90'] * 1000:.0f} | "
        f"{search['compiling'] * 1000:.0f} | {search['bare'] * 1000:.0f} |",
        "",
        f"{SEARCHES} LoCoMo questions after {WARMUP} warm-up ones, top 10, bytecode cached (as "
        "an installed package has it). Without a cache (`PYTHONDONTWRITEBYTECODE` set and no "
        "`.pyc` files: median of 10) every start compiles every module it imports.",
        "",
        "## `export -o FILE`, then `import FILE` into a new store",
        "",
        "| memories | export s | export /s | export peak RSS MB | import s | import /s | "
        "import peak RSS MB | `import_records` alone /s | file MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, r in rows.items():
        lines.append(
            f"| {size:,} | {r['export_s']:.1f} | {size / r['export_s']:,.0f} | "
            f"{r['export_rss']:.0f} | {r['import_s']:.1f} | {size / r['import_s']:,.0f} | "
            f"{r['import_rss']:.0f} | {size / r['store_s']:,.0f} | {r['file_mb']:.0f} |"
        )
    lines += [
        "",
        "`import_records` alone: the store's own import of the same memories, parsed "
        "beforehand, in the same batches of "
        f"{DEFAULT_BATCH:,}, in this process right after the command: what the command's "
        "import can at most reach on the machine as loaded then.",
        "",
        "Targets:",
        "",
    ]
    verdict = "met" if search["median"] < 0.3 else "NOT met"
    lines.append(f"* CLI search median < 300 ms: {search['median'] * 1000:.0f} ms: {verdict}.")
    for size, r in rows.items():
        slowest = min(size / r["export_s"], size / r["import_s"])
        verdict = "met" if slowest >= 50_000 else "NOT met"
        lines.append(
            f"* export and import ≥ 50,000/s at {size:,}: slowest {slowest:,.0f}/s: {verdict}."
        )
    if len(rows) > 1:
        # The two largest stores: below about 100,000 memories the file is smaller than the
        # page cache, so a step up from there still fills the cache rather than growing.
        smaller, largest = sorted(rows)[-2:]
        for step in ("export", "import"):
            ratio = rows[largest][f"{step}_rss"] / rows[smaller][f"{step}_rss"]
            verdict = "flat" if ratio <= FLAT else "NOT flat"
            lines.append(
                f"* {step} peak RSS at {largest:,} / at {smaller:,} ({largest / smaller:.1f}× the "
                f"memories): {ratio:.2f}×: {verdict}."
            )
        lines += [
            "",
            f"Flat: at most {FLAT}× from the second largest store to the largest. A store "
            f"keeps up to {CACHE_KIB // 1024} MiB of its file in SQLite's page cache, which a "
            "store of 100,000 memories does not fill yet.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":
        launcher(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(TRANSFER_SIZES))
    args = parser.parse_args()
    began, load = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="agentrecall-bench-cli-") as temp:
        directory = Path(temp)
        ENV.clear()
        ENV.update(environment(directory / "pycache"))
        store = directory / "search.db"
        asyncio.run(build(store, SEARCH_SIZE))
        search = search_times(store, directory / "no-pycache")
        print(f"search: {search}", flush=True)
        store.unlink()
        rows = {}
        for size in args.sizes:
            rows[size] = transfer(directory, size)
            print(f"{size}: {rows[size]}", flush=True)
    text = report(search, rows, time.perf_counter() - began, load)
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
