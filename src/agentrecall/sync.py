"""Calling stores from synchronous code: scripts, notebooks without a loop, the CLI."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Coroutine, Iterable
from types import TracebackType
from typing import Any, TypeVar

from agentrecall._internal.loop import LoopRunner
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.types import AddResult, JsonObject, MemoryEntry, MemoryRecord

T = TypeVar("T")


class SyncStore:
    """Blocking twins of a store's async methods, run on one event loop this object owns.

    Use it as a context manager, or call :meth:`close` when done: that also closes the store
    (its ``aclose()``, for example an :class:`~agentrecall.SQLiteStore`'s connection). It
    refuses to run inside a running event loop (``await`` the store there). Calls to a
    capability the store does not declare raise :class:`~agentrecall.errors.InvalidArgumentError`.

    Example::

        with SyncStore(JsonFileStore(name="notes")) as notes:
            notes.add("User prefers aisle seats")
            hits = notes.search("which seat does the user like?")
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._runner = LoopRunner()
        self._used = False

    def search(self, query: str, max_search_results: int | None = None) -> list[MemoryEntry]:
        """Search the store; ``max_search_results`` caps hits for this call."""
        return self._run(self.store.search(query, {"max_search_results": max_search_results}))

    def add(self, content: str, metadata: JsonObject | None = None) -> AddResult:
        """Add one memory."""
        return self._run(self.store.add(content, metadata))

    def add_many(self, items: Iterable[tuple[str, JsonObject | None]]) -> list[AddResult]:
        """Add several memories in one batch."""
        result: list[AddResult] = self._run(self._extra("add_many", None)(items))
        return result

    def get(self, memory_id: str) -> MemoryRecord | None:
        """Return one memory by id, or ``None``."""
        result: MemoryRecord | None = self._run(self._extra("get", Capability.GET)(memory_id))
        return result

    def delete(self, memory_id: str) -> bool:
        """Forget one memory; return whether it existed."""
        result: bool = self._run(self._extra("delete", Capability.DELETE)(memory_id))
        return result

    def list(self, *, offset: int = 0, limit: int | None = None) -> list[MemoryRecord]:
        """Return memories oldest first."""
        method = self._extra("list", Capability.LIST)
        result: list[MemoryRecord] = self._run(method(offset=offset, limit=limit))
        return result

    def count(self) -> int:
        """Return how many memories the store holds."""
        result: int = self._run(self._extra("count", Capability.COUNT)())
        return result

    def close(self) -> None:
        """Close the store if it has an async ``aclose()``, then the event loop.

        The store is closed only if this object ran a call on it since the last ``close``, so
        closing an unused facade does nothing. Stores reopen on next use: the store, and this
        object, stay usable afterwards.
        """
        try:
            aclose = getattr(self.store, "aclose", None)
            # Inside a running loop this object can run nothing, aclose() included.
            if self._used and not _in_running_loop() and inspect.iscoroutinefunction(aclose):
                self._used = False
                # On this loop, so that what the store bound to it is released before it closes.
                self._runner.run(aclose())
        finally:
            self._runner.close()

    def __enter__(self) -> SyncStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        self._used = True
        return self._runner.run(coro)

    def _extra(self, method: str, capability: Capability | None) -> Any:
        declared: frozenset[Capability] = getattr(self.store, "capabilities", frozenset())
        function = getattr(self.store, method, None)
        if function is None or (capability is not None and capability not in declared):
            raise InvalidArgumentError(
                f"store '{self.store.name}' ({type(self.store).__name__}) does not support {method}"
            )
        return function


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
