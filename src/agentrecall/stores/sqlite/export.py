"""Reading a whole SQLite store for an export: one snapshot, handed on a batch at a time.

Each function takes an open connection and runs on the store's worker thread, inside one
read transaction of :meth:`~agentrecall._internal.sqlite.Database.run`, so everything it reads
is one consistent state of the file however long the reading takes and whatever other
processes write meanwhile.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from typing import Protocol

from agentrecall._internal.clock import utc_timestamp
from agentrecall.stores.front import Conditions
from agentrecall.stores.records import by_memory
from agentrecall.stores.records import record as to_record
from agentrecall.stores.records import version as to_version
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite import reads
from agentrecall.stores.sqlite.dedup import KEY_CHUNK
from agentrecall.stores.sqlite.query import scope_where
from agentrecall.stores.sqlite.rows import RECORD_COLUMNS, RECORDS, VERSION_COLUMNS, VERSIONS
from agentrecall.types import MemoryRecord, MemoryVersion


class SnapshotSink(Protocol):
    """What receives a snapshot: first the counts, then the memories, then the history.

    Its methods run on the store's worker thread, inside the read transaction.
    """

    def counts(self, memories: int, versions: int) -> None:
        """Take how many memories and replaced versions follow."""
        ...

    def records(self, batch: list[MemoryRecord]) -> None:
        """Take the next memories, oldest first."""
        ...

    def versions(self, batch: list[MemoryVersion]) -> None:
        """Take the next replaced versions, by memory id, then oldest first."""
        ...


def snapshot(connection: sqlite3.Connection, scope: Scope, batch: int, sink: SnapshotSink) -> None:
    """Hand ``sink`` every unexpired memory of ``scope``, retired ones too, and every version.

    An expired memory that no write has moved to the history yet is handed on as the version
    its expiry makes, as :func:`~agentrecall.stores.sqlite.reads.history` shows it.

    Memories come in the order ``list`` gives them, versions in the order of
    :meth:`SQLiteStore.versions`, at most ``batch`` per call. The counts are those of exactly
    what follows: the first read fixes the snapshot (WAL mode), and a read transaction that
    has begun never finds the database busy, so the transaction is never retried once the
    sink has been called.
    """
    # One time for both: a memory expiring meanwhile is then a record or a version, once.
    now = utc_timestamp()
    # Retired memories are kept, so they are exported too.
    where, params = reads.conditions(Conditions(scope, include_superseded=True), now)
    history, history_params = scope_where(scope, "h")
    memories = int(
        connection.execute(f"SELECT count(*) FROM memories AS m WHERE {where}", params).fetchone()[
            0
        ]
    )
    versions = connection.execute(
        f"SELECT count(*) FROM memory_history AS h WHERE {history}", history_params
    ).fetchone()[0]
    sink.counts(memories, int(versions) + reads.expired_count(connection, scope, now))
    rows = connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {RECORDS} WHERE {where} ORDER BY m.seq", params
    )
    while page := rows.fetchmany(batch):
        sink.records([to_record(row) for row in page])
    kept = connection.execute(
        f"SELECT h.seq, {VERSION_COLUMNS} FROM {VERSIONS} WHERE {history} ORDER BY h.id, h.seq",
        history_params,
    )
    merged = by_memory(kept, reads.expired_versions(connection, scope, now=now))
    while page := list(itertools.islice(merged, batch)):
        sink.versions([to_version(row[1:]) for row in page])


def existing_ids(connection: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    """Return which of ``ids`` belong to an unexpired memory of the file, in any scope.

    Ids are unique across the file, and an import purges expired memories before it inserts,
    so these are exactly the ids an import would skip as taken.
    """
    now = utc_timestamp()
    found: set[str] = set()
    for start in range(0, len(ids), KEY_CHUNK):
        chunk = ids[start : start + KEY_CHUNK]
        marks = ", ".join("?" * len(chunk))
        found.update(
            row[0]
            for row in connection.execute(
                f"SELECT id FROM memories WHERE id IN ({marks}) "
                "AND (expires_at IS NULL OR expires_at > ?)",
                [*chunk, now],
            )
        )
    return found
