"""Public names that import their module on first use (PEP 562 module ``__getattr__``).

A package that lists its names this way costs nothing to import beyond its own file, so a
program pays only for the parts it uses, and an optional dependency is needed only by the
name that uses it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """Return the ``__getattr__`` of ``package`` that imports each name of ``homes`` on demand.

    Args:
        package: The package's name, for the error of an unknown name.
        homes: Each public name's module, as ``"module"`` (the same name there) or
            ``"module:attribute"`` (an alias).
        namespace: The package's ``globals()``: a name imported once is kept there, so it is
            looked up like any other from then on.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = home.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value
        return value

    return __getattr__
