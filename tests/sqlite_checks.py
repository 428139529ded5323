"""Checks of an ``SQLiteStore`` database file that tests share."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from agentrecall._internal.sqlite import Database
from agentrecall.stores.contentkeys import content_hash, content_key
from agentrecall.stores.sqlite.query import averages
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS
from agentrecall.stores.sqlite.tables import index_unindexed


def check_full_text_index(db: sqlite3.Connection) -> None:
    """Assert that the full-text index holds exactly the memories, once the waiting ones are in.

    Indexes the memories listed in ``memories_unindexed`` (as the store does later), then has
    FTS5 compare every index entry with the memories table (``rank`` 1: without it, an
    external-content index is only checked against itself). A memory both listed and indexed
    would be indexed twice and fail the comparison, as would one in neither. The index of
    metadata values that filtered searches use must list exactly the memories' values too.
    """
    index_unindexed(db)
    db.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    block = db.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
    indexed, _ = averages(block[0] if block else None)
    assert indexed == db.execute("SELECT count(*) FROM memories").fetchone()[0]
    check_metadata_index(db)


def check_metadata_index(db: sqlite3.Connection) -> None:
    """Assert that ``memory_tags`` lists the metadata values of exactly the indexed memories.

    Derived here from the memories' JSON independently of the store's view: each top-level
    value that is not an object or array, with keys and strings of up to 256 characters.
    """
    waiting = {row[0] for row in db.execute("SELECT seq FROM memories_unindexed")}
    expected = set()
    for seq, metadata in db.execute("SELECT seq, metadata FROM memories"):
        if seq in waiting or metadata is None:
            continue
        for key, value in json.loads(metadata).items():
            if isinstance(value, (dict, list)) or len(key) > 256:
                continue
            if isinstance(value, str) and len(value) > 256:
                continue
            marks = {None: b"\x00", False: b"\x01", True: b"\x02"}
            held = marks[value] if value is None or isinstance(value, bool) else value
            expected.add((key, held, seq))
    listed = db.execute("SELECT key, value, seq FROM memory_tags").fetchall()
    assert len(listed) == len(set(listed))
    assert set(listed) == expected


CHINESE = "用户喜欢靠过道的座位"


def unstemmed_database(path: Path) -> None:
    """Create ``path`` as schema 8 left it, before stemming: three memories, the last waiting."""

    def fill(db: sqlite3.Connection) -> None:
        rows = [(1, "The user prefers an aisle seat"), (2, CHINESE), (3, "seats by the window")]
        for seq, content in rows:
            db.execute(
                "INSERT INTO memories (seq, id, scope, content, content_hash, metadata, "
                "created_at) VALUES (?, ?, 0, ?, ?, '{\"k\": 1}', '2025-01-01T00:00:00.000Z')",
                (seq, f"id{seq}", content, seq),
            )
        db.executemany(
            "INSERT INTO memories_fts (rowid, content, scope) VALUES (?, ?, 0)", rows[:2]
        )
        db.execute("INSERT INTO memory_tags (key, value, seq) VALUES ('k', 1, 1), ('k', 1, 2)")
        db.execute("INSERT INTO memories_unindexed (seq) VALUES (3)")

    old_database(path, 8, fill)


def old_database(path: Path, version: int, fill: Callable[[sqlite3.Connection], object]) -> None:
    """Create ``path`` with the store's tables as schema ``version`` left them, filled by ``fill``.

    As an earlier agentrecall would have written it, for tests of the upgrade to the latest.
    """
    functions = {"agentrecall_content_hash": content_hash, "agentrecall_content_key": content_key}
    old = Database(
        str(path), component=COMPONENT, migrations=MIGRATIONS[:version], functions=functions
    )
    old.run(fill, write=True)
    old.close()
