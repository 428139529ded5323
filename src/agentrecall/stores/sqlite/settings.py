"""How ``SQLiteStore`` searches: its embedder, default mode and conversation-mode settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentrecall._internal.text import check_text
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.sqlite.embedding import Embedding, check_embedder, require_numpy
from agentrecall.stores.sqlite.semantic import Vectors

MODES = ("keyword", "semantic", "hybrid")
"""The search modes; ``keyword`` is BM25 alone."""


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """A store's search defaults, and its vectors when it has an embedder (shared by views)."""

    vectors: Vectors | None
    mode: str
    neighbours: bool
    session_key: str

    @classmethod
    def configure(
        cls,
        embedder: object,
        search_mode: object,
        neighbours: object,
        session_key: object,
        path: str,
    ) -> SearchSettings:
        """Check a store's search arguments and return its settings.

        Raises:
            ImportError: an embedder, or a mode that needs one, without ``numpy``.
            InvalidArgumentError: an argument is unusable, or the mode needs an embedder.
        """
        vectors = None
        if embedder is not None:
            vectors = Vectors(Embedding(check_embedder(embedder), path))
        mode = check_mode(
            search_mode or ("keyword" if vectors is None else "hybrid"), "search_mode"
        )
        if not isinstance(session_key, str) or not session_key:
            raise InvalidArgumentError(
                f"session_key must be a non-empty string, got {session_key!r}"
            )
        check_text(session_key, "session_key")
        settings = cls(vectors, mode, check_flag(neighbours, "neighbours"), session_key)
        if mode != "keyword":
            settings.require_vectors(f"search_mode={mode!r}", "this store")
        return settings

    def require_vectors(self, what: str, store: str) -> Vectors:
        """Return the vectors, or say that ``what`` needs an embedder (or ``numpy``).

        Raises:
            ImportError: ``numpy`` is not installed.
            InvalidArgumentError: the store has no embedder.
        """
        if self.vectors is None:
            require_numpy(what)
            raise InvalidArgumentError(
                f"{what} needs an embedder, and {store} has none; create it with "
                "SQLiteStore(..., embedder=...)"
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
