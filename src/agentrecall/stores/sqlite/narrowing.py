"""Narrowing a filtered search with indexes, so that a selective filter costs little.

A search checks its conditions on each posting the full-text index yields, before the
planner's limits, so that a small set of matching memories still gets its candidates. That
check reads the posting's memory and parses its metadata. Part of the conditions can instead
be answered by an index: a metadata field that must equal one of a few values (by
``memory_tags``, kept by :mod:`agentrecall.stores.sqlite.tags`), a time bound (by the index
on ``created_at``). Each such part gives a :class:`Narrowing`: a superset of the memories it
admits, read from the index. The search counts each, up to a bound: one holding few memories
(see :func:`chosen`) narrows the postings to its row id range and its rows; the metadata ones
not chosen still check each posting by one index lookup instead of reading its memory. The
full conditions are checked after all that, so results are those of checking every posting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall.retrieval.filters import value_sets

SELECTIVE_SHARE = 0.05
"""A narrowing holding at most this share of the memories is selective (see :func:`chosen`)."""

SELECTIVE_ROWS = 20_000
"""Nor more than this many: a search counts a narrowing's rows up to this bound and writes a
selective one's to a table first, about 0.1 and 0.2 µs a row at a million memories."""

TAGGED_TEXT = 256
"""Keys and strings of up to this many characters are in ``memory_tags`` (migration 8)."""

TAGGED_VALUES = 32
"""A field narrows a search by ``memory_tags`` when it admits at most this many values."""


@dataclass(frozen=True, slots=True)
class Narrowing:
    """A superset of the memories meeting one part of a search's conditions, from an index.

    Attributes:
        rows: SQL selecting the row ids (``seq``) of the superset; ``LIMIT`` may follow it.
        posting: SQL true for a posting (the full-text row ``f``) of the superset, cheaper
            than reading its memory; ``None`` when only the rows can tell.
        params: the parameters of ``rows``, and equally of ``posting``.
    """

    rows: str
    posting: str | None
    params: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Count:
    """How many rows a narrowing holds, up to the bound it was counted to, and their range."""

    rows: int
    lowest: int | None
    highest: int | None


def narrowings(
    filter: Mapping[str, Any] | None, created_after: str | None, created_before: str | None
) -> list[Narrowing]:
    """Return the narrowings of a search's filter and time bounds (stored-shape times).

    Raises:
        InvalidArgumentError: the filter is unusable.
    """
    found = []
    for field, values in value_sets(filter):
        if len(field) > TAGGED_TEXT or len(values) > TAGGED_VALUES:
            continue
        if any(isinstance(value, str) and len(value) > TAGGED_TEXT for value in values):
            continue
        marks = ", ".join("?" * len(values))
        found.append(
            Narrowing(
                rows=f"SELECT seq FROM memory_tags WHERE key = ? AND value IN ({marks})",
                posting=(
                    "EXISTS (SELECT 1 FROM memory_tags AS t WHERE t.key = ? "
                    f"AND t.value IN ({marks}) AND t.seq = f.rowid)"
                ),
                params=(field, *map(tagged, values)),
            )
        )
    bounds = [("created_at >= ?", created_after), ("created_at < ?", created_before)]
    given = [(sql, value) for sql, value in bounds if value is not None]
    if given:
        condition = " AND ".join(sql for sql, _ in given)
        found.append(
            Narrowing(
                rows=f"SELECT seq FROM memories WHERE {condition}",
                posting=None,
                params=tuple(value for _, value in given),
            )
        )
    return found


def tagged(value: object) -> object:
    """Return a metadata value as ``memory_tags`` holds it: null, false, true as blobs."""
    if value is None:
        return b"\x00"
    if isinstance(value, bool):
        return b"\x02" if value else b"\x01"
    return value


def bound(total: int) -> int:
    """Return how many rows a selective narrowing of a store of ``total`` memories holds."""
    return min(SELECTIVE_ROWS, int(SELECTIVE_SHARE * total))


def chosen(counts: Sequence[Count], total: int) -> int | None:
    """Return the index of the narrowing to narrow the postings by, if one is selective.

    The narrowing with the fewest rows, if it holds at most :func:`bound` of them: narrowing
    the postings to its rows means writing them to a set first, which costs less than
    checking the postings one by one only while they are few.
    """
    limit = bound(total)
    selective = [(count.rows, index) for index, count in enumerate(counts) if count.rows <= limit]
    return min(selective)[1] if selective else None


NARROWED = "agentrecall_narrowed"
"""The rows of the chosen narrowing, written for one search (a table of the connection's own)."""


@dataclass(frozen=True, slots=True)
class PostingTest:
    """An SQL condition over a posting ``f`` implied by the narrowings, and how to prepare it.

    Attributes:
        condition: the SQL (``1`` when nothing narrows).
        params: its parameters.
        rows: the narrowing whose rows must be in :data:`NARROWED` first, if any.
        narrows: whether a selective narrowing confines the postings.
    """

    condition: str
    params: list[object]
    rows: Narrowing | None
    narrows: bool


def posting_test(found: Sequence[Narrowing], counts: Sequence[Count], total: int) -> PostingTest:
    """Return the test that narrows a search's postings, given each narrowing's :class:`Count`.

    The chosen narrowing (if any) confines the postings to its row id range, which the
    full-text index walks alone, and, unless its rows fill most of that range (as the rows of
    a time bound usually do, row ids growing with time), to its rows. Every other narrowing
    with a ``posting`` test adds it.
    """
    parts: list[str] = []
    params: list[object] = []
    rows = None
    pick = chosen(counts, total)
    if pick is not None:
        count = counts[pick]
        parts.append("f.rowid BETWEEN ? AND ?")
        params += [count.lowest, count.highest]
        if (count.highest or 0) - (count.lowest or 0) + 1 > 2 * count.rows:
            # The plus keeps SQLite from handing the IN to the full-text index as one row id
            # lookup per row (one full-text query each: a thousand times slower).
            parts.append(f"+f.rowid IN temp.{NARROWED}")
            rows = found[pick]
    for index, narrowing in enumerate(found):
        if index != pick and narrowing.posting is not None:
            parts.append(narrowing.posting)
            params += narrowing.params
    return PostingTest(" AND ".join(parts) or "1", params, rows, pick is not None)
