"""The migration that gives the full-text index the folded words of accented and wide text.

Up to migration 10 a memory's ``index_text`` (what the index reads in place of its content)
was set only for text holding CJK runs. FTS5 reads other text by its own rules, which neither
widen compatibility characters (``ﬁ``, ``Ｔ``, ``²``) nor remove every diacritic that
:func:`~agentrecall.retrieval.keywords.fold` removes (Greek accents, ``й``): such a memory was
found by a word while it waited for the index, and no longer once indexed. From here on
:func:`~agentrecall.retrieval.keywords.index_text` gives those texts their folded words too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from agentrecall._internal.sqlite import Progress
from agentrecall.retrieval.keywords import index_text

CHUNK = 20_000
"""Memories read at a time."""


def folded_index(db: sqlite3.Connection, path: str, progress: Progress | None) -> None:
    """Migration 11: set the index text of every memory whose index text is now another.

    Only memories with non-ASCII content can change (the text of an ASCII one is read as it
    is). The trigger ``memories_rewritten`` indexes each changed memory again, unless it
    waits for the index (``memories_unindexed``), which then reads the new text. ``path``
    and ``progress`` are unused: reading a million memories takes about a second, and only
    the few non-ASCII ones are written.
    """
    del path, progress
    index_again(db, lambda content: not content.isascii())


def index_again(db: sqlite3.Connection, may_change: Callable[[str], bool]) -> None:
    """Set the index text of every memory whose index text is now another.

    Only the contents for which ``may_change`` is true are read again, as
    :func:`folded_index` says; the trigger indexes the changed ones again.
    """
    last = 0
    select = "SELECT seq, content, index_text FROM memories WHERE seq > ? ORDER BY seq LIMIT ?"
    while rows := db.execute(select, (last, CHUNK)).fetchall():
        changed = [
            (new, seq)
            for seq, content, old in rows
            if may_change(content) and (new := index_text(content)) != old
        ]
        db.executemany("UPDATE memories SET index_text = ? WHERE seq = ?", changed)
        last = rows[-1][0]
