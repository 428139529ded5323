"""The export format's line reader: what it accepts and how it words what it refuses."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from agentrecall.errors import InvalidFileError
from agentrecall.export_format import (
    VERSION,
    Header,
    encode_header,
    encode_record,
    encode_version,
    parse_header,
    parse_line,
)
from agentrecall.types import MemoryRecord, MemoryVersion

RECORD = MemoryRecord(
    id="m1",
    content="Café au lait, s'il vous plaît 🙂",
    created_at="2025-01-31T09:30:00.000Z",
    metadata={"tags": ["a", 1, 2.5, None, True], "nested": {"k": "ü"}},
    expires_at="2030-01-31T09:30:00.000Z",
    user_id="u",
)


@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n", b" \t\n"])
def test_a_memory_line_reads_back_as_written(ending: bytes) -> None:
    line = encode_record(RECORD).encode() + ending
    assert parse_line(line, "f", 2) == RECORD


def test_an_escaped_line_reads_as_json_loads_reads_it() -> None:
    line = json.dumps(json.loads(encode_record(RECORD)), ensure_ascii=True).encode()
    assert parse_line(line, "f", 2) == RECORD


@pytest.mark.parametrize(
    ("tail", "problem"),
    [
        ("\u2028", "not JSON (Extra data"),  # str.isspace calls it space; JSON does not
        ("\x1c", "not JSON (Extra data"),
        (" {}", "not JSON (Extra data"),
    ],
)
def test_anything_after_the_object_is_refused(tail: str, problem: str) -> None:
    line = (encode_record(RECORD) + tail).encode()
    with pytest.raises(InvalidFileError, match=rf"^f, line 7: {problem.replace('(', '[(]')}"):
        parse_line(line, "f", 7)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b'{"type": "memory"', "not JSON"),
        (b'{"type": "memory", "id": "\xff"}', "not UTF-8 text"),
        (b"{" * 100_000, "not JSON"),
        (b"{}", 'expected an object with "type"'),
    ],
)
def test_a_bad_object_line_is_refused_naming_the_line(line: bytes, problem: str) -> None:
    with pytest.raises(InvalidFileError, match=f"^f, line 3: {problem}"):
        parse_line(line, "f", 3)


CHANGED = MemoryRecord(
    id="m2",
    content="Lives in Berlin",
    created_at="2025-03-01T08:00:00.000Z",
    metadata=None,
    updated_at="2025-03-02T08:00:00.000Z",
    expires_at="2031-01-01T00:00:00.000Z",
    user_id="u",
    agent_id="a",
    session_id="s",
    invalidated_at="2025-04-01T08:00:00.000Z",
    superseded_by="m3",
    valid_from="2025-02-15T00:00:00.000Z",
    valid_until="2025-03-31T00:00:00.000Z",
)
RETIRED = MemoryVersion(
    content="Lives in Berlin",
    metadata={"k": 1},
    changed_at="2025-04-01T08:00:00.000Z",
    change="supersede",
    reason="moved",
    memory_id="m2",
    user_id="u",
    agent_id="a",
    session_id="s",
    created_at="2025-03-01T08:00:00.000Z",
    invalidated_at="2025-04-01T08:00:00.000Z",
    superseded_by="m3",
    valid_from="2025-02-15T00:00:00.000Z",
    valid_until="2025-03-31T00:00:00.000Z",
)

# The keys of each line of format version 1, as files written before version 2 hold them.
V1_MEMORY_KEYS = {"type", "id", "content", "metadata", "created_at", "updated_at", "expires_at"}
V1_VERSION_KEYS = {"type", "memory_id", "content", "metadata", "changed_at", "change", "reason"}
SCOPE = {"user_id", "agent_id", "session_id"}


def test_the_format_is_version_2() -> None:
    assert VERSION == 2
    assert (
        json.loads(encode_header(Header("sqlite", "2025-01-01T00:00:00.000Z", 0, 0)))["version"]
        == 2
    )


@pytest.mark.parametrize(("item", "encode"), [(CHANGED, encode_record), (RETIRED, encode_version)])
def test_every_field_is_written_and_read_back(item: Any, encode: Any) -> None:
    value = json.loads(encode(item))
    fields = {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}
    # A memory's line names its id "id", a version's "memory_id": each the dataclass's own.
    assert {key: v for key, v in value.items() if key != "type"} == fields
    assert parse_line(encode(item).encode(), "f", 2) == item


@pytest.mark.parametrize(
    ("item", "encode", "keys"),
    [(CHANGED, encode_record, V1_MEMORY_KEYS), (RETIRED, encode_version, V1_VERSION_KEYS)],
)
def test_a_version_1_line_reads_with_the_fields_added_since_none(
    item: Any, encode: Any, keys: set[str]
) -> None:
    value = json.loads(encode(item))
    old = json.dumps({key: v for key, v in value.items() if key in keys | SCOPE}).encode()
    read = parse_line(old, "f", 4, 1)
    added = ("invalidated_at", "superseded_by", "valid_from", "valid_until")
    if isinstance(item, MemoryVersion):
        added = ("created_at", *added)
    assert read == dataclasses.replace(item, **dict.fromkeys(added))
    with pytest.raises(InvalidFileError, match=r"^f, line 4: missing .*invalidated_at.*version 2"):
        parse_line(old, "f", 4)
    with pytest.raises(InvalidFileError, match=r"^f, line 4: unknown .*superseded_by.*version 1"):
        parse_line(encode(item).encode(), "f", 4, 1)


def test_a_version_1_header_reads_and_a_version_3_one_is_refused() -> None:
    header = json.loads(encode_header(Header("sqlite", "2025-01-01T00:00:00.000Z", 1, 0)))
    assert parse_header(json.dumps({**header, "version": 1}).encode(), "f").version == 1
    with pytest.raises(InvalidFileError, match="format version 3, newer than this agentrecall"):
        parse_header(json.dumps({**header, "version": 3}).encode(), "f")
