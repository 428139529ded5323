"""Upkeep of ``memory_tags``, the index of metadata values that narrows filtered searches.

The table lists the metadata values of exactly the memories in the full-text index (see
migration 8 in :mod:`agentrecall.stores.sqlite.schema`): memories enter it here, in the
transaction that feeds them to the full-text index, and triggers drop their entries when they
are deleted or their metadata changes. Memories waiting for the full-text index have no
entries; a search reads those directly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def tag(db: sqlite3.Connection, condition: str, params: Sequence[object]) -> None:
    """List the metadata values of the memories meeting ``condition`` (over column ``seq``).

    Call it for exactly the memories just given to the full-text index.
    """
    db.execute(
        "INSERT OR IGNORE INTO memory_tags (key, value, seq) "
        f"SELECT key, value, seq FROM memory_tag_entries WHERE {condition}",
        params,
    )
