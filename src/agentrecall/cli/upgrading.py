"""A store file's one-time upgrade, shown on stderr when a command first opens the file.

The first open of an SQLite file written before stemmed search indexes every memory again
(:meth:`~agentrecall.SQLiteStore.setup`): tens of seconds at a million memories. Before it
starts the command says so in one note on stderr, then draws a progress bar there when stderr
is a terminal; a log or a pipe gets the note alone.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from agentrecall.cli.report import note
from agentrecall.migrate import ProgressBar
from agentrecall.stores.base import MemoryStore
from agentrecall.stores.sqlite import SQLiteStore


def prepare(store: MemoryStore) -> None:
    """Open ``store`` now when it is an SQLite file a command may change, showing its upgrade.

    Raises:
        AgentRecallError: as :meth:`SQLiteStore.setup`, for a file that cannot be opened.
    """
    if not isinstance(store, SQLiteStore) or not store.writable:
        return
    shown = Reindexing(store.path, sys.stderr)
    try:
        asyncio.run(store.setup(progress=shown))
    finally:
        shown.close()


class Reindexing:
    """A ``progress`` callback for :meth:`SQLiteStore.setup`: a note, then a bar on a terminal."""

    def __init__(self, path: str, stream: TextIO) -> None:
        """Show the re-indexing of the store file ``path`` on ``stream``."""
        self._path = path
        self._stream = stream
        self._bar: ProgressBar | None = None
        self._started = False

    def __call__(self, done: int, total: int) -> None:
        """Record progress: the note the first time, the bar on a terminal every time."""
        if not self._started:
            self._started = True
            note(
                f"re-indexing {total} memories of '{self._path}' for stemmed search; this runs once"
            )
            if self._stream.isatty():
                self._bar = ProgressBar(self._stream)
        if self._bar is not None:
            self._bar(done, total)

    def close(self) -> None:
        """End the bar's line, if one was drawn."""
        if self._bar is not None:
            self._bar.close()
