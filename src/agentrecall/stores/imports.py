"""The checks of an import, shared by the backends: records, versions and the scopes they go to.

A backend's ``import_records`` and ``import_versions`` take copies made by another store;
everything about them that is not storage is here: what a usable record or version is, which
scope of the importing view each goes to, and which versions the history already holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from agentrecall._internal.checks import check_content, check_record
from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.jsonvalue import check_json_object, flat_strings
from agentrecall._internal.text import has_surrogate
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.scopes import Scope
from agentrecall.stores.times import STORED_TIME
from agentrecall.types import MemoryRecord, MemoryVersion

VersionRow = tuple[str | int | None, ...]
"""A version as a history row: ``(memory id, content, metadata JSON, changed_at, change,
reason, created_at, invalidated_at, superseded_by, valid_from, valid_until)``, with the scope's
key inserted after the id by a backend that keys rows by scope."""
ScopeIds = tuple[str | None, str | None, str | None]
CHANGES = ("update", "delete", "expire", "supersede")
"""The kinds of change that replace a version (``MemoryVersion.change``)."""
# Metadata was checked to be a finite, acyclic JSON object (see compact_encoder).
encode = compact_encoder()
_stored_time = STORED_TIME.fullmatch


def check_import_record(index: int, record: MemoryRecord) -> None:
    """Refuse a record of an import unless its id, content, metadata and times are usable.

    Messages give the record's index; times must be in the stored shape.
    """
    if _plainly_usable(record):
        return
    where = check_record(index, record)
    for field in ("created_at", "updated_at", "expires_at", *_MOMENTS):
        value = getattr(record, field)
        if value is not None or field == "created_at":
            _check_time(where, field, value)
    _check_successor(where, record.superseded_by)


_MOMENTS = ("invalidated_at", "valid_from", "valid_until")
"""The optional times of a record, besides ``updated_at`` and ``expires_at``."""


def _check_successor(where: str, successor: object) -> None:
    if successor is not None and not (isinstance(successor, str) and successor.strip()):
        raise InvalidArgumentError(
            f"{where}: superseded_by must be None or a non-blank string, got {successor!r}"
        )


def _plainly_usable(record: object) -> bool:
    """Whether ``record`` passes the checks of :func:`check_import_record`, told cheaply.

    Covers the common record (ASCII id, flat string metadata or none) without making the
    messages those checks word: a third of their time in a bulk import. ``False`` means only
    that the full checks must decide.
    """
    if type(record) is not MemoryRecord:
        return False
    memory_id, content, metadata = record.id, record.content, record.metadata
    created, updated, expires = record.created_at, record.updated_at, record.expires_at
    return (
        type(memory_id) is str
        and memory_id.isascii()
        and memory_id.strip() != ""
        and type(content) is str
        and content != ""
        and not content.isspace()
        and not has_surrogate(content)
        and (metadata is None or (type(metadata) is dict and flat_strings(metadata)))
        and type(created) is str
        and _stored_time(created) is not None
        and (updated is None or (type(updated) is str and _stored_time(updated) is not None))
        and (expires is None or (type(expires) is str and _stored_time(expires) is not None))
        and record.invalidated_at is None
        and record.superseded_by is None
        and record.valid_from is None
        and record.valid_until is None
    )


def version_row(index: int, version: MemoryVersion) -> VersionRow:
    """Check one version of an import and return its history row, without the scope.

    The row is :data:`VersionRow` without the scope; messages give the version's index.
    """
    where = f"version {index}"
    if not isinstance(version.memory_id, str) or not version.memory_id.strip():
        raise InvalidArgumentError(f"{where}: memory_id must be a non-blank string")
    where = f"{where} (of {version.memory_id})"
    _check_content(where, version.content, version.metadata)
    _check_time(where, "changed_at", version.changed_at)
    if version.change not in CHANGES:
        raise InvalidArgumentError(
            f"{where}: change must be one of {', '.join(CHANGES)}, got {version.change!r}"
        )
    if version.reason is not None and not isinstance(version.reason, str):
        raise InvalidArgumentError(f"{where}: reason must be a string or None")
    for field in ("created_at", *_MOMENTS):
        if getattr(version, field) is not None:
            _check_time(where, field, getattr(version, field))
    _check_successor(where, version.superseded_by)
    metadata = version.metadata
    return (
        version.memory_id,
        version.content,
        None if metadata is None else encode(metadata),
        version.changed_at,
        version.change,
        version.reason,
        version.created_at,
        version.invalidated_at,
        version.superseded_by,
        version.valid_from,
        version.valid_until,
    )


def scope_runs(
    view: Scope,
    items: Sequence[MemoryRecord | MemoryVersion],
    kind: type[MemoryRecord | MemoryVersion],
    label: str,
) -> list[tuple[Scope, int, int]]:
    """Return the scope each of an import's items goes to, as runs ``(scope, start, stop)``.

    An item goes to the view's scope narrowed by the item's own ids: into its own scope from
    the root store, into the view's scope when it has none, and into the view's part of the
    item's scope otherwise.

    Raises:
        InvalidArgumentError: an item is not a ``kind``, has an id that is neither ``None``
            nor a non-empty string, or has an id that contradicts the view's (the message
            gives its index).
    """
    runs: list[tuple[Scope, int, int]] = []
    known: dict[ScopeIds, Scope] = {}
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise InvalidArgumentError(f"{label} {index} must be a {kind.__name__}, got {item!r}")
        ids = (item.user_id, item.agent_id, item.session_id)
        target = known.get(ids)
        if target is None:
            target = known[ids] = _holding(view, f"{label} {index}", ids)
        if runs and runs[-1][0] is target:
            runs[-1] = (target, runs[-1][1], index + 1)
        else:
            runs.append((target, index, index + 1))
    return runs


def _holding(view: Scope, where: str, ids: ScopeIds) -> Scope:
    """Return ``view`` narrowed by an item's ``(user_id, agent_id, session_id)``."""
    columns = dict(zip(view.columns(), ids, strict=True))
    for column, value in columns.items():
        held = getattr(view, column)
        if value is not None and held is not None and value != held:
            raise InvalidArgumentError(
                f"{where} belongs to {column}={value!r}, outside this view ({view.label()}); "
                "import it through the root store, or clear its ids to import it into this view"
            )
    try:
        return view.narrowed(**columns)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"{where}: {error}") from error


def beyond_held(rows: Sequence[VersionRow], held: Mapping[VersionRow, int]) -> list[VersionRow]:
    """Return the history rows to add: each row beyond the ``held`` copies the history has.

    Of ``n`` identical rows in ``rows``, only as many as exceed what is held are returned.
    """
    seen: Counter[VersionRow] = Counter()
    fresh = []
    for row in rows:
        seen[row] += 1
        if seen[row] > held.get(row, 0):
            fresh.append(row)
    return fresh


def _check_content(where: str, content: object, metadata: object) -> None:
    check_content(content, f"{where}: content")
    if metadata is not None:
        check_json_object(metadata, f"{where}: metadata")


def _check_time(where: str, field: str, value: object) -> None:
    if not (isinstance(value, str) and STORED_TIME.fullmatch(value)):
        raise InvalidArgumentError(
            f"{where}: {field} must look like 2025-01-31T09:30:00.000Z, got {value!r}"
        )
