"""Which postings of a keyword query's terms become candidates, rare terms first.

Backend-neutral: a backend counts (or estimates) how many memories hold each term, this plan
says how many of each term's postings its index reads, and the candidates it picks are ranked
by exact BM25 (:func:`agentrecall.retrieval.bm25.rerank`). Rare terms tell memories apart, so
they get the budget; a common term adds only its newest postings, or none (it still scores).
The measurements behind the numbers are in ``benchmarks/results/keyword-engines.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agentrecall.retrieval.bm25 import idf

PROBE_POSTINGS = 1_000
"""A term's document frequency is counted exactly below this many postings, estimated above."""

POSTINGS_BUDGET = 20_000
"""Rarest terms first, a term's postings are all candidates while the running total fits this."""

COMMON_SHARE = 0.05
"""A term held by more than this share of memories adds no candidates (it still scores)."""

NEWEST_POSTINGS = 300
"""A term past the budget but not common adds only its newest this many postings."""

CANDIDATES = 100
"""How many candidates the index picks for the exact BM25 rerank."""

MAX_QUERY_TERMS = 64
"""A query's rarest this many terms take part in a search; the commoner others are left out.

Each term is one part of the statement that picks candidates, and SQLite takes at most 500;
a pasted document has thousands of distinct words. Rare words tell memories apart, common
ones add almost nothing to a score; no LoCoMo question has more than 11 terms."""


def estimate_df(newest: int, lowest: int | None, first: int, last: int) -> int:
    """Return how many memories hold a term, from a probe of its newest postings.

    Args:
        newest: how many postings the probe found (at most ``PROBE_POSTINGS``).
        lowest: the lowest row id among them.
        first: the lowest row id of the store.
        last: the highest row id of the store.

    Below ``PROBE_POSTINGS`` the count is exact. Otherwise the term is assumed as dense over the
    whole id range as over the stretch its newest postings span: counting a long posting list
    costs time in proportion to its length, the estimate costs nothing.
    """
    if newest < PROBE_POSTINGS or lowest is None:
        return newest
    span = max(1, last - lowest + 1)
    return max(newest, round(newest * (last - first + 1) / span))


@dataclass(frozen=True, slots=True)
class TermPlan:
    """How one query term takes part in a search.

    ``postings`` is how many of its newest postings become candidates: ``None`` for all of
    them, ``0`` for none (the term still counts in the rerank).
    """

    term: str
    weight: float
    postings: int | None


def plan_terms(df: Mapping[str, int], total: int, budget: int | None = None) -> list[TermPlan]:
    """Decide, rarest term first, how many of each term's postings are candidates.

    A term adds all its postings while the running total of postings stays within ``budget``
    (default ``POSTINGS_BUDGET``; a term under ``PROBE_POSTINGS`` always does); after that, a
    term held by at most ``COMMON_SHARE`` of the memories adds its ``NEWEST_POSTINGS`` newest,
    and a more
    common term adds none. Rare terms tell memories apart, so they get the budget; if no term
    adds candidates, the rarest adds its newest, so a query of common words still finds some.
    Terms no memory holds are left out, and so are all but the ``MAX_QUERY_TERMS`` rarest
    (fewest memories, then the term's text): they neither add candidates nor score.
    """
    plans: list[TermPlan] = []
    running = 0
    limit = POSTINGS_BUDGET if budget is None else budget
    held = sorted((count, term) for term, count in df.items() if count > 0)
    for count, term in held[:MAX_QUERY_TERMS]:
        postings: int | None
        if count < PROBE_POSTINGS or running + count <= limit:
            postings = None
            running += count
        elif count <= COMMON_SHARE * total:
            postings = NEWEST_POSTINGS
        else:
            postings = 0
        plans.append(TermPlan(term, idf(count, total), postings))
    if plans and all(plan.postings == 0 for plan in plans):
        plans[0] = TermPlan(plans[0].term, plans[0].weight, NEWEST_POSTINGS)
    return plans
