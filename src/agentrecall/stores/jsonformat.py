r"""The Strands memory file format: a JSON array of records, parsed and written to the byte.

A record is ``{"id", "content", "createdAt"[, "metadata"]}`` with string ``id``, ``content`` and
``createdAt``; ``metadata``, when present and not ``null``, is an object. Unknown keys are kept.
The file is ``json.dumps(records, indent=2, ensure_ascii=False)`` in UTF-8: two-space indent,
raw non-ASCII (but a lone surrogate, which UTF-8 cannot encode, as its ``\u`` escape), no
trailing newline. Writing it one record at a time (:func:`record_bytes` and :func:`file_bytes`)
gives exactly those bytes, so appending costs one record, not the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentrecall._internal.jsonvalue import MAX_DEPTH
from agentrecall._internal.text import escape_surrogates
from agentrecall.errors import InvalidFileError

Record = dict[str, Any]

_FIELDS_PROBLEM = "each record needs string 'id', 'content' and 'createdAt' fields"
_METADATA_PROBLEM = "a record's 'metadata', when present, must be a JSON object or null"
_DEPTH_PROBLEM = f"its 'metadata' nests deeper than {MAX_DEPTH} levels, as no memory may"


def parse_records(data: bytes, where: str, *, imported: bool = False) -> list[Record]:
    """Parse and check a whole file; ``where`` names it in errors.

    Accepts what the reference reads: UTF-8 with or without a BOM (and the other encodings
    ``json.loads`` detects), records with extra keys, ``metadata: null``. ``imported`` says
    the file is a source to copy from rather than a store's own file: messages then read
    ``"<where>: <problem>"``, ``where`` as the caller words it.

    Metadata may nest as deeply as an ``add`` allows (``MAX_DEPTH`` levels): deeper values,
    which Python parses but cannot copy or write back, are reported here rather than failing
    a later call with a ``RecursionError``.

    Raises:
        InvalidFileError: the bytes are not text, not JSON, not an array, or a record is
            malformed; the message names the file and the first problem found.
    """
    invalid = _import_problem if imported else _invalid
    try:
        parsed = json.loads(data)
    except UnicodeDecodeError as error:
        raise invalid(where, f"it is not UTF-8 text ({error})") from error
    except json.JSONDecodeError as error:
        raise invalid(where, f"invalid JSON: {error}") from error
    except (ValueError, RecursionError) as error:
        # Valid JSON that Python will not load: nesting past the recursion limit, or an
        # integer longer than the interpreter's digit limit.
        raise invalid(where, f"it cannot be loaded ({error})") from error
    if not isinstance(parsed, list):
        raise invalid(where, "expected a JSON array of memory records")
    for index, record in enumerate(parsed):
        if not (
            isinstance(record, dict)
            and isinstance(record.get("id"), str)
            and isinstance(record.get("content"), str)
            and isinstance(record.get("createdAt"), str)
        ):
            raise invalid(where, f"record {index}: {_FIELDS_PROBLEM}")
        metadata = record.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise invalid(where, f"record {index}: {_METADATA_PROBLEM}")
        if metadata and _nests_too_deep(metadata):
            raise invalid(where, f"record {index}: {_DEPTH_PROBLEM}")
    return parsed


def _nests_too_deep(metadata: dict[str, Any]) -> bool:
    """Whether an object or array in ``metadata`` (level 1) lies deeper than ``MAX_DEPTH``."""
    # Iterative, since the point is values too deep for recursion; flat metadata, the usual
    # kind, costs one pass over its values.
    stack = [(child, 2) for child in metadata.values() if isinstance(child, (dict, list))]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def new_record(record_id: str, content: str, created_at: str, metadata: Any) -> Record:
    """Build a record with the key order the reference writes; ``None`` metadata adds no key."""
    record: Record = {"id": record_id, "content": content, "createdAt": created_at}
    if metadata is not None:
        record["metadata"] = metadata
    return record


def record_bytes(record: Record) -> bytes:
    r"""Return the record as an element of the file's top-level array (indented once), in UTF-8.

    A lone surrogate (which only a record read from the file can hold: another program wrote
    a ``"\ud800"`` escape) is written back as that escape, as ``ensure_ascii`` would write
    it, since UTF-8 cannot encode it; every other character stays raw.
    """
    text = json.dumps(record, indent=2, ensure_ascii=False)
    # JSON strings escape their newlines, so every raw newline is structure and gets indented.
    text = "  " + text.replace("\n", "\n  ")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return escape_surrogates(text).encode("utf-8")


def file_bytes(records: Sequence[bytes]) -> bytes:
    """Join records' bytes into the whole file, byte-identical to dumping the array at once."""
    if not records:
        return b"[]"
    # Joining bytes, not str: one non-BMP character would make a str of the whole file 4x larger.
    return b"[\n" + b",\n".join(records) + b"\n]"


def _invalid(where: str, problem: str) -> InvalidFileError:
    return InvalidFileError(
        f"memory file '{where}' is not usable: {problem}; it was left unchanged",
        path=where,
    )


def _import_problem(where: str, problem: str) -> InvalidFileError:
    return InvalidFileError(f"{where}: {problem}", path=where)
