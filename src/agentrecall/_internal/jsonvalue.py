"""Checks that a value is plain JSON before anything is written."""

from __future__ import annotations

import math
from typing import Any

from agentrecall.errors import InvalidArgumentError


def check_json_object(value: Any, argument: str) -> None:
    """Raise ``InvalidArgumentError`` unless ``value`` is a JSON object made of JSON values.

    Allowed: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``, ``bool`` and
    ``None``, nested to any depth. Tuples, sets, bytes, non-string keys, NaN and infinities are
    refused because they would not read back as written (or not at all, in other JSON readers).
    """
    if not isinstance(value, dict):
        raise InvalidArgumentError(
            f"{argument} must be a JSON object (a dict), got {type(value).__name__}"
        )
    problem = _first_problem(value, argument)
    if problem is not None:
        raise InvalidArgumentError(problem)


def _first_problem(value: Any, where: str) -> str | None:
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return f"{path} has a key {key!r} that is not a string; JSON keys are strings"
                stack.append((child, f"{path}[{key!r}]"))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{path} is {item!r}; JSON has no NaN or infinity"
        elif not (item is None or isinstance(item, (str, int))):
            return f"{path} is a {type(item).__name__}, which is not a JSON value"
    return None
