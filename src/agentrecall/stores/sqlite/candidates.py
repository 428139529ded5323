"""The candidates of a search: the indexed memories that its exact BM25 rerank scores.

Without conditions beyond a small scope, one statement sums each memory's term weights over
the postings the plan allows (:func:`~agentrecall.stores.sqlite.query.candidate_query`) and
keeps the best. Conditions (a metadata filter, time bounds, a view over many scopes) are met
in one of two ways, whichever costs less, and both pick the memories that checking every
posting would pick when no term has a newest-postings limit (in a small store, none has):

* when an index narrows the search to few memories (see
  :mod:`~agentrecall.stores.sqlite.narrowing`), each posting is checked, cheaply, against
  those memories before the plan's limits, so they get their own candidates however many
  others hold the words; a term with a newest-postings limit reads only its newest
  ``PROBE_POSTINGS`` postings, and all of them again if fewer than the hits wanted come back;
* otherwise the best memories without the conditions are checked in order, from a pool of
  :data:`POOL` times the candidates wanted, until enough meet them; if too few do, each
  posting is checked as above.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agentrecall.retrieval.plan import TermPlan
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite.moments import CANDIDATE_COLUMNS
from agentrecall.stores.sqlite.narrowing import (
    NARROWED,
    Count,
    Narrowing,
    PostingTest,
    bound,
    posting_test,
)
from agentrecall.stores.sqlite.query import (
    SCOPE_TERMS,
    candidate_query,
    match_expression,
    scope_numbers,
)

Row = Any
"""A candidate: ``(seq, id, content, metadata, invalidated_at, superseded_by)``."""

_PICK = (
    f"SELECT {CANDIDATE_COLUMNS} FROM ({{candidates}}) AS c "
    "JOIN memories AS m ON m.seq = c.id WHERE {where}"
)
_CHECK = (
    f"SELECT {CANDIDATE_COLUMNS} FROM memories AS m "
    "WHERE m.seq IN (SELECT value FROM json_each(?)) AND {where}"
)


@dataclass(frozen=True, slots=True)
class Checks:
    """A search's conditions and how many candidates it wants.

    Attributes:
        where: SQL over alias ``m`` selecting the memories the search may return.
        params: the parameters of ``where``.
        filtered: whether there is a metadata filter or a time bound.
        narrowed: the parts of the conditions that indexes answer.
        wanted: how many candidates to pick.
        least: how many hits the search returns at most; fewer candidates than that from a
            cheaper way make the search try the next.
        crowded: whether memories the conditions leave out (retired ones) may have taken
            many of the best places; see :func:`candidates`.
    """

    where: str
    params: list[object]
    filtered: bool
    narrowed: Sequence[Narrowing]
    wanted: int
    least: int
    crowded: bool = False


POOL = 4
"""The best ``POOL`` times the wanted memories without the conditions are checked against them.

Enough when a quarter of the memories meet them: checking more of the pool would cost more
than checking the conditions on each posting; sorting a pool of 2,000 instead of 400 made a
search of a million memories 2 ms slower."""


def candidates(
    db: sqlite3.Connection,
    plans: Sequence[TermPlan],
    floors: dict[str, int],
    scope: Scope,
    checks: Checks,
    total: int,
) -> list[Row]:
    """Return the best indexed memories for ``plans`` that meet ``checks``, best first.

    ``floors`` are the terms' lowest row ids among their newest ``PROBE_POSTINGS``; ``total``
    is how many memories the store holds.
    """
    numbers = scope_numbers(scope)
    scopes: list[int] | None = None
    inside = checks.filtered
    if numbers is not None:
        scopes = [row[0] for row in db.execute(*numbers)]
        if not scopes:
            return []
        if len(scopes) > SCOPE_TERMS:
            scopes, inside = None, True
    if not inside:
        best = _pick(
            db, candidate_query(plans, None, checks.wanted), _values(plans, scopes), checks
        )
        # The best memories less the retired among them are the best current ones. When the
        # retired took more than half of the places (a fact superseded a hundred times), a
        # current memory further down may be missed: the conditions are checked as a
        # filter's are. Otherwise what is missed ranks below half the candidates kept.
        if not checks.crowded or len(best) >= max(checks.least, checks.wanted // 2):
            return best
    test = _posting_test(db, checks.narrowed, total)
    if test is None:
        return []
    if not test.narrows:
        found = _from_pool(db, plans, scopes, checks)
        if found is not None:
            return found
    with _narrowed(db, test.rows):
        return _per_posting(db, plans, floors, scopes, checks, test)


def _values(
    plans: Sequence[TermPlan], scopes: list[int] | None, params: Sequence[object] = ()
) -> list[object]:
    """Return the parameters of :func:`candidate_query`'s members, ``params`` in each."""
    values: list[object] = []
    for plan in plans:
        if plan.postings != 0:
            values += [plan.weight, match_expression([plan.term], scopes), *params]
    return values


def _pick(db: sqlite3.Connection, sql: str, values: list[object], checks: Checks) -> list[Row]:
    """Run the candidate statement ``sql``; return its memories that meet the conditions."""
    statement = _PICK.format(candidates=sql, where=checks.where)
    return db.execute(statement, [*values, checks.wanted, *checks.params]).fetchall()


def _posting_test(
    db: sqlite3.Connection, narrowed: Sequence[Narrowing], total: int
) -> PostingTest | None:
    """Return how to narrow the postings, or ``None`` when a narrowing holds no memory."""
    counts = [_count(db, narrowing, total) for narrowing in narrowed]
    if any(count.rows == 0 for count in counts):
        return None
    return posting_test(narrowed, counts, total)


def _count(db: sqlite3.Connection, narrowing: Narrowing, total: int) -> Count:
    """Count the rows of ``narrowing``, up to one more than a selective one holds."""
    rows, lowest, highest = db.execute(
        f"SELECT count(*), min(seq), max(seq) FROM ({narrowing.rows} LIMIT ?)",
        [*narrowing.params, bound(total) + 1],
    ).fetchone()
    return Count(rows, lowest, highest)


def _from_pool(
    db: sqlite3.Connection, plans: Sequence[TermPlan], scopes: list[int] | None, checks: Checks
) -> list[Row] | None:
    """Return the first ``wanted`` of the best memories that meet the conditions, in order.

    ``None`` when too few of the pool meet them: unless the pool held every candidate and no
    term was limited to its newest postings, checking each posting may find more.
    """
    size = POOL * checks.wanted
    sql = candidate_query(plans, None, size)
    pool = [row[0] for row in db.execute(sql, [*_values(plans, scopes), size])]
    found: list[Row] = []
    step = 2 * checks.wanted
    for start in range(0, len(pool), step):
        part = pool[start : start + step]
        rows = db.execute(_CHECK.format(where=checks.where), [json.dumps(part), *checks.params])
        rank = {seq: index for index, seq in enumerate(part)}
        found += sorted(rows, key=lambda row: rank[row[0]])
        if len(found) >= checks.wanted:
            return found[: checks.wanted]
    limited = any(plan.postings for plan in plans)
    return found if len(pool) < size and not limited else None


def _per_posting(
    db: sqlite3.Connection,
    plans: Sequence[TermPlan],
    floors: dict[str, int],
    scopes: list[int] | None,
    checks: Checks,
    test: PostingTest,
) -> list[Row]:
    """Return the candidates, checking the conditions on each posting before the limits."""
    where = f"{test.condition} AND {checks.where}"
    values = _values(plans, scopes, [*test.params, *checks.params])
    if any(plan.postings and plan.term in floors for plan in plans):
        found = _pick(db, candidate_query(plans, where, checks.wanted, floors), values, checks)
        if len(found) >= checks.least:
            return found
    return _pick(db, candidate_query(plans, where, checks.wanted), values, checks)


@contextmanager
def _narrowed(db: sqlite3.Connection, rows: Narrowing | None) -> Iterator[None]:
    """Hold the rows of ``rows`` in :data:`NARROWED` for the ``with`` block, if given.

    One table for the whole statement: a subquery in each of its parts would build a set of
    the rows for each.
    """
    if rows is None:
        yield
        return
    db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {NARROWED} (seq INTEGER PRIMARY KEY)")
    db.execute(f"DELETE FROM temp.{NARROWED}")
    db.execute(f"INSERT INTO temp.{NARROWED} (seq) {rows.rows}", rows.params)
    try:
        yield
    finally:
        db.execute(f"DELETE FROM temp.{NARROWED}")
