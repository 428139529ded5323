"""A progress bar on stderr, drawn only when stderr is a terminal.

A person watching sees the bar move; a log or a pipe gets nothing from it, only the command's
summary on stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from agentrecall.migrate import ProgressBar


@contextmanager
def terminal_bar() -> Iterator[ProgressBar | None]:
    """Yield a ``progress(done, total)`` callback on a terminal, else ``None``; end its line."""
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()
