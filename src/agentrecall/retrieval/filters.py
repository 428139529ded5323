"""Metadata filters: check them, evaluate them in Python, render them as SQLite SQL.

A filter is a mapping ``{field: condition}``. Every field must hold for a memory to match (the
fields AND together); an empty filter (or ``None``) matches every memory.

* **Fields** are top-level metadata keys, taken verbatim: ``"a.b"`` names the key ``"a.b"``, not
  the key ``"b"`` inside ``"a"``. Nested objects cannot be reached. A field name is a non-empty
  string of valid Unicode without U+0000, and must not start with ``$`` (that is where logical
  operators such as ``$or`` would go, and they are not supported).
* **A condition** is either a plain JSON scalar (string, number, boolean or ``null``), meaning
  equality, or a non-empty mapping of operators, all of which must hold:

  - ``{"$eq": scalar}``: equal (the same as the plain scalar); a missing key does not match;
  - ``{"$ne": scalar}``: not equal; a missing key matches;
  - ``{"$in": [scalar, ...]}``: equal to one of the list (an empty list matches nothing); a
    missing key does not match;
  - ``{"$nin": [scalar, ...]}``: equal to none of the list; a missing key matches;
  - ``{"$gt": x}``, ``$gte``, ``$lt``, ``$lte``, where ``x`` is a number or a string: ordered
    after, at or after, before, at or before ``x``; a missing key does not match;
  - ``{"$exists": True}`` / ``{"$exists": False}``: the key is present (with any value,
    ``null`` included) / absent.

Values compare the JSON way, by type first:

* equality holds only between values of one JSON type: ``True`` never equals ``1``, ``"1"``
  never equals ``1``; integers and floats are one type, compared by exact value (``1 == 1.0``);
  ``null`` equals ``null``. A stored array or object equals no scalar, so ``$ne`` matches it;
* ``$gt``/``$gte``/``$lt``/``$lte`` compare numbers with numbers and strings with strings (by
  code point, which is also UTF-8 byte order); any other pairing never matches, booleans are
  not numbers;
* ``$ne`` and ``$nin`` are the exact negations of ``$eq`` and ``$in``, so they match a missing key
  (the MongoDB reading).

A filter holds at most :data:`MAX_CONDITIONS` conditions: each plain value and each operator
of a field is one (``{"a": 1, "b": {"$gt": 0, "$lt": 9}}`` holds three). SQL stores render
every condition as a term of one expression, which SQLite nests one level deeper per term and
repeats in each part of a search's statement; a longer filter is refused up front, the same way
by every store, rather than failing in one of them.

Operands are checked: scalars must be finite, integers must fit in 64 bits and strings must be
valid Unicode without U+0000, so every filter that passes :func:`check_filter` evaluates the
same way here and in SQLite. Stored values have two limits in SQL stores, mirrored here where
possible: an integer outside the signed 64-bit range compares as the nearest float (as SQLite
reads it), and a stored string (or key) containing U+0000 is compared by SQLite only up to that
character, so filters on such strings are unreliable.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall._internal.text import check_text
from agentrecall.errors import InvalidArgumentError

__all__ = [
    "MAX_CONDITIONS",
    "OPERATORS",
    "Field",
    "MetadataFilter",
    "Test",
    "check_filter",
    "matcher",
    "matches",
    "parse",
    "to_sql",
    "value_sets",
]

MetadataFilter = Mapping[str, Any]
"""A metadata filter: ``{field: condition}``, as described in the module docstring."""

OPERATORS: tuple[str, ...] = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists")
"""Every operator a condition may use."""

MAX_CONDITIONS = 100
"""The most conditions (plain values and operators, over all fields) a filter may hold.

Far beyond any filter written by hand, and well within what both SQL stores run: SQLite's
expression depth (1,000 by default) and its 32,766 parameters, PostgreSQL's 65,535, with the
filter repeated in each of a search's up to 64 term parts
(:data:`~agentrecall.retrieval.plan.MAX_QUERY_TERMS`)."""

_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}
_SQL_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SCALARS = "a string, a finite number, true, false or null"
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?\Z")
_ROW = "ar_member"  # alias of json_each in the SQL; unlikely to shadow a caller's names


@dataclass(frozen=True, slots=True)
class Test:
    """One checked condition on a field: an operator and its operand."""

    operator: str
    operand: Any  # a scalar, a tuple of scalars ($in, $nin) or a bool ($exists)


@dataclass(frozen=True, slots=True)
class Field:
    """A field of a checked filter: the metadata key and every test it must pass."""

    name: str
    tests: tuple[Test, ...]


def check_filter(filter: MetadataFilter | None) -> None:
    """Raise unless ``filter`` is a valid metadata filter; ``None`` is valid and matches all.

    Raises:
        InvalidArgumentError: the filter is malformed, or holds more than
            :data:`MAX_CONDITIONS` conditions; the message names the field and the operator at
            fault, or the limit, and says what was expected (also a ``ValueError``).
    """
    parse(filter)


def matcher(filter: MetadataFilter | None) -> Callable[[Mapping[str, Any] | None], bool]:
    """Check ``filter`` once and return a function telling whether a metadata mapping matches.

    The returned function never raises for any mapping (non-JSON values match nothing but
    ``$ne``, ``$nin`` and ``$exists``); ``None`` metadata behaves as an empty mapping.

    Raises:
        InvalidArgumentError: as :func:`check_filter`.
    """
    fields = parse(filter)

    def test(metadata: Mapping[str, Any] | None) -> bool:
        return all(_field_matches(field, metadata) for field in fields)

    return test


def matches(metadata: Mapping[str, Any] | None, filter: MetadataFilter | None) -> bool:
    """Return whether ``metadata`` satisfies ``filter``; ``None`` metadata has no keys.

    Raises:
        InvalidArgumentError: as :func:`check_filter`.
    """
    return matcher(filter)(metadata)


def to_sql(filter: MetadataFilter | None, column: str) -> tuple[str, list[object]]:
    """Render ``filter`` as an SQLite boolean expression over a JSON text ``column``.

    The expression is parenthesized (or ``1`` for an empty filter) so it can be ANDed into any
    ``WHERE`` clause, and it selects exactly the rows whose column value :func:`matches` would
    accept once parsed (SQL ``NULL`` counts as no metadata). Every key and value travels as a
    bound parameter, in the order of the returned list; keys are looked up with ``json_each``,
    which decodes escapes, so keys with quotes, dots, brackets or non-ASCII characters work
    however the JSON text was escaped. The column must hold well-formed JSON (else SQLite
    raises "malformed JSON"). Needs SQLite 3.38+, or an earlier build with JSON1.

    Args:
        filter: the metadata filter.
        column: the column holding metadata as JSON text: an identifier, optionally qualified
            as ``table.column``; it is written into the SQL as given.

    Raises:
        InvalidArgumentError: the filter is malformed (as :func:`check_filter`) or ``column``
            is not a plain or qualified identifier.
    """
    fields = parse(filter)
    if not isinstance(column, str) or not _COLUMN.match(column):
        raise InvalidArgumentError(
            f"column must be an SQL identifier such as 'metadata' or 'm.metadata', got {column!r}"
        )
    if not fields:
        return "1", []
    parts: list[str] = []
    params: list[object] = []
    for field in fields:
        parts.append(_field_sql(field, column, params))
    return "(" + " AND ".join(parts) + ")", params


def value_sets(filter: MetadataFilter | None) -> list[tuple[str, tuple[object, ...]]]:
    """Return ``(field, values)`` for each field that a match must hold with one of ``values``.

    The values are those of the field's first ``$eq`` (or plain value) or ``$in`` test, so
    every memory the filter matches has, at the field's key, a value equal to one of them (by
    the JSON equality of the module docstring; an empty tuple: no memory matches). An index
    of metadata values can thus narrow a search to a superset of the matches; fields without
    such a test are not listed.

    Raises:
        InvalidArgumentError: as :func:`check_filter`.
    """
    sets = []
    for field in parse(filter):
        for test in field.tests:
            if test.operator in ("$eq", "$in"):
                values = (test.operand,) if test.operator == "$eq" else tuple(test.operand)
                sets.append((field.name, values))
                break
    return sets


# ---------------------------------------------------------------------------------- checking


def parse(filter: object) -> tuple[Field, ...]:
    """Check ``filter`` and return its fields, for a backend that renders filters its own way.

    Raises:
        InvalidArgumentError: as :func:`check_filter`.
    """
    if filter is None:
        return ()
    if not isinstance(filter, Mapping):
        raise InvalidArgumentError(
            "filter must be a mapping of metadata field names to conditions, "
            f"got {type(filter).__name__}"
        )
    if len(filter) > MAX_CONDITIONS:  # before reading them: the count alone refuses it
        _too_many(len(filter), "fields")
    fields = tuple(
        Field(_field_name(name), _parse_condition(name, condition))
        for name, condition in filter.items()
    )
    conditions = sum(len(field.tests) for field in fields)
    if conditions > MAX_CONDITIONS:
        _too_many(conditions, "conditions")
    return fields


def _too_many(count: int, what: str) -> None:
    raise InvalidArgumentError(
        f"filter has {count} {what}, more than the {MAX_CONDITIONS} conditions a filter may "
        "hold (each plain value and each operator is one)"
    )


def _field_name(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidArgumentError(
            f"filter field names must be strings (metadata keys), got {name!r} "
            f"({type(name).__name__})"
        )
    if not name:
        raise InvalidArgumentError("filter field names must not be empty")
    if name.startswith("$"):
        raise InvalidArgumentError(
            f"unknown operator {name!r} at the top of the filter: top-level keys are metadata "
            "field names, which all must match; logical operators ($and, $or, $not) are not "
            "supported"
        )
    _check_text(name, f"filter field name {name!r}")
    return name


def _parse_condition(field: str, condition: object) -> tuple[Test, ...]:
    if isinstance(condition, Mapping):
        if not condition:
            raise InvalidArgumentError(
                f"condition for field {field!r} is an empty mapping; give a value for equality "
                "or at least one operator, such as {'$eq': value}"
            )
        return tuple(_parse_operator(field, op, operand) for op, operand in condition.items())
    if isinstance(condition, (list, tuple)):
        raise InvalidArgumentError(
            f"condition for field {field!r} is a list; equality takes one value ({_SCALARS}); "
            "to match any of several values use {'$in': [...]}"
        )
    return (Test("$eq", _scalar(condition, f"the value for field {field!r}")),)


def _parse_operator(field: str, op: object, operand: object) -> Test:
    if not isinstance(op, str) or not op.startswith("$"):
        raise InvalidArgumentError(
            f"condition for field {field!r} has the key {op!r}, which is not an operator: a "
            f"condition is a value ({_SCALARS}) or a mapping of operators; fields name "
            "top-level metadata keys, so nested objects cannot be matched"
        )
    where = f"operator {op} for field {field!r}"
    if op in ("$eq", "$ne"):
        return Test(op, _scalar(operand, where))
    if op in ("$in", "$nin"):
        if not isinstance(operand, (list, tuple)):
            raise InvalidArgumentError(
                f"{where} takes a list of values, got {type(operand).__name__}"
            )
        return Test(op, tuple(_scalar(v, f"{where}, item {i}") for i, v in enumerate(operand)))
    if op in _COMPARISONS:
        if isinstance(operand, bool) or not isinstance(operand, (int, float, str)):
            raise InvalidArgumentError(
                f"{where} takes a number or a string (booleans are not numbers), got {operand!r}"
            )
        return Test(op, _scalar(operand, where))
    if op == "$exists":
        if not isinstance(operand, bool):
            raise InvalidArgumentError(f"{where} takes True or False, got {operand!r}")
        return Test(op, operand)
    raise InvalidArgumentError(
        f"unknown operator {op!r} for field {field!r}; expected one of {', '.join(OPERATORS)}"
    )


def _scalar(value: object, where: str) -> object:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise InvalidArgumentError(f"{where}: integers must fit in 64 bits, got {value}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgumentError(f"{where}: numbers must be finite, got {value!r}")
        return value
    if isinstance(value, str):
        _check_text(value, where)
        return value
    nested = " (operators do not nest)" if isinstance(value, Mapping) else ""
    raise InvalidArgumentError(f"{where} must be {_SCALARS}, got {type(value).__name__}{nested}")


def _check_text(text: str, where: str) -> None:
    # SQLite's JSON reader stops a string at U+0000, and a lone surrogate cannot be bound as
    # UTF-8: either would make SQL and Python disagree, so both are refused up front.
    if "\0" in text:
        raise InvalidArgumentError(f"{where} must not contain U+0000 (NUL)")
    check_text(text, where)


# -------------------------------------------------------------------------------- in Python


def _field_matches(field: Field, metadata: Mapping[str, Any] | None) -> bool:
    present = metadata is not None and field.name in metadata
    value = metadata[field.name] if present and metadata is not None else None
    return all(_passes(test, present, value) for test in field.tests)


def _passes(test: Test, present: bool, value: Any) -> bool:
    op, operand = test.operator, test.operand
    if op == "$exists":
        return bool(present == operand)
    if op == "$ne":
        return not (present and _equal(value, operand))
    if op == "$nin":
        return not (present and any(_equal(value, item) for item in operand))
    if not present:
        return False
    if op == "$eq":
        return _equal(value, operand)
    if op == "$in":
        return any(_equal(value, item) for item in operand)
    kind = _kind(value)
    if kind not in ("number", "string") or kind != _kind(operand):
        return False
    return _COMPARISONS[op](_stored(value), operand)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _equal(value: object, operand: object) -> bool:
    kind = _kind(value)
    return kind != "other" and kind == _kind(operand) and _stored(value) == operand


def _stored(value: Any) -> Any:
    """Return a stored value as SQLite reads it from JSON text."""
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        # SQLite reads integer literals beyond 64 bits as the nearest double (or infinity).
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    return value


# ----------------------------------------------------------------------------------- in SQL


def _field_sql(field: Field, column: str, params: list[object]) -> str:
    """Return the SQL for one field, appending its parameters to ``params`` in order."""
    # ``json_each`` yields at most one member per key (Python never writes duplicate keys), so
    # "the key is present and its value passes every positive test" is one EXISTS, and the
    # negated tests ($ne, $nin) are one NOT EXISTS over the OR of their positive forms.
    must: list[str] = []
    must_params: list[object] = []
    must_not: list[str] = []
    must_not_params: list[object] = []
    require_key = forbid_key = False
    for test in field.tests:
        op, operand = test.operator, test.operand
        if op == "$exists":
            require_key, forbid_key = require_key or operand, forbid_key or not operand
        elif op == "$eq":
            must.append(_equal_sql(operand, must_params))
        elif op == "$in":
            must.append(_in_sql(operand, must_params))
        elif op == "$ne":
            must_not.append(_equal_sql(operand, must_not_params))
        elif op == "$nin":
            must_not.append(_in_sql(operand, must_not_params))
        else:
            must.append(_compare_sql(op, operand, must_params))
    member = f"SELECT 1 FROM json_each({column}) AS {_ROW} WHERE {_ROW}.key = ?"
    parts: list[str] = []
    if must or require_key:
        parts.append(f"EXISTS ({member}{''.join(' AND ' + p for p in must)})")
        params += [field.name, *must_params]
    if forbid_key:
        parts.append(f"NOT EXISTS ({member})")
        params.append(field.name)
    elif must_not:
        parts.append(f"NOT EXISTS ({member} AND ({' OR '.join(must_not)}))")
        params += [field.name, *must_not_params]
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


def _equal_sql(operand: object, params: list[object]) -> str:
    # json_each reports JSON true/false as the integers 1/0 in ``atom``: the type tells them
    # apart from numbers, and integers and reals compare by exact value in SQLite as in Python.
    if operand is None:
        return f"{_ROW}.type = 'null'"
    if isinstance(operand, bool):
        return f"{_ROW}.type = '{'true' if operand else 'false'}'"
    params.append(operand)
    if isinstance(operand, str):
        return f"({_ROW}.type = 'text' AND {_ROW}.atom = ?)"
    return f"({_ROW}.type IN ('integer', 'real') AND {_ROW}.atom = ?)"


def _in_sql(operands: Sequence[object], params: list[object]) -> str:
    # The values travel as one JSON array per type, so a list of any length takes one bound
    # parameter, well under SQLite's limit on parameters per statement.
    types = sorted(
        {_json_type_of_constant(v) for v in operands if v is None or isinstance(v, bool)}
    )
    strings = [v for v in operands if isinstance(v, str)]
    numbers = [v for v in operands if _kind(v) == "number"]
    options = []
    if types:
        options.append(f"{_ROW}.type IN ({', '.join(types)})")
    for values, sql_types in ((strings, "'text'"), (numbers, "'integer', 'real'")):
        if values:
            options.append(
                f"({_ROW}.type IN ({sql_types}) AND "
                f"{_ROW}.atom IN (SELECT value FROM json_each(?)))"
            )
            params.append(json.dumps(values, ensure_ascii=False))
    return "(" + " OR ".join(options) + ")" if options else "0"


def _json_type_of_constant(value: object) -> str:
    return "'null'" if value is None else ("'true'" if value else "'false'")


def _compare_sql(op: str, operand: object, params: list[object]) -> str:
    params.append(operand)
    sql_types = "'text'" if isinstance(operand, str) else "'integer', 'real'"
    return f"({_ROW}.type IN ({sql_types}) AND {_ROW}.atom {_SQL_COMPARISONS[op]} ?)"
