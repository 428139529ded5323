"""The store contract every agentrecall store satisfies, and the capabilities beyond it."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from agentrecall.types import AddResult, JsonObject, MemoryEntry

DEFAULT_PAGE = 5_000
"""Items per page of a store's paged reads (such as ``versions``) when the caller gives none."""


class Capability(str, enum.Enum):
    """An operation a store supports beyond ``search`` and ``add``.

    Stores declare theirs in the ``capabilities`` attribute, on the class; a capability that
    depends on how a store is configured (``SEMANTIC``) is declared by the instance. Callers and
    the conformance suite read the instance's set instead of probing for methods.
    """

    GET = "get"
    """``get(id)`` returns one memory or ``None``."""
    DELETE = "delete"
    """``delete(id)`` and ``delete_many(ids)`` forget memories."""
    LIST = "list"
    """``list(offset=, limit=)`` pages through memories, oldest first."""
    COUNT = "count"
    """``count()`` says how many memories there are."""
    ADD_MANY = "add_many"
    """``add_many([(content, metadata), ...])`` adds a batch in one write, results in order."""
    UPDATE = "update"
    """``update(id, content=, metadata=)`` changes a memory in place."""
    CLEAR = "clear"
    """``clear()`` forgets every memory the store (or scope) holds."""
    SCOPE = "scope"
    """``scope(user_id=, agent_id=, session_id=)`` returns a view confined to one scope."""
    FILTER = "filter"
    """``search``, ``list`` and ``count`` take a metadata ``filter`` and time bounds."""
    EXPIRY = "expiry"
    """Memories may expire (``ttl``/``expires_at``); expired ones are never returned."""
    HISTORY = "history"
    """``history(id)`` returns the versions ``update``, ``delete`` and expiry replaced;
    ``versions()`` pages through every version kept, deleted memories' too, and
    ``import_versions(versions)`` copies versions in (with ``IMPORT``)."""
    IMPORT = "import"
    """``import_records(records)`` stores copies of memories keeping their ids and timestamps
    (and, with ``SCOPE``, their scopes); what ``migrate`` writes with."""
    SUPERSEDE = "supersede"
    """``supersede(old_ids, content)`` retires memories in favour of a new one, keeping them;
    ``add`` takes ``valid_from``/``valid_until``; ``search``, ``list``, ``count`` and ``get``
    take ``as_of``, ``valid_at`` and ``include_superseded``; ``history`` follows the chain."""
    SEMANTIC = "semantic"
    """``search`` takes ``{"mode": "keyword" | "semantic" | "hybrid"}`` and
    ``{"neighbours": True}`` in its options, recalls by meaning, and gives hybrid hits
    ``_keywordScore`` and ``_semanticScore`` beside ``_relevanceScore``; ``reindex()``
    rebuilds the vectors. Declared by a store that was given an embedder."""


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
