"""The term counts of ``SQLiteStore``'s long memories, kept so that ranking them costs little.

A search ranks its candidates by exact BM25, which needs how often each holds each query term,
and its length. Counting them in the text is cheap for a memory of a few sentences and was
half a second for one of 4 MB, at every search it was a candidate of. So a memory of more than
:data:`~agentrecall.retrieval.bm25.LONG_TEXT` characters has its counts in
``memory_term_counts``, one row per distinct term and one, of term ``''`` (no term is empty),
holding its length; the rerank reads the query's terms there instead.

Every insert of memories counts the long ones it inserted (:func:`count_inserted`, called by
the three ways rows go in: ``tables.insert_rows``, ``tables.insert_pipelined`` and
``dedup.add_checked``): an insert trigger instead cost every row about 2 µs, long or not.
Triggers keep the counts through the rest: a change of content counts the new one (through
``agentrecall_term_counts``, :func:`counts_json`, which the store registers on its
connections), a delete removes them. Migration 13 counts the long memories already stored.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from agentrecall._internal.sqlite import Progress, split_statements
from agentrecall.retrieval.bm25 import LONG_TEXT, Counts
from agentrecall.retrieval.keywords import term_counts

FUNCTION = "agentrecall_term_counts"
"""The name under which the store registers :func:`counts_json`."""

_TABLES = f"""
    CREATE TABLE memory_term_counts (
        seq INTEGER NOT NULL,
        term TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (seq, term)
    ) WITHOUT ROWID;
    CREATE TRIGGER memories_recounted AFTER UPDATE OF content ON memories
        WHEN old.content IS NOT new.content BEGIN
        DELETE FROM memory_term_counts WHERE seq = old.seq;
        INSERT INTO memory_term_counts (seq, term, n)
            SELECT new.seq, key, value FROM json_each(CASE WHEN length(new.content) > {LONG_TEXT}
                THEN {FUNCTION}(new.content) ELSE '{{}}' END);
    END;
    CREATE TRIGGER memories_uncounted AFTER DELETE ON memories BEGIN
        DELETE FROM memory_term_counts WHERE seq = old.seq;
    END;
"""


_COUNT_INSERTED = (
    "INSERT INTO memory_term_counts (seq, term, n) SELECT m.seq, j.key, j.value "
    f"FROM memories AS m, json_each({FUNCTION}(m.content)) AS j "
    f"WHERE m.seq > ? AND length(m.content) > {LONG_TEXT}"
)


def count_inserted(db: sqlite3.Connection, rows: Sequence[Sequence[Any]], after: int) -> None:
    """Keep the counts of the long memories among ``rows``, just inserted above row ``after``.

    A row is a new memory's ``(id, content, ...)``; the memories are read back from the table,
    so rows an insert skipped (duplicates) count nothing. Row numbers only grow inside a write
    transaction, so the memories above ``after`` are those just inserted.
    """
    if any(len(row[1]) > LONG_TEXT for row in rows):
        db.execute(_COUNT_INSERTED, (after,))


def counts_json(text: str) -> str:
    """Return the term counts of ``text`` as a JSON object, its length under the key ``""``."""
    counts, length = term_counts(text)
    return json.dumps({**counts, "": length}, ensure_ascii=False)


def long_term_counts(db: sqlite3.Connection, path: str, progress: Progress | None) -> None:
    """Migration 13: create the table of long memories' counts and its triggers; fill it.

    ``path`` and ``progress`` are unused: finding the long memories reads each content once
    (about a second at a million memories), and there are few.
    """
    del path, progress
    for statement in split_statements(_TABLES):
        db.execute(statement)
    long = db.execute(f"SELECT seq, content FROM memories WHERE length(content) > {LONG_TEXT}")
    for seq, content in long.fetchall():
        db.execute(
            "INSERT INTO memory_term_counts (seq, term, n) SELECT ?, key, value FROM json_each(?)",
            (seq, counts_json(content)),
        )


def stored_counts(
    db: sqlite3.Connection, seqs: Sequence[int], terms: Collection[str]
) -> dict[int, Counts]:
    """Return the kept counts of ``terms`` and the length of each long memory of ``seqs``.

    Memories with no kept counts (not long) are left out; a term a memory lacks has no count.
    """
    if not seqs:
        return {}
    rows = db.execute(
        "SELECT seq, term, n FROM memory_term_counts WHERE seq IN "
        "(SELECT value FROM json_each(?)) AND term IN (SELECT value FROM json_each(?))",
        (json.dumps(list(seqs)), json.dumps(["", *terms], ensure_ascii=False)),
    )
    counts: dict[int, dict[str, int]] = {}
    lengths: dict[int, int] = {}
    for seq, term, n in rows:
        if term:
            counts.setdefault(seq, {})[term] = n
        else:
            lengths[seq] = n
    return {seq: (counts.get(seq, {}), length) for seq, length in lengths.items()}
