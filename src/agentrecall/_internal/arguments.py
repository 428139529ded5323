"""Checking a model's tool arguments against the tool's JSON Schema.

Covers the subset of JSON Schema that agentrecall's tools use: an ``object`` with
``properties``, ``required`` and per-property ``default``, and the types ``string``,
``integer``, ``number``, ``boolean``, ``array`` (with ``items``) and ``object``. Arguments the
schema does not name are ignored, as models sometimes add them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrecall.errors import InvalidArgumentError

_EXPECTED = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
}


def validate_arguments(
    tool_name: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Return the arguments to call the tool with: checked, with defaults filled in.

    Every property of the schema appears in the result: the given value, else the schema's
    ``default`` (``None`` when it has none). An integer given as an integral float (``3.0``)
    becomes an ``int``; a ``null`` for an optional property counts as leaving it out.

    Raises:
        InvalidArgumentError: one or more arguments are missing or have the wrong type. The
            message starts ``Validation failed for input parameters:``, counts the problems and
            gives each one's location, what was expected, and the value received.
    """
    problems: list[str] = []
    result: dict[str, Any] = {}
    required = set(schema.get("required", ()))
    for name, spec in schema.get("properties", {}).items():
        value = arguments.get(name)
        if value is None:
            if name in required:
                problems.append(_problem(name, "required, but missing", "missing", arguments))
            result[name] = spec.get("default")
            continue
        result[name] = _check(value, spec, name, problems)
    if problems:
        count = f"{len(problems)} validation error{'s' if len(problems) > 1 else ''}"
        raise InvalidArgumentError(
            f"Validation failed for input parameters: {count} for {tool_name}\n"
            + "\n".join(problems)
        )
    return result


def _check(value: Any, spec: Mapping[str, Any], where: str, problems: list[str]) -> Any:
    """Return ``value`` in the form the tool expects, or record why it does not fit."""
    kind = spec.get("type")
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind is not None and not _has_type(value, kind):
        expected = _EXPECTED.get(kind, kind)
        problems.append(_problem(where, f"should be {expected}", f"{kind}_type", value))
        return value
    if kind == "array" and "items" in spec:
        return [
            _check(item, spec["items"], f"{where}.{i}", problems) for i, item in enumerate(value)
        ]
    return value


def _has_type(value: Any, kind: str) -> bool:
    # bool is an int subclass in Python, but JSON keeps true/false apart from numbers.
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, Mapping)
    return True


def _problem(where: str, message: str, code: str, value: Any) -> str:
    details = f"type={code}, input_value={value!r}, input_type={type(value).__name__}"
    return f"{where}\n  {message} [{details}]"
