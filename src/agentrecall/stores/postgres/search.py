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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrecall.retrieval.bm25 import rerank
from agentrecall.retrieval.plan import CANDIDATES, plan_terms
from agentrecall.stores.postgres.rows import tsquery
from agentrecall.stores.postgres.tables import Connection, Params, Tables

POSTINGS_BUDGET = 2_000
"""Postings the rare terms of a query may add in all (SQLite's plan allows 20,000): every
posting's memory is read from the table to check the search's conditions, where FTS5 hands
over row ids alone."""

Scored = list[tuple[float, Any]]
"""``(BM25 score, (seq, id, content, metadata JSON))``, best first."""


async def keyword(
    connection: Connection,
    tables: Tables,
    terms: Mapping[str, str],
    limit: int,
    where: str,
    params: Params,
) -> Scored:
    """Return the best ``limit`` memories meeting ``where`` for the query ``terms``, by BM25.

    ``terms`` maps the query's words to their terms, as
    :func:`~agentrecall.retrieval.bm25.query_terms` gives them.
    """
    total, length, df = await _statistics(connection, tables, sorted(set(terms.values())))
    if not total:
        return []
    plans = plan_terms(df, total, POSTINGS_BUDGET)
    members: list[str] = []
    values: list[object] = []
    for plan in plans:
        if plan.postings == 0:
            continue
        member = (
            f"SELECT m.seq, %s::float8 AS w FROM {tables.memories} AS m "
            f"WHERE m.terms @@ %s::tsquery AND {where}"
        )
        if plan.postings is not None:
            member = f"({member} ORDER BY m.seq DESC LIMIT {int(plan.postings)})"
        members.append(member)
        values += [plan.weight, tsquery([plan.term]), *params]
    if not members:
        return []
    cursor = await connection.execute(
        f"WITH c AS (SELECT seq FROM ({' UNION ALL '.join(members)}) AS p GROUP BY seq "
        "ORDER BY sum(w) DESC, seq DESC LIMIT %s) "
        f"SELECT m.seq, m.id, m.content, m.metadata::text FROM c JOIN {tables.memories} AS m "
        "ON m.seq = c.seq",
        [*values, max(CANDIDATES, limit)],
    )
    rows = await cursor.fetchall()
    weights = {plan.term: plan.weight for plan in plans}
    return rerank(weights, rows, _text, _seq, length / total, limit)


async def _statistics(
    connection: Connection, tables: Tables, terms: list[str]
) -> tuple[int, int, dict[str, int]]:
    """Return the store's memories, their total terms, and how many of them hold each term."""
    cursor = await connection.execute(
        "SELECT NULL, sum(memories), sum(terms) "
        f"FROM {tables.schema}.store_stats WHERE store = %s "
        "UNION ALL SELECT term, sum(memories), NULL "
        f"FROM {tables.schema}.term_stats WHERE store = %s AND term = ANY(%s) GROUP BY term",
        [tables.store, tables.store, terms],
    )
    rows = await cursor.fetchall()
    total, length = next((int(n or 0), int(t or 0)) for term, n, t in rows if term is None)
    return total, length, {term: int(n) for term, n, _ in rows if term is not None}


def _text(row: Any) -> str:
    return str(row[2])


def _seq(row: Any) -> int:
    return int(row[0])
