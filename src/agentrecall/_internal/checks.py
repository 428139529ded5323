"""Argument checks shared by the stores and the buffer, with messages that name the argument."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta

from agentrecall._internal.jsonvalue import check_json_object
from agentrecall._internal.text import check_text, has_surrogate
from agentrecall.errors import InvalidArgumentError
from agentrecall.types import JsonObject, MemoryRecord

Items = list[tuple[str, JsonObject | None]]

MAX_COUNT = 2**63 - 1
"""The largest limit or offset: SQLite's largest integer. Larger ones are refused, not clamped."""

MAX_SECONDS = 10_000 * 365.25 * 86_400
"""The longest duration, 10,000 years: anything longer would end past the year 9999."""

MAX_BUSY_TIMEOUT = 2_147_483
"""The longest busy timeout in seconds (about 24.8 days): SQLite counts it in a C ``int`` of ms."""


def check_limit(value: object, argument: str) -> None:
    """Refuse anything but ``None`` or an integer from 1 to ``MAX_COUNT`` (booleans are refused)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise InvalidArgumentError(
            f"{argument} must be an integer from 1 to {MAX_COUNT}, or None; got {_shown(value)}"
        )


def check_offset(value: object, argument: str = "offset") -> None:
    """Refuse anything but an integer from 0 to ``MAX_COUNT`` (booleans are refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InvalidArgumentError(
            f"{argument} must be an integer from 0 to {MAX_COUNT}, got {_shown(value)}"
        )


def check_items(items: Iterable[tuple[str, JsonObject | None]]) -> Items:
    """Return a batch of ``(content, metadata)`` as a list once every item is usable.

    Each item must be a ``(content, metadata)`` pair (a tuple or list of two); content must be
    a non-blank string and metadata ``None`` or a JSON object. A bad item's message gives its
    index when the batch has more than one; an item that is not a pair always does.
    """
    batch = _listed(items)
    for index, item in enumerate(batch):
        content, metadata = check_pair(item, index)
        check_item(content, metadata, "" if len(batch) == 1 else f" (item {index})")
    return batch


def check_pairs(items: Iterable[tuple[str, JsonObject | None]]) -> Items:
    """Return a batch as a list once every item is a ``(content, metadata)`` pair.

    For batches whose contents are checked later, item by item (see :func:`check_item`).
    """
    batch = _listed(items)
    for index, item in enumerate(batch):
        check_pair(item, index)
    return batch


def _listed(items: Iterable[tuple[str, JsonObject | None]]) -> Items:
    """Return a batch as a list, or refuse one that is not an iterable of items."""
    try:
        # Only the call of iter is guarded: a TypeError raised while iterating is the caller's.
        iterator = iter(items)
    except TypeError:
        raise InvalidArgumentError(
            f"items must be an iterable of (content, metadata) pairs, got {_shown(items)}"
        ) from None
    return list(iterator)


def check_pair(item: object, index: int) -> tuple[object, object]:
    """Return the two halves of a batch item, or refuse an item that is not a pair."""
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    raise InvalidArgumentError(
        f"items[{index}] must be a (content, metadata) pair, got {_shown(item)}"
    )


def check_item(content: object, metadata: object, where: str) -> None:
    """Refuse unusable content, and metadata that is not ``None`` or a JSON object.

    ``where`` follows the argument's name in messages, e.g. ``" (item 3)"``.
    """
    check_content(content, f"content{where}")
    if metadata is not None:
        check_json_object(metadata, f"metadata{where}")


def check_content(content: object, argument: str) -> None:
    """Refuse content that is not a string, is blank, or holds a lone surrogate."""
    # ``isspace`` tells blank text as ``strip`` would, without copying the text.
    if not isinstance(content, str) or not content or content.isspace():
        raise InvalidArgumentError(f"{argument} must be a non-blank string")
    check_text(content, argument)


def check_optional_text(value: object, argument: str) -> None:
    """Refuse anything but ``None`` or a string UTF-8 can encode."""
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{argument} must be a string or None, got {_shown(value)}")
    check_text(value, argument)


def check_id(memory_id: object, argument: str = "memory_id", *, encodable: bool = True) -> str:
    """Return ``memory_id`` once it is a string UTF-8 can encode, or refuse it.

    With ``encodable=False`` any string is taken, lone surrogates included: for a store that
    can hold such an id (a JSON file another program wrote), a lookup must reach it.
    """
    if not isinstance(memory_id, str):
        raise InvalidArgumentError(f"{argument} must be a string, got {_shown(memory_id)}")
    if encodable:
        check_text(memory_id, argument)
    return memory_id


def check_ids(
    memory_ids: Iterable[str], argument: str = "memory_ids", *, encodable: bool = True
) -> list[str]:
    """Return the ids as a list once each is a string; a lone string or bytes is refused.

    A string is itself an iterable (of characters), so passing one id where a list of ids
    is expected would otherwise address one id per character. Each id is checked as
    :func:`check_id` checks it, with ``encodable``.
    """
    if isinstance(memory_ids, (str, bytes, bytearray)):
        raise InvalidArgumentError(
            f"{argument} must be an iterable of ids, not a single {type(memory_ids).__name__}; "
            f"pass [{memory_ids!r}] for one id"
        )
    try:
        ids = list(memory_ids)
    except TypeError as error:
        raise InvalidArgumentError(
            f"{argument} must be an iterable of ids, got {_shown(memory_ids)}"
        ) from error
    try:
        # One join answers for the common list, all strings and all encodable, at a tenth of
        # the time of checking the ids one by one; any other list is checked one by one.
        joined = "".join(ids)
        if not encodable or not has_surrogate(joined):
            return ids
    except TypeError:
        pass
    for index, memory_id in enumerate(ids):
        check_id(memory_id, f"{argument}[{index}]", encodable=encodable)
    return ids


def check_record(index: int, record: object) -> str:
    """Refuse a record to import unless its id, content and metadata are usable.

    Returns how messages about the record name it, ``record 3 (<id>)``, for the checks of its
    timestamps, which differ between stores.
    """
    where = f"record {index}"
    if not isinstance(record, MemoryRecord):
        raise InvalidArgumentError(f"{where} must be a MemoryRecord, got {_shown(record)}")
    if not isinstance(record.id, str) or not record.id.strip():
        raise InvalidArgumentError(f"{where}: id must be a non-blank string")
    check_text(record.id, f"{where}: id")
    where = f"{where} ({record.id})"
    check_content(record.content, f"{where}: content")
    if record.metadata is not None:
        check_json_object(record.metadata, f"{where}: metadata")
    return where


def seconds(value: float | timedelta | None, argument: str) -> float | None:
    """Return a positive duration in seconds (``None`` stays ``None``), or refuse it.

    The duration must be finite and at most ``MAX_SECONDS``: ``inf`` and NaN are refused (use
    ``None`` for no limit), as are integers too large to be a number of seconds.
    """
    if value is None:
        return None
    amount = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount > 0:
        raise InvalidArgumentError(f"{argument} must be a positive duration, got {_shown(value)}")
    # A plain comparison: ``math.isfinite`` would overflow on an integer beyond float range.
    if not amount <= MAX_SECONDS:
        raise InvalidArgumentError(
            f"{argument} must be at most {MAX_SECONDS:.0f} seconds (10,000 years), got "
            f"{_shown(value)}; use None for no limit"
        )
    return float(amount)


def check_busy_timeout(value: object) -> float:
    """Return a busy timeout in seconds: a number above 0, at most ``MAX_BUSY_TIMEOUT``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value <= MAX_BUSY_TIMEOUT
    ):
        raise InvalidArgumentError(
            f"busy_timeout must be a number of seconds above 0 and at most {MAX_BUSY_TIMEOUT}, "
            f"got {_shown(value)}"
        )
    return float(value)


def _shown(value: object) -> str:
    """Return a short description of ``value`` for a message: its repr, cut, and its type."""
    if isinstance(value, int) and value.bit_length() > 128:
        # The repr of a huge integer is long, or refused outright past Python's digit limit.
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def requested_limit(options: object) -> int | None:
    """Return a search's ``max_search_results`` option, checked, or ``None`` when not given.

    Raises:
        InvalidArgumentError: ``options`` is not ``None`` or a mapping, or the limit is not an
            integer from 1 to 2**63 - 1.
    """
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(
            "search options must be a mapping such as {'max_search_results': 3}, "
            f"got {type(options).__name__}"
        )
    requested = options.get("max_search_results")
    check_limit(requested, "max_search_results")
    return requested
