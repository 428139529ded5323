"""Benchmark: ``search_memory`` through ``agentrecall mcp`` over stdio, beside in-process searches.

One SQLite store of :data:`SIZE` memories (the corpus of :mod:`corpus`, imported with
``add_many`` in batches of :data:`bench_sqlite.BATCH`), then :data:`QUERIES` LoCoMo questions
after :data:`QUERY_WARMUP` warm-up ones, top 10, timed one by one, in three ways:

* ``SQLiteStore.search`` in this process: what the store costs;
* the manager's ``search_memory`` tool in this process (``MemoryTool.invoke``: argument
  checks, the manager's search, the JSON text of the result);
* ``call_tool("search_memory", ...)`` with the MCP SDK's client to a server started as a
  subprocess, ``python -m agentrecall mcp --db FILE``: the tool plus the protocol's framing,
  validation and the trip through two pipes. The client's cache is off.

Each call is timed alone with ``time.perf_counter`` around one ``await``; the three paths take
turns question by question, so the machine's changing load falls on all three. The machine is
shared and noisy: read medians.

Data: :mod:`corpus` (LoCoMo dev turns spread among generated English-like filler; queries are
the LoCoMo dev questions). LoCoMo: Maharana, Lee, Tulyakov, Bansal, Barbieri, Fang, "Evaluating
Very Long-Term Conversational Memory of LLM Agents", ACL 2024, arXiv 2402.17753, CC BY-NC 4.0.

Run: ``.venv/bin/python benchmarks/bench_mcp.py``. Writes ``benchmarks/results/mcp.md`` and
prints the same table.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_sqlite import BATCH, bulk_import, header, write
from corpus import corpus, query_sample
from mcp import Client, StdioServerParameters
from timing import ms, percentile

from agentrecall import MemoryManager, SQLiteStore

RESULTS = Path(__file__).resolve().parent / "results" / "mcp.md"
SIZE = 100_000
QUERIES, QUERY_WARMUP = 200, 20
TOP = 10
TARGET_MS = 20.0  # median of search_memory over stdio at 100k memories

DIRECT = "`SQLiteStore.search`, in-process"
TOOL = "`search_memory` tool, in-process"
STDIO = "`search_memory` over stdio, SDK client to `agentrecall mcp`"

Search = Callable[[str], Awaitable[Any]]
Rows = dict[str, list[float]]


async def timed(paths: dict[str, Search], questions: list[str], warmup: list[str]) -> Rows:
    """Run the warm-up questions, then time each question alone on each path in turn (seconds).

    Taking turns question by question spreads the machine's changing load over every path.
    """
    for question in warmup:
        for search in paths.values():
            await search(question)
    timings: Rows = {name: [] for name in paths}
    for question in questions:
        for name, search in paths.items():
            began = time.perf_counter()
            await search(question)
            timings[name].append(time.perf_counter() - began)
    return timings


async def build(path: Path) -> None:
    async with SQLiteStore(path) as store:
        await store.setup()
        await bulk_import(store, corpus(SIZE), SIZE, BATCH)


async def measure(path: Path, questions: list[str], warmup: list[str]) -> Rows:
    command = [sys.executable, "-m", "agentrecall", "mcp", "--db", str(path)]
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    async with (
        SQLiteStore(path, writable=False) as store,
        Client(server, cache=None, read_timeout_seconds=60) as client,
    ):
        [tool] = MemoryManager([store], injection=False).tools

        async def direct(question: str) -> Any:
            return await store.search(question, {"max_search_results": TOP})

        async def through_tool(question: str) -> Any:
            result = await tool.invoke({"query": question, "max_search_results": TOP})
            assert not result.is_error, result.text
            return result

        async def over_stdio(question: str) -> Any:
            arguments = {"query": question, "max_search_results": TOP}
            result = await client.call_tool("search_memory", arguments)
            assert not result.is_error, result
            return result

        paths = {DIRECT: direct, TOOL: through_tool, STDIO: over_stdio}
        return await timed(paths, questions, warmup)


def render(rows: Rows, elapsed: float, load: tuple[float, ...]) -> str:
    lines = [
        *header("MCP server: search_memory over stdio at 100k memories", elapsed, load),
        f"* Samples: one SQLite store of {SIZE:,} memories (`add_many`, {BATCH:,} per call); "
        f"{QUERIES} LoCoMo questions after {QUERY_WARMUP} warm-up, top {TOP}, each timed alone, "
        "the three paths taking turns question by question. "
        "The MCP row is the SDK's client (`call_tool`, cache off) to `python -m agentrecall "
        "mcp --db FILE` in a subprocess, over its stdin and stdout.",
        "* Data: `benchmarks/corpus.py`, LoCoMo dev turns among English-like filler; queries are "
        "LoCoMo dev questions (Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0).",
        "",
        "| path | median ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|",
    ]
    for name, timings in rows.items():
        lines.append(
            f"| {name} | {ms(statistics.median(timings))} | {ms(percentile(timings, 99))} "
            f"| {ms(statistics.fmean(timings))} |"
        )
    median = statistics.median(rows[STDIO]) * 1000
    verdict = "met" if median < TARGET_MS else "NOT met"
    lines += [
        "",
        f"Target: `search_memory` over stdio at {SIZE:,} memories, median < {TARGET_MS:.0f} ms: "
        f"{median:.1f} ms: {verdict}.",
    ]
    return "\n".join(lines) + "\n"


async def run() -> Rows:
    questions, warmup = query_sample(QUERIES, QUERY_WARMUP)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as directory:
        path = Path(directory) / "memory.db"
        await build(path)
        print(f"... {SIZE:,} memories imported", file=sys.stderr)
        return await measure(path, questions, warmup)


def main() -> None:
    began, load = time.perf_counter(), os.getloadavg()
    rows = asyncio.run(run())
    write(RESULTS, render(rows, time.perf_counter() - began, load))


if __name__ == "__main__":
    main()
