"""A store file's one-time upgrade, shown on stderr when a command first opens the file.

The first open of an SQLite file written before stemmed search indexes every memory again
(:meth:`~agentrecall.SQLiteStore.setup`): tens of seconds at a million memories. Before it
starts the command says so in one note on stderr, then draws a progress bar there when stderr
is a terminal; a log or a pipe gets the note alone.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from agentrecall.cli.opening import size_of
from agentrecall.cli.report import note
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.sync import SyncStore

if TYPE_CHECKING:
    from agentrecall.migrate import ProgressBar


def prepare(memory: SyncStore) -> None:
    """Open the store now when it is an SQLite file with memories, showing any upgrade.

    A new or empty file has nothing to upgrade, and is left for the command to create (or not,
    when its arguments are refused).

    Raises:
        AgentRecallError: as :meth:`SQLiteStore.setup`, for a file that cannot be opened.
    """
    store = memory.store
    if not isinstance(store, SQLiteStore) or not store.writable or not size_of(store.path):
        return
    shown = Reindexing(store.path, sys.stderr)
    try:
        memory.setup(progress=shown)
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
                from agentrecall.migrate import ProgressBar  # a rare, long upgrade only

                self._bar = ProgressBar(self._stream)
        if self._bar is not None:
            self._bar(done, total)

    def close(self) -> None:
        """End the bar's line, if one was drawn."""
        if self._bar is not None:
            self._bar.close()
