"""Argument checks shared by the stores and the buffer, with messages that name the argument."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from agentrecall._internal.jsonvalue import check_json_object
from agentrecall.errors import InvalidArgumentError
from agentrecall.types import JsonObject

Items = list[tuple[str, JsonObject | None]]


def check_limit(value: object, argument: str) -> None:
    """Refuse anything but ``None`` or an integer of at least 1 (booleans included)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"{argument} must be an integer of at least 1, got {value!r}")


def check_items(items: Iterable[tuple[str, JsonObject | None]]) -> Items:
    """Return a batch of ``(content, metadata)`` as a list once every item is usable.

    Content must be a non-blank string and metadata ``None`` or a JSON object; a bad item's
    message gives its index when the batch has more than one.
    """
    batch = list(items)
    for index, (content, metadata) in enumerate(batch):
        check_item(content, metadata, "" if len(batch) == 1 else f" (item {index})")
    return batch


def check_item(content: object, metadata: object, where: str) -> None:
    """Refuse blank or non-string content and metadata that is not ``None`` or a JSON object.

    ``where`` follows the argument's name in messages, e.g. ``" (item 3)"``.
    """
    # ``isspace`` tells blank text as ``strip`` would, without copying the text.
    if not isinstance(content, str) or not content or content.isspace():
        raise InvalidArgumentError(f"content{where} must be a non-blank string")
    if metadata is not None:
        check_json_object(metadata, f"metadata{where}")


def seconds(value: float | timedelta | None, argument: str) -> float | None:
    """Return a positive duration in seconds (``None`` stays ``None``), or refuse it."""
    if value is None:
        return None
    amount = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount > 0:
        raise InvalidArgumentError(f"{argument} must be a positive duration, got {value!r}")
    return float(amount)
