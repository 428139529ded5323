"""The migration that makes ``SQLiteStore``'s full-text index stem words and pair CJK characters.

Up to migration 8 the index kept each word as written (``seats`` did not find ``seat``) and a
run of CJK characters as one word (``座位`` did not find ``用户喜欢靠过道的座位``). From here on
it reads text as :mod:`agentrecall.retrieval.keywords` does: with FTS5's ``porter`` tokenizer,
and CJK runs replaced by their characters and pairs. FTS5 cannot split those runs, so a memory
whose content holds one keeps the text the index reads in ``memories.index_text``; the index
reads ``coalesce(index_text, content)`` (the view ``memories_text``), and every statement that
changes ``content`` sets ``index_text`` with it.

The whole index is built again, once: at a million memories that takes tens of seconds, so it
is announced in the log and reports its progress.
"""

from __future__ import annotations

import logging
import sqlite3

from agentrecall._internal.sqlite import Progress, split_statements
from agentrecall.retrieval.keywords import index_text

CHUNK = 20_000
"""Memories indexed between two progress reports."""

logger = logging.getLogger(__name__)

_TABLES = """
    DROP TRIGGER memories_removed;
    DROP TRIGGER memories_rewritten;
    DROP TABLE memories_fts;
    ALTER TABLE memories ADD COLUMN index_text TEXT;
    CREATE VIEW memories_text AS
        SELECT seq, coalesce(index_text, content) AS content, scope FROM memories;
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, scope, content='memories_text', content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2', columnsize=0
    );
    INSERT INTO memories_fts (memories_fts, rank) VALUES ('automerge', 8);
"""

_TRIGGERS = """
    CREATE TRIGGER memories_removed AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, scope)
            SELECT 'delete', old.seq, coalesce(old.index_text, old.content), old.scope
            WHERE NOT EXISTS (SELECT 1 FROM memories_unindexed WHERE seq = old.seq);
        DELETE FROM memories_unindexed WHERE seq = old.seq;
    END;
    CREATE TRIGGER memories_rewritten AFTER UPDATE OF content, index_text ON memories
        WHEN NOT EXISTS (SELECT 1 FROM memories_unindexed WHERE seq = old.seq) BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, scope)
            VALUES ('delete', old.seq, coalesce(old.index_text, old.content), old.scope);
        INSERT INTO memories_fts (rowid, content, scope)
            VALUES (new.seq, coalesce(new.index_text, new.content), new.scope);
    END;
"""


def stemmed_index(db: sqlite3.Connection, path: str, progress: Progress | None) -> None:
    """Migration 9: build the full-text index again, stemmed, with CJK runs as pairs.

    Memories waiting for the index (``memories_unindexed``) get their index text but stay
    waiting. ``progress(done, total)`` is called before the first chunk of memories and after
    each. When there are memories, the work is logged before it starts: at WARNING, or at
    INFO when ``progress`` is given (the caller shows it).
    """
    _script(db, _TABLES)
    total = db.execute("SELECT count(*) FROM memories").fetchone()[0]
    if total:
        _announce(path, total, progress)
    done = last = 0
    select = "SELECT seq, content FROM memories WHERE seq > ? ORDER BY seq LIMIT ?"
    while rows := db.execute(select, (last, CHUNK)).fetchall():
        _index_chunk(db, rows)
        done, last = done + len(rows), rows[-1][0]
        if progress is not None:
            progress(done, total)
    _script(db, _TRIGGERS)


def _announce(path: str, total: int, progress: Progress | None) -> None:
    level = logging.WARNING if progress is None else logging.INFO
    logger.log(
        level,
        "re-indexing %d memories of '%s' for stemmed search; this runs once",
        total,
        path,
        extra={"agentrecall_reindex": path},
    )
    if progress is not None:
        progress(0, total)


def _index_chunk(db: sqlite3.Connection, rows: list[tuple[int, str]]) -> None:
    """Give the memories ``rows`` (``(seq, content)`` by ``seq``) their index text; index them."""
    texts = [(text, seq) for seq, content in rows if (text := index_text(content)) is not None]
    db.executemany("UPDATE memories SET index_text = ? WHERE seq = ?", texts)
    db.execute(
        "INSERT INTO memories_fts (rowid, content, scope) "
        "SELECT seq, coalesce(index_text, content), scope FROM memories "
        "WHERE seq BETWEEN ? AND ? AND seq NOT IN (SELECT seq FROM memories_unindexed)",
        (rows[0][0], rows[-1][0]),
    )


def _script(db: sqlite3.Connection, script: str) -> None:
    """Run the statements of ``script`` one by one, inside the caller's transaction."""
    for statement in split_statements(script):
        db.execute(statement)
