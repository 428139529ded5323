"""Keyword search in ``PostgresStore``: the GIN index picks candidates, shared BM25 ranks them.

The plan is the one every backend uses (:func:`agentrecall.retrieval.plan.plan_terms`): each
term's document frequency is counted from its newest ``PROBE_POSTINGS`` postings (estimated
beyond, as SQLite does), rare terms give all their postings, a common one only its newest or
none; the memories with the highest summed term weights are the candidates, and exact BM25
over their text (:func:`agentrecall.retrieval.bm25.rerank`) ranks them. The search's
conditions (scope, expiry, filter, time bounds) apply inside each term's part, before its
newest-postings limit, so a small scope in a large store still gets its own candidates.
Term statistics (memories, average length, frequencies) are the whole store's, over every
scope, as in SQLite.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrecall.retrieval.bm25 import rerank
from agentrecall.retrieval.plan import CANDIDATES, PROBE_POSTINGS, estimate_df, plan_terms
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
    total, length, first, last = await _statistics(connection, tables)
    if not total:
        return []
    distinct = sorted(set(terms.values()))
    df = await _frequencies(connection, tables, distinct, first, last)
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


async def _statistics(connection: Connection, tables: Tables) -> tuple[int, int, int, int]:
    """Return the store's memories, their total terms, and its lowest and highest row numbers."""
    cursor = await connection.execute(
        f"SELECT (SELECT coalesce(sum(memories), 0) FROM {tables.schema}.store_stats "
        "WHERE store = %s), "
        f"(SELECT coalesce(sum(terms), 0) FROM {tables.schema}.store_stats WHERE store = %s), "
        f"(SELECT min(seq) FROM {tables.memories} WHERE store = %s), "
        f"(SELECT max(seq) FROM {tables.memories} WHERE store = %s)",
        [tables.store] * 4,
    )
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2] or 0), int(row[3] or 0)


async def _frequencies(
    connection: Connection, tables: Tables, terms: list[str], first: int, last: int
) -> dict[str, int]:
    """Return how many of the store's memories hold each term (estimated when many do)."""
    cursor = await connection.execute(
        "SELECT t.term, p.n, p.low FROM unnest(%s::text[], %s::tsquery[]) AS t (term, q) "
        "CROSS JOIN LATERAL (SELECT count(*) AS n, min(seq) AS low FROM ("
        f"SELECT seq FROM {tables.memories} WHERE store = %s AND terms @@ t.q "
        f"ORDER BY seq DESC LIMIT {PROBE_POSTINGS}) AS newest) AS p",
        [terms, [tsquery([term]) for term in terms], tables.store],
    )
    return {
        term: estimate_df(int(newest), lowest, first, last)
        for term, newest, lowest in await cursor.fetchall()
    }


def _text(row: Any) -> str:
    return str(row[2])


def _seq(row: Any) -> int:
    return int(row[0])
