"""The store contract every agentrecall store satisfies, and the capabilities beyond it."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from agentrecall.types import AddResult, JsonObject, MemoryEntry


class Capability(str, enum.Enum):
    """An operation a store supports beyond ``search`` and ``add``.

    Stores declare theirs in the ``capabilities`` class attribute; callers and the conformance
    suite read that set instead of probing for methods.
    """

    GET = "get"
    DELETE = "delete"
    LIST = "list"
    COUNT = "count"


@runtime_checkable
class MemoryStore(Protocol):
    """What a memory manager needs from a store: the Strands ``MemoryStore`` protocol.

    Duck-typed, so any store satisfying it can also be handed to a Strands ``MemoryManager``.

    Attributes:
        name: unique among the stores of one manager.
        description: shown to the model next to the store's name, or ``None``.
        max_search_results: the store's own cap on hits per search, or ``None``.
        writable: whether ``add`` may be called.
        extraction: the store's fact-extraction setting, resolved by a manager.
    """

    name: str
    description: str | None
    max_search_results: int | None
    writable: bool
    extraction: Any

    async def search(
        self, query: str, options: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        """Return hits for ``query``, best first, each carrying ``_relevanceScore``."""
        ...

    async def add(self, content: str, metadata: JsonObject | None = None) -> AddResult:
        """Keep ``content``; identical content returns the existing memory's id."""
        ...
