"""Keyword search in ``PostgresStore``: the GIN index picks candidates, shared BM25 ranks them.

The plan is the one every backend uses (:func:`agentrecall.retrieval.plan.plan_terms`) over
each term's exact document frequency, read from ``term_stats`` (a few rows per term, kept
by the writes' triggers in the same transaction; :mod:`~agentrecall.stores.postgres.schema`):
rare terms give all their postings, a common one only its newest or none; the memories with
the highest summed term weights are the candidates, and exact BM25 over their text
(:func:`agentrecall.retrieval.bm25.rerank`) ranks them, reading a long memory's counts from
those kept for it (:mod:`~agentrecall.stores.postgres.longterms`). The search's conditions (scope,
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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall.retrieval.bm25 import LONG_TEXT, rerank
from agentrecall.retrieval.keywords import distinct_terms
from agentrecall.retrieval.plan import CANDIDATES, TermPlan, plan_terms
from agentrecall.stores.postgres import longterms
from agentrecall.stores.postgres.rows import tsquery
from agentrecall.stores.postgres.tables import Connection, Params, Tables

POSTINGS_BUDGET = 2_000
"""Postings the rare terms of a query may add in all (SQLite's plan allows 20,000): every
posting's memory is read from the table to check the search's conditions, where FTS5 hands
over row ids alone."""

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


@dataclass(slots=True)
class _Statement:
    """The pieces of the candidate statement, each with its parameters in text order."""

    windows: list[str]
    members: list[str]
    window_params: Params
    member_params: Params


async def keyword(
    connection: Connection,
    tables: Tables,
    terms: Mapping[str, str],
    limit: int,
    where: str,
    params: Params,
    *,
    marked: bool = False,
    versions: Sequence[Any] = (),
) -> Scored:
    """Return the best ``limit`` memories meeting ``where`` for the query ``terms``, by BM25.

    ``terms`` maps the query's words to their terms, as
    :func:`~agentrecall.retrieval.bm25.query_terms` gives them. With ``marked`` the rows
    carry ``invalidated_at`` and ``superseded_by`` too. ``versions`` are candidates read
    from the history (an ``as_of`` search's history part), rows of the same shape: they count
    in the term statistics and are ranked with the memories, as if they were indexed.
    """
    stats = await _statistics(connection, tables, sorted(set(terms.values())))
    found = _Versions.of(versions, set(terms.values()))
    stats = found.counted(stats)
    if not stats.memories:
        return []
    plans = plan_terms(stats.df, stats.memories, POSTINGS_BUDGET)
    statement = _Statement([], [], [], [])
    for plan in plans:
        if plan.postings != 0:
            _add_part(statement, tables, plan, _floor(plan, stats), where, params)
    if not statement.members and not found.candidates:
        return []
    rows = await _candidates(connection, tables, statement, limit, marked)
    weights = {plan.term: plan.weight for plan in plans}
    unread = [row[0] for row in rows if row[2] is None]
    kept = await longterms.stored(connection, tables, unread, weights)
    rows = await _with_contents(connection, tables, rows, set(unread) - kept.keys())
    rows += found.candidates
    average = stats.length / stats.memories
    ranked = rerank(weights, rows, _text, _seq, average, limit, lambda row: kept.get(row[0]))
    hits = await _with_contents(connection, tables, [row for _, row in ranked], set(unread))
    read = {row[0]: row for row in hits}
    return [(score, read[row[0]]) for score, row in ranked if row[0] in read]


@dataclass(frozen=True, slots=True)
class _Versions:
    """The history part's version rows as the statistics count them, and those to rank."""

    memories: int
    length: int
    df: dict[str, int]
    candidates: list[Any]

    @classmethod
    def of(cls, rows: Sequence[Any], wanted: set[str]) -> _Versions:
        """Count ``rows`` (text at index 2) and keep those holding a term of ``wanted``."""
        length = 0
        df: dict[str, int] = {}
        candidates = []
        for row in rows:
            terms, size = distinct_terms(row[2])
            length += size
            held = wanted.intersection(terms)
            for term in held:
                df[term] = df.get(term, 0) + 1
            if held:
                candidates.append(row)
        return cls(len(rows), length, df, candidates)

    def counted(self, stats: Statistics) -> Statistics:
        """Return ``stats`` with these versions counted in, as if the index held them."""
        df = dict(stats.df)
        for term, n in self.df.items():
            df[term] = df.get(term, 0) + n
        return Statistics(
            stats.memories + self.memories, stats.length + self.length, df, stats.first, stats.last
        )


async def _candidates(
    connection: Connection, tables: Tables, statement: _Statement, limit: int, marked: bool
) -> list[Any]:
    """Return the memories of ``statement``'s postings with the highest summed term weights."""
    if not statement.members:
        return []
    windows = f"{', '.join(statement.windows)}, " if statement.windows else ""
    marks = ", m.invalidated_at, m.superseded_by" if marked else ""
    cursor = await connection.execute(
        f"WITH {windows}c AS (SELECT seq FROM ({' UNION ALL '.join(statement.members)}) AS p "
        "GROUP BY seq ORDER BY sum(w) DESC, seq DESC LIMIT %s) "
        # A long content is read only if it is a hit, or has no kept counts: reading 4 MB
        # took longer than the rest of the search.
        f"SELECT m.seq, m.id, CASE WHEN octet_length(m.content) > {LONG_TEXT} THEN NULL "
        f"ELSE m.content END, m.metadata::text{marks} FROM c JOIN {tables.memories} AS m "
        "ON m.seq = c.seq",
        [*statement.window_params, *statement.member_params, max(CANDIDATES, limit)],
    )
    return list(await cursor.fetchall())


async def _with_contents(
    connection: Connection, tables: Tables, rows: list[Any], seqs: set[int]
) -> list[Any]:
    """Return ``rows`` with the contents of those of ``seqs`` read, if not read already.

    A memory deleted meanwhile is left out.
    """
    wanted = [row[0] for row in rows if row[0] in seqs and row[2] is None]
    if not wanted:
        return rows
    cursor = await connection.execute(
        f"SELECT seq, content FROM {tables.memories} WHERE seq = ANY(%s)", [wanted]
    )
    contents = dict(await cursor.fetchall())
    return [
        row if row[2] is not None else (row[0], row[1], contents[row[0]], *row[3:])
        for row in rows
        if row[2] is not None or row[0] in contents
    ]


def _add_part(
    statement: _Statement,
    tables: Tables,
    plan: TermPlan,
    floor: int | None,
    where: str,
    params: Params,
) -> None:
    """Add one term's postings to ``statement``: all, its newest, or its newest by a window."""
    postings = (
        f"SELECT m.seq, %s::float8 AS w FROM {tables.memories} AS m "
        f"WHERE m.terms @@ %s::tsquery AND {where}"
    )
    values = [plan.weight, tsquery([plan.term]), *params]
    if plan.postings is None:
        statement.members.append(postings)
        statement.member_params.extend(values)
        return
    newest = int(plan.postings)
    if floor is None:
        statement.members.append(f"({postings} ORDER BY m.seq DESC LIMIT {newest})")
        statement.member_params.extend(values)
        return
    name = f"n{len(statement.windows)}"
    statement.windows.append(
        f"{name} AS MATERIALIZED ({postings} AND m.seq > {floor} "
        f"ORDER BY m.seq DESC LIMIT {newest})"
    )
    statement.window_params.extend(values)
    # LIMIT 0 (a full window) never runs the older part's scan.
    statement.members.append(
        f"SELECT seq, w FROM {name} UNION ALL ({postings} AND m.seq <= {floor} "
        f"ORDER BY m.seq DESC LIMIT {newest} - (SELECT count(*) FROM {name}))"
    )
    statement.member_params.extend(values)


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
