"""Pure pieces of ``SQLiteStore``: scopes in SQL, candidate and FTS5 queries, FTS5 records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentrecall.retrieval.plan import TermPlan
from agentrecall.stores.scopes import Scope

SCOPE_TERMS = 64
"""A view over at most this many exact scopes names them in its full-text queries; a wider
one (say, an agent with thousands of sessions) checks each posting's memory instead."""


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
