"""Checking a tool's input schema the way strict JSON Schema validators do."""

from __future__ import annotations

from typing import Any

JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def defaults_that_do_not_fit(schema: Any, where: str = "schema") -> list[str]:
    """Every ``default`` in ``schema`` that its own ``type`` refuses, by location."""
    found: list[str] = []
    if isinstance(schema, dict):
        if "default" in schema and "type" in schema:
            kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            value = schema["default"]
            fits = any(
                isinstance(value, JSON_TYPES[kind])
                and not (kind in ("integer", "number") and isinstance(value, bool))
                for kind in kinds
            )
            if not fits:
                found.append(f"{where}: default {value!r} is not {schema['type']}")
        for key, value in schema.items():
            found += defaults_that_do_not_fit(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += defaults_that_do_not_fit(value, f"{where}[{index}]")
    return found


def assert_strict_schema(schema: dict[str, Any]) -> None:
    """``schema`` is a valid Draft 2020-12 schema whose every default fits its own type.

    The draft's meta-schema does not look at defaults; strict validators (Ajv's strict mode,
    validators that fill defaults in) do, so that is checked by rule, always.
    """
    assert schema["type"] == "object"
    assert defaults_that_do_not_fit(schema) == []
    try:
        from jsonschema import Draft202012Validator
    except ImportError:  # an optional extra's dependency
        return
    Draft202012Validator.check_schema(schema)
    for name, spec in schema["properties"].items():
        if "default" in spec:
            assert Draft202012Validator(spec).is_valid(spec["default"]), name
