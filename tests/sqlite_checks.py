"""Checks of an ``SQLiteStore`` database file that tests share."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from agentrecall._internal.sqlite import Database
from agentrecall.stores.sqlite.query import averages, content_hash
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS
from agentrecall.stores.sqlite.tables import index_unindexed


def check_full_text_index(db: sqlite3.Connection) -> None:
    """Assert that the full-text index holds exactly the memories, once the waiting ones are in.

    Indexes the memories listed in ``memories_unindexed`` (as the store does later), then has
    FTS5 compare every index entry with the memories table (``rank`` 1: without it, an
    external-content index is only checked against itself). A memory both listed and indexed
    would be indexed twice and fail the comparison, as would one in neither.
    """
    index_unindexed(db)
    db.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    block = db.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
    indexed, _ = averages(block[0] if block else None)
    assert indexed == db.execute("SELECT count(*) FROM memories").fetchone()[0]


def old_database(path: Path, version: int, fill: Callable[[sqlite3.Connection], object]) -> None:
    """Create ``path`` with the store's tables as schema ``version`` left them, filled by ``fill``.

    As an earlier agentrecall would have written it, for tests of the upgrade to the latest.
    """
    functions = {"agentrecall_content_hash": content_hash}
    old = Database(
        str(path), component=COMPONENT, migrations=MIGRATIONS[:version], functions=functions
    )
    old.run(fill, write=True)
    old.close()
