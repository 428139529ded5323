"""Benchmark: what the memory manager adds to an agent's model call, ours and the reference's.

Measured in one run, with a JSON memory file of 5,000 memories (the corpus of
``benchmarks/corpus.py``: LoCoMo dev turns among English-like filler; LoCoMo is Maharana et
al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0):

* ``inject``: ours folds up to 5 recalled memories into the latest user message before a model
  call. The reference does the same inside a Strands agent; its cost is the manager search it
  runs for that (``MemoryManager.search`` with 5 per store), timed here on the same file.
  Questions are LoCoMo questions; median and p95 of 200 calls after 20 warm-up calls.
* ``add_memory`` with 10 entries: the model's tool call, through the tool object (ours) or the
  manager's add for each entry as the reference's tool does; time per call and file writes
  per call (counted by wrapping each storage's write method).

Run: ``.venv/bin/python benchmarks/bench_manager.py``. Writes ``benchmarks/results/manager.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from corpus import corpus, query_sample
from strands.memory import MemoryManager as ReferenceManager
from strands.storage import local_file_storage
from strands.vended_memory_stores import TestMemoryStore
from timing import percentile

from agentrecall import JsonFileStore, MemoryManager
from agentrecall.storage.local import LocalFileStorage

SIZE = 5_000
RESULTS = Path(__file__).resolve().parent / "results" / "manager.md"
ADD_CALLS = 30


class WriteCounter:
    """Counts calls to a storage class's write method while installed."""

    def __init__(self, owner: type, name: str) -> None:
        self.owner, self.name, self.count = owner, name, 0
        self.original = getattr(owner, name)

    def __enter__(self) -> WriteCounter:
        original = self.original

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(*args, **kwargs)

        setattr(self.owner, self.name, counted)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(self.owner, self.name, self.original)


async def timed(calls: list[Callable[[], Awaitable[Any]]], warmup: int) -> list[float]:
    for call in calls[:warmup]:
        await call()
    samples = []
    for call in calls[warmup:]:
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def write_file(path: Path) -> None:
    records = [
        {
            "id": f"m{i}",
            "content": c,
            "createdAt": f"2026-01-01T00:00:{i // 1000:02d}.{i % 1000:03d}Z",
            "metadata": m,
        }
        for i, (c, m) in enumerate(corpus(SIZE))
    ]
    path.write_bytes(json.dumps(records, indent=2, ensure_ascii=False).encode("utf-8"))


async def inject_cells(ours_path: Path, ref_path: Path) -> list[tuple[str, list[float]]]:
    timed_questions, warm = query_sample(200, 20)
    questions = warm + timed_questions
    ours = MemoryManager([JsonFileStore(name="notes", path=ours_path)])
    reference = ReferenceManager([TestMemoryStore(name="notes", path=str(ref_path))])

    def our_call(q: str) -> Callable[[], Awaitable[Any]]:
        return lambda: ours.inject([{"role": "user", "content": q}])

    def ref_call(q: str) -> Callable[[], Awaitable[Any]]:
        return lambda: reference.search(q, {"max_search_results": 5})

    return [
        ("inject (ours)", await timed([our_call(q) for q in questions], 20)),
        (
            "search before a model call (reference)",
            await timed([ref_call(q) for q in questions], 20),
        ),
    ]


async def add_cells(ours_path: Path, ref_path: Path) -> list[tuple[str, list[float], float]]:
    ours = MemoryManager([JsonFileStore(name="notes", path=ours_path)], add_tool=True)
    add_memory = next(tool for tool in ours.tools if tool.name == "add_memory")
    reference = ReferenceManager(
        [TestMemoryStore(name="notes", path=str(ref_path))], add_tool_config=True
    )

    def batch(n: int, who: str) -> list[str]:
        return [
            f"{who} fact {n}-{k}: the user mentioned detail number {k} in call {n}"
            for k in range(10)
        ]

    with WriteCounter(LocalFileStorage, "write_blocking") as counter:
        ours_samples = await timed(
            [lambda n=n: add_memory(entries=batch(n, "ours")) for n in range(ADD_CALLS + 2)], 2
        )
    ours_writes = counter.count / (ADD_CALLS + 2)

    async def reference_tool_call(n: int) -> None:
        await asyncio.gather(*(reference.add(e) for e in batch(n, "reference")))

    with WriteCounter(local_file_storage.LocalFileStorage, "write") as counter:
        ref_samples = await timed(
            [lambda n=n: reference_tool_call(n) for n in range(ADD_CALLS + 2)], 2
        )
    ref_writes = counter.count / (ADD_CALLS + 2)
    return [
        ("add_memory, 10 entries (ours)", ours_samples, ours_writes),
        ("add_memory, 10 entries (reference)", ref_samples, ref_writes),
    ]


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.json"
        write_file(base)
        paths = {name: Path(tmp) / f"{name}.json" for name in ("oi", "ri", "oa", "ra")}
        for path in paths.values():
            shutil.copy(base, path)
        injects = asyncio.run(inject_cells(paths["oi"], paths["ri"]))
        adds = asyncio.run(add_cells(paths["oa"], paths["ra"]))
    lines = [
        "# MemoryManager overhead: ours and the reference (Strands Agents 1.62.0), one run",
        "",
        f"* Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; run took "
        f"{time.perf_counter() - started:.0f} s.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()}; shared and "
        "noisy, so medians.",
        f"* A JSON memory file of {SIZE:,} memories (LoCoMo dev turns among English-like filler; "
        "LoCoMo: Maharana et al., ACL 2024, CC BY-NC 4.0), a fresh copy per store.",
        "* Targets: `inject` median under 2 ms; `add_memory` with 10 entries one file write.",
        "",
        "| operation | median ms | p95 ms | file writes per call |",
        "|---|---:|---:|---:|",
    ]
    cells = [(name, samples, "–") for name, samples in injects]
    cells += [(name, samples, f"{writes:g}") for name, samples, writes in adds]
    for name, samples, writes_cell in cells:
        median, p95 = statistics.median(samples), percentile(samples, 95)
        lines.append(f"| {name} | {median:.2f} | {p95:.2f} | {writes_cell} |")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
