"""The export format: JSON lines, a versioned header first, then memories and their history.

Line 1 is the header, ``{"format": "agentrecall-export", "version": 2, "store": ...,
"created_at": ..., "memories": N, "versions": M, "scope": {...}}``; every later line is a
memory (``"type": "memory"``) or a replaced version of one (``"type": "version"``), each
field of :class:`~agentrecall.types.MemoryRecord` or :class:`~agentrecall.types.MemoryVersion`
under its own name. ``docs/export-format.md`` describes every field.

Versioning: a file of a newer version than :data:`VERSION` is refused, never half-read; every
field is always written, and a line with a key its file's version does not have is refused,
so a field added later (which makes a new version) can never be dropped unnoticed. A file of
an older version is read with the fields it has; the fields added since are ``None``. Version
2 added the memories' ``invalidated_at``, ``superseded_by``, ``valid_from`` and
``valid_until``, and the versions' ``created_at`` and those four. Pure functions: no I/O.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.text import escape_surrogates, has_surrogate
from agentrecall.errors import InvalidFileError
from agentrecall.types import JsonObject, MemoryRecord, MemoryVersion

__all__ = [
    "FORMAT",
    "VERSION",
    "Header",
    "encode_header",
    "encode_record",
    "encode_version",
    "parse_header",
    "parse_line",
]

FORMAT = "agentrecall-export"
"""The header's ``format``: what tells an export from any other JSON lines."""

VERSION = 2
"""The format version this module writes, and the newest it reads (it reads every older one)."""

SCOPE_KEYS = ("user_id", "agent_id", "session_id")

_HEADER_KEYS = frozenset(
    {"format", "version", "store", "created_at", "memories", "versions", "scope"}
)
_CHANGE_KEYS = ("invalidated_at", "superseded_by", "valid_from", "valid_until")
"""The fields version 2 added to both kinds of line: retirement and world time."""
_MEMORY_FIELDS_1 = (
    ("id", False),
    ("content", False),
    ("created_at", False),
    ("updated_at", True),
    ("expires_at", True),
    *((key, True) for key in SCOPE_KEYS),
)
_VERSION_FIELDS_1 = (
    ("memory_id", False),
    ("content", False),
    ("changed_at", False),
    ("change", False),
    ("reason", True),
    *((key, True) for key in SCOPE_KEYS),
)
_MEMORY_FIELDS = (*_MEMORY_FIELDS_1, *((key, True) for key in _CHANGE_KEYS))
_VERSION_FIELDS = (
    *_VERSION_FIELDS_1,
    ("created_at", True),
    *((key, True) for key in _CHANGE_KEYS),
)
"""A line's string fields besides ``metadata``, and whether each may be ``null``."""


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a line of one ``type`` and format version holds, and how it is read into ``make``.

    ``values`` picks the line's values in the order of ``make``'s fields (so that the record
    is made from them positionally: half the time of keywords, a microsecond a line), and
    ``strings`` those of the string fields, ``fields``, and ``required`` those of the string
    fields that may not be ``null``. An older version's line lacks fields ``make`` has; those
    are its last ones (fields are only ever added at the end), left to their default ``None``.
    """

    keys: frozenset[str]
    fields: tuple[tuple[str, bool], ...]
    make: type[MemoryRecord] | type[MemoryVersion]
    values: Callable[[JsonObject], tuple[Any, ...]] = field(init=False)
    strings: Callable[[JsonObject], tuple[Any, ...]] = field(init=False)
    required: Callable[[JsonObject], tuple[Any, ...]] = field(init=False)

    def __post_init__(self) -> None:
        names = [item.name for item in dataclasses.fields(self.make)]
        order = [name for name in names if name in self.keys]
        if order != names[: len(order)]:
            raise AssertionError(f"{self.make.__name__} has a field before the line's last one")
        object.__setattr__(self, "values", operator.itemgetter(*order))
        object.__setattr__(self, "strings", operator.itemgetter(*(key for key, _ in self.fields)))
        required = (key for key, nullable in self.fields if not nullable)
        object.__setattr__(self, "required", operator.itemgetter(*required))


_LINES = {
    number: {
        kind: _Shape(frozenset({"type", "metadata", *(key for key, _ in fields)}), fields, make)
        for kind, fields, make in (
            ("memory", memory_fields, MemoryRecord),
            ("version", version_fields, MemoryVersion),
        )
    }
    for number, memory_fields, version_fields in (
        (1, _MEMORY_FIELDS_1, _VERSION_FIELDS_1),
        (2, _MEMORY_FIELDS, _VERSION_FIELDS),
    )
}
"""Per format version, each line ``type``: its keys, its string fields, what it is read into."""
_STRING_OR_NULL = frozenset({str, type(None)})

# The decoder's own scanner, what json.loads ends in (typeshed does not declare it).
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_JSON_SPACE = " \t\n\r"
"""The whitespace JSON allows around a value (``str.isspace`` allows more)."""

# Every value written comes from a store, which holds only finite, acyclic JSON.
_encode_json = compact_encoder()


def _encode(value: JsonObject) -> str:
    """Return ``value`` as one line of JSON that UTF-8 can write.

    A JSON file written by another program may hold a lone surrogate (in an id, say), which
    UTF-8 cannot encode: it is written as JSON's own escape, which reads back as the same
    character.
    """
    text = _encode_json(value)
    return escape_surrogates(text) if has_surrogate(text) else text


@dataclass(frozen=True, slots=True)
class Header:
    """What line 1 of an export says.

    Attributes:
        store: the kind of store exported, ``"sqlite"``, ``"postgres"`` or ``"json"``.
        created_at: when the export began (``YYYY-MM-DDTHH:MM:SS.mmmZ``).
        memories: how many memory lines follow.
        versions: how many version lines follow.
        scope: the scope exported (``user_id``, ``agent_id``, ``session_id``), each ``None``
            when the export was not narrowed by it.
        version: the format version of the file.
    """

    store: str
    created_at: str
    memories: int
    versions: int
    scope: dict[str, str | None] = field(default_factory=lambda: dict.fromkeys(SCOPE_KEYS))
    version: int = VERSION


def encode_header(header: Header) -> str:
    """Return the header line, without its line break."""
    return _encode(
        {
            "format": FORMAT,
            "version": header.version,
            "store": header.store,
            "created_at": header.created_at,
            "memories": header.memories,
            "versions": header.versions,
            "scope": {key: header.scope.get(key) for key in SCOPE_KEYS},
        }
    )


def encode_record(record: MemoryRecord) -> str:
    """Return a memory's line, without its line break."""
    return _encode(
        {
            "type": "memory",
            "id": record.id,
            "content": record.content,
            "metadata": record.metadata,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
            "expires_at": record.expires_at,
            "user_id": record.user_id,
            "agent_id": record.agent_id,
            "session_id": record.session_id,
            "invalidated_at": record.invalidated_at,
            "superseded_by": record.superseded_by,
            "valid_from": record.valid_from,
            "valid_until": record.valid_until,
        }
    )


def encode_version(version: MemoryVersion) -> str:
    """Return a replaced version's line, without its line break."""
    return _encode(
        {
            "type": "version",
            "memory_id": version.memory_id,
            "content": version.content,
            "metadata": version.metadata,
            "changed_at": version.changed_at,
            "change": version.change,
            "reason": version.reason,
            "user_id": version.user_id,
            "agent_id": version.agent_id,
            "session_id": version.session_id,
            "created_at": version.created_at,
            "invalidated_at": version.invalidated_at,
            "superseded_by": version.superseded_by,
            "valid_from": version.valid_from,
            "valid_until": version.valid_until,
        }
    )


def parse_header(line: bytes, where: str) -> Header:
    """Read line 1 of an export; ``where`` names the file in errors.

    Raises:
        InvalidFileError: the line is not an export header, or one of a newer version; the
            message names the file and line 1.
    """
    value = _json(line, where, 1)
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise _invalid(
            where, 1, f"not an agentrecall export: line 1 must be a header naming format {FORMAT!r}"
        )
    version = value.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _invalid(where, 1, f"the header's version must be a whole number, got {version!r}")
    if version > VERSION:
        raise _invalid(
            where,
            1,
            f"the file is of format version {version}, newer than this agentrecall reads "
            f"({VERSION}); upgrade agentrecall to import it",
        )
    _check_keys(value, _HEADER_KEYS, where, 1, version)
    scope = value["scope"]
    if not (
        isinstance(scope, dict)
        and set(scope) == set(SCOPE_KEYS)
        and all(v is None or isinstance(v, str) for v in scope.values())
    ):
        raise _invalid(where, 1, f"the header's scope must be an object of {', '.join(SCOPE_KEYS)}")
    for key in ("memories", "versions"):
        if not _is_count(value[key]):
            raise _invalid(where, 1, f"the header's {key} must be a whole number")
    for key in ("store", "created_at"):
        if not isinstance(value[key], str):
            raise _invalid(where, 1, f"the header's {key} must be a string")
    return Header(
        store=value["store"],
        created_at=value["created_at"],
        memories=value["memories"],
        versions=value["versions"],
        scope=scope,
        version=version,
    )


def parse_line(
    line: bytes, where: str, number: int, version: int = VERSION
) -> MemoryRecord | MemoryVersion:
    """Read a memory or version line of a file of format ``version``.

    ``where`` and ``number`` name the line in errors. Only the shape is checked here (the
    keys of ``version``, and the type of each value); what a store refuses (blank content, a
    time not in the stored shape) it reports itself. The fields a line of an older version
    lacks are ``None``.

    Raises:
        InvalidFileError: the line is not JSON, or not a memory or version of this format.
    """
    value = _json(line, where, number)
    kind = value.get("type") if isinstance(value, dict) else None
    shape = _LINES[version].get(kind) if isinstance(kind, str) else None
    if shape is None:
        raise _invalid(where, number, 'expected an object with "type" "memory" or "version"')
    if value.keys() != shape.keys:
        _check_keys(value, shape.keys, where, number, version)
    strings = shape.strings(value)
    metadata = value["metadata"]
    if not (
        _STRING_OR_NULL.issuperset(map(type, strings))
        and None not in shape.required(value)
        and (metadata is None or type(metadata) is dict)
    ):
        _check_fields(value, shape.fields, where, number)
    return shape.make(*shape.values(value))


def _json(line: bytes, where: str, number: int) -> Any:
    if line[:1] == b"{":
        # An object line read the way json.loads reads it, without its per-call detection of
        # the encoding and its wrappers: 1.5 to 2 µs of the 6 a memory's line takes. Anything
        # unusual goes the long way below, which also words the errors.
        try:
            text = line.decode("utf-8", "surrogatepass")
            value, end = _scan(text, 0)
        except (ValueError, RecursionError, StopIteration):
            pass
        else:
            if not text[end:].strip(_JSON_SPACE):
                return value
    try:
        return json.loads(line)
    except UnicodeDecodeError as error:
        raise _invalid(where, number, f"not UTF-8 text ({error})") from error
    except json.JSONDecodeError as error:
        raise _invalid(where, number, f"not JSON ({error.msg} at column {error.colno})") from error
    except (ValueError, RecursionError) as error:
        raise _invalid(where, number, f"it cannot be loaded ({error})") from error


def _check_keys(
    value: JsonObject, keys: frozenset[str], where: str, number: int, version: int
) -> None:
    if value.keys() == keys:
        return
    missing = ", ".join(sorted(keys - value.keys()))
    unknown = ", ".join(sorted(value.keys() - keys))
    problems = [f"missing {missing}" if missing else "", f"unknown {unknown}" if unknown else ""]
    raise _invalid(
        where,
        number,
        f"{'; '.join(p for p in problems if p)} (format version {version} has exactly the "
        f"fields {', '.join(sorted(keys))})",
    )


def _check_fields(
    value: JsonObject, fields: tuple[tuple[str, bool], ...], where: str, number: int
) -> None:
    for key, nullable in fields:
        item = value[key]
        if not (isinstance(item, str) or (nullable and item is None)):
            expected = "a string or null" if nullable else "a string"
            raise _invalid(where, number, f"{key} must be {expected}, got {item!r}")
    metadata = value["metadata"]
    if metadata is not None and not isinstance(metadata, dict):
        raise _invalid(where, number, f"metadata must be an object or null, got {metadata!r}")


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _invalid(where: str, number: int, problem: str) -> InvalidFileError:
    return InvalidFileError(f"{where}, line {number}: {problem}", path=where)
