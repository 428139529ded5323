"""Benchmark: the one-time re-index of a store file written before stemmed search.

A database of schema 8 (the last before stemming) is built with ``sqlite3`` as that version
wrote it: the :mod:`corpus` memories with their dedup keys, the full-text index over them
(tokenizer ``unicode61 remove_diacritics 2``) and the index of metadata values. Then an
``SQLiteStore`` opens it and ``setup(progress=...)`` runs migration 9 (every memory indexed
again, stemmed); the time of that call is what a user waits once, the first time a new
agentrecall opens the file. The file's size before and after (WAL folded back) is reported too.

Data: :mod:`corpus` (LoCoMo dev turns among English-like filler; Maharana et al., ACL 2024,
arXiv 2402.17753, CC BY-NC 4.0).

Run: ``.venv/bin/python benchmarks/bench_reindex.py [--size 1000000]``. Writes
``benchmarks/results/sqlite-reindex.md`` and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from corpus import corpus

from agentrecall import SQLiteStore
from agentrecall._internal.ids import new_time_ordered_ids
from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.sqlite import Database
from agentrecall.stores.contentkeys import content_hash, content_key
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS

RESULTS = Path(__file__).resolve().parent / "results" / "sqlite-reindex.md"
UNSTEMMED = 8
"""The schema version before stemming."""
CHUNK = 50_000
CREATED = "2025-01-01T00:00:00.000Z"


def build_unstemmed(path: Path, size: int) -> None:
    """Write ``size`` corpus memories into ``path`` as schema 8 kept them."""
    functions = {"agentrecall_content_hash": content_hash, "agentrecall_content_key": content_key}
    database = Database(
        str(path), component=COMPONENT, migrations=MIGRATIONS[:UNSTEMMED], functions=functions
    )
    encode = compact_encoder()
    items = corpus(size)
    while chunk := list(itertools.islice(items, CHUNK)):
        rows = [
            (memory_id, content, content_key(content), encode(metadata))
            for memory_id, (content, metadata) in zip(
                new_time_ordered_ids(len(chunk)), chunk, strict=True
            )
        ]

        def write(db: sqlite3.Connection, rows: list[tuple[str, str, int, str]] = rows) -> None:
            last = db.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0]
            db.executemany(
                "INSERT INTO memories (id, scope, content, content_hash, metadata, created_at) "
                f"VALUES (?, 0, ?, ?, ?, '{CREATED}')",
                rows,
            )
            db.execute(
                "INSERT INTO memories_fts (rowid, content, scope) "
                "SELECT seq, content, scope FROM memories WHERE seq > ?",
                (last,),
            )
            db.execute(
                "INSERT OR IGNORE INTO memory_tags (key, value, seq) "
                "SELECT key, value, seq FROM memory_tag_entries WHERE seq > ? "
                "ORDER BY key, value, seq",
                (last,),
            )

        database.run(write, write=True, durable=False)
    database.close()


async def reindex(path: Path) -> tuple[float, int]:
    """Open ``path`` with the store and migrate it; return the seconds and the reports made."""
    reports: list[tuple[int, int]] = []
    store = SQLiteStore(path)
    try:
        started = time.perf_counter()
        await store.setup(progress=lambda done, total: reports.append((done, total)))
        elapsed = time.perf_counter() - started
        hits = await store.search("which seats does Caroline like?")
        if not hits:
            raise SystemExit("the migrated store finds nothing")
    finally:
        await store.aclose()
    return elapsed, len(reports)


def main() -> None:
    """Build, migrate, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=1_000_000, help="memories (default 1M)")
    size = parser.parse_args().size
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="agentrecall-reindex-") as directory:
        path = Path(directory) / "memory.db"
        started = time.perf_counter()
        build_unstemmed(path, size)
        built = time.perf_counter() - started
        before = path.stat().st_size
        seconds, reports = asyncio.run(reindex(path))
        after = path.stat().st_size
    lines = [
        "# SQLiteStore: the one-time re-index of a file written before stemmed search",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC.",
        f"* Machine: nproc {os.cpu_count()}, Python {sys.version.split()[0]}, SQLite "
        f"{sqlite3.sqlite_version}, {platform.system()} {platform.machine()}; load average "
        f"{load:.2f} at start, {os.getloadavg()[0]:.2f} at end (shared, noisy machine).",
        f"* Data: `benchmarks/corpus.py`, {size:,} memories, written as schema 8 in "
        f"{built:.0f} s (`benchmarks/bench_reindex.py`).",
        "",
        "| memories | re-index s | memories/s | progress reports | file MB before | after |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {size:,} | {seconds:.1f} | {size / seconds:,.0f} | {reports} | "
        f"{before / 2**20:.0f} | {after / 2**20:.0f} |",
        "",
    ]
    text = "\n".join(lines)
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
