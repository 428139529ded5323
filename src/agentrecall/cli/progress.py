"""A progress bar on stderr, drawn only when stderr is a terminal.

A person watching sees the bar move; a log or a pipe gets nothing from it, only the command's
summary on stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentrecall.migrate import ProgressBar


@contextmanager
def terminal_bar() -> Iterator[ProgressBar | None]:
    """Yield a ``progress(done, total)`` callback on a terminal, else ``None``; end its line."""
    bar = None
    if sys.stderr.isatty():
        from agentrecall.migrate import ProgressBar  # loaded only when a bar is drawn

        bar = ProgressBar(sys.stderr)
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()
