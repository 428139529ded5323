"""Reads of ``SQLiteStore`` at a moment: the live part and the history part of an ``as_of``.

A memory's state at a moment ``T`` is its first history version replaced after ``T`` (a
version holds the memory as it was until its ``changed_at``), else its row. Reading every
memory that way would cost a lookup per memory, so a read of ``T`` has two parts:

* the **live part**, the rows of ``memories`` neither created nor updated after ``T``, read
  with the rest of the read's conditions (:func:`~.reads.conditions`): a row retired after
  ``T`` still has the content it had then;
* the **history part** (:func:`past`): for the memories with an update, delete or expiry
  after ``T``, their first version replaced after ``T``, shaped as a row of ``memories``
  (alias ``m``) so that the same conditions apply, less those only a live row meets. Its cost
  grows with the number of versions replaced after ``T``, found by the index on
  ``changed_at`` that holds only those kinds of change.

A state is held at ``T`` when it was created by then (a version kept before stores recorded
``created_at`` counts as created before any moment) and not retired by then (unless retired
memories are asked for); a live row also must not have expired by then. Hits and records of
memories retired after ``T`` are not marked retired: at ``T`` they were current.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall.retrieval.filters import to_sql
from agentrecall.stores.front import Conditions
from agentrecall.stores.sqlite.query import scope_where
from agentrecall.types import MemoryRecord

Params = list[object]
Row = Sequence[Any]

_CHANGED_SINCE = (
    "SELECT c.id FROM memory_history AS c INDEXED BY memory_history_changed "
    "WHERE c.changed_at > ? AND c.change IN ('update', 'delete', 'expire') GROUP BY c.id"
)
"""The memories with a version replaced after the moment that only the history holds.

Read by time, through the partial index of those changes (its condition stated as the index
states it): left to itself, SQLite may rather walk the whole history in id order to group it,
whatever the moment."""

_FIRST_AFTER = (
    "SELECT f.seq FROM memory_history AS f WHERE f.id = c.id AND f.changed_at > ? "
    "ORDER BY f.changed_at, f.seq LIMIT 1"
)
"""The first version of memory ``c.id`` replaced after the moment: its state then."""

_PAST = (
    "SELECT -h.seq AS seq, h.id AS id, h.scope AS scope, h.content AS content, "
    "h.metadata AS metadata, h.created_at AS created_at, "
    "(SELECT max(p.changed_at) FROM memory_history AS p WHERE p.id = h.id "
    "AND p.change = 'update' AND p.changed_at <= ?) AS updated_at, "
    "CASE WHEN h.change = 'expire' THEN h.changed_at END AS expires_at, "
    "h.invalidated_at AS invalidated_at, h.superseded_by AS superseded_by, "
    "h.valid_from AS valid_from, h.valid_until AS valid_until "
    "FROM memory_history AS h "
    f"WHERE h.seq IN (SELECT ({_FIRST_AFTER}) FROM ({_CHANGED_SINCE}) AS c) "
    "AND NOT EXISTS (SELECT 1 FROM memories AS l WHERE l.id = h.id AND l.created_at <= ? "
    "AND (l.updated_at IS NULL OR l.updated_at <= ?))"
)
"""The history part as rows shaped like ``memories`` (its five parameters are the moment).

A state read from the history has the negative of its version's row number as ``seq``, so it
is told from every memory; ``updated_at`` is its last update by then, ``expires_at`` the
moment it expired if that is what replaced it (nothing else about expiry is kept). A memory
whose row is in the live part is left out, whatever its history."""


def moment_conditions(found: Conditions, alias: str = "m") -> tuple[list[str], Params]:
    """Return the conditions of ``valid_at`` and of retirement (at ``as_of``, or now)."""
    parts: list[str] = []
    params: Params = []
    if found.valid_at is not None:
        parts.append(
            f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?) "
            f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)"
        )
        params += [found.valid_at, found.valid_at]
    if not found.include_superseded:
        if found.as_of is None:
            parts.append(f"{alias}.invalidated_at IS NULL")
        else:
            parts.append(f"({alias}.invalidated_at IS NULL OR {alias}.invalidated_at > ?)")
            params.append(found.as_of)
    return parts, params


def live_at(found: Conditions) -> tuple[list[str], Params]:
    """Return the conditions that keep the rows of the live part of ``found.as_of``."""
    if found.as_of is None:
        return [], []
    return ["m.created_at <= ?", "(m.updated_at IS NULL OR m.updated_at <= ?)"], [
        found.as_of,
        found.as_of,
    ]


def past(found: Conditions, columns: str) -> tuple[str, Params]:
    """Return the history part of ``found`` (which has an ``as_of``): ``columns`` over ``m``.

    ``columns`` may also name the scope's ids over alias ``s``.
    """
    moment = found.as_of
    where, params = scope_where(found.scope, "m")
    more, values = found.filter_and_bounds(_metadata_filter, "?")
    moments, moment_params = moment_conditions(found)
    parts = [where, "(m.created_at IS NULL OR m.created_at <= ?)", *more, *moments]
    sql = (
        f"SELECT {columns} FROM ({_PAST}) AS m CROSS JOIN memory_scopes AS s "
        f"ON s.scope = m.scope WHERE {' AND '.join(parts)}"
    )
    return sql, [*[moment] * 5, *params, moment, *values, *moment_params]


def _metadata_filter(filter: Mapping[str, Any]) -> tuple[str, Params]:
    return to_sql(filter, "m.metadata")


def as_then(record: MemoryRecord, as_of: str | None) -> MemoryRecord:
    """Return ``record`` as it was at ``as_of``: not retired if it was retired after it."""
    if as_of is None or record.invalidated_at is None or record.invalidated_at <= as_of:
        return record
    return dataclasses.replace(record, invalidated_at=None, superseded_by=None)


def row_then(row: Row, as_of: str | None) -> Row:
    """Return a candidate row as it was at ``as_of``: unmarked if retired after it.

    A row is ``(seq, id, content, metadata, invalidated_at, superseded_by)``.
    """
    if as_of is None or row[4] is None or row[4] <= as_of:
        return row
    return (*row[:4], None, None)


_ANY_RETIRED = (
    "SELECT 1 FROM memories INDEXED BY memories_retired WHERE invalidated_at IS NOT NULL LIMIT 1"
)

CANDIDATE_COLUMNS = "m.seq, m.id, m.content, m.metadata, m.invalidated_at, m.superseded_by"
"""A search's candidate row, over alias ``m`` (see :func:`agentrecall.stores.records.hit`)."""


@dataclass(frozen=True, slots=True)
class Then:
    """What a search reads beyond its live conditions: the moment and its history part.

    Attributes:
        as_of: the moment, or ``None`` for now.
        versions: SQL and parameters selecting the history part's candidate rows
            (:data:`CANDIDATE_COLUMNS`, every one meeting the search's conditions), or ``None``.
        hides_retired: whether the search leaves retired memories out.
    """

    as_of: str | None = None
    versions: tuple[str, Params] | None = None
    hides_retired: bool = True

    @classmethod
    def of(cls, found: Conditions) -> Then:
        """Return the history part of a search with conditions ``found``."""
        if found.as_of is None:
            return NOW if not found.include_superseded else cls(hides_retired=False)
        return cls(found.as_of, past(found, CANDIDATE_COLUMNS), not found.include_superseded)

    def crowded(self, db: sqlite3.Connection) -> bool:
        """Whether retired memories left out may crowd current ones out of the best candidates.

        A search picks the best memories by their words, then applies its conditions: when
        many retired memories share a query's words (a fact superseded a hundred times), the
        best would all be retired and a current memory further down never picked
        (:func:`~agentrecall.stores.sqlite.candidates.candidates` then checks the conditions
        as a filtered search does). A store that holds no retired memory (one probe of their
        partial index) never is.
        """
        return self.hides_retired and db.execute(_ANY_RETIRED).fetchone() is not None

    def rows(self, rows: Sequence[Row]) -> list[Row]:
        """Return candidate rows as they were at the moment (see :func:`row_then`)."""
        if self.as_of is None:
            return list(rows)
        return [row_then(row, self.as_of) for row in rows]


NOW = Then()
"""A search of the memories as they are."""
