"""Text for people: aligned columns, content cut to the terminal's width, key-value blocks.

Content is shown on one line (each line break written as a backslash and a letter) and, when
standard output is a terminal (or ``COLUMNS`` says how wide it is), cut with ``…`` to fit;
piped output keeps every character, and ``--json`` always gives the whole text.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

from agentrecall.cli.report import one_line

GAP = "  "
"""Between two columns."""

ELLIPSIS = "…"
MIN_ROOM = 10
"""The fewest characters of content shown, however narrow the terminal."""


def width() -> int | None:
    """Return the width to fit lines to, or ``None`` to keep them whole (not a terminal)."""
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def shorten(text: str, room: int | None) -> str:
    """Return ``text`` on one line, cut to ``room`` characters (ending in ``…``) if longer."""
    line = one_line(text)
    if room is None or len(line) <= room:
        return line
    room = max(room, MIN_ROOM)
    return line[: room - len(ELLIPSIS)] + ELLIPSIS


def rows(table: Sequence[Sequence[str]], *, fit: int | None) -> list[str]:
    """Return ``table`` as lines, its columns aligned and its last one cut to ``fit`` characters.

    Every cell is shown on one line, :func:`~agentrecall.cli.report.one_line`. Empty columns
    (blank in every row) are left out.
    """
    if not table:
        return []
    shown = [[one_line(cell) for cell in row] for row in table]  # ids and reasons are data too
    layout = Layout(len(shown[0]))
    for row in shown:
        layout.measure(row)
    return layout.lines(shown, fit=fit)


class Layout:
    """The columns of a table too large to hold: measured a row at a time, then shown.

    Rows are given with every cell already on one line (:func:`one_line`). Measure every row,
    then pass the rows again, in any number of parts, to :meth:`lines`: together the lines are
    those :func:`rows` gives for the whole table, with only the widths held in between.
    """

    def __init__(self, columns: int) -> None:
        """A layout of ``columns`` columns, measured over no row yet."""
        self._widths = [0] * columns

    def measure(self, row: Sequence[str]) -> None:
        """Widen the columns to fit ``row``."""
        pairs = zip(self._widths, row, strict=True)
        self._widths = [max(width, len(cell)) for width, cell in pairs]

    def lines(self, table: Sequence[Sequence[str]], *, fit: int | None) -> list[str]:
        """Return measured rows as lines: columns aligned, the last cut to ``fit`` characters.

        Columns blank in every row measured are left out.
        """
        shown = [i for i, width in enumerate(self._widths) if width]
        if not shown:
            return ["" for _ in table]
        *padded, last = shown
        lead = sum(self._widths[i] for i in padded) + len(GAP) * len(padded)
        room = None if fit is None else fit - lead
        lines = []
        for row in table:
            cells = [row[i].ljust(self._widths[i]) for i in padded]
            cells.append(shorten(row[last], room))
            lines.append(GAP.join(cells))
        return lines


def block(fields: Sequence[tuple[str, str]], *, fit: int | None) -> list[str]:
    """Return ``(label, value)`` pairs as lines, the values aligned and cut to fit."""
    if not fields:
        return []
    return rows([[label, value] for label, value in fields], fit=fit)


def size(count: int) -> str:
    """Return a byte count the way people read it: ``12.3 MB (12345678 bytes)``."""
    if count < 1000:
        return f"{count} bytes"
    value = float(count)
    for unit in ("KB", "MB", "GB"):
        value /= 1000
        if value < 1000:
            return f"{value:.1f} {unit} ({count} bytes)"
    return f"{value / 1000:.1f} TB ({count} bytes)"
