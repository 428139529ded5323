"""The checked stores of a memory manager, and which of them an operation targets."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, Protocol

from agentrecall.errors import InvalidArgumentError
from agentrecall.extraction.config import ResolvedExtraction, implements, resolve_extraction
from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.types import AddResult, JsonObject, MemoryRecord

Action = Literal["search", "add", "forget", "update"]


class Superseding(Protocol):
    """What a manager calls on a store declaring ``Capability.SUPERSEDE`` to correct a memory."""

    name: str

    async def get(self, memory_id: str, *, include_superseded: bool = False) -> MemoryRecord | None:
        """Return the memory with ``memory_id`` (retired ones too, if asked), or ``None``."""
        ...

    async def supersede(
        self,
        old_ids: Iterable[str],
        content: str,
        *,
        metadata: JsonObject | None = None,
        reason: str | None = None,
    ) -> AddResult:
        """Add ``content`` and retire ``old_ids`` in its favour, in one transaction."""
        ...


def is_writable(store: object) -> bool:
    """Whether the store says it may be written to."""
    return getattr(store, "writable", False) is True


class StoreSet:
    """A manager's stores, checked once, with the subsets each operation may use.

    A method counts as implemented only when the store's class defines it (see
    :func:`~agentrecall.extraction.implements`), so a protocol's placeholder does not.

    Attributes:
        all: every store, in the order given.
        by_name: the stores by name.
        writers: writable stores with ``add``, in order (targets of ``add``).
        forgetters: writable stores declaring ``Capability.DELETE``, in order.
        updaters: writable stores declaring ``Capability.SUPERSEDE``, in order (targets of
            a correction, which supersedes a memory).
        extraction: ``(store, resolved)`` for each store whose extraction is on, in order.
    """

    def __init__(self, stores: Sequence[MemoryStore]) -> None:
        """Check the stores as the reference manager does, in store order.

        Raises:
            InvalidArgumentError: no stores; a store without a name or ``search``; a repeated
                name; a writable store that cannot be written; or an extraction setting the
                store cannot carry out. Messages start with ``MemoryManager:``.
        """
        if isinstance(stores, (str, bytes)) or not isinstance(stores, Sequence):
            raise InvalidArgumentError(
                f"MemoryManager: stores must be a list of stores, got {type(stores).__name__}"
            )
        if not stores:
            raise InvalidArgumentError("MemoryManager: at least one store is required")
        self.all: list[MemoryStore] = []
        self.by_name: dict[str, MemoryStore] = {}
        self.extraction: list[tuple[MemoryStore, ResolvedExtraction]] = []
        for index, store in enumerate(stores):
            name = _check_store(store, index, self.by_name)
            self.all.append(store)
            self.by_name[name] = store
            resolved = _check_extraction(store, name)
            if resolved is not None:
                self.extraction.append((store, resolved))
        self.writers = [s for s in self.all if is_writable(s) and implements(s, "add")]
        self.forgetters = _declaring(self.all, Capability.DELETE)
        self.updaters = _declaring(self.all, Capability.SUPERSEDE)

    def targets(self, names: Sequence[str] | None, action: Action) -> list[MemoryStore]:
        """Return the stores ``names`` pick for ``action``, in the given order, without repeats.

        ``None`` picks every store ``action`` may use. Every name is checked before the result
        is returned, so an error means nothing was touched.

        Raises:
            InvalidArgumentError: ``names`` is a string, a name is unknown, or its store cannot
                do ``action`` (read-only for ``add``, ``forget`` and ``update``).
        """
        allowed = {
            "search": self.all,
            "add": self.writers,
            "forget": self.forgetters,
            "update": self.updaters,
        }[action]
        if names is None:
            return list(allowed)
        if isinstance(names, str):
            raise InvalidArgumentError(
                f"MemoryManager: stores must be a list of store names, not the string {names!r}"
            )
        chosen: list[MemoryStore] = []
        for name in dict.fromkeys(names):
            store = self.by_name.get(name)
            if store is None:
                raise InvalidArgumentError(
                    f"MemoryManager: store '{name}' not found; known stores: "
                    + ", ".join(self.by_name)
                )
            if store not in allowed:
                raise InvalidArgumentError(
                    f"MemoryManager: store '{name}' is read-only for {action} "
                    + _WHY_READ_ONLY[action]
                )
            chosen.append(store)
        return chosen

    def add_tool_scope(self, allowlist: Sequence[str | MemoryStore] | None) -> list[MemoryStore]:
        """Return the stores the add tool may write to: the allowlist's, or every writer.

        The allowlist holds names or stores (matched by name); the result is in store order.

        Raises:
            InvalidArgumentError: the allowlist is empty or a string, or names a store that is
                unknown, not writable, or without ``add``.
        """
        if allowlist is None:
            return list(self.writers)
        if isinstance(allowlist, str) or not allowlist:
            raise InvalidArgumentError(
                "MemoryManager: add_tool stores must be a non-empty list of store names or "
                f"stores, got {allowlist!r}; leave it out to allow every writable store"
            )
        names = {
            item if isinstance(item, str) else getattr(item, "name", None) for item in allowlist
        }
        for name in names:
            store = self.by_name.get(name) if isinstance(name, str) else None
            if store is None:
                problem = "not found"
            elif not is_writable(store):
                problem = "is not writable"
            elif not implements(store, "add"):
                problem = "has no add method (only add_messages)"
            else:
                continue
            raise InvalidArgumentError(f"MemoryManager: add_tool store '{name}' {problem}")
        return [store for store in self.all if store.name in names]


_WHY_READ_ONLY = {
    "search": "",
    "add": "(not writable, or without an add method)",
    "forget": "(not writable, or without Capability.DELETE)",
    "update": "(not writable, or without Capability.SUPERSEDE, which SQLiteStore and "
    "PostgresStore have)",
}
"""How a refusal says why a store cannot do an action."""


def _declaring(stores: list[MemoryStore], capability: Capability) -> list[MemoryStore]:
    """The writable stores of ``stores`` that declare ``capability``, in order."""
    return [s for s in stores if is_writable(s) and capability in getattr(s, "capabilities", ())]


def _check_store(store: object, index: int, seen: dict[str, MemoryStore]) -> str:
    name = getattr(store, "name", None)
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(
            f"MemoryManager: stores[{index}] needs a non-empty string name, got {name!r}"
        )
    if not implements(store, "search"):
        raise InvalidArgumentError(f"MemoryManager: store '{name}' has no search method")
    if name in seen:
        raise InvalidArgumentError(
            f"MemoryManager: duplicate store name '{name}'; give each store its own name"
        )
    if is_writable(store) and not (implements(store, "add") or implements(store, "add_messages")):
        raise InvalidArgumentError(
            f"MemoryManager: store '{name}' is writable but has no add or add_messages method; "
            "implement one or set writable=False"
        )
    return name


def _check_extraction(store: MemoryStore, name: str) -> ResolvedExtraction | None:
    resolved = resolve_extraction(getattr(store, "extraction", None), store)
    if resolved is None:
        return None
    if not is_writable(store):
        problem = "has extraction config but is not writable"
    elif not resolved.triggers:
        problem = "has extraction config but no triggers; give one or leave trigger out"
    elif resolved.extractor is not None and not implements(store, "add"):
        problem = "has an extractor but no add method (extracted facts are written with add)"
    elif resolved.extractor is None and not implements(store, "add_messages"):
        problem = (
            "has extraction config without an extractor but no add_messages method; "
            "give it an extractor or implement add_messages"
        )
    else:
        return resolved
    raise InvalidArgumentError(f"MemoryManager: store '{name}' {problem}")
