"""Bounded BM25 search over ``SQLiteStore``'s full-text index.

Which terms and postings are scored is decided by the pure planner in
:mod:`agentrecall.stores.sqlite.query` (see ``benchmarks/results/keyword-engines.md`` for the
measurements behind it); this module runs the plan: one statement that cheaply probes every
term, the pick of candidates (:mod:`agentrecall.stores.sqlite.candidates`), then an exact BM25
rerank of the best candidates (a long memory's counts read from those kept for it).
The few memories not indexed yet (``memories_unindexed``) are read directly, counted in the
term statistics and all reranked, so a search finds a memory from the moment it is added.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from agentrecall._internal.sqlite import Database
from agentrecall.retrieval.bm25 import LONG_TEXT, Counts, rerank
from agentrecall.retrieval.keywords import keyword_terms
from agentrecall.retrieval.plan import CANDIDATES, PROBE_POSTINGS, estimate_df, plan_terms
from agentrecall.stores.records import hits
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite.candidates import Checks, candidates
from agentrecall.stores.sqlite.longterms import stored_counts
from agentrecall.stores.sqlite.moments import CANDIDATE_COLUMNS, NOW, Then
from agentrecall.stores.sqlite.narrowing import Narrowing
from agentrecall.stores.sqlite.query import averages, match_expression
from agentrecall.types import MemoryEntry

# Counting the newest postings of a term, up to a bound, costs little whatever its frequency.
# One statement probes every term of a query (the match expressions come as a JSON array):
# a pasted document has thousands of distinct words.
PROBE = (
    "SELECT (SELECT json_array(count(*), min(rowid)) FROM (SELECT rowid FROM memories_fts "
    f"WHERE memories_fts MATCH t.value ORDER BY rowid DESC LIMIT {PROBE_POSTINGS})) "
    "FROM json_each(?) AS t ORDER BY t.key"
)

# The memories waiting for the index, each with whether the search may return it.
UNINDEXED = (
    f"SELECT {CANDIDATE_COLUMNS}, CASE WHEN {{where}} THEN 1 ELSE 0 END "
    "FROM memories_unindexed AS u JOIN memories AS m ON m.seq = u.seq"
)


def ranked_search(
    database: Database,
    terms: Mapping[str, str],
    limit: int,
    where: str,
    params: list[object],
    scope: Scope,
    filtered: bool,
    narrowed: Sequence[Narrowing],
    tidy: bool,
    then: Then = NOW,
) -> list[MemoryEntry]:
    """Pick candidates with the bounded plan of ``plan_terms``, then rank them by BM25.

    ``terms`` are the query's, as :func:`~agentrecall.retrieval.bm25.query_terms` gives
    them: the full-text index is asked for each word, the rerank scores its term.
    ``where`` (over alias ``m``, with ``params``) selects the memories the search may return.
    A small scope still finds its own memories among many others: the scope narrows each
    term's postings inside the full-text index (which indexes scope numbers). ``filtered``
    says whether there are metadata or time conditions, and ``narrowed`` which parts of them
    indexes answer; how candidates that meet the conditions are found is for
    :mod:`~agentrecall.stores.sqlite.candidates` to decide. With ``tidy``, finding memories
    that wait for the index asks the database to index them soon (they may be left over from
    a process that was killed).

    With ``then`` at a past moment, ``where`` selects the live part of it, and the history
    part's versions are read directly, counted in the term statistics and all reranked, as
    the memories waiting for the index are (see :mod:`~agentrecall.stores.sqlite.moments`).
    """

    def read(
        db: sqlite3.Connection,
    ) -> tuple[list[Any], dict[str, float], float, int, dict[int, Counts]]:
        record = db.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
        total, tokens = averages(record[0] if record else None)
        waiting = db.execute(UNINDEXED.format(where=where), params).fetchall()
        past = [] if then.versions is None else db.execute(*then.versions).fetchall()
        held, waiting_tokens = _terms(db, [*waiting, *past], set(terms.values()))
        total += len(waiting) + len(past)
        tokens += waiting_tokens
        if not total:
            return [], {}, 0.0, 0, {}
        df, floors = _frequencies(db, terms, held)
        plans = plan_terms(df, total)
        rows = [row[:6] for row in waiting if row[6]] + past
        if any(plan.postings != 0 for plan in plans):
            wanted = max(CANDIDATES, limit)
            checks = Checks(where, params, filtered, narrowed, wanted, limit, then.crowded(db))
            rows += candidates(db, plans, floors, scope, checks, total)
        weights = {terms[plan.term]: plan.weight for plan in plans}
        long = [row[0] for row in rows if len(row[2]) > LONG_TEXT and row[0] > 0]
        return rows, weights, tokens / total, len(waiting), stored_counts(db, long, weights)

    rows, weights, average_length, waiting, stored = database.run(read)
    if waiting and tidy:
        database.tidy_soon()
    ranked = rerank(
        weights, then.rows(rows), _text, _seq, average_length, limit, lambda row: stored.get(row[0])
    )
    return hits(ranked)


def _text(row: Any) -> str:
    return str(row[2])


def _seq(row: Any) -> int:
    return int(row[0])


def _terms(
    db: sqlite3.Connection, rows: Sequence[Any], wanted: set[str]
) -> tuple[Counter[str], int]:
    """Return how many of ``rows`` hold each ``wanted`` term, and how many terms they hold.

    The rows are memories (or past versions, of negative ``seq``) that the full-text index
    does not count, each ``(seq, id, content, ...)``. A long memory's counts are read from
    those kept for it (:mod:`~agentrecall.stores.sqlite.longterms`).
    """
    long = [row[0] for row in rows if len(row[2]) > LONG_TEXT and row[0] > 0]
    stored = stored_counts(db, long, wanted)
    held: Counter[str] = Counter()
    tokens = 0
    for row in rows:
        kept = stored.get(row[0])
        if kept is None:
            terms = keyword_terms(row[2])
            kept = dict.fromkeys(terms, 1), len(terms)
        held.update(wanted.intersection(kept[0]))
        tokens += kept[1]
    return held, tokens


def _frequencies(
    db: sqlite3.Connection, terms: Mapping[str, str], waiting: Counter[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """Return how many memories hold each word's term, and the floors of the words with many.

    ``terms`` maps each query word to its term. A count is the indexed memories (estimated
    when common) and the ``waiting`` ones holding the term; the floor, when there are at least
    ``PROBE_POSTINGS`` postings, is the lowest row id among the newest ``PROBE_POSTINGS``.
    Both are keyed by word.
    """
    # Two subqueries: min and max together in one SELECT would scan the table.
    first, last = db.execute(
        "SELECT (SELECT min(seq) FROM memories), (SELECT max(seq) FROM memories)"
    ).fetchone()
    expressions = json.dumps([match_expression([word]) for word in terms])
    probes = [json.loads(row[0]) for row in db.execute(PROBE, [expressions])]
    df, floors = {}, {}
    for (word, term), (newest, lowest) in zip(terms.items(), probes, strict=True):
        df[word] = estimate_df(newest, lowest, first or 0, last or 0) + waiting[term]
        if newest >= PROBE_POSTINGS:
            floors[word] = lowest
    return df, floors
