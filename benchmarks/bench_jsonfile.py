"""Benchmark: agentrecall ``JsonFileStore`` against Strands' ``TestMemoryStore``, in one run.

What is measured, at 1,000 and 5,000 stored entries, for each store:

* ``add``: the time of one call adding a new, distinct memory (with metadata) to a store that
  already holds N entries and persists to its own real file;
* ``search``: the time of one call with a natural-language question, top 10.

How:

* Memories are the dialogue turns of the LoCoMo dev file (``data/locomo/locomo-dev.json``;
  Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0), written ``"<speaker>: <text>"``.
  To get past its 1,451 turns, later passes over the turns wrap each one in another phrasing
  (date, listener, session); duplicates are skipped, so every entry is distinct. Each carries
  the turn's dia_id, speaker, session and ISO date as metadata. Questions are the file's
  ``qa[].question`` strings, evenly spaced, with other questions as warm-up.
* The starting file is written directly in the shared format (``json.dumps(records, indent=2,
  ensure_ascii=False)``, UTF-8, distinct ``createdAt`` values) and every cell gets a fresh copy
  in its own temp directory, opened by a fresh store object.
* One ``asyncio.run`` per cell (store x operation x size); warm-up calls, then each call timed
  alone with ``time.perf_counter``. The machine is shared and noisy, so cells report the median
  and p95 (nearest rank); the speedup is reference median / ours median.
* Both stores must return the same hits (content and score) for every timed question; the
  result table says how many agreed.

Run: ``.venv/bin/python benchmarks/bench_jsonfile.py`` (or ``make bench``). Writes
``benchmarks/results/jsonfile.md`` and prints the same table.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from strands.vended_memory_stores import TestMemoryStore
from timing import ms, percentile, time_adds

from agentrecall import JsonFileStore

DATA = Path(__file__).resolve().parents[1] / "data" / "locomo" / "locomo-dev.json"
RESULTS = Path(__file__).resolve().parent / "results" / "jsonfile.md"
SIZES = (1_000, 5_000)
ADDS, ADD_WARMUP = 100, 3
QUERIES, QUERY_WARMUP = 200, 3
TARGETS = {"search": 10.0, "add": 2.0}  # minimum speedup at the largest size
# Phrasings for the passes after the first one; the first pass is "<speaker>: <text>".
PHRASINGS = (
    "On {date}, {speaker} said: {text}",
    "{speaker} told {listener}: {text}",
    "{speaker} (session {session}): {text}",
    "In a chat with {listener} on {date}, {speaker} wrote: {text}",
)


def load_locomo() -> tuple[list[dict[str, Any]], list[str]]:
    """Return the turns in chronological order, each with its context, and all questions."""
    turns: list[dict[str, Any]] = []
    questions: list[str] = []
    for conversation in json.loads(DATA.read_text(encoding="utf-8")):
        talk = conversation["conversation"]
        speakers = (talk["speaker_a"], talk["speaker_b"])
        session = 1
        while f"session_{session}" in talk:
            when = dt.datetime.strptime(
                talk[f"session_{session}_date_time"], "%I:%M %p on %d %B, %Y"
            )
            for turn in talk[f"session_{session}"]:
                listener = speakers[1] if turn["speaker"] == speakers[0] else speakers[0]
                turns.append({**turn, "listener": listener, "session": session, "when": when})
            session += 1
        questions += [item["question"] for item in conversation["qa"]]
    return turns, questions


def memories(turns: list[dict[str, Any]], count: int) -> list[tuple[str, dict[str, Any]]]:
    """Return ``count`` distinct ``(content, metadata)`` pairs built from the turns."""
    seen: set[str] = set()
    out: list[tuple[str, dict[str, Any]]] = []
    for round_ in range(count):  # far more rounds than ever needed
        for turn in turns:
            fields = {
                "speaker": turn["speaker"],
                "listener": turn["listener"],
                "session": turn["session"],
                "date": turn["when"].strftime("%d %B %Y"),
                "text": turn["text"],
            }
            if round_ == 0:
                content = f"{turn['speaker']}: {turn['text']}"
            else:
                content = PHRASINGS[(round_ - 1) % len(PHRASINGS)].format(**fields)
                if round_ > len(PHRASINGS):
                    content += f" (retold {round_})"
            if content.strip() in seen:
                continue
            seen.add(content.strip())
            metadata = {
                "dia_id": turn["dia_id"],
                "speaker": turn["speaker"],
                "session": turn["session"],
                "date": turn["when"].isoformat(),
            }
            out.append((content, metadata))
            if len(out) == count:
                return out
    raise AssertionError("not enough distinct memories")


def write_file(path: Path, items: list[tuple[str, dict[str, Any]]]) -> None:
    """Write ``items`` as a memory file in the shared format, one millisecond apart."""
    rng = random.Random(7)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    records = []
    for index, (content, metadata) in enumerate(items):
        stamp = start + dt.timedelta(milliseconds=index)
        records.append(
            {
                "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "content": content,
                "createdAt": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{index % 1000:03d}Z",
                "metadata": metadata,
            }
        )
    path.write_bytes(json.dumps(records, indent=2, ensure_ascii=False).encode("utf-8"))


def open_store(kind: str, source: Path, workdir: Path) -> Any:
    """Copy ``source`` into a fresh directory and open a new store of ``kind`` on the copy."""
    directory = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=workdir))
    target = directory / "memory.json"
    shutil.copyfile(source, target)
    store_class = JsonFileStore if kind == "ours" else TestMemoryStore
    return store_class(name="bench", path=str(target))


async def time_searches(
    store: Any, warmup: list[str], questions: list[str]
) -> tuple[list[float], list[list[tuple[str, Any]]]]:
    """Run the warm-up questions, then time each question; return timings and hits."""
    options = {"max_search_results": 10}
    for question in warmup:
        await store.search(question, options)
    timings, hits = [], []
    for question in questions:
        start = time.perf_counter()
        found = await store.search(question, options)
        timings.append(time.perf_counter() - start)
        hits.append([(entry.content, entry.metadata["_relevanceScore"]) for entry in found])
    return timings, hits


def main() -> None:
    began = time.perf_counter()
    turns, all_questions = load_locomo()
    pool = memories(turns, max(SIZES) + ADD_WARMUP + ADDS)
    fresh = pool[max(SIZES) :]  # never in a starting file: each add stores a new memory
    step = len(all_questions) / QUERIES
    chosen = {round(i * step) for i in range(QUERIES)}
    questions = [all_questions[i] for i in sorted(chosen)]
    warmup = [q for i, q in enumerate(all_questions) if i not in chosen][:QUERY_WARMUP]

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-jsonfile-") as tmp:
        workdir = Path(tmp)
        for size in SIZES:
            source = workdir / f"start-{size}.json"
            write_file(source, pool[:size])
            cell: dict[tuple[str, str], list[float]] = {}
            hits: dict[str, list[list[tuple[str, Any]]]] = {}
            for kind in ("reference", "ours"):
                store = open_store(kind, source, workdir)
                cell[kind, "add"] = asyncio.run(time_adds(store, fresh, ADD_WARMUP))
            for kind in ("reference", "ours"):
                store = open_store(kind, source, workdir)
                cell[kind, "search"], hits[kind] = asyncio.run(
                    time_searches(store, warmup, questions)
                )
            agree = sum(a == b for a, b in zip(hits["ours"], hits["reference"], strict=True))
            for op in ("add", "search"):
                ours, ref = cell["ours", op], cell["reference", op]
                speedup = statistics.median(ref) / statistics.median(ours)
                rows.append((size, op, ours, ref, speedup, agree if op == "search" else None))
            print(f"... {size} entries done ({time.perf_counter() - began:.0f} s)", file=sys.stderr)

    report = render(rows, time.perf_counter() - began)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")
    print(report)


def render(rows: list[tuple[Any, ...]], elapsed: float) -> str:
    """Return the Markdown report."""
    lines = [
        "# JsonFileStore vs Strands TestMemoryStore",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took {elapsed:.0f} s.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.system()} {platform.machine()}; "
        "shared and noisy, so medians.",
        f"* Samples per cell: {ADDS} adds after {ADD_WARMUP} warm-up adds; {QUERIES} LoCoMo "
        f"questions after {QUERY_WARMUP} warm-up questions, top 10.",
        "* Data: LoCoMo dev turns and questions (Maharana et al., ACL 2024, arXiv 2402.17753, "
        "CC BY-NC 4.0).",
        "* Both stores persist to their own real file; ours also fsyncs the file and its "
        "directory and takes a cross-process lock on every add, the reference does neither.",
        "",
        "| entries | operation | ours median ms | ours p95 ms | reference median ms "
        "| reference p95 ms | speedup (ref/ours) | same hits |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size, op, ours, ref, speedup, agree in rows:
        same = "–" if agree is None else f"{agree}/{QUERIES}"
        lines.append(
            f"| {size:,} | {op} | {ms(statistics.median(ours))} | {ms(percentile(ours, 95))} "
            f"| {ms(statistics.median(ref))} | {ms(percentile(ref, 95))} "
            f"| {speedup:.1f}x | {same} |"
        )
    lines += ["", f"Targets at {max(SIZES):,} entries:", ""]
    for size, op, _ours, _ref, speedup, _agree in rows:
        if size == max(SIZES):
            goal = TARGETS[op]
            verdict = "met" if speedup >= goal else "NOT met"
            lines.append(f"* {op}: at least {goal:g}x faster; measured {speedup:.1f}x: {verdict}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
