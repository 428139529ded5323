"""The migration that gives the full-text index the emoji and other pictographs of memories.

Up to migration 11 a pictograph (``🍣``, ``★``, ``✈``) was no term: FTS5 reads it as a separator,
and so did the ranking, so ``agentrecall search 🍣`` found nothing. From here on
:func:`~agentrecall.retrieval.keywords.index_text` gives the index each pictograph as a word
(:mod:`agentrecall.retrieval.pictographs`), and the memories that hold one get that text.
"""

from __future__ import annotations

import re
import sqlite3

from agentrecall._internal.sqlite import Progress
from agentrecall.retrieval.pictographs import FOLDED_INTO_PICTOGRAPHS, PICTOGRAPHS
from agentrecall.stores.sqlite.folding import index_again

_MAY_HOLD = re.compile(f"[{PICTOGRAPHS}{FOLDED_INTO_PICTOGRAPHS}]")
"""A character that is, or folds into, a pictograph: only a content holding one changes."""


def pictograph_index(db: sqlite3.Connection, path: str, progress: Progress | None) -> None:
    """Migration 12: set the index text of every memory holding a pictograph.

    As :func:`~agentrecall.stores.sqlite.folding.folded_index` does (``path`` and
    ``progress`` unused, for the same reasons): every memory is read, the few with a
    pictograph are written and indexed again.
    """
    del path, progress
    index_again(db, lambda content: _MAY_HOLD.search(content) is not None)
