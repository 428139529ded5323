"""Keyword search in ``PostgresStore``: the GIN index picks candidates, shared BM25 ranks them.

The plan is the one every backend uses (:func:`agentrecall.retrieval.plan.plan_terms`) over
each term's exact document frequency, read from ``term_stats`` (a few rows per term, kept
by the writes' triggers in the same transaction; :mod:`~agentrecall.stores.postgres.schema`):
rare terms give all their postings, a common one only its newest or none; the memories with
the highest summed term weights are the candidates, and exact BM25 over their text
(:func:`agentrecall.retrieval.bm25.rerank`) ranks them. The search's conditions (scope,
expiry, filter, time bounds) apply inside each term's part, before its newest-postings limit,
so a small scope in a large store still gets its own candidates. Term statistics (memories,
average length, frequencies) are the whole store's, over every scope, as in SQLite; where
SQLite estimates the frequency of a term held by more than ``PROBE_POSTINGS`` memories, this
count is exact, so the two agree below that and may differ slightly above it.

A GIN index cannot hand over a term's newest postings first, so a term limited to its newest
``k`` first looks in a window of the newest ``seq`` values where ``k`` of them are expected
(from its frequency over the store's ``seq`` span, with :data:`WINDOW_MARGIN`): the GIN
bitmap ANDed with the primary key's range of the window reads about ``k`` rows of the table
instead of all the term's postings (for a dense term the planner may still walk back by
``seq``, which stops at ``k``). The rest of the term's part, older than the window, runs only
when the window held fewer than ``k`` (a selective scope or filter, or a term whose postings
are mostly old), so the candidates are exactly the newest ``k`` either way.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from agentrecall._internal.together import both
from agentrecall.retrieval.bm25 import rerank
from agentrecall.retrieval.plan import CANDIDATES, TermPlan, plan_terms
from agentrecall.stores.postgres.rows import tsquery
from agentrecall.stores.postgres.tables import Connection, Params, Tables

POSTINGS_BUDGET = 2_000
"""Postings the rare terms of a query may add in all (SQLite's plan allows 20,000): every
posting's memory is read from the table to check the search's conditions, where FTS5 hands
over row ids alone."""

SPLIT_READS = 600
"""Postings each half must read for a search to read its terms' postings in two halves at once,
on two connections: below this, the second statement and the candidates' separate read cost
more than the half of the work they take off the first."""

WINDOW_MARGIN = 1.25
"""A newest-postings window is sized to hold this many times the postings it must give, on
average: a window that falls short costs a second pass over the older rows, a wider one reads
more rows."""

Scored = list[tuple[float, Any]]
"""``(BM25 score, (seq, id, content, metadata JSON))``, best first."""


@dataclass(frozen=True, slots=True)
class Statistics:
    """A store's term statistics, and the span of its ``seq`` values.

    Attributes:
        memories: how many memories the store holds, over every scope.
        length: their total number of terms.
        df: how many of them hold each query term the store holds at all.
        first: the store's lowest ``seq`` (``None`` when it is empty).
        last: its highest ``seq`` (``None`` when it is empty).
    """

    memories: int
    length: int
    df: dict[str, int]
    first: int | None
    last: int | None


Spare = Callable[[], AbstractAsyncContextManager[Connection | None]]
"""Lends a second connection to the same server for a block if one is idle, else ``None``."""


@dataclass(frozen=True, slots=True)
class _Part:
    """One term's postings in the candidate statement, with its parameters in text order.

    ``window`` is the term's newest-postings window (a materialised ``WITH`` entry that
    ``member`` reads), ``reads`` about how many postings the part reads.
    """

    window: str | None
    member: str
    window_params: Params
    member_params: Params
    reads: int


async def keyword(
    connection: Connection,
    tables: Tables,
    terms: Mapping[str, str],
    limit: int,
    where: str,
    params: Params,
    spare: Spare | None = None,
) -> Scored:
    """Return the best ``limit`` memories meeting ``where`` for the query ``terms``, by BM25.

    ``terms`` maps the query's words to their terms, as
    :func:`~agentrecall.retrieval.bm25.query_terms` gives them. With ``spare``, a search that
    reads many postings reads them in two halves at once, the second on a spare connection,
    when one is idle: the same candidates (up to the order of equal sums), sooner.
    """
    stats = await _statistics(connection, tables, sorted(set(terms.values())))
    if not stats.memories:
        return []
    plans = plan_terms(stats.df, stats.memories, POSTINGS_BUDGET)
    parts = [
        _part(tables, plan, _floor(plan, stats), stats, where, params, number)
        for number, plan in enumerate(item for item in plans if item.postings != 0)
    ]
    if not parts:
        return []
    wanted = max(CANDIDATES, limit)
    halves = _halves(parts) if spare is not None else None
    rows = None
    if halves is not None and spare is not None:
        async with spare() as other:
            if other is not None:
                rows = await _in_halves(connection, other, tables, halves, wanted, (where, params))
    if rows is None:
        rows = await _at_once(connection, tables, parts, wanted)
    weights = {plan.term: plan.weight for plan in plans}
    return rerank(weights, rows, _text, _seq, stats.length / stats.memories, limit)


async def _at_once(
    connection: Connection, tables: Tables, parts: list[_Part], wanted: int
) -> list[Any]:
    """Return the ``wanted`` candidates of ``parts``, read in one statement."""
    head, union, values = _pieces(parts)
    cursor = await connection.execute(
        f"{head}c AS (SELECT seq FROM ({union}) AS p "
        "GROUP BY seq ORDER BY sum(w) DESC, seq DESC LIMIT %s) "
        f"SELECT m.seq, m.id, m.content, m.metadata::text FROM c JOIN {tables.memories} AS m "
        "ON m.seq = c.seq",
        [*values, wanted],
    )
    return await cursor.fetchall()


async def _in_halves(
    connection: Connection,
    other: Connection,
    tables: Tables,
    halves: tuple[list[_Part], list[_Part]],
    wanted: int,
    conditions: tuple[str, Params],
) -> list[Any]:
    """Return the ``wanted`` candidates of both halves, each summed on its own connection.

    A memory deleted, or changed out of the conditions, between the halves and the reading of
    the candidates' rows is left out.
    """
    first, second = await both(_sums(connection, halves[0]), _sums(other, halves[1]))
    for seq, weight in second.items():
        first[seq] = first.get(seq, 0.0) + weight
    best = heapq.nlargest(wanted, first.items(), key=lambda item: (item[1], item[0]))
    where, params = conditions
    cursor = await connection.execute(
        f"SELECT m.seq, m.id, m.content, m.metadata::text FROM {tables.memories} AS m "
        f"WHERE m.seq = ANY(%s) AND {where}",
        [[seq for seq, _ in best], *params],
    )
    return await cursor.fetchall()


async def _sums(connection: Connection, parts: list[_Part]) -> dict[int, float]:
    """Return each memory of ``parts``' postings with the sum of its terms' weights."""
    head, union, values = _pieces(parts)
    cursor = await connection.execute(
        f"{head}p AS ({union}) SELECT seq, sum(w) FROM p GROUP BY seq", values
    )
    return {int(seq): float(weight) for seq, weight in await cursor.fetchall()}


def _pieces(parts: list[_Part]) -> tuple[str, str, Params]:
    """Return the ``WITH`` head (open for one more entry), the union, and their parameters."""
    windows = [part.window for part in parts if part.window is not None]
    head = f"WITH {', '.join(windows)}, " if windows else "WITH "
    union = " UNION ALL ".join(part.member for part in parts)
    values = [value for part in parts for value in part.window_params]
    values += [value for part in parts for value in part.member_params]
    return head, union, values


def _halves(parts: list[_Part]) -> tuple[list[_Part], list[_Part]] | None:
    """Split ``parts`` into two halves of about equal reads, or ``None`` when not worth it.

    Each part goes, most reads first, to the half with fewer so far; the split pays when the
    lighter half still reads :data:`SPLIT_READS` postings.
    """
    halves: tuple[list[_Part], list[_Part]] = ([], [])
    reads = [0, 0]
    for part in sorted(parts, key=lambda item: item.reads, reverse=True):
        lighter = 0 if reads[0] <= reads[1] else 1
        halves[lighter].append(part)
        reads[lighter] += part.reads
    return halves if min(reads) >= SPLIT_READS else None


def _part(
    tables: Tables,
    plan: TermPlan,
    floor: int | None,
    stats: Statistics,
    where: str,
    params: Params,
    number: int,
) -> _Part:
    """Return one term's postings: all, its newest, or its newest by a window."""
    postings = (
        f"SELECT m.seq, %s::float8 AS w FROM {tables.memories} AS m "
        f"WHERE m.terms @@ %s::tsquery AND {where}"
    )
    values = [plan.weight, tsquery([plan.term]), *params]
    held = stats.df[plan.term]
    if plan.postings is None:
        return _Part(None, postings, [], values, held)
    newest = int(plan.postings)
    if floor is None:
        member = f"({postings} ORDER BY m.seq DESC LIMIT {newest})"
        return _Part(None, member, [], values, min(held, newest))
    name = f"n{number}"
    window = (
        f"{name} AS MATERIALIZED ({postings} AND m.seq > {floor} "
        f"ORDER BY m.seq DESC LIMIT {newest})"
    )
    # LIMIT 0 (a full window) never runs the older part's scan.
    member = (
        f"SELECT seq, w FROM {name} UNION ALL ({postings} AND m.seq <= {floor} "
        f"ORDER BY m.seq DESC LIMIT {newest} - (SELECT count(*) FROM {name}))"
    )
    return _Part(window, member, values, values, min(held, newest))


def _floor(plan: TermPlan, stats: Statistics) -> int | None:
    """Return the ``seq`` above which ``plan``'s newest postings are expected, or ``None``.

    ``None`` when the term gives all its postings, or when the window would cover the store.
    """
    if not plan.postings or stats.first is None or stats.last is None:
        return None
    span = stats.last - stats.first + 1
    width = math.ceil(WINDOW_MARGIN * plan.postings * span / max(stats.df[plan.term], 1))
    floor = stats.last - width
    return floor if floor > stats.first else None


async def _statistics(connection: Connection, tables: Tables, terms: list[str]) -> Statistics:
    """Return the store's memories, their total terms, how many hold each term, its seq span."""
    cursor = await connection.execute(
        "SELECT NULL, sum(memories), sum(terms), "
        f"(SELECT min(seq) FROM {tables.memories} WHERE store = %s), "
        f"(SELECT max(seq) FROM {tables.memories} WHERE store = %s) "
        f"FROM {tables.schema}.store_stats WHERE store = %s "
        "UNION ALL SELECT term, sum(memories), NULL, NULL, NULL "
        f"FROM {tables.schema}.term_stats WHERE store = %s AND term = ANY(%s) GROUP BY term",
        [tables.store, tables.store, tables.store, tables.store, terms],
    )
    rows = await cursor.fetchall()
    head = next(row for row in rows if row[0] is None)
    return Statistics(
        memories=int(head[1] or 0),
        length=int(head[2] or 0),
        df={term: int(n) for term, n, *_ in rows if term is not None},
        first=None if head[3] is None else int(head[3]),
        last=None if head[4] is None else int(head[4]),
    )


def _text(row: Any) -> str:
    return str(row[2])


def _seq(row: Any) -> int:
    return int(row[0])
