"""Pure pieces of ``SQLiteStore``: scopes in SQL, the plan of a query's terms, FTS5 records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentrecall.retrieval.bm25 import idf
from agentrecall.stores.scopes import Scope

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

SCOPE_TERMS = 64
"""A view over at most this many exact scopes names them in its full-text queries; a wider
one (say, an agent with thousands of sessions) checks each posting's memory instead."""

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


def plan_terms(df: Mapping[str, int], total: int) -> list[TermPlan]:
    """Decide, rarest term first, how many of each term's postings are candidates.

    A term adds all its postings while the running total of postings stays within
    ``POSTINGS_BUDGET`` (a term under ``PROBE_POSTINGS`` always does); after that, a term held by
    at most ``COMMON_SHARE`` of the memories adds its ``NEWEST_POSTINGS`` newest, and a more
    common term adds none. Rare terms tell memories apart, so they get the budget; if no term
    adds candidates, the rarest adds its newest, so a query of common words still finds some.
    Terms no memory holds are left out, and so are all but the ``MAX_QUERY_TERMS`` rarest
    (fewest memories, then the term's text): they neither add candidates nor score.
    """
    plans: list[TermPlan] = []
    running = 0
    held = sorted((count, term) for term, count in df.items() if count > 0)
    for count, term in held[:MAX_QUERY_TERMS]:
        postings: int | None
        if count < PROBE_POSTINGS or running + count <= POSTINGS_BUDGET:
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


def candidate_query(
    plans: Sequence[TermPlan],
    where: str | None,
    limit: int,
    floors: Mapping[str, int] | None = None,
) -> str:
    """Return SQL picking up to ``limit`` memory row ids by their summed term weights.

    Each term with postings to add becomes one member of a ``UNION ALL``; the sum of weights per
    row decides, the newer row first on a tie. Parameters, per member: the weight, the match
    expression, then (when ``where`` is given) the condition's parameters; then ``limit``.
    With ``where`` (over alias ``m``, and ``f`` for the posting), each member keeps only
    memories meeting it before its newest-postings limit, so a small scope in a large store
    still gets its own candidates. With ``floors`` too, a member with a newest-postings limit
    reads only its term's postings from the row id its floor gives: checking postings one by
    one until enough meet a selective ``where`` costs time in proportion to all the term's
    postings.
    """
    members = []
    for plan in plans:
        if plan.postings == 0:
            continue
        if where is None:
            member = "SELECT rowid AS id, ? AS w FROM memories_fts WHERE memories_fts MATCH ?"
        else:
            floor = (floors or {}).get(plan.term) if plan.postings is not None else None
            since = "" if floor is None else f"f.rowid >= {int(floor)} AND "
            # CROSS JOIN keeps the postings as the outer loop: left to itself, SQLite may walk
            # the scope's index and run one full-text query per memory, many times slower.
            member = (
                "SELECT f.rowid AS id, ? AS w FROM memories_fts AS f "
                "CROSS JOIN memories AS m ON m.seq = f.rowid "
                f"WHERE f.memories_fts MATCH ? AND {since}{where}"
            )
        if plan.postings is not None:
            member = f"SELECT * FROM ({member} ORDER BY id DESC LIMIT {int(plan.postings)})"
        members.append(member)
    return (
        f"SELECT id FROM ({' UNION ALL '.join(members)}) "
        "GROUP BY id ORDER BY sum(w) DESC, id DESC LIMIT ?"
    )


def averages(record: bytes | None) -> tuple[int, int]:
    """Return (rows, tokens) from an FTS5 averages record (two SQLite varints), or (0, 0)."""
    values: list[int] = []
    position = 0
    data = record or b""
    while len(values) < 2 and position < len(data):
        value = 0
        for index in range(9):
            byte = data[position]
            position += 1
            if index == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80 or position >= len(data):
                break
        values.append(value)
    return (values + [0, 0])[0], (values + [0, 0])[1]


def match_expression(terms: list[str], scopes: Sequence[int] | None = None) -> str:
    """Return an FTS5 query matching any of ``terms`` in the text, within ``scopes`` if given.

    Each term is quoted as a literal string and confined to the ``content`` column, so that a
    query word never matches the scope numbers indexed beside it.
    """
    words = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    expression = f"content : ({words})"
    if scopes is not None:
        numbers = " OR ".join(f'"{int(number)}"' for number in scopes)
        expression += f" AND scope : ({numbers})"
    return expression


def scope_where(scope: Scope, alias: str = "m") -> tuple[str, list[object]]:
    """Return an SQL condition selecting ``scope``'s rows (``1`` for the root).

    The rows of ``alias`` carry a ``scope`` number; every exact scope with all of this
    one's ids (a user's view: each of that user's sessions) is selected.
    """
    numbers = scope_numbers(scope)
    if numbers is None:
        return "1", []
    sql, params = numbers
    return f"{alias}.scope IN ({sql})", params


def scope_numbers(scope: Scope) -> tuple[str, list[object]] | None:
    """Return SQL selecting the numbers of the exact scopes ``scope`` sees; the root: None."""
    parts: list[str] = []
    params: list[object] = []
    for column, value in scope.columns().items():
        if value is not None:
            parts.append(f"{column} = ?")
            params.append(value)
    if not parts:
        return None
    return f"SELECT scope FROM memory_scopes WHERE {' AND '.join(parts)}", params
