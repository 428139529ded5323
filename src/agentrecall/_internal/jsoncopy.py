"""Deep copies of JSON-like values, much faster than ``copy.deepcopy`` for them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Leaves are shared, not copied; checking their exact type first skips a call per leaf.
_LEAVES = frozenset({str, int, float, bool, type(None), bytes})


def copy_json(value: Any) -> Any:
    """Return a deep copy of ``value``: mappings become dicts, lists are copied, leaves shared.

    Meant for parsed JSON and chat messages, whose leaves (str, int, float, bool, None, bytes)
    are immutable; any other object is shared as well.
    """
    kind = type(value)
    if kind is dict or (kind not in _LEAVES and kind is not list and isinstance(value, Mapping)):
        return {
            key: child if type(child) in _LEAVES else copy_json(child)
            for key, child in value.items()
        }
    if kind is list:
        return [child if type(child) in _LEAVES else copy_json(child) for child in value]
    return value
