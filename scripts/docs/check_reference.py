"""A mkdocs hook: the built reference documents every public name, with its signature.

mkdocstrings fails on a name a page asks for that does not exist; this check covers the
other way round: a name a public module exports (its ``__all__``) that no page renders, or a
class or function rendered without its signature, fails ``make docs``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

# The modules whose exports are agentrecall's public API (tests/test_public_api.py).
PUBLIC = (
    "agentrecall",
    "agentrecall.errors",
    "agentrecall.types",
    "agentrecall.stores",
    "agentrecall.storage",
    "agentrecall.extraction",
    "agentrecall.models",
    "agentrecall.embeddings",
    "agentrecall.retrieval",
    "agentrecall.mcp",
    "agentrecall.cli",
    "agentrecall.migrate",
    "agentrecall.transfer",
    "agentrecall.export_format",
    "agentrecall.testing",
    "agentrecall.testing.conformance",
    "agentrecall.testing.postgres",
)

HEADING = re.compile(r'<h\d id="([\w.]+)" class="doc doc-heading">')


def on_post_build(config: Any, **kwargs: Any) -> None:
    """Raises ``PluginError`` naming each public name the reference lacks or shows bare."""
    rendered = rendered_names(Path(config["site_dir"]))
    problems = []
    for module_name in PUBLIC:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or [
            name
            for name, value in vars(module).items()
            if not name.startswith("_") and getattr(value, "__module__", None) == module_name
        ]
        for name in names:
            value = getattr(module, name)
            # Where it is exported, at the top, or where it is defined.
            paths = [f"{module_name}.{name}", f"agentrecall.{name}"]
            if hasattr(value, "__qualname__"):
                paths.append(f"{value.__module__}.{value.__qualname__}")
            signed = [rendered[path] for path in paths if path in rendered]
            if not signed:
                problems.append(f"{module_name}.{name} is not in the reference")
            elif needs_signature(value) and not any(signed):
                problems.append(f"{module_name}.{name} is shown without its signature")
    if problems:
        raise PluginError("The API reference is incomplete:\n  " + "\n  ".join(problems))


def rendered_names(site: Path) -> dict[str, bool]:
    """Each object the built pages document, and whether a signature follows its heading."""
    found: dict[str, bool] = {}
    for page in site.rglob("*.html"):
        parts = HEADING.split(page.read_text(encoding="utf-8"))
        # split() alternates: text, id, the text up to the next heading, id, ...
        for identifier, body in zip(parts[1::2], parts[2::2], strict=True):
            found[identifier] = found.get(identifier, False) or "doc-signature" in body
    return found


def needs_signature(value: Any) -> bool:
    """Whether ``value`` is a function or a class that agentrecall gives a constructor.

    Protocols, enums, typed dicts and exceptions that keep their base's constructor have no
    signature of their own to show.
    """
    if inspect.isroutine(value):
        return True
    if getattr(value, "_is_protocol", False):
        return False
    return inspect.isclass(value) and any(
        "__init__" in vars(cls) and cls.__module__.startswith("agentrecall")
        for cls in value.__mro__
    )
