"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """Return the nearest-rank ``q`` percentile (``q`` from 0 to 100) of ``values``."""
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)) - 1, 0)]


def ms(seconds: float) -> str:
    """Format seconds as milliseconds: three decimals below 10 ms, one above."""
    return f"{seconds * 1000:.3f}" if seconds < 0.01 else f"{seconds * 1000:.1f}"


async def time_adds(
    store: Any, items: Sequence[tuple[str, dict[str, Any] | None]], warmup: int
) -> list[float]:
    """Add each item alone; return the timings (seconds) of all but the first ``warmup``."""
    timings = []
    for content, metadata in items:
        began = time.perf_counter()
        await store.add(content, metadata)
        timings.append(time.perf_counter() - began)
    return timings[warmup:]


async def time_searches(
    store: Any, questions: Sequence[str], warmup: Sequence[str], options: Any = None
) -> list[float]:
    """Search each warm-up question, then time each question alone; return the timings (s)."""
    for question in warmup:
        await store.search(question, options)
    timings = []
    for question in questions:
        began = time.perf_counter()
        await store.search(question, options)
        timings.append(time.perf_counter() - began)
    return timings


def load() -> str:
    """The machine's load average over the last minute, to print beside figures."""
    return f"{os.getloadavg()[0]:.1f}"


def peak_rss_mb() -> float:
    """Return this process's own peak resident set size in MB (``VmHWM``).

    Not ``ru_maxrss``: Linux carries that across ``exec``, so a child started by a large
    parent reports the parent's size (the previous figures of this benchmark did).
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def search_in_child(script: str, path: str, questions: list[str], warmup: list[str]) -> Any:
    """Run ``script --search-child path`` in a fresh process and return the JSON it prints.

    A fresh process opens the database as a new searcher would; the questions, and the
    warm-up questions searched before timing, reach it on stdin.
    """
    child = subprocess.run(
        [sys.executable, script, "--search-child", path],
        input=json.dumps({"questions": questions, "warmup": warmup}),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(child.stdout)
