"""Checks that a value is plain JSON before anything is written."""

from __future__ import annotations

import math
import sys
from typing import Any

from agentrecall.errors import InvalidArgumentError

MAX_DEPTH = 100
"""How deeply metadata may nest; deeper values could not be written or read back reliably."""


# Python refuses to turn longer integers into text (``sys.get_int_max_str_digits``); 3.32 bits
# per decimal digit, rounded down so that every integer below the bound converts.
_MAX_INT_BITS = int((getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 10**9) * 3.32) - 4


def check_json_object(value: Any, argument: str) -> None:
    """Raise ``InvalidArgumentError`` unless ``value`` is a JSON object made of JSON values.

    Allowed: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``, ``bool`` and
    ``None``, nested at most ``MAX_DEPTH`` levels. Tuples, sets, bytes, non-string keys, NaN and
    infinities are refused because they would not read back as written (or not at all, in other
    JSON readers).
    """
    if not isinstance(value, dict):
        raise InvalidArgumentError(
            f"{argument} must be a JSON object (a dict), got {type(value).__name__}"
        )
    problem = _first_problem(value, argument)
    if problem is not None:
        raise InvalidArgumentError(problem)


def _first_problem(value: Any, where: str) -> str | None:
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, (dict, list)) and depth > MAX_DEPTH:
            return f"{path} nests deeper than {MAX_DEPTH} levels"
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return f"{path} has a key {key!r} that is not a string; JSON keys are strings"
                stack.append((child, f"{path}[{key!r}]", depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
        else:
            problem = _scalar_problem(item, path)
            if problem is not None:
                return problem
    return None


def _scalar_problem(item: Any, path: str) -> str | None:
    if item is None or isinstance(item, (str, bool)):
        return None
    if isinstance(item, int):
        if item.bit_length() > _MAX_INT_BITS:
            return f"{path} is an integer too long to write as JSON text"
        return None
    if isinstance(item, float):
        return None if math.isfinite(item) else f"{path} is {item!r}; JSON has no NaN or infinity"
    return f"{path} is a {type(item).__name__}, which is not a JSON value"
