"""Turning a ``True`` / ``False`` / config object / mapping argument into a config object."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from agentrecall.errors import InvalidArgumentError

C = TypeVar("C")


def coerce_config(value: object, config_type: type[C], argument: str) -> C | None:
    """Return the config ``value`` stands for, or ``None`` when the feature is off.

    ``True`` gives the defaults, ``False`` and ``None`` turn the feature off, an instance of
    ``config_type`` (a dataclass) is used as is, and a mapping of its field names (the
    reference's dict form) is converted.

    Raises:
        InvalidArgumentError: ``value`` is none of those, a mapping has an unknown key, or the
            config rejects a value. The message names ``argument``.
    """
    if value is True:
        return config_type()
    if value is False or value is None:
        return None
    if isinstance(value, config_type):
        return value
    if isinstance(value, Mapping):
        known = {field.name for field in dataclasses.fields(config_type)}  # type: ignore[arg-type]
        unknown = sorted(str(key) for key in value if key not in known)
        if unknown:
            raise InvalidArgumentError(
                f"{argument} has unknown keys {unknown}; known keys are {sorted(known)}"
            )
        options: dict[str, Any] = dict(value)
        return config_type(**options)
    raise InvalidArgumentError(
        f"{argument} must be True, False, a {config_type.__name__} or a mapping, got {value!r}"
    )
