"""The cost of facts that change: search with retired memories, against the code before them.

Two SQLite stores of the same ``size`` corpus memories (``corpus.py``, LoCoMo dev, CC BY-NC
4.0), each filled by ``import_records`` in calls of 50,000 with the same ids and times
(``created_at`` 10 ms apart):

* **this checkout**: every 10th memory retired by the next one (``invalidated_at`` its
  ``created_at``, ``superseded_by`` its id), so 10% of the memories are retired;
* **baseline**: the ``src`` of another git ref (by default ``349120e``, the last commit
  before facts could change), taken with ``git archive`` into a temporary directory and put
  first on ``PYTHONPATH``; the same records with every memory current (that code knows no
  retirement).

Each store is then searched in fresh processes with 200 LoCoMo questions (20 other questions
first, untimed), 10 hits each: the baseline's default search, this checkout's default search
(retired memories left out), and this checkout's ``as_of`` search at the moment 90% of the
memories had been added (so memories retired after it count as held). The three take turns,
``ROUNDS`` rounds, so all see the same machine; each figure is the median (and p99) of all
its rounds' timings.

Also a module the benchmark's children run: ``--build PATH SIZE [--plain]`` fills a store,
``--search PATH [--as-of T]`` times the questions read from stdin and prints the timings.
Both import only what the baseline's code has too.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from io import BytesIO
from pathlib import Path
from typing import Any

from corpus import corpus, query_sample
from timing import percentile

HERE = Path(__file__).resolve().parent
BATCH = 50_000
RETIRED_EVERY = 10
STEP = timedelta(milliseconds=10)
START = datetime(2024, 1, 1, tzinfo=timezone.utc)
AS_OF_SHARE = 0.9
ROUNDS = 5
QUESTIONS, WARMUP = 200, 20
OPTIONS = {"max_search_results": 10}


def stamp(number: int) -> str:
    """The ``created_at`` of memory ``number``, in the stored shape."""
    moment = START + number * STEP
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def as_of_moment(size: int) -> str:
    """Halfway between two memories, when 90% of ``size`` had been added."""
    moment = START + int(size * AS_OF_SHARE) * STEP + STEP / 2
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def records(size: int, *, plain: bool) -> Iterator[dict[str, Any]]:
    """The fields of each memory; every 10th retired by the next unless ``plain``."""
    for number, (content, metadata) in enumerate(corpus(size)):
        fields: dict[str, Any] = {
            "id": f"m{number:07d}",
            "content": content,
            "created_at": stamp(number),
            "metadata": metadata,
        }
        if not plain and number % RETIRED_EVERY == 0 and number + 1 < size:
            fields["invalidated_at"] = stamp(number + 1)
            fields["superseded_by"] = f"m{number + 1:07d}"
        yield fields


async def _build(path: str, size: int, plain: bool) -> None:
    from agentrecall import SQLiteStore
    from agentrecall.types import MemoryRecord

    store = SQLiteStore(path)
    try:
        await store.setup()
        fields = records(size, plain=plain)
        while batch := list(itertools.islice(fields, BATCH)):
            await store.import_records([MemoryRecord(**f) for f in batch])
    finally:
        await store.aclose()


async def _search(path: str, as_of: str | None) -> list[float]:
    from agentrecall import SQLiteStore

    job = json.load(sys.stdin)
    store = SQLiteStore(path)
    moment = {} if as_of is None else {"as_of": as_of}
    try:
        for question in job["warmup"]:
            await store.search(question, OPTIONS, **moment)
        timings = []
        for question in job["questions"]:
            began = time.perf_counter()
            await store.search(question, OPTIONS, **moment)
            timings.append(time.perf_counter() - began)
        return timings
    finally:
        await store.aclose()


def baseline_source(ref: str, directory: Path) -> str:
    """Extract the ``src`` directory of git ``ref`` of this repository; return its path.

    Raises:
        SystemExit: ``ref`` is not a ref of this repository (the message names it).
    """
    archive = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", "--format=tar", ref, "src"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        message = archive.stderr.decode(errors="replace").strip()
        raise SystemExit(f"--baseline {ref!r}: not a git ref of this repository ({message})")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        # The "data" filter where this Python has it (3.10.12+): git's own archive, so safe.
        if hasattr(tarfile, "data_filter"):
            tar.extractall(directory, filter="data")
        else:
            tar.extractall(directory)
    return str(directory / "src")


def _child(arguments: list[str], source: str | None, stdin: str | None = None) -> str:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([source, str(HERE)])
    done = subprocess.run(
        [sys.executable, str(Path(__file__)), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"changes_latency.py {' '.join(arguments)} failed:\n{done.stderr}")
    return done.stdout


def measure(size: int, baseline: str, rounds: int = ROUNDS) -> dict[str, Any]:
    """Build both stores of ``size`` memories and time the three searches; return figures."""
    questions, warmup = query_sample(QUESTIONS, WARMUP)
    job = json.dumps({"questions": questions, "warmup": warmup})
    with tempfile.TemporaryDirectory(prefix="bench-changes-") as directory:
        source = baseline_source(baseline, Path(directory) / "baseline")
        new, old = os.path.join(directory, "new.db"), os.path.join(directory, "old.db")
        began = time.perf_counter()
        _child(["--build", new, str(size)], None)
        built_new = time.perf_counter() - began
        _child(["--build", old, str(size), "--plain"], source)
        moment = as_of_moment(size)
        cases = {
            "baseline": (["--search", old], source),
            "default": (["--search", new], None),
            "as_of": (["--search", new, "--as-of", moment], None),
        }
        timings: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, (arguments, where) in cases.items():
                timings[name] += json.loads(_child(arguments, where, job))
    figures: dict[str, Any] = {
        "size": size,
        "retired_share": 1 / RETIRED_EVERY,
        "baseline_ref": baseline,
        "as_of_moment": moment,
        "rounds": rounds,
        "questions": len(questions),
        "build_seconds": built_new,
    }
    for name, values in timings.items():
        figures[name] = {
            "median_ms": statistics.median(values) * 1000,
            "p99_ms": percentile(values, 99) * 1000,
        }
    base = figures["baseline"]["median_ms"]
    figures["default_ratio"] = figures["default"]["median_ms"] / base
    figures["as_of_ratio"] = figures["as_of"]["median_ms"] / base
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--build", nargs=2, metavar=("PATH", "SIZE"))
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--search", metavar="PATH")
    parser.add_argument("--as-of")
    args = parser.parse_args()
    if args.build:
        asyncio.run(_build(args.build[0], int(args.build[1]), args.plain))
    elif args.search:
        json.dump(asyncio.run(_search(args.search, args.as_of)), sys.stdout)
    else:
        parser.error("give --build or --search (bench_changes.py runs this module)")


if __name__ == "__main__":
    main()
