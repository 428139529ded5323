"""Benchmark: how fast SQLite itself imports the corpus, piece by piece, without agentrecall.

``bench_sqlite.py`` times ``SQLiteStore``'s bulk import. This script times bare ``sqlite3``
(WAL, ``synchronous=FULL``, the store's 64 MiB page cache) writing the same corpus in the same
calls of :data:`BATCH`, with every row prepared before the clock starts, into:

* ``table + FTS5``: a table of text and metadata and an FTS5 index over the text (the store's
  tokenizer): the least a keyword store needs;
* ``table + unique ids + dedup``: the table with the two unique indexes the store's contract
  needs (lookup by id; one memory per stripped content and scope), no keyword index;
* ``table + unique ids + dedup + FTS5``: both, as ``SQLiteStore`` stores a memory;
* ``table + unique ids + dedup, FTS5 in a second file written in parallel``: the table with
  both unique indexes in one file and a contentless FTS5 index over its text in a second file,
  which a second thread fills from chunks of :data:`CHUNK` rows as the first inserts them. The
  FTS5 work and the row inserts hold different files' write locks, so they can run at the same
  time (and, as SQLite releases Python's lock while it works, on two cores);
* ``table + unique ids + dedup + tantivy`` (when the ``tantivy`` package is installed): the
  keyword index in tantivy instead of FTS5, one ``add_document`` per memory through its Python
  binding and one commit per call, timed with the SQLite writes (rows for tantivy are built in
  the timed loop, as a store would have to).

Then the question of an import into a file nobody reads until it is published: are indexes
cheaper created once at the end (a sort) than kept up per row? :func:`deferred_rate` writes the
table with both unique indexes, FTS5 with its merges held during each call's feed (as
``SQLiteStore`` feeds it) and a ``WITHOUT ROWID`` table of each row's metadata values keyed as
the store's ``memory_tags``, with the indexes of :data:`DEFERRED_CASES` left out and created at
the end instead, in one more transaction counted in the rate; the CPU seconds of the process
are given too, since wall times on a shared machine say more about its other processes.

Then, on three databases holding the corpus with both unique indexes, the median of
:data:`ADDS` single-row durable commits (``BEGIN IMMEDIATE``, insert, ``COMMIT`` with fsync),
taking turns: with the row also indexed by FTS5 in the same commit; with the row's number
listed in a one-column table for later indexing (what ``SQLiteStore``'s add commits); and the
row alone. What one durable add costs in SQLite itself.

So the store's figures can be read against what the storage engine allows on the same machine.

Run: ``.venv/bin/python benchmarks/bench_import_floor.py [--size 1000000]``. Writes
``benchmarks/results/import-floor.md`` and prints the same table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import queue
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from corpus import corpus

from agentrecall._internal.ids import new_time_ordered_ids
from agentrecall._internal.sqlite import CACHE_KIB
from agentrecall.stores.contentkeys import content_key

RESULTS = Path(__file__).resolve().parent / "results" / "import-floor.md"
BATCH = 50_000
ADDS = 300
CHUNK = 5_000
TOKENIZER = "porter unicode61 remove_diacritics 2"

Row = tuple[str, str, int, str]


def prepared_rows(size: int) -> list[Row]:
    """Return ``(id, content, dedup key, metadata JSON)`` for the corpus."""
    items = list(corpus(size))
    return [
        (
            memory_id,
            content,
            content_key(content),
            json.dumps(metadata, ensure_ascii=False),
        )
        for memory_id, (content, metadata) in zip(
            new_time_ordered_ids(len(items)), items, strict=True
        )
    ]


def open_file(path: str, *, any_thread: bool = False) -> sqlite3.Connection:
    """Open ``path`` as the store opens its file: WAL, ``synchronous=FULL``, its page cache."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=not any_thread)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    return db


def connect(path: str, unique: bool, fts: bool) -> sqlite3.Connection:
    """Open a fresh database with the table, the list of rows waiting for the index, and the
    unique indexes and FTS5 if asked."""
    db = open_file(path)
    db.execute(
        "CREATE TABLE notes (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, scope INTEGER NOT NULL "
        "DEFAULT 0, content TEXT NOT NULL, dedup_key BLOB NOT NULL, metadata TEXT)"
    )
    db.execute("CREATE TABLE waiting (seq INTEGER PRIMARY KEY)")
    if unique:
        db.execute("CREATE UNIQUE INDEX notes_id ON notes (id)")
        db.execute("CREATE UNIQUE INDEX notes_dedup ON notes (scope, dedup_key)")
    if fts:
        # As the store's: each memory's scope number indexed beside its text, no token counts.
        db.execute(
            "CREATE VIRTUAL TABLE notes_fts USING fts5 (content, scope, content='notes', "
            f"content_rowid='seq', tokenize='{TOKENIZER}', columnsize=0)"
        )
        db.execute("INSERT INTO notes_fts (notes_fts, rank) VALUES ('automerge', 8)")
    return db


def insert_batch(db: sqlite3.Connection, rows: list[Row], unique: bool) -> int:
    """Insert ``rows`` (skipping taken ids and duplicates when ``unique``); return the last
    row id before them, above which the new rows are."""
    last = int(db.execute("SELECT max(seq) FROM notes").fetchone()[0] or 0)
    db.executemany(
        "INSERT INTO notes (id, content, dedup_key, metadata) VALUES (?, ?, ?, ?)"
        + (" ON CONFLICT DO NOTHING" if unique else ""),
        rows,
    )
    return last


def sqlite_rate(rows: list[Row], unique: bool, fts: bool) -> float:
    """Entries per second writing ``rows`` in calls of :data:`BATCH`."""
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        db = connect(os.path.join(tmp, "floor.db"), unique, fts)
        try:
            began = time.perf_counter()
            for start in range(0, len(rows), BATCH):
                db.execute("BEGIN IMMEDIATE")
                last = insert_batch(db, rows[start : start + BATCH], unique)
                if fts:
                    db.execute(
                        "INSERT INTO notes_fts (rowid, content, scope) "
                        "SELECT seq, content, scope FROM notes WHERE seq > ?",
                        (last,),
                    )
                db.execute("COMMIT")
            return len(rows) / (time.perf_counter() - began)
        finally:
            db.close()


INDEXES = {
    "ids": "CREATE UNIQUE INDEX notes_id ON notes (id)",
    "dedup": "CREATE UNIQUE INDEX notes_dedup ON notes (scope, dedup_key)",
}
"""The unique indexes of ``table + unique ids + dedup``, by name."""

TAGS = (
    "INSERT OR IGNORE INTO notes_tags (key, value, seq) SELECT j.key, j.atom, n.seq "
    "FROM notes AS n, json_each(n.metadata) AS j WHERE n.seq > ? ORDER BY 1, 2, 3"
)
"""Each row's top-level metadata values into ``notes_tags``, as the store lists them."""


def hold_merges(db: sqlite3.Connection, held: bool) -> None:
    """Hold FTS5's merges off (as ``SQLiteStore``'s bulk feeds do), or put them back."""
    automerge, crisis = (0, 64) if held else (8, 16)
    db.execute(f"INSERT INTO notes_fts (notes_fts, rank) VALUES ('automerge', {automerge})")
    db.execute(f"INSERT INTO notes_fts (notes_fts, rank) VALUES ('crisismerge', {crisis})")


def deferred_rate(rows: list[Row], late: tuple[str, ...], fts: str) -> tuple[float, float, float]:
    """Write ``rows`` into the table with both unique indexes and FTS5, the indexes named in
    ``late`` (of :data:`INDEXES`) created once at the end instead of from the start.

    ``fts`` says how FTS5 is fed: ``"incremental"`` per call with its merges held, as the
    store's bulk feeds hold them, or ``"rebuild"`` in one statement at the end. The rows'
    metadata values go to a table of tags keyed by (key, value, row), as the store's
    ``memory_tags``: per call, or in one sorted insert at the end when ``late`` names
    ``"tags"``. Returns
    (entries /s, CPU seconds of this process, seconds of the final step).
    """
    with tempfile.TemporaryDirectory(prefix="bench-floor-deferred-") as tmp:
        db = connect(os.path.join(tmp, "floor.db"), unique=False, fts=True)
        db.execute(
            "CREATE TABLE notes_tags (key TEXT NOT NULL, value, seq INTEGER NOT NULL, "
            "PRIMARY KEY (key, value, seq)) WITHOUT ROWID"
        )
        for name, create in INDEXES.items():
            if name not in late:
                db.execute(create)
        try:
            began, cpu = time.perf_counter(), time.process_time()
            for start in range(0, len(rows), BATCH):
                db.execute("BEGIN IMMEDIATE")
                last = insert_batch(db, rows[start : start + BATCH], unique=not late)
                if "tags" not in late:
                    db.execute(TAGS, (last,))
                if fts == "incremental":
                    hold_merges(db, True)
                    db.execute(
                        "INSERT INTO notes_fts (rowid, content, scope) "
                        "SELECT seq, content, scope FROM notes WHERE seq > ?",
                        (last,),
                    )
                    hold_merges(db, False)
                db.execute("COMMIT")
            ending = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            for name in late:
                db.execute(TAGS, (0,)) if name == "tags" else db.execute(INDEXES[name])
            if fts == "rebuild":
                db.execute("INSERT INTO notes_fts (notes_fts) VALUES ('rebuild')")
            db.execute("COMMIT")
            done = time.perf_counter()
            return len(rows) / (done - began), time.process_time() - cpu, done - ending
        finally:
            db.close()


def connect_index(path: str) -> sqlite3.Connection:
    """Open a fresh database holding only a contentless FTS5 index, usable from any thread."""
    # Opened and committed by the main thread but written by the worker, one at a time.
    db = open_file(path, any_thread=True)
    # Contentless: the text lives in the main file, so it is not stored twice.
    db.execute(
        f"CREATE VIRTUAL TABLE notes_fts USING fts5 (content, content='', tokenize='{TOKENIZER}')"
    )
    return db


Chunks = queue.Queue[list[tuple[int, str]] | None]


def index_chunks(index: sqlite3.Connection, chunks: Chunks, failures: list[Exception]) -> None:
    """Index each chunk of ``(rowid, content)`` pairs from ``chunks`` until ``None`` comes;
    keep an error in ``failures`` for the main thread to raise."""
    try:
        while (chunk := chunks.get()) is not None:
            index.executemany("INSERT INTO notes_fts (rowid, content) VALUES (?, ?)", chunk)
    except Exception as error:
        failures.append(error)


def parallel_fts_rate(rows: list[Row]) -> float:
    """Entries per second for the unique-indexed table plus an FTS5 index in a second file,
    written by a second thread while the rows go into the first."""
    with tempfile.TemporaryDirectory(prefix="bench-floor-parallel-") as tmp:
        # Only the main thread touches the table's connection, so it keeps the thread check.
        db = connect(os.path.join(tmp, "floor.db"), unique=True, fts=False)
        index = connect_index(os.path.join(tmp, "index.db"))
        try:
            began = time.perf_counter()
            for start in range(0, len(rows), BATCH):
                db.execute("BEGIN IMMEDIATE")
                index.execute("BEGIN IMMEDIATE")
                chunks: Chunks = queue.Queue()
                failures: list[Exception] = []
                worker = threading.Thread(target=index_chunks, args=(index, chunks, failures))
                worker.start()
                for chunk in range(start, min(start + BATCH, len(rows)), CHUNK):
                    last = insert_batch(db, rows[chunk : chunk + CHUNK], unique=True)
                    # Read back what went in, so skipped duplicates are not indexed.
                    chunks.put(
                        db.execute(
                            "SELECT seq, content FROM notes WHERE seq > ?", (last,)
                        ).fetchall()
                    )
                chunks.put(None)
                # The table first: a crash between the two commits leaves rows not yet
                # indexed, never index entries without their rows.
                db.execute("COMMIT")
                worker.join()
                if failures:
                    raise failures[0]
                index.execute("COMMIT")
            return len(rows) / (time.perf_counter() - began)
        finally:
            db.close()
            index.close()


def tantivy_rate(rows: list[Row]) -> float | None:
    """Entries per second for the unique-indexed table plus a tantivy index; None without it."""
    try:
        import tantivy  # type: ignore[import-not-found]
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(prefix="bench-floor-tantivy-") as tmp:
        db = connect(os.path.join(tmp, "floor.db"), unique=True, fts=False)
        builder = tantivy.SchemaBuilder()
        builder.add_unsigned_field("seq", stored=True, indexed=True, fast=True)
        builder.add_text_field("content", stored=False)
        os.makedirs(os.path.join(tmp, "index"))
        index = tantivy.Index(builder.build(), path=os.path.join(tmp, "index"))
        writer = index.writer()
        try:
            began = time.perf_counter()
            for start in range(0, len(rows), BATCH):
                db.execute("BEGIN IMMEDIATE")
                last = insert_batch(db, rows[start : start + BATCH], unique=True)
                added = db.execute(
                    "SELECT seq, content FROM notes WHERE seq > ?", (last,)
                ).fetchall()
                db.execute("COMMIT")
                for seq, content in added:
                    document = tantivy.Document()
                    document.add_unsigned("seq", seq)
                    document.add_text("content", content)
                    writer.add_document(document)
                writer.commit()
            return len(rows) / (time.perf_counter() - began)
        finally:
            db.close()


def single_add_medians(rows: list[Row], extra: list[Row]) -> dict[str, float]:
    """Median seconds of one durable insert, per way of indexing it, taking turns."""
    ways = ("indexed by FTS5", "listed for later indexing", "not indexed")
    with tempfile.TemporaryDirectory(prefix="bench-floor-adds-") as tmp:
        databases = []
        for way in ways:
            fts = way != "not indexed"
            db = connect(os.path.join(tmp, f"adds-{ways.index(way)}.db"), unique=True, fts=fts)
            db.execute("BEGIN")
            db.executemany(
                "INSERT INTO notes (id, content, dedup_key, metadata) VALUES (?, ?, ?, ?)", rows
            )
            if fts:
                db.execute(
                    "INSERT INTO notes_fts (rowid, content, scope) "
                    "SELECT seq, content, scope FROM notes"
                )
            db.execute("COMMIT")
            databases.append((db, way))
        timings: dict[str, list[float]] = {way: [] for way in ways}
        try:
            for row in extra:
                for db, way in databases:
                    began = time.perf_counter()
                    db.execute("BEGIN IMMEDIATE")
                    cursor = db.execute(
                        "INSERT INTO notes (id, content, dedup_key, metadata) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT DO NOTHING",
                        row,
                    )
                    if way == "indexed by FTS5":
                        db.execute(
                            "INSERT INTO notes_fts (rowid, content, scope) VALUES (?, ?, 0)",
                            (cursor.lastrowid, row[1]),
                        )
                    elif way == "listed for later indexing":
                        db.execute("INSERT INTO waiting (seq) VALUES (?)", (cursor.lastrowid,))
                    db.execute("COMMIT")
                    timings[way].append(time.perf_counter() - began)
        finally:
            for db, _ in databases:
                db.close()
    return {way: statistics.median(values) for way, values in timings.items()}


DEFERRED_CASES: list[tuple[str, tuple[str, ...], str]] = [
    ("nothing: every index from the start", (), "incremental"),
    ("dedup and tags", ("dedup", "tags"), "incremental"),
    ("ids, dedup and tags", ("ids", "dedup", "tags"), "incremental"),
    ("dedup and tags, and FTS5 by one `rebuild`", ("dedup", "tags"), "rebuild"),
]
"""``(label, indexes created at the end, how FTS5 is fed)`` for :func:`deferred_rate`."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=1_000_000)
    args = parser.parse_args()
    everything = prepared_rows(args.size + ADDS)
    rows, extra = everything[: args.size], everything[args.size :]
    began, load = time.perf_counter(), os.getloadavg()
    cases: list[tuple[str, Callable[[], float | None]]] = [
        ("table + FTS5", lambda: sqlite_rate(rows, unique=False, fts=True)),
        ("table + unique ids + dedup", lambda: sqlite_rate(rows, unique=True, fts=False)),
        ("table + unique ids + dedup + FTS5", lambda: sqlite_rate(rows, unique=True, fts=True)),
        (
            "table + unique ids + dedup, FTS5 in a second file written in parallel",
            lambda: parallel_fts_rate(rows),
        ),
        ("table + unique ids + dedup + tantivy", lambda: tantivy_rate(rows)),
    ]
    table = []
    for label, run in cases:
        rate = run()
        table.append(f"| {label} | {'not installed' if rate is None else f'{rate:,.0f}'} |")
        print(table[-1], flush=True)
    deferred = []
    for label, late, fts in DEFERRED_CASES:
        rate, cpu, final = deferred_rate(rows, late, fts)
        deferred.append(f"| {label} | {rate:,.0f} | {cpu:.1f} | {final:.1f} |")
        print(deferred[-1], flush=True)
    adds = single_add_medians(rows, extra)
    lines = [
        f"# What SQLite itself allows: importing {args.size:,} memories",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took "
        f"{time.perf_counter() - began:.0f} s.",
        f"* Machine: nproc {os.cpu_count()}, Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}; load average {load[0]:.2f} at start (shared, noisy machine).",
        f"* Calls of {BATCH:,} rows, one transaction each, WAL, `synchronous=FULL`; rows prepared "
        "before timing (`benchmarks/bench_import_floor.py`). Data: `benchmarks/corpus.py`.",
        "",
        "| what is written | entries /s |",
        "|---|---:|",
        *table,
        "",
        "With a table of metadata tags as well, FTS5's merges held while each call feeds it (as "
        "`SQLiteStore` holds them), and some indexes created once at the end (one transaction, "
        "counted in the rate):",
        "",
        "| what is created at the end | entries /s | CPU s | the end's s |",
        "|---|---:|---:|---:|",
        *deferred,
        "",
        f"One durable add (median of {ADDS}, taking turns between three databases that hold the "
        "corpus with both unique indexes):",
        "",
        "| what one commit writes | median ms |",
        "|---|---:|",
        f"| row + unique ids + dedup + FTS5 | {adds['indexed by FTS5'] * 1000:.3f} |",
        "| row + unique ids + dedup + its number in the waiting list (what `SQLiteStore` commits) "
        f"| {adds['listed for later indexing'] * 1000:.3f} |",
        f"| row + unique ids + dedup | {adds['not indexed'] * 1000:.3f} |",
    ]
    report = "\n".join(lines) + "\n"
    RESULTS.write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
