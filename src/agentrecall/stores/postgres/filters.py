"""Metadata filters rendered as PostgreSQL over a ``jsonb`` column, with the shared semantics.

The filter is checked and parsed by :func:`agentrecall.retrieval.filters.parse`; this module
only writes SQL that selects exactly the rows :func:`~agentrecall.retrieval.filters.matches`
accepts (SQL ``NULL`` counts as no metadata). Every key and value travels as a bound
parameter (``%s``), never in the SQL text:

* equality is ``jsonb`` containment of ``{key: value}`` (served by the GIN index on the
  column), which compares by JSON type first as the shared semantics do: ``true`` is not
  ``1``, ``"1"`` is not ``1``, ``1`` equals ``1.0``, and a stored array equals no scalar;
* ``$in`` is containment of any of an array of ``{key: value}`` (which the index serves too);
* ``NULL`` metadata is FALSE (never ``NULL``) for every test, so ``$ne``/``$nin`` (the NOT of
  the positive test) and ``$exists: false`` hold for it, in a WHERE clause or a SELECT list;
* ordering compares numbers as numbers and strings by code point (``COLLATE "C"``: UTF-8 bytes
  sort as code points), inside a ``CASE`` on the value's JSON type, so no cast ever sees the
  wrong type.

One difference from SQLite: an integer beyond 64 bits is compared exactly (PostgreSQL's
``numeric``), where SQLite reads it as the nearest float.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from agentrecall.retrieval.filters import Field, Test, parse

_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def to_postgres(filter: Mapping[str, Any] | None, column: str) -> tuple[str, list[object]]:
    """Return a boolean SQL expression over the ``jsonb`` ``column`` and its parameters.

    ``column`` is written into the SQL as given (it comes from the store, never a caller).

    Raises:
        InvalidArgumentError: the filter is malformed (as
            :func:`~agentrecall.retrieval.filters.check_filter`).
    """
    fields = parse(filter)
    if not fields:
        return "TRUE", []
    params: list[object] = []
    parts = [_field(field, column, params) for field in fields]
    return "(" + " AND ".join(parts) + ")", params


def _field(field: Field, column: str, params: list[object]) -> str:
    parts = []
    for test in field.tests:
        parts.append(_test(test, field.name, column, params))
    return " AND ".join(parts)


def _test(test: Test, key: str, column: str, params: list[object]) -> str:
    op, operand = test.operator, test.operand
    if op == "$exists":
        params.append(key)
        present = f"coalesce({column} ? %s, FALSE)"
        return present if operand else f"NOT {present}"
    if op in ("$eq", "$ne", "$in", "$nin"):
        # A bare ``@>`` clause, so the GIN index can serve it; ``IS NOT NULL`` makes NULL
        # metadata FALSE, not NULL, so the test stays two-valued wherever the condition is
        # used (under NOT, in a SELECT list). coalesce() would hide the operator from the planner.
        if op in ("$eq", "$ne"):
            params.append(json.dumps({key: operand}, ensure_ascii=False))
            contained = f"({column} @> %s::jsonb AND {column} IS NOT NULL)"
        else:
            params.append([json.dumps({key: value}, ensure_ascii=False) for value in operand])
            contained = f"({column} @> ANY(%s::jsonb[]) AND {column} IS NOT NULL)"
        return contained if op in ("$eq", "$in") else f"NOT {contained}"
    return _compare(op, operand, key, column, params)


def _compare(op: str, operand: object, key: str, column: str, params: list[object]) -> str:
    sign = _COMPARISONS[op]
    if isinstance(operand, str):
        params += [key, key, operand]
        return (
            f"CASE WHEN jsonb_typeof({column} -> %s) = 'string' "
            f'THEN ({column} ->> %s) COLLATE "C" {sign} (%s::text COLLATE "C") ELSE FALSE END'
        )
    # Stored numbers are the JSON text Python wrote (a float as its repr), so comparing them
    # as decimals with the operand's own text agrees with Python, and never overflows.
    params += [key, key, Decimal(repr(operand))]
    return (
        f"CASE WHEN jsonb_typeof({column} -> %s) = 'number' "
        f"THEN ({column} ->> %s)::numeric {sign} %s::numeric ELSE FALSE END"
    )
