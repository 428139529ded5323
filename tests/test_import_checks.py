"""The checks of an imported record, and of an export's line: the quick path refuses as the full.

Both have a quick path for the common record and line; whatever it does not clearly accept
goes through the full checks, which word the refusal. These tests hold each refusal to the
full check's words, and show that unusual but valid records still pass.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from agentrecall.errors import InvalidArgumentError, InvalidFileError
from agentrecall.export_format import encode_record, encode_version, parse_line
from agentrecall.stores.imports import check_import_record
from agentrecall.types import MemoryRecord, MemoryVersion

TIME = "2025-01-31T09:30:00.000Z"
GOOD = MemoryRecord(id="m1", content="a memory", created_at=TIME, metadata={"k": "v"})


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"id": ""}, "record 4: id must be a non-blank string"),
        ({"id": " \t"}, "record 4: id must be a non-blank string"),
        ({"id": 7}, "record 4: id must be a non-blank string"),
        ({"id": "m\ud800"}, "record 4: id holds a lone surrogate"),
        ({"content": ""}, r"record 4 \(m1\): content must be a non-blank string"),
        ({"content": "\u2003\n"}, r"record 4 \(m1\): content must be a non-blank string"),
        ({"content": None}, r"record 4 \(m1\): content must be a non-blank string"),
        ({"content": "a \ud800"}, r"record 4 \(m1\): content holds a lone surrogate"),
        ({"metadata": ["k"]}, r"record 4 \(m1\): metadata must be a JSON object"),
        ({"metadata": {"k": float("nan")}}, r"record 4 \(m1\): metadata\['k'\]"),
        ({"metadata": {1: "v"}}, r"record 4 \(m1\): metadata"),
        ({"metadata": {"k": "\udc00"}}, r"record 4 \(m1\): metadata\['k'\]"),
        ({"created_at": "yesterday"}, r"created_at must look like 2025-01-31T09:30:00.000Z"),
        ({"created_at": None}, "created_at must look like"),
        ({"updated_at": "2025-01-31 09:30:00"}, "updated_at must look like"),
        ({"expires_at": 5}, "expires_at must look like"),
        ({"expires_at": TIME + "\n"}, "expires_at must look like"),
    ],
)
def test_a_bad_record_is_refused_in_the_full_checks_words(
    changes: dict[str, Any], expected: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=expected):
        check_import_record(4, dataclasses.replace(GOOD, **changes))


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"id": "mémoire-1", "content": "déjà vu 🙂"},
        {"metadata": None},
        {"metadata": {}},
        {"metadata": {"tags": ["a", 1, 2.5, None, True], "nested": {"k": "ü"}}},
        {"updated_at": TIME, "expires_at": "2999-01-01T00:00:00.000Z"},
    ],
)
def test_a_usable_record_passes(changes: dict[str, Any]) -> None:
    check_import_record(0, dataclasses.replace(GOOD, **changes))


def test_a_record_of_a_subclass_passes_the_full_checks() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Tagged(MemoryRecord):
        pass

    check_import_record(0, Tagged(id="m1", content="a memory", created_at=TIME))


def _line(kind: str, **changes: Any) -> bytes:
    record = MemoryRecord(id="m1", content="a memory", created_at=TIME)
    version = MemoryVersion(content="old", metadata=None, changed_at=TIME, change="update")
    version = dataclasses.replace(version, memory_id="m1")
    value = json.loads(encode_record(record) if kind == "memory" else encode_version(version))
    value.update(changes)
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("kind", "changes", "expected"),
    [
        ("memory", {"content": None}, "content must be a string, got None"),
        ("memory", {"created_at": 5}, "created_at must be a string, got 5"),
        ("memory", {"updated_at": True}, "updated_at must be a string or null, got True"),
        ("memory", {"session_id": ["s"]}, r"session_id must be a string or null, got \['s'\]"),
        ("memory", {"metadata": [1]}, r"metadata must be an object or null, got \[1\]"),
        ("memory", {"metadata": "{}"}, "metadata must be an object or null, got '{}'"),
        ("version", {"memory_id": None}, "memory_id must be a string, got None"),
        ("version", {"change": 1}, "change must be a string, got 1"),
        ("version", {"reason": 2}, "reason must be a string or null, got 2"),
    ],
)
def test_a_line_with_a_value_of_the_wrong_type_is_refused_naming_it(
    kind: str, changes: dict[str, Any], expected: str
) -> None:
    with pytest.raises(InvalidFileError, match=f"^f, line 9: {expected}"):
        parse_line(_line(kind, **changes), "f", 9)


def test_lines_read_into_records_and_versions_field_by_field() -> None:
    record = parse_line(_line("memory", user_id="u", metadata={"k": [1]}), "f", 2)
    assert record == MemoryRecord(
        id="m1", content="a memory", created_at=TIME, metadata={"k": [1]}, user_id="u"
    )
    version = parse_line(_line("version", reason="why", agent_id="a"), "f", 3)
    assert version == MemoryVersion(
        content="old",
        metadata=None,
        changed_at=TIME,
        change="update",
        reason="why",
        memory_id="m1",
        agent_id="a",
    )
