"""Metadata filters: every operator and error, and Python and SQLite agreeing on any input."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hostile import HOSTILE_KEYS
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.filters import OPERATORS, check_filter, matcher, matches, to_sql


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, metadata TEXT)")
    yield connection
    connection.close()


def sql_ids(
    db: sqlite3.Connection,
    rows: list[Mapping[str, Any] | None],
    filter: Mapping[str, Any] | None,
    *,
    ensure_ascii: bool = True,
) -> set[int]:
    """Store ``rows`` in the table and return the ids the filter's SQL selects."""
    db.execute("DELETE FROM m")
    db.executemany(
        "INSERT INTO m (id, metadata) VALUES (?, ?)",
        [
            (i, None if row is None else json.dumps(row, ensure_ascii=ensure_ascii))
            for i, row in enumerate(rows)
        ],
    )
    fragment, params = to_sql(filter, "m.metadata")
    return {row[0] for row in db.execute(f"SELECT id FROM m WHERE {fragment}", params)}


def both(db: sqlite3.Connection, metadata: Mapping[str, Any] | None, filter: Any) -> bool:
    """Evaluate in Python and in SQLite, insist they agree, and return the answer."""
    expected = matches(metadata, filter)
    assert sql_ids(db, [metadata], filter) == ({0} if expected else set())
    return expected


# -------------------------------------------------------------------------------- operators


def test_empty_and_none_filters_match_everything(db: sqlite3.Connection) -> None:
    for filter in (None, {}):
        assert both(db, None, filter)
        assert both(db, {"a": 1}, filter)
    assert to_sql(None, "metadata") == ("1", [])


@pytest.mark.parametrize(
    ("value", "condition", "expected"),
    [
        ("x", "x", True),
        ("x", "y", False),
        (1, 1, True),
        (1, 1.0, True),
        (1.5, 1.5, True),
        (True, True, True),
        (False, False, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (0, False, False),
        ("1", 1, False),
        (1, "1", False),
        (None, None, True),
        (0, None, False),
        (None, 0, False),
        ([1], 1, False),
        ({"b": 1}, 1, False),
        (2**53 + 1, 2.0**53, False),
        (2**53, 2.0**53, True),
    ],
)
def test_equality_is_typed(
    db: sqlite3.Connection, value: Any, condition: Any, expected: bool
) -> None:
    assert both(db, {"a": value}, {"a": condition}) is expected
    assert both(db, {"a": value}, {"a": {"$eq": condition}}) is expected
    assert both(db, {"a": value}, {"a": {"$ne": condition}}) is not expected


def test_missing_keys_and_missing_metadata(db: sqlite3.Connection) -> None:
    for metadata in (None, {}, {"other": 1}):
        assert not both(db, metadata, {"a": None})
        assert not both(db, metadata, {"a": {"$eq": 1}})
        assert both(db, metadata, {"a": {"$ne": 1}})
        assert both(db, metadata, {"a": {"$ne": None}})
        assert not both(db, metadata, {"a": {"$in": [1, None]}})
        assert both(db, metadata, {"a": {"$nin": [1, None]}})
        assert not both(db, metadata, {"a": {"$gt": 0}})
        assert not both(db, metadata, {"a": {"$lte": "z"}})
        assert not both(db, metadata, {"a": {"$exists": True}})
        assert both(db, metadata, {"a": {"$exists": False}})


def test_exists_counts_null_values_as_present(db: sqlite3.Connection) -> None:
    assert both(db, {"a": None}, {"a": {"$exists": True}})
    assert not both(db, {"a": None}, {"a": {"$exists": False}})
    assert both(db, {"a": [1]}, {"a": {"$exists": True}})
    assert not both(db, {"a": 1}, {"a": {"$exists": False}})


@pytest.mark.parametrize(
    ("value", "values", "expected"),
    [
        ("b", ["a", "b"], True),
        ("c", ["a", "b"], False),
        (2, [1, 2.0], True),
        (True, [1, "x"], False),
        (1, [True], False),
        (True, [True, None], True),
        (False, [True], False),
        (None, [None], True),
        ("x", [], False),
        ([1], [1], False),
        ("é", ("é", "e"), True),
    ],
)
def test_in_and_nin(db: sqlite3.Connection, value: Any, values: Any, expected: bool) -> None:
    assert both(db, {"a": value}, {"a": {"$in": values}}) is expected
    assert both(db, {"a": value}, {"a": {"$nin": values}}) is not expected


def test_long_in_lists_take_one_parameter(db: sqlite3.Connection) -> None:
    values = [f"v{i}" for i in range(40_000)]  # beyond SQLite's default cap of 32,766 parameters
    fragment, params = to_sql({"a": {"$in": values}}, "metadata")
    assert len(params) == 2
    assert both(db, {"a": "v39999"}, {"a": {"$in": values}})
    assert not both(db, {"a": "v40000"}, {"a": {"$in": values}})


@pytest.mark.parametrize(
    ("value", "op", "operand", "expected"),
    [
        (5, "$gt", 4, True),
        (5, "$gt", 5, False),
        (5, "$gte", 5, True),
        (5, "$lt", 5.5, True),
        (5.5, "$lte", 5, False),
        (-1, "$lt", 0, True),
        (2**53 + 1, "$gt", 2.0**53, True),
        ("b", "$gt", "a", True),
        ("B", "$gt", "a", False),  # code point order: uppercase sorts first
        ("ab", "$gt", "a", True),
        ("é", "$gt", "z", True),
        ("😀", "$gt", "\uffff", True),  # astral characters sort after the whole BMP
        ("", "$lt", "a", True),
        (True, "$gt", 0, False),  # booleans are not numbers
        (False, "$lt", 1, False),
        ("5", "$gt", 4, False),  # mixed types never match
        (5, "$lt", "9", False),
        (None, "$lt", 1, False),
        ([1], "$gt", 0, False),
        ({"b": 1}, "$gt", "", False),
    ],
)
def test_comparisons(
    db: sqlite3.Connection, value: Any, op: str, operand: Any, expected: bool
) -> None:
    assert both(db, {"a": value}, {"a": {op: operand}}) is expected


def test_operators_of_one_field_and_fields_and_together(db: sqlite3.Connection) -> None:
    between = {"n": {"$gte": 2, "$lt": 5}}
    assert [both(db, {"n": n}, between) for n in range(7)] == [
        False, False, True, True, True, False, False,
    ]  # fmt: skip
    two_fields = {"user": "ann", "n": {"$ne": 3}}
    assert both(db, {"user": "ann", "n": 2}, two_fields)
    assert not both(db, {"user": "ann", "n": 3}, two_fields)
    assert not both(db, {"user": "bob", "n": 2}, two_fields)
    assert both(db, {"user": "ann"}, two_fields)
    contradiction = {"a": {"$exists": True, "$ne": None}, "b": {"$exists": False}}
    assert both(db, {"a": 1}, contradiction)
    assert not both(db, {"a": None}, contradiction)
    assert not both(db, {"a": 1, "b": 2}, contradiction)
    assert not both(db, {"a": 1}, {"a": {"$in": [1], "$nin": [1]}})


def test_large_stored_integers_compare_as_sqlite_reads_them(db: sqlite3.Connection) -> None:
    # Beyond 64 bits SQLite reads an integer literal as the nearest double; matches() agrees.
    assert both(db, {"a": 2**64 + 1}, {"a": 2.0**64})
    assert not both(db, {"a": 2**64 + 1}, {"a": {"$gt": 2.0**64}})
    assert both(db, {"a": 10**400}, {"a": {"$gt": 1e308}})
    assert both(db, {"a": -(10**400)}, {"a": {"$lt": -1e308}})
    assert both(db, {"a": 2**63 - 1}, {"a": 2**63 - 1})


@pytest.mark.parametrize("key", HOSTILE_KEYS)
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_hostile_keys_address_exactly_their_own_key(
    db: sqlite3.Connection, key: str, ensure_ascii: bool
) -> None:
    rows: list[Mapping[str, Any] | None] = [{key: "hit"}, {"a": {"b": "hit"}}, {"a": "hit"}, None]
    selected = sql_ids(db, rows, {key: "hit"}, ensure_ascii=ensure_ascii)
    assert selected == {i for i, row in enumerate(rows) if matches(row, {key: "hit"})} == {0}
    absent = sql_ids(db, rows, {key: {"$exists": False}}, ensure_ascii=ensure_ascii)
    assert absent == {1, 2, 3}
    assert db.execute("SELECT count(*) FROM m").fetchone() == (4,)


def test_dotted_fields_do_not_reach_nested_keys(db: sqlite3.Connection) -> None:
    assert not both(db, {"a": {"b": 1}}, {"a.b": 1})
    assert both(db, {"a.b": 1, "a": {"b": 2}}, {"a.b": 1})


def test_values_are_bound_never_interpolated() -> None:
    fragment, params = to_sql({"k'": {"$in": ["x'); --"], "$gt": "' OR 1=1"}}, "metadata")
    assert "x'" not in fragment and "OR 1=1" not in fragment and "k'" not in fragment
    assert params == ["k'", '["x\'); --"]', "' OR 1=1"]


def test_matcher_checks_once_and_accepts_any_mapping() -> None:
    test = matcher({"a": {"$gt": 1}})
    assert test({"a": 2}) and not test({"a": 1}) and not test(None)
    assert not test({"a": object()}) and matcher({"a": {"$ne": 1}})({"a": object()})


# ----------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("filter", "words"),
    [
        ([("a", 1)], ["mapping", "list"]),
        ("a", ["mapping", "str"]),
        ({1: "x"}, ["field names must be strings", "1"]),
        ({None: "x"}, ["field names must be strings"]),
        ({"": 1}, ["must not be empty"]),
        ({"$or": [{"a": 1}]}, ["$or", "not supported"]),
        ({"a\0b": 1}, ["U+0000"]),
        ({"a": {"$foo": 1}}, ["$foo", "'a'", "$eq"]),
        ({"a": {"$regex": "x"}}, ["$regex"]),
        ({"a": {"$in": "abc"}}, ["$in", "'a'", "list", "str"]),
        ({"a": {"$nin": 3}}, ["$nin", "list", "int"]),
        ({"a": {"$in": [1, [2]]}}, ["$in", "item 1", "list"]),
        ({"a": {"$in": [{"$gt": 1}]}}, ["$in", "item 0", "operators do not nest"]),
        ({"a": {"$gt": True}}, ["$gt", "'a'", "booleans are not numbers"]),
        ({"a": {"$lt": None}}, ["$lt", "number or a string"]),
        ({"a": {"$gte": [1]}}, ["$gte", "number or a string"]),
        ({"a": {"$lte": {"$gt": 1}}}, ["$lte"]),
        ({"a": {"$gt": float("nan")}}, ["$gt", "finite"]),
        ({"a": float("inf")}, ["'a'", "finite"]),
        ({"a": 2**63}, ["'a'", "64 bits"]),
        ({"a": {"$eq": -(2**63) - 1}}, ["$eq", "64 bits"]),
        ({"a": {"$exists": 1}}, ["$exists", "'a'", "True or False"]),
        ({"a": {"$exists": "yes"}}, ["$exists", "True or False"]),
        ({"a": {"$eq": {"$gt": 1}}}, ["$eq", "operators do not nest"]),
        ({"a": {"$ne": [1]}}, ["$ne", "list"]),
        ({"a": {"b": 1}}, ["'b'", "not an operator", "nested objects"]),
        ({"a": {"$gt": 1, "b": 1}}, ["'b'", "not an operator"]),
        ({"a": {1: 1}}, ["1", "not an operator"]),
        ({"a": {}}, ["'a'", "empty mapping"]),
        ({"a": [1, 2]}, ["'a'", "$in"]),
        ({"a": (1,)}, ["'a'", "$in"]),
        ({"a": b"x"}, ["'a'", "bytes"]),
        ({"a": {"$eq": "x\0"}}, ["$eq", "U+0000"]),
        ({"a": "\ud800"}, ["'a'", "Unicode"]),
        ({"\udc80": 1}, ["Unicode"]),
    ],
)
def test_malformed_filters_are_refused_by_every_entry_point(filter: Any, words: list[str]) -> None:
    for call in (
        lambda: check_filter(filter),
        lambda: matches({"a": 1}, filter),
        lambda: matcher(filter),
        lambda: to_sql(filter, "metadata"),
    ):
        with pytest.raises(InvalidArgumentError) as raised:
            call()
        assert isinstance(raised.value, ValueError)
        for word in words:
            assert word in str(raised.value)


@pytest.mark.parametrize("column", ["", "1a", "metadata; DROP TABLE m", "a.b.c", "m.", "json(x)"])
def test_to_sql_refuses_anything_but_an_identifier_column(column: str) -> None:
    with pytest.raises(InvalidArgumentError, match="column"):
        to_sql({"a": 1}, column)


def test_operators_are_listed() -> None:
    assert set(OPERATORS) == {"$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists"}


# ------------------------------------------------------------------------------- properties

# Few keys and a small pool of values make collisions (and so matches) frequent; the hostile
# keys, large numbers and arbitrary text keep the corners covered.
# Text as JSON stores it: no U+0000 (SQLite ends a string there) and no lone surrogates.
TEXT_CHARACTERS = st.characters(exclude_characters="\0", exclude_categories=("Cs",))
keys = st.sampled_from(["a", "b", "a.b", 'q"k', "é", "😀"]) | st.text(
    TEXT_CHARACTERS, min_size=1, max_size=3
).filter(lambda key: not key.startswith("$"))
pool = st.sampled_from(
    [0, 1, -1, 1.0, 0.5, 2**53, 2**53 + 1, 2.0**53, 2**63 - 1, -(2**63), "", "a", "b", "B", "é"]
    + [True, False, None]
)
operands = (
    pool
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(TEXT_CHARACTERS, max_size=4)
)
ordered = operands.filter(lambda v: isinstance(v, (int, float, str)) and not isinstance(v, bool))
stored_scalars = operands | st.integers(min_value=-(2**80), max_value=2**80)
stored_values = (
    stored_scalars
    | st.lists(stored_scalars, max_size=2)
    | st.dictionaries(keys, stored_scalars, max_size=2)
)
metadata_dicts = st.none() | st.dictionaries(keys, stored_values, max_size=4)
operator_conditions = st.dictionaries(
    st.sampled_from(OPERATORS),
    st.none(),  # replaced below with an operand of the right shape for each operator
    min_size=1,
    max_size=3,
).flatmap(
    lambda ops: st.fixed_dictionaries(
        {
            op: (
                st.booleans()
                if op == "$exists"
                else st.lists(operands, max_size=4)
                if op in ("$in", "$nin")
                else ordered
                if op in ("$gt", "$gte", "$lt", "$lte")
                else operands
            )
            for op in ops
        }
    )
)
filters = st.dictionaries(keys, operands | operator_conditions, max_size=3)


@settings(max_examples=400, deadline=None)
@given(rows=st.lists(metadata_dicts, max_size=6), filter=filters, ensure_ascii=st.booleans())
def test_sql_selects_exactly_what_matches_accepts(
    db: sqlite3.Connection,
    rows: list[Mapping[str, Any] | None],
    filter: dict[str, Any],
    ensure_ascii: bool,
) -> None:
    check_filter(filter)
    expected = {i for i, row in enumerate(rows) if matches(row, filter)}
    assert sql_ids(db, rows, filter, ensure_ascii=ensure_ascii) == expected


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.text(max_size=5) | st.sampled_from(OPERATORS) | st.integers(), children
        )
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(filter=junk)
def test_any_input_is_either_a_filter_or_an_invalid_argument(filter: Any) -> None:
    try:
        check_filter(filter)
    except InvalidArgumentError:
        return
    matches({"a": 1}, filter)
    to_sql(filter, "metadata")
