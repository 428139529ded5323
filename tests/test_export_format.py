"""The export format's line reader: what it accepts and how it words what it refuses."""

from __future__ import annotations

import json

import pytest

from agentrecall.errors import InvalidFileError
from agentrecall.export_format import encode_record, parse_line
from agentrecall.types import MemoryRecord

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
