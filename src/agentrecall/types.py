"""Values exchanged with memory stores.

The names and fields of :class:`MemoryEntry` and :class:`AddResult` follow the Strands Agents
memory contract, so a store of ours can be handed to a Strands ``MemoryManager`` unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

__all__ = [
    "AddResult",
    "JsonObject",
    "MemoryEntry",
    "MemoryRecord",
    "MemoryVersion",
    "SearchOptions",
]

JsonObject = dict[str, Any]
"""A JSON object as Python sees it: string keys, JSON values."""


class SearchOptions(TypedDict, total=False):
    """Per-call search options, the mapping a Strands ``MemoryManager`` passes to ``search``.

    ``mode`` and ``neighbours`` are for stores declaring ``Capability.SEMANTIC``; left out (or
    ``None``), the store's own defaults apply.
    """

    max_search_results: int | None
    mode: Literal["keyword", "semantic", "hybrid"] | None
    neighbours: bool | None


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One search hit.

    Attributes:
        content: the stored text, verbatim.
        store_name: the store that returned it; stores leave it ``None`` and a manager stamps it.
        metadata: the stored metadata plus ``_relevanceScore`` (higher is more relevant). A fresh
            object per call: mutating it changes nothing stored.
        id: the memory's id, so a caller can ``get`` or ``delete`` it (not part of the Strands
            contract, which ignores it).
    """

    content: str
    store_name: str | None = None
    metadata: JsonObject | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class AddResult:
    """What ``add`` returns: the id of the new memory, or of the existing identical one.

    Attributes:
        id: the memory's id.
        created: ``True`` when this add stored a new memory, ``False`` when identical content
            was already there (``id`` is then that memory's), ``None`` when the store does not
            say. Not compared: two results for the same memory are equal.
    """

    id: str
    created: bool | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A stored memory as ``get`` and listing return it.

    Attributes:
        id: the memory's id.
        content: the stored text, verbatim.
        created_at: when it was added, as the store keeps it (``YYYY-MM-DDTHH:MM:SS.mmmZ``).
        metadata: the stored metadata, ``None`` when the memory has none. A fresh object per call.
        updated_at: when ``update`` last changed it, if ever (stores with updates).
        expires_at: when it expires, if it does (stores with expiry).
        user_id: the user whose memory it is, ``None`` when it belongs to no user.
        agent_id: the agent whose memory it is, ``None`` when it belongs to no agent.
        session_id: the session it belongs to, ``None`` when it belongs to none.
        invalidated_at: when a newer memory retired it (``supersede``), ``None`` while it is
            current (stores with ``Capability.SUPERSEDE``).
        superseded_by: the id of the memory that retired it, ``None`` while it is current.
        valid_from: when the fact became true in the world, if the writer said.
        valid_until: when the fact stopped being true in the world, if known.

    The three ids are the exact scope the memory was written in (stores with scopes); all
    three are ``None`` for a memory written outside any scope, and in stores without scopes.
    ``created_at`` and ``invalidated_at`` are the store's clock (what it knew when);
    ``valid_from`` and ``valid_until`` are world time, as the writer gave them.
    """

    id: str
    content: str
    created_at: str
    metadata: JsonObject | None = None
    updated_at: str | None = None
    expires_at: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    invalidated_at: str | None = None
    superseded_by: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryVersion:
    """A version of a memory that a change replaced or retired, as ``history`` returns it.

    Attributes:
        content: the content it had.
        metadata: the metadata it had.
        changed_at: when it was replaced (``YYYY-MM-DDTHH:MM:SS.mmmZ``).
        change: ``"update"``, ``"delete"``, ``"expire"`` or ``"supersede"`` (a newer memory
            retired it; the memory itself stays, retired).
        reason: why, as the caller said, or ``None``.
        memory_id: the id of the memory it is a version of (stores fill it in; ``None`` only
            in a version made by hand without one).
        user_id: the user of the memory's scope, as in :class:`MemoryRecord`.
        agent_id: the agent of the memory's scope.
        session_id: the session of the memory's scope.
        created_at: when the memory was added, ``None`` in versions kept before stores
            recorded it.
        invalidated_at: when the memory was retired, if it was by then; in a
            ``"supersede"`` version, the moment of that retirement.
        superseded_by: the memory that retired it, as ``invalidated_at``.
        valid_from: the memory's world time, as in :class:`MemoryRecord`.
        valid_until: the memory's world time, as in :class:`MemoryRecord`.

    A version holds the memory as it was until ``changed_at``; ``as_of`` reads rely on that.
    """

    content: str
    metadata: JsonObject | None
    changed_at: str
    change: str
    reason: str | None = None
    memory_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    created_at: str | None = None
    invalidated_at: str | None = None
    superseded_by: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
