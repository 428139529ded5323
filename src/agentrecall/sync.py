"""Calling stores from synchronous code: scripts, notebooks without a loop, the CLI."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from agentrecall._internal import forks
from agentrecall._internal.lifetime import Lifetime
from agentrecall._internal.loop import LoopRunner
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.base import DEFAULT_PAGE, Capability, MemoryStore
from agentrecall.stores.coverage import VectorCoverage
from agentrecall.types import AddResult, JsonObject, MemoryEntry, MemoryRecord, MemoryVersion

if TYPE_CHECKING:
    from agentrecall.stores.sqlite.export import SnapshotSink

T = TypeVar("T")

# Aliases, because inside the class body ``list`` names the method.
Entries = list[MemoryEntry]
Records = list[MemoryRecord]
AddResults = list[AddResult]
Versions = list[MemoryVersion]
Filter = Mapping[str, Any] | None
Moment = datetime | str | None

_KEPT_BY = {Capability.SUPERSEDE: "SQLiteStore and PostgresStore"}
"""The built-in stores declaring a capability that ``JsonFileStore`` lacks, for the refusals."""


class SyncStore:
    """Blocking twins of a store's async methods, run on one event loop this object owns.

    Every public async method of :class:`~agentrecall.SQLiteStore` and
    :class:`~agentrecall.JsonFileStore` has a twin here with the same parameters, and
    :meth:`scope` returns a facade over a scoped view. An operation, or a keyword such as
    ``filter`` or ``ttl``, that needs a capability the store does not declare raises
    :class:`~agentrecall.errors.InvalidArgumentError` naming the store and the capability;
    keywords left at ``None`` are not passed on, so any store takes the plain calls.

    Use it as a context manager, or call :meth:`close` when done: that also closes the store
    (its ``aclose()``, for example an :class:`~agentrecall.SQLiteStore`'s connection), and
    every later call raises :class:`~agentrecall.errors.StoreClosedError`. One left open
    is closed when the interpreter exits, so its store's connections end cleanly rather than
    with their tasks destroyed on a dropped loop. It refuses to run inside a running event
    loop (``await`` the store there). Several threads may share one facade (and its views):
    their calls take turns on its loop, one at a time.

    Example::

        with SyncStore(JsonFileStore(name="notes")) as notes:
            notes.add("User prefers aisle seats")
            hits = notes.search("which seat does the user like?")
    """

    def __init__(self, store: MemoryStore) -> None:
        """Wrap ``store``; no loop is started and nothing runs until the first call."""
        self.store = store
        self._runner = _TakingTurns()
        # The stores this facade and its scoped views ran calls on since the last close.
        self._used: list[MemoryStore] = []

    def search(
        self,
        query: str,
        options: Mapping[str, Any] | None = None,
        *,
        filter: Filter = None,
        created_after: Moment = None,
        created_before: Moment = None,
        as_of: Moment = None,
        valid_at: Moment = None,
        include_superseded: bool = False,
        max_search_results: int | None = None,
    ) -> Entries:
        """Search the store, best hit first.

        Args:
            query: any text.
            options: ``{"max_search_results": n}`` caps the hits for this call.
            filter: metadata conditions (``Capability.FILTER``).
            created_after: only memories created at or after this time (``Capability.FILTER``).
            created_before: only memories created before this time (``Capability.FILTER``).
            as_of: answer from what the store held at this moment (``Capability.SUPERSEDE``).
            valid_at: only memories true in the world then (``Capability.SUPERSEDE``).
            include_superseded: also retired memories, marked (``Capability.SUPERSEDE``).
            max_search_results: the same cap as in ``options``, as a keyword; give one or the
                other.

        Raises:
            InvalidArgumentError: ``options`` is not a mapping, the cap is given both ways, or
                a keyword is given to a store without its capability.
        """
        options = _search_options(options, max_search_results)
        bounds = self._bounds(filter, created_after, created_before)
        bounds.update(self._moments(as_of, valid_at, include_superseded))
        return self._run(self.store, self.store.search(query, options, **bounds))

    def add(
        self,
        content: str,
        metadata: JsonObject | None = None,
        *,
        ttl: float | timedelta | None = None,
        expires_at: Moment = None,
        valid_from: Moment = None,
        valid_until: Moment = None,
    ) -> AddResult:
        """Add one memory; ``ttl`` or ``expires_at`` need ``Capability.EXPIRY``.

        ``valid_from`` and ``valid_until`` (when the fact was true in the world) need
        ``Capability.SUPERSEDE``.
        """
        expiry = self._optional(Capability.EXPIRY, ttl=ttl, expires_at=expires_at)
        world = self._optional(Capability.SUPERSEDE, valid_from=valid_from, valid_until=valid_until)
        return self._run(self.store, self.store.add(content, metadata, **expiry, **world))

    def supersede(
        self,
        old_ids: Iterable[str],
        content: str,
        *,
        metadata: JsonObject | None = None,
        valid_from: Moment = None,
        valid_until: Moment = None,
        reason: str | None = None,
    ) -> AddResult:
        """Add ``content`` and retire ``old_ids`` in its favour, in one transaction.

        Needs ``Capability.SUPERSEDE``; a retry of the same call changes nothing.
        """
        result: AddResult = self._call(
            "supersede",
            Capability.SUPERSEDE,
            old_ids,
            content,
            metadata=metadata,
            valid_from=valid_from,
            valid_until=valid_until,
            reason=reason,
        )
        return result

    def add_many(
        self,
        items: Iterable[tuple[str, JsonObject | None]],
        *,
        ttl: float | timedelta | None = None,
    ) -> AddResults:
        """Add several memories in one batch; ``ttl`` needs ``Capability.EXPIRY``."""
        expiry = self._optional(Capability.EXPIRY, ttl=ttl)
        result: AddResults = self._call("add_many", None, items, **expiry)
        return result

    def import_records(self, records: Iterable[MemoryRecord]) -> int:
        """Store copies of memories, keeping their ids; return how many were new."""
        result: int = self._call("import_records", None, records)
        return result

    def import_versions(self, versions: Iterable[MemoryVersion]) -> int:
        """Store copies of replaced versions in the history; return how many were new."""
        result: int = self._call("import_versions", Capability.IMPORT, versions)
        return result

    def versions(self, *, batch: int = DEFAULT_PAGE) -> Iterator[Versions]:
        """Yield every replaced version the store keeps, a page at a time.

        Each page is read on the facade's loop when the iteration asks for it.
        """
        pages = self._method("versions", Capability.IMPORT)(batch=batch)
        while True:
            try:
                page: Versions = self._run(self.store, pages.__anext__())
            except StopAsyncIteration:
                return
            yield page

    def snapshot(self, sink: SnapshotSink, *, batch: int = DEFAULT_PAGE) -> None:
        """Hand ``sink`` the store's memories and history as one consistent state."""
        self._call("snapshot", Capability.IMPORT, sink, batch=batch)

    def existing_ids(self, memory_ids: Iterable[str]) -> set[str]:
        """Return which of ``memory_ids`` the store holds, in any scope."""
        result: set[str] = self._call("existing_ids", Capability.IMPORT, memory_ids)
        return result

    def reindex(
        self, *, progress: Callable[[int, int], None] | None = None, batch: int = 1_000
    ) -> int:
        """Compute the vectors the store lacks; needs ``Capability.SEMANTIC`` (an embedder)."""
        result: int = self._call("reindex", Capability.SEMANTIC, progress=progress, batch=batch)
        return result

    def vector_coverage(self) -> VectorCoverage:
        """Return how many memories have a vector (an SQLite or PostgreSQL store's method)."""
        result: VectorCoverage = self._call("vector_coverage", None)
        return result

    def get(
        self, memory_id: str, *, as_of: Moment = None, include_superseded: bool = False
    ) -> MemoryRecord | None:
        """Return one memory by id, or ``None``; the keywords need ``Capability.SUPERSEDE``."""
        moments = self._moments(as_of, None, include_superseded)
        result: MemoryRecord | None = self._call("get", Capability.GET, memory_id, **moments)
        return result

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        metadata: JsonObject | None = None,
        reason: str | None = None,
    ) -> MemoryRecord | None:
        """Change a memory's content and/or metadata; ``None`` if there is no such memory."""
        result: MemoryRecord | None = self._call(
            "update",
            Capability.UPDATE,
            memory_id,
            content=content,
            metadata=metadata,
            reason=reason,
        )
        return result

    def delete(self, memory_id: str, *, reason: str | None = None) -> bool:
        """Forget one memory; return whether it existed. ``reason`` needs history."""
        why = self._optional(Capability.HISTORY, reason=reason)
        result: bool = self._call("delete", Capability.DELETE, memory_id, **why)
        return result

    def delete_many(self, memory_ids: Iterable[str], *, reason: str | None = None) -> int:
        """Forget every memory whose id is given; return how many. ``reason`` needs history."""
        why = self._optional(Capability.HISTORY, reason=reason)
        result: int = self._call("delete_many", Capability.DELETE, memory_ids, **why)
        return result

    def clear(self) -> int:
        """Forget every memory the store (or scope) holds; return how many."""
        result: int = self._call("clear", Capability.CLEAR)
        return result

    def list(
        self,
        *,
        offset: int = 0,
        limit: int | None = None,
        filter: Filter = None,
        created_after: Moment = None,
        created_before: Moment = None,
        as_of: Moment = None,
        valid_at: Moment = None,
        include_superseded: bool = False,
    ) -> Records:
        """Return memories first stored first; the filter keywords need ``Capability.FILTER``.

        ``as_of``, ``valid_at`` and ``include_superseded`` need ``Capability.SUPERSEDE``.
        """
        bounds = self._bounds(filter, created_after, created_before)
        bounds.update(self._moments(as_of, valid_at, include_superseded))
        result: Records = self._call("list", Capability.LIST, offset=offset, limit=limit, **bounds)
        return result

    def count(
        self,
        *,
        filter: Filter = None,
        created_after: Moment = None,
        created_before: Moment = None,
        as_of: Moment = None,
        valid_at: Moment = None,
        include_superseded: bool = False,
    ) -> int:
        """Return how many memories match; the keywords need ``Capability.FILTER``.

        ``as_of``, ``valid_at`` and ``include_superseded`` need ``Capability.SUPERSEDE``.
        """
        bounds = self._bounds(filter, created_after, created_before)
        bounds.update(self._moments(as_of, valid_at, include_superseded))
        result: int = self._call("count", Capability.COUNT, **bounds)
        return result

    def history(self, memory_id: str) -> Versions:
        """Return the versions that updates, deletion, expiry or supersession replaced.

        Oldest first; with supersession, those of the whole chain of memories replacing one
        another (see the store's ``history``).
        """
        result: Versions = self._call("history", Capability.HISTORY, memory_id)
        return result

    def setup(self, *, progress: Callable[[int, int], None] | None = None) -> None:
        """Run the store's ``setup()``; a store without one needs none, and nothing runs.

        ``progress`` goes to the store's ``setup`` when given: ``SQLiteStore`` reports a
        one-time re-index of an older file to it (see :meth:`SQLiteStore.setup`).
        """
        self._prepare("setup", **({} if progress is None else {"progress": progress}))

    def initialize(self) -> None:
        """Run the store's ``initialize()``, which the Strands protocol makes optional."""
        self._prepare("initialize")

    def scope(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        name: str | None = None,
    ) -> SyncStore:
        """Return a facade over the store's view of one user, agent or session.

        The view's facade shares this one's event loop: closing either closes both, and
        every store either ran a call on (see :meth:`close`). Needs ``Capability.SCOPE``.
        """
        scoped = self._method("scope", Capability.SCOPE)
        view = SyncStore(
            scoped(user_id=user_id, agent_id=agent_id, session_id=session_id, name=name)
        )
        view._runner, view._used = self._runner, self._used
        return view

    def close(self) -> None:
        """Close every store this facade or its views ran a call on, then the event loop.

        A store is closed with its async ``aclose()``, if it has one, and only if a call ran
        on it. Afterwards this facade and its views refuse every call with
        :class:`~agentrecall.errors.StoreClosedError`; closing again is harmless.
        """
        # One turn for all of it: no other thread's call reopens a store before the loop closes.
        with self._runner.turn:
            self._runner.lifetime.end()
            try:
                # Inside a running loop this object can run nothing, aclose() included.
                while self._used and not _in_running_loop():
                    aclose = getattr(self._used.pop(0), "aclose", None)
                    if inspect.iscoroutinefunction(aclose):
                        # On this loop, so that what the store bound to it is released before
                        # it closes.
                        self._runner.run(aclose())
            finally:
                self._runner.close()
                _open.discard(self)

    def __enter__(self) -> SyncStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, store: MemoryStore, coro: Coroutine[Any, Any, T]) -> T:
        with self._runner.turn:
            if self._runner.lifetime.ended:
                coro.close()  # never awaited: closed here, so Python does not warn about it
                self._runner.lifetime.check(self.store.name)
            if not any(used is store for used in self._used):
                self._used.append(store)
            _open.add(self)
            return self._runner.run(coro)

    def _call(self, method: str, capability: Capability | None, *args: Any, **kwargs: Any) -> Any:
        return self._run(self.store, self._method(method, capability)(*args, **kwargs))

    def _prepare(self, method: str, **options: Any) -> None:
        prepare = getattr(self.store, method, None)
        if prepare is not None:
            self._run(self.store, prepare(**options))

    def _method(self, method: str, capability: Capability | None) -> Any:
        function = getattr(self.store, method, None)
        if function is None or (capability is not None and capability not in self._declared()):
            hint = ""
            if capability in _KEPT_BY:
                hint = f" ({_undeclared(capability)}; {_KEPT_BY[capability]} do)"
            raise InvalidArgumentError(f"{self._describe()} does not support {method}{hint}")
        return function

    def _optional(self, capability: Capability, **arguments: Any) -> dict[str, Any]:
        """Return the arguments that were given, refused unless ``capability`` is declared."""
        given = {key: value for key, value in arguments.items() if value is not None}
        if given and capability not in self._declared():
            kept_by = _KEPT_BY.get(capability)
            raise InvalidArgumentError(
                f"{self._describe()} does not support {', '.join(given)} "
                f"({_undeclared(capability)}{'' if kept_by is None else f'; {kept_by} do'})"
            )
        return given

    def _moments(self, as_of: Moment, valid_at: Moment, superseded: object) -> dict[str, Any]:
        # include_superseded=False is the stores' default: passed on only when it is not.
        return self._optional(
            Capability.SUPERSEDE,
            as_of=as_of,
            valid_at=valid_at,
            include_superseded=None if superseded is False else superseded,
        )

    def _bounds(self, filter: Filter, after: Moment, before: Moment) -> dict[str, Any]:
        return self._optional(
            Capability.FILTER, filter=filter, created_after=after, created_before=before
        )

    def _declared(self) -> frozenset[Capability]:
        return frozenset(getattr(self.store, "capabilities", ()))

    def _describe(self) -> str:
        return f"store '{self.store.name}' ({type(self.store).__name__})"


class _TakingTurns(LoopRunner):
    """A :class:`LoopRunner` that threads take turns on: one loop runs one call at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.turn = threading.RLock()
        """Held for each call; hold it across several to keep other threads out between."""
        self.lifetime = Lifetime()
        """Ended by the facades' ``close``: the loop's facades refuse calls from then on."""
        # Replaces LoopRunner's own registration, whose hook this one calls.
        forks.register(self, in_child=_TakingTurns._forget)

    def _forget(self) -> None:
        super()._forget()
        # Another thread of the parent may have held the turn at the fork; it is not in the child.
        self.turn = threading.RLock()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop once no other thread is, and return its result."""
        with self.turn:
            return super().run(coro)

    def close(self) -> None:
        """Close the loop once no other thread is running a call on it."""
        with self.turn:
            super().close()


def _search_options(
    options: Mapping[str, Any] | None, max_search_results: int | None
) -> Mapping[str, Any] | None:
    if options is not None and not isinstance(options, Mapping):
        raise InvalidArgumentError(
            "search options must be a mapping such as {'max_search_results': 3}, "
            f"got {options!r}; or pass max_search_results=3"
        )
    if max_search_results is None:
        return options
    if options is not None and "max_search_results" in options:
        raise InvalidArgumentError(
            "search got max_search_results both as a keyword and in options; give it once"
        )
    return {**(options or {}), "max_search_results": max_search_results}


def _undeclared(capability: Capability) -> str:
    return f"it does not declare Capability.{capability.name}"


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_open: weakref.WeakSet[SyncStore] = weakref.WeakSet()
"""Facades that ran a call since their last close."""


@atexit.register
def _close_left_open() -> None:
    """Close the facades still open at exit; a store that cannot close is left as it is."""
    for facade in list(_open):
        with contextlib.suppress(Exception):
            facade.close()
