"""Bounded BM25 search over ``SQLiteStore``'s full-text index.

Which terms and postings are scored is decided by the pure planner in
:mod:`agentrecall.stores.sqlite.query` (see ``benchmarks/results/keyword-engines.md`` for the
measurements behind it); this module runs the plan: one cheap probe per term, one statement that
sums the candidates' weights inside SQLite, then an exact BM25 rerank of the best candidates.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from agentrecall._internal.sqlite import Database
from agentrecall.stores.sqlite.query import (
    CANDIDATES,
    PROBE_POSTINGS,
    SCOPE_TERMS,
    Scope,
    averages,
    bm25,
    candidate_query,
    estimate_df,
    match_expression,
    plan_terms,
)
from agentrecall.stores.sqlite.rows import metadata as decode_metadata
from agentrecall.types import MemoryEntry

# Counting the newest postings of a term, up to a bound, costs little whatever its frequency.
PROBE = (
    "SELECT count(*), min(rowid) FROM (SELECT rowid FROM memories_fts "
    f"WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT {PROBE_POSTINGS})"
)


def ranked_search(
    database: Database,
    terms: list[str],
    limit: int,
    where: str,
    params: list[object],
    scope: Scope,
    filtered: bool,
) -> list[MemoryEntry]:
    """Pick candidates with the bounded plan of ``plan_terms``, then rank them by BM25.

    ``where`` (over alias ``m``, with ``params``) selects the memories the search may return.
    A small scope or a selective filter still finds its own memories among many others: the
    scope narrows each term's postings inside the full-text index (which indexes scope
    numbers), and with ``filtered`` (metadata or time conditions), or a view spanning more
    than ``SCOPE_TERMS`` scopes, ``where`` is checked for each posting before the newest-
    postings limits.
    """
    wanted = max(CANDIDATES, limit)

    def read(db: sqlite3.Connection) -> tuple[list[Any], dict[str, float], float]:
        record = db.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
        total, tokens = averages(record[0] if record else None)
        if not total:
            return [], {}, 0.0
        # Two subqueries: min and max together in one SELECT would scan the table.
        first, last = db.execute(
            "SELECT (SELECT min(seq) FROM memories), (SELECT max(seq) FROM memories)"
        ).fetchone()
        scopes: list[int] | None = None
        inside = filtered
        numbers = scope.numbers()
        if numbers is not None:
            scopes = [row[0] for row in db.execute(*numbers)]
            if not scopes:
                return [], {}, 0.0
            if len(scopes) > SCOPE_TERMS:
                scopes, inside = None, True
        df = {}
        for term in terms:
            newest, lowest = db.execute(PROBE, [match_expression([term])]).fetchone()
            df[term] = estimate_df(newest, lowest, first or 0, last or 0)
        plans = plan_terms(df, total)
        values: list[object] = []
        for plan in plans:
            if plan.postings != 0:
                values += [plan.weight, match_expression([plan.term], scopes)]
                values += params if inside else []
        if not values:
            return [], {}, 0.0
        candidates = candidate_query(plans, where if inside else None, wanted)
        rows = db.execute(
            "SELECT m.seq, m.id, m.content, m.metadata "
            f"FROM ({candidates}) AS c JOIN memories AS m ON m.seq = c.id WHERE {where}",
            [*values, wanted, *params],
        ).fetchall()
        return rows, {plan.term: plan.weight for plan in plans}, tokens / total

    rows, weights, average_length = database.run(read)
    scored = [(bm25(weights, row[2], average_length), row) for row in rows]
    scored = sorted((item for item in scored if item[0] > 0), key=lambda i: (-i[0], -i[1][0]))
    return [
        MemoryEntry(
            content=content,
            metadata={**(decode_metadata(metadata) or {}), "_relevanceScore": score},
            id=memory_id,
        )
        for score, (_, memory_id, content, metadata) in scored[:limit]
    ]
