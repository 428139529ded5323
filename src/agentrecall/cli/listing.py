"""``agentrecall list``: memories, the last stored first, streamed a page at a time.

A page of ``list`` is the slice of the store's oldest-first order that the options choose
(:func:`window`); it is read :data:`PAGE` memories at a time and written as it is read, so a
``list --all`` of a million memories holds one page, never the store. ``--json`` writes the
very text one JSON array of every memory would be, an element at a time. The table aligns its
columns over every row, so it reads the slice twice: once to measure the columns, once to write
the rows. Each page is a read of its own, not one transaction: a memory added or deleted by
another process meanwhile may shift a page (or a column, in the table), as it may between two
runs of ``list``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from typing import Any

from agentrecall._internal.text import escape_surrogates, plural
from agentrecall.cli import report, tables, values
from agentrecall.cli.fields import (
    add_bounds,
    as_of_of,
    bounds,
    record_json,
    retired_label,
    scope_label,
)
from agentrecall.cli.options import Parents, command, wants_json
from agentrecall.sync import SyncStore
from agentrecall.types import MemoryRecord

DEFAULT_LIMIT = 20
"""Memories ``list`` shows without ``--limit`` or ``--all``."""

PAGE = 5_000
"""Memories read per ``list`` call of the store (as ``stats`` reads them): few enough to hold,
many enough that each call's OFFSET, which the store skips row by row, is paid seldom."""

COLUMNS = 5
"""The table's columns: created, id, scope, retired (blank, and so left out, unless asked for
retired memories), content."""


def register(commands: Any, parents: Parents) -> None:
    """Add ``list`` to ``commands``."""
    listing = command(
        commands,
        "list",
        parents.store,
        help=f"list memories, the last stored first, {DEFAULT_LIMIT} at a time",
        example="agentrecall list\nagentrecall list --oldest --offset 20 --limit 50\n"
        "agentrecall --json list --all --user-id alice > alice.json\n"
        "agentrecall list --as-of 2025-03-01 --include-superseded",
    )
    pages = listing.add_mutually_exclusive_group()
    pages.add_argument(
        "--limit",
        type=values.count,
        default=DEFAULT_LIMIT,
        help=f"at most N (default {DEFAULT_LIMIT})",
    )
    pages.add_argument("--all", action="store_true", help="every memory, no limit")
    listing.add_argument(
        "--offset", type=values.offset, default=0, help="skip the first N (default 0)"
    )
    listing.add_argument("--oldest", action="store_true", help="the first stored first")
    add_bounds(listing)
    listing.set_defaults(command=_list, verb="list", reads_only=True)


def _list(memory: SyncStore, args: argparse.Namespace) -> int:
    conditions = bounds(args)
    total = memory.count(**conditions)
    limit = None if args.all else args.limit
    start, end = window(total, args.offset, limit, oldest=args.oldest)

    def records() -> Iterator[list[MemoryRecord]]:
        return pages(memory, start, end, conditions, oldest=args.oldest)

    shown = _json(records()) if wants_json(args) else _table(records, as_of_of(args))
    if shown == 0 and not wants_json(args):
        report.emit(_nothing(total, args, conditions))
    more = total - args.offset - shown
    if more > 0:
        hint = f"{plural(more, 'more memory', 'more memories')}: --offset "
        hint += f"{args.offset + shown} shows the next page, --all every one"
        if wants_json(args):
            report.note(hint)
        else:
            report.emit(report.printable(f"… {hint}"))
    return report.OK


def pages(
    memory: SyncStore, start: int, end: int, bounds: dict[str, Any], *, oldest: bool
) -> Iterator[list[MemoryRecord]]:
    """Yield the memories ``[start, end)`` of the oldest-first order, :data:`PAGE` at a time.

    Oldest first with ``oldest``, else newest first (the pages from the end, each reversed).
    Stops early at a short page: memories deleted meanwhile.
    """
    if oldest:
        at = start
        while at < end:
            page = memory.list(offset=at, limit=min(PAGE, end - at), **bounds)
            if page:
                yield page
            if len(page) < min(PAGE, end - at):
                return
            at += len(page)
        return
    at = end
    while at > start:
        low = max(start, at - PAGE)
        page = memory.list(offset=low, limit=at - low, **bounds)
        page.reverse()
        if page:
            yield page
        if len(page) < at - low:
            return
        at = low


def _json(records: Iterator[list[MemoryRecord]]) -> int:
    """Write the memories as one JSON array, as ``json.dumps(indent=2)`` would; return how many.

    Each element is the text ``json.dumps`` gives it nested one level deep: its lines indented
    by two more spaces (a JSON string holds no raw line break, so every line break is layout).
    """
    count = 0
    for page in records:
        elements = ["["] if count == 0 else []  # once a page is read: an error writes nothing
        for record in page:
            text = json.dumps(record_json(record), ensure_ascii=False, indent=2)
            elements.append(("\n" if count == 0 else ",\n") + "  " + text.replace("\n", "\n  "))
            count += 1
        report.write(escape_surrogates("".join(elements)))
    report.write("\n]\n" if count else "[]\n")
    return count


def _table(records: Callable[[], Iterator[list[MemoryRecord]]], as_of: str | None) -> int:
    """Write the memories as aligned rows; return how many. ``records()`` yields the pages.

    A memory retired (by ``as_of``, when given) is marked as such, naming its successor.

    The columns' widths are known only once every row is seen, so the pages are read twice:
    once to measure, once to write. Holding the rows instead, even in a temporary file, would
    hold the store (a ``/tmp`` in memory, as tmpfs, is common).
    """
    layout = tables.Layout(COLUMNS)
    for page in records():
        for record in page:
            layout.measure(_row(record, as_of))
    fit = tables.width()
    count = 0
    for page in records():
        rows = [_row(record, as_of) for record in page]
        report.emit("\n".join(layout.lines(rows, fit=fit)))
        count += len(page)
    return count


def _row(record: MemoryRecord, as_of: str | None) -> list[str]:
    """The cells of ``record``'s row, each on one line."""
    retired = retired_label(record, as_of)
    cells = (record.created_at, record.id, scope_label(record), retired, record.content)
    return [report.one_line(cell) for cell in cells]


def _nothing(total: int, args: argparse.Namespace, bounds: dict[str, Any]) -> str:
    """What ``list`` says when it shows no memory."""
    if total:
        return f"no memories past --offset {args.offset} (there are {total})"
    if any(value is not None for value in bounds.values()):
        return "no memories match"
    return "the store is empty"


def window(total: int, offset: int, limit: int | None, *, oldest: bool) -> tuple[int, int]:
    """The slice ``[start, end)`` of the oldest-first order that a page of ``list`` shows."""
    if oldest:
        start = min(offset, total)
        return start, total if limit is None else min(total, start + limit)
    end = max(total - offset, 0)
    return (0 if limit is None else max(end - limit, 0)), end
