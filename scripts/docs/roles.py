"""Reads the Sphinx roles of agentrecall's docstrings (``:class:`X```) as cross-references.

The docstrings name other objects the Sphinx way. For the reference, each role becomes a link
to the object when the reference documents it, and code otherwise; a role naming nothing that
exists is a warning, which ``mkdocs build --strict`` turns into a failed build, so a docstring
cannot keep pointing at a class, function or module that was renamed or removed.
"""

from __future__ import annotations

import html
import importlib.util
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|data|mod|attr|exc|obj):`(~?)([^`<>]+)`")


class SphinxRoles(griffe.Extension):
    """Turns the roles of every loaded docstring into optional cross-references."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrites the docstrings of ``pkg`` and of every object it holds."""
        self._rewrite(pkg, seen=set())

    def _rewrite(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(lambda m: self._reference(obj, m), obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._rewrite(member, seen)  # type: ignore[arg-type]

    def _reference(self, obj: griffe.Object, match: re.Match[str]) -> str:
        role, short, name = match.groups()
        path = resolve(obj, name)
        if path is None:
            where = obj.docstring.lineno if obj.docstring else None
            griffe.logger.warning(
                "%s:%s: :%s:`%s` names nothing that exists",
                obj.relative_filepath,
                where,
                role,
                name,
            )
            return f"`{name}`"
        text = name.rsplit(".", 1)[-1] if short else name
        if role in ("func", "meth"):
            text += "()"
        return (
            f'<autoref identifier="{html.escape(path)}" optional>'
            f"<code>{html.escape(text)}</code></autoref>"
        )


def resolve(obj: griffe.Object, name: str) -> str | None:
    """The full path of ``name`` as the docstring of ``obj`` means it, if it exists.

    As Sphinx reads it: a name is looked up in the scopes around ``obj`` (its class, its
    module, what that module imports), then as a full path; a leading ``.`` starts from the
    package of ``obj``'s module. A name outside agentrecall counts when Python can import its
    module (``argparse.ArgumentTypeError``).
    """
    if name.startswith("."):
        module = obj if obj.is_module else obj.module
        package = module.path if module.is_init_module else module.path.rpartition(".")[0]
        name = package + name
    head, _, rest = name.partition(".")
    scope: griffe.Object | None = obj
    while scope is not None:
        start = member(scope, head)
        if start is not None:
            found = walk(start, rest)
            if found is not None:
                return found
        scope = scope.parent
    collection = obj.modules_collection
    if head in collection.members:
        return walk(collection.members[head], rest)
    return name if importlib.util.find_spec(head) is not None else None


def member(scope: griffe.Object, name: str) -> griffe.Object | None:
    """The member ``name`` of ``scope`` (inherited ones too), past any alias; None if none."""
    members = scope.all_members if scope.is_class else scope.members
    found = members.get(name)
    if found is None:
        return None
    try:
        return found.final_target if found.is_alias else found  # type: ignore[union-attr,return-value]
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def walk(start: griffe.Object, dotted: str) -> str | None:
    """The path of the object ``dotted`` names inside ``start`` (``start`` when empty).

    An inherited member keeps the path of the class it is named through (``SQLiteStore.scope``,
    not the base class's), so that a link leads to where the reader was sent.
    """
    found: griffe.Object | None = start
    path = start.path
    for part in filter(None, dotted.split(".")):
        if found is None:
            return None
        own = part in found.members
        found = member(found, part)
        if found is not None:
            path = found.path if own else f"{exported(start.modules_collection, path)}.{part}"
    return None if found is None else path


def exported(collection: griffe.ModulesCollection, path: str) -> str:
    """``path`` as ``import agentrecall`` exports it (``agentrecall.SQLiteStore``), if it does.

    The reference documents an inherited method under the exported class only; the class's
    own module path leads nowhere for it.
    """
    root = collection.members["agentrecall"]
    for name, value in root.members.items():
        try:
            if value.is_alias and value.final_target.path == path:  # type: ignore[union-attr]
                return f"agentrecall.{name}"
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            continue
    return path
