"""Checks that a value is plain JSON before anything is written."""

from __future__ import annotations

import math
import sys
from typing import Any

from agentrecall._internal.text import has_surrogate, surrogate_problem
from agentrecall.errors import InvalidArgumentError

MAX_DEPTH = 100
"""How deeply metadata may nest; deeper values could not be written or read back reliably."""


# Python refuses to turn longer integers into text (``sys.get_int_max_str_digits``); 3.32 bits
# per decimal digit, rounded down so that every integer below the bound converts.
_MAX_INT_BITS = int((getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 10**9) * 3.32) - 4


def flat_strings(value: dict[Any, Any]) -> bool:
    """Whether every key and value of ``value`` is a string UTF-8 can encode (then it is JSON).

    Quick (``isascii`` reads a flag, it does not scan); ``False`` says only that the full
    check of :func:`check_json_object` must decide.
    """
    for key, child in value.items():
        if (
            type(key) is not str
            or type(child) is not str
            or (not key.isascii() and has_surrogate(key))
            or (not child.isascii() and has_surrogate(child))
        ):
            return False
    return True


def check_json_object(value: Any, argument: str) -> None:
    """Raise ``InvalidArgumentError`` unless ``value`` is a JSON object made of JSON values.

    Allowed: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``, ``bool`` and
    ``None``, nested at most ``MAX_DEPTH`` levels. Tuples, sets, bytes, non-string keys, NaN and
    infinities are refused because they would not read back as written (or not at all, in other
    JSON readers); strings and keys holding a lone surrogate because UTF-8 cannot encode them.
    The message names the first value at fault by its path, e.g. ``metadata['tags'][2]``.
    """
    if not isinstance(value, dict):
        raise InvalidArgumentError(
            f"{argument} must be a JSON object (a dict), got {type(value).__name__}"
        )
    # Most metadata is a flat object of strings: it passes without the walk below, which a
    # bulk import would pay for every memory.
    if flat_strings(value):
        return
    problem = _first_problem(value, argument)
    if problem is not None:
        raise InvalidArgumentError(problem)


def _first_problem(value: Any, where: str) -> str | None:
    # Each item carries its trail of keys as a linked pair (parent trail, key); the text of a
    # path is built only for the item at fault, which made checking a batch of memories with
    # ordinary metadata three times faster.
    stack: list[tuple[Any, _Trail, int]] = [(value, None, 1)]
    while stack:
        item, trail, depth = stack.pop()
        kind = type(item)
        if kind is bool or item is None or (kind is str and item.isascii()):
            continue
        if isinstance(item, (dict, list)) and depth > MAX_DEPTH:
            return f"{_path(where, trail)} nests deeper than {MAX_DEPTH} levels"
        if isinstance(item, dict):
            for key, child in item.items():
                if type(key) is not str or not key.isascii():
                    problem = _key_problem(key, trail, where)
                    if problem is not None:
                        return problem
                stack.append((child, (trail, key), depth + 1))
        elif isinstance(item, list):
            stack.extend((child, (trail, i), depth + 1) for i, child in enumerate(item))
        else:
            problem = _scalar_problem(item, trail, where)
            if problem is not None:
                return problem
    return None


_Trail = Any
"""``None`` for the top, else ``(parent trail, key or index)``."""


def _path(where: str, trail: _Trail) -> str:
    steps: list[str] = []
    while trail is not None:
        trail, step = trail
        steps.append(f"[{step!r}]" if isinstance(step, str) else f"[{step}]")
    return where + "".join(reversed(steps))


def _key_problem(key: Any, trail: _Trail, where: str) -> str | None:
    if not isinstance(key, str):
        return (
            f"{_path(where, trail)} has a key {key!r} that is not a string; JSON keys are strings"
        )
    if has_surrogate(key):
        return surrogate_problem(key, f"{_path(where, trail)} has a key {key!r} that")
    return None


def _scalar_problem(item: Any, trail: _Trail, where: str) -> str | None:
    if isinstance(item, str):
        return surrogate_problem(item, _path(where, trail)) if has_surrogate(item) else None
    if isinstance(item, int):
        if item.bit_length() > _MAX_INT_BITS:
            return f"{_path(where, trail)} is an integer too long to write as JSON text"
        return None
    if isinstance(item, float):
        if math.isfinite(item):
            return None
        return f"{_path(where, trail)} is {item!r}; JSON has no NaN or infinity"
    return f"{_path(where, trail)} is a {type(item).__name__}, which is not a JSON value"
