"""How a store searches: its default mode, conversation-mode settings, and whether it has vectors.

Shared by the backends; each hands in its own vectors object (``None`` without an embedder).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from agentrecall._internal.text import check_text
from agentrecall.embeddings.vectors import import_numpy
from agentrecall.errors import InvalidArgumentError

V = TypeVar("V")

MODES = ("keyword", "semantic", "hybrid")
"""The search modes; ``keyword`` is BM25 alone."""


@dataclass(frozen=True)
class SearchSettings(Generic[V]):
    """A store's search defaults, and its vectors when it has an embedder (shared by views).

    Attributes:
        vectors: the backend's vectors object, ``None`` for a store without an embedder.
        mode: the mode of a search whose options name none.
        neighbours: whether searches are in conversation mode by default.
        session_key: the metadata key naming a memory's session in conversation mode.
        store_type: the store's class name, for messages (``SQLiteStore``).
    """

    vectors: V | None
    mode: str
    neighbours: bool
    session_key: str
    store_type: str

    @classmethod
    def configure(
        cls,
        vectors: V | None,
        search_mode: object,
        neighbours: object,
        session_key: object,
        store_type: str,
    ) -> SearchSettings[V]:
        """Check a store's search arguments and return its settings.

        Raises:
            ImportError: an embedder, or a mode that needs one, without ``numpy``.
            InvalidArgumentError: an argument is unusable, or the mode needs an embedder.
        """
        mode = check_mode(
            search_mode or ("keyword" if vectors is None else "hybrid"), "search_mode"
        )
        if not isinstance(session_key, str) or not session_key:
            raise InvalidArgumentError(
                f"session_key must be a non-empty string, got {session_key!r}"
            )
        check_text(session_key, "session_key")
        flag = check_flag(neighbours, "neighbours")
        settings = cls(vectors, mode, flag, session_key, store_type)
        if mode != "keyword":
            settings.require_vectors(f"search_mode={mode!r}", "this store")
        return settings

    def require_vectors(self, what: str, store: str) -> V:
        """Return the vectors, or say that ``what`` needs an embedder (or ``numpy``).

        Raises:
            ImportError: ``numpy`` is not installed.
            InvalidArgumentError: the store has no embedder.
        """
        if self.vectors is None:
            import_numpy(what)
            raise InvalidArgumentError(
                f"{what} needs an embedder, and {store} has none; create it with "
                f"{self.store_type}(..., embedder=...)"
            )
        return self.vectors

    def for_call(self, options: Mapping[str, Any] | None, store: str) -> tuple[str, bool]:
        """Return the mode and neighbours setting of a search: the options', else the store's.

        Raises:
            ImportError: a mode that needs vectors, without ``numpy``.
            InvalidArgumentError: an option is unusable, or its mode needs an embedder.
        """
        mode, neighbours = self.mode, self.neighbours
        if options is not None and options.get("mode") is not None:
            mode = check_mode(options["mode"], "the search option 'mode'")
        if options is not None and options.get("neighbours") is not None:
            neighbours = check_flag(options["neighbours"], "the search option 'neighbours'")
        if mode != "keyword":
            self.require_vectors(f"{mode} search", store)
        return mode, neighbours


def check_mode(value: object, argument: str) -> str:
    """Return ``value`` if it is a search mode.

    Raises:
        InvalidArgumentError: it is not one of :data:`MODES`.
    """
    if not isinstance(value, str) or value not in MODES:
        raise InvalidArgumentError(
            f"{argument} must be one of {', '.join(repr(mode) for mode in MODES)}, got {value!r}"
        )
    return value


def check_flag(value: object, argument: str) -> bool:
    """Return ``value`` if it is a bool.

    Raises:
        InvalidArgumentError: it is not ``True`` or ``False``.
    """
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{argument} must be True or False, got {value!r}")
    return value
