"""``MemoryManager``: long-term memory for any agent loop.

The manager sits between an agent loop and its memory stores. It searches and writes the
stores, offers the model memory tools, folds recalled memories into the model's input, and
has facts extracted from the conversation. It exposes plain methods rather than framework
hooks, so it works in an OpenAI-style loop, an Anthropic-style loop or a Strands agent::

    manager = MemoryManager([JsonFileStore(name="personal")], add_tool=True)
    messages.append(ask)
    manager.record([ask])                    # every message the conversation gains
    reply = await call_model(await manager.inject(messages),
                             tools=[tool.as_openai() for tool in manager.tools])
    ...                                      # append and record the reply; run its tool
    ...                                      # calls with ``await tool.invoke(arguments)``
    manager.end_turn()                       # after each agent invocation
    await manager.flush()                    # before the program ends

Behaviour follows the Strands Agents ``MemoryManager`` (validation, store order, per-store
limits, failure handling, tools, injection, extraction); the differences are listed on the
class.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from datetime import datetime
from typing import Any, cast

from agentrecall._internal.options import coerce_config
from agentrecall.errors import AggregateMemoryError, InvalidArgumentError
from agentrecall.extraction.config import ResolvedExtraction, implements
from agentrecall.extraction.coordinator import ExtractionCoordinator
from agentrecall.extraction.model_extractor import ModelExtractor
from agentrecall.memory.injection import InjectionConfig, inject_memories, resolve_injection
from agentrecall.memory.storeset import StoreSet, Superseding
from agentrecall.memory.tools import (
    AddToolConfig,
    MemoryTool,
    ToolConfig,
    add_memory_tool,
    forget_memory_tool,
    remembers,
    search_memory_tool,
    update_memory_tool,
)
from agentrecall.memory.writes import forget_in_store, leaves
from agentrecall.messages import Message
from agentrecall.models.base import ChatModel
from agentrecall.stores.base import MemoryStore
from agentrecall.stores.batches import add_batch_results, settle
from agentrecall.stores.times import timestamp
from agentrecall.types import AddResult, JsonObject, MemoryEntry

__all__ = ["DEFAULT_MAX_SEARCH_RESULTS", "MemoryManager"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_SEARCH_RESULTS = 3
"""Hits per store when neither the caller nor the store sets a limit."""


class MemoryManager:
    """Long-term memory for an agent: search, add, forget, correct, tools, injection, extraction.

    Guarantees:

    * Stores are used in the order given. Searches query every target store concurrently and
      concatenate the hits in store order, each stamped with its store's name (the entry's
      ``id`` is kept); there is no cross-store re-ranking or dedup.
    * A store that fails a search is skipped with a warning; the other stores' hits still come
      back (with ``report_failed_searches``, :meth:`search` and the ``search_memory`` tool
      raise instead, naming each failed store and its error). A failed write raises
      :class:`~agentrecall.errors.AggregateMemoryError` after every other write has finished;
      successful writes are not rolled back.
    * :meth:`inject` never raises and never mutates its input.
    * :meth:`record` and :meth:`end_turn` return at once; extraction runs in the background,
      never raises into the agent loop, and :meth:`flush` waits for it.
    * Configuration mistakes raise :class:`~agentrecall.errors.InvalidArgumentError` (a
      ``ValueError``) at construction, with messages prefixed ``MemoryManager:``.

    Beyond the reference: the ``forget_memory`` tool and :meth:`forget`; the
    ``update_memory`` tool and :meth:`supersede`, which correct a memory and keep the old
    version; searches ``as_of`` a past moment; :meth:`add_many`,
    which writes a batch with one ``add_many`` call per store when the store has one (the
    ``add_memory`` tool uses it, so ten entries cost a JSON file store one write); tool
    objects convertible to OpenAI, Anthropic and MCP definitions; :meth:`flush` also waits
    for ``add_memory`` writes started in the background. Not supported: a store's own
    framework tools (``get_tools``).
    """

    def __init__(
        self,
        stores: Sequence[MemoryStore],
        *,
        search_tool: bool | ToolConfig = True,
        add_tool: bool | AddToolConfig = False,
        forget_tool: bool | ToolConfig = False,
        update_tool: bool | ToolConfig = False,
        injection: bool | InjectionConfig = True,
        model: ChatModel | None = None,
        report_failed_searches: bool = False,
    ) -> None:
        """Check the stores and the options, and build the tools; no I/O happens here.

        Args:
            stores: the memory stores, each with a unique ``name``.
            search_tool: offer ``search_memory`` (``True``), not (``False``), or a
                :class:`~agentrecall.memory.tools.ToolConfig` (or a mapping of its fields).
            add_tool: offer ``add_memory``: ``True``, ``False`` or an
                :class:`~agentrecall.memory.tools.AddToolConfig` (or a mapping of its fields).
            forget_tool: offer ``forget_memory``, which deletes by id from writable stores that
                declare :attr:`~agentrecall.stores.base.Capability.DELETE`; search results
                then carry each memory's ``id``.
            update_tool: offer ``update_memory``, which corrects a memory by id in writable
                stores that declare :attr:`~agentrecall.stores.base.Capability.SUPERSEDE`
                (see :meth:`supersede`); search results then carry each memory's ``id``.
            injection: fold memories into the model's input in :meth:`inject`: ``True`` (the
                defaults), ``False``, or an
                :class:`~agentrecall.memory.injection.InjectionConfig` (or a mapping of its
                fields).
            model: the model a store's default :class:`~agentrecall.extraction.ModelExtractor`
                uses when it has none of its own.
            report_failed_searches: a store that fails a search (or refuses its arguments,
                such as a ``max_search_results`` below 1) makes :meth:`search` raise, and so the
                ``search_memory`` tool return an error, rather than being skipped with a
                warning as the reference does. For a server whose client must tell "nothing
                found" from "the search failed". :meth:`inject` still skips such stores.

        Raises:
            InvalidArgumentError: the stores or options cannot work together (also a
                ``ValueError``); the message says which store or option and why.
        """
        self._stores = StoreSet(stores)
        self._report_failed_searches = bool(report_failed_searches)
        _check_extraction_models(self._stores.extraction, model)
        self._injection = resolve_injection(injection)
        self._tools = self._build_tools(search_tool, add_tool, forget_tool, update_tool)
        self._coordinator = (
            ExtractionCoordinator(self._stores.extraction, default_model=model)
            if self._stores.extraction
            else None
        )
        self._background: set[asyncio.Task[None]] = set()
        self._initialized = False
        self._initializing = asyncio.Lock()

    def _build_tools(
        self, search: object, add: object, forget: object, update: object
    ) -> list[MemoryTool]:
        search_config = coerce_config(search, ToolConfig, "MemoryManager: search_tool")
        add_config = coerce_config(add, AddToolConfig, "MemoryManager: add_tool")
        forget_config = coerce_config(forget, ToolConfig, "MemoryManager: forget_tool")
        update_config = coerce_config(update, ToolConfig, "MemoryManager: update_tool")
        tools: list[MemoryTool] = []
        if search_config is not None:
            tools.append(
                search_memory_tool(
                    search_config,
                    self._stores.all,
                    self._search_names,
                    # Ids are what the model forgets and corrects by.
                    with_ids=forget_config is not None or update_config is not None,
                )
            )
        if add_config is not None:
            if not self._stores.writers:
                raise InvalidArgumentError(
                    "MemoryManager: add_tool is enabled but no writable stores implement add; "
                    "make a store writable or leave add_tool off"
                )
            scope = self._stores.add_tool_scope(add_config.stores)
            tools.append(add_memory_tool(add_config, scope, self._add_entries, self._spawn))
        if forget_config is not None:
            if not self._stores.forgetters:
                raise InvalidArgumentError(
                    "MemoryManager: forget_tool is enabled but no writable store supports "
                    "deletion (Capability.DELETE); leave forget_tool off"
                )
            tools.append(forget_memory_tool(forget_config, self._stores.forgetters, self._forget))
        if update_config is not None:
            if not self._stores.updaters:
                raise InvalidArgumentError(
                    "MemoryManager: update_tool is enabled but no writable store can supersede "
                    "memories (Capability.SUPERSEDE, which SQLiteStore and PostgresStore have); "
                    "leave update_tool off"
                )
            tools.append(update_memory_tool(update_config, self._stores.updaters, self._update))
        return tools

    @property
    def stores(self) -> tuple[MemoryStore, ...]:
        """The stores, in the order given."""
        return tuple(self._stores.all)

    @property
    def tools(self) -> list[MemoryTool]:
        """The memory tools to offer the model, as enabled: search, add, forget, update (a copy)."""
        return list(self._tools)

    @property
    def injection(self) -> InjectionConfig | None:
        """The injection settings, or ``None`` when :meth:`inject` is a plain copy."""
        return self._injection

    async def initialize(self) -> None:
        """Run each store's ``initialize()``, one at a time in store order, once.

        Called by every other async method on first use; call it yourself to fail early. If a
        store raises, the error propagates and the next call tries again from the start.
        """
        if self._initialized:
            return
        async with self._initializing:  # concurrent first calls initialize the stores once
            if self._initialized:
                return
            for store in self._stores.all:
                if implements(store, "initialize"):
                    await store.initialize()  # type: ignore[attr-defined]
            self._initialized = True

    async def search(
        self,
        query: str,
        *,
        stores: Sequence[str] | None = None,
        max_search_results: int | None = None,
        as_of: datetime | str | None = None,
    ) -> list[MemoryEntry]:
        """Search the stores and return their hits, store by store.

        Args:
            query: what to look for.
            stores: names of the stores to search, in the order to search them (repeats are
                ignored); ``None`` searches all, ``[]`` none.
            max_search_results: hits per store (not in total). ``None`` uses each store's
                ``max_search_results``, else 3. Passed to the stores unchecked.
            as_of: answer from what the stores held at this moment (an aware datetime, an
                ISO 8601 date or a time with an offset); every store searched must declare
                :attr:`~agentrecall.stores.base.Capability.SUPERSEDE`.

        Raises:
            InvalidArgumentError: a named store does not exist, ``as_of`` is no time, or it
                is given for a store that keeps no past; nothing was searched.
            AggregateMemoryError: with ``report_failed_searches``, some stores failed: the
                message names each with its error, and ``errors`` holds the exceptions.
        """
        return await self._searched(
            query,
            stores,
            max_search_results,
            report=self._report_failed_searches,
            as_of=timestamp(as_of, "as_of"),
        )

    async def _searched(
        self,
        query: str,
        stores: Sequence[str] | None,
        limit: int | None,
        *,
        report: bool,
        as_of: str | None = None,
    ) -> list[MemoryEntry]:
        """:meth:`search`, raising for failed stores with ``report``, else skipping them."""
        targets = self._stores.targets(stores, "search")
        if as_of is not None:
            _check_remembering(targets)
        await self.initialize()
        outcomes = await settle([_search_one(s, query, limit, as_of) for s in targets])
        if report:
            _raise_failures("store searches failed", targets, outcomes, causes=True)
        hits: list[MemoryEntry] = []
        for store, outcome in zip(targets, outcomes, strict=True):
            if isinstance(outcome, Exception):
                logger.warning(
                    "memory search: skipping store '%s', which failed: %r", store.name, outcome
                )
                continue
            hits.extend(outcome)
        return hits

    async def _search_names(
        self, query: str, stores: list[str], max_search_results: int | None, as_of: str | None
    ) -> list[MemoryEntry]:
        return await self.search(
            query, stores=stores, max_search_results=max_search_results, as_of=as_of
        )

    async def add(
        self,
        content: str,
        *,
        metadata: JsonObject | None = None,
        stores: Sequence[str] | None = None,
    ) -> None:
        """Write ``content`` to every target store concurrently.

        Args:
            content: the memory.
            metadata: stored with it, in every target store.
            stores: names of writable stores to write to; ``None`` writes to every writable
                store with ``add``.

        Raises:
            InvalidArgumentError: a named store does not exist or is read-only, or no store is
                left to write to; nothing was written.
            AggregateMemoryError: some stores failed (their names are in the message and their
                errors in ``errors``); every other store's write completed.
        """
        targets = self._add_targets(stores)
        await self.initialize()
        outcomes = await settle([store.add(content, metadata) for store in targets])
        _raise_failures("store writes failed", targets, outcomes)

    async def add_many(
        self,
        contents: Sequence[str],
        *,
        metadata: JsonObject | None = None,
        stores: Sequence[str] | None = None,
    ) -> None:
        """Write every one of ``contents`` to every target store: one batch per store.

        A store with ``add_many`` gets one call for the whole batch; if that call fails, each
        entry is retried alone with ``add`` so one bad entry does not sink the others (stores
        deduplicate identical content, so a retry cannot store an entry twice). Other stores get
        concurrent ``add`` calls. An empty batch writes nothing.

        Raises:
            InvalidArgumentError: as for :meth:`add`.
            AggregateMemoryError: some entries failed somewhere; the message counts them and
                gives each cause, and ``errors`` holds every underlying exception (nested
                aggregates flattened), entry by entry in store order.
        """
        await self._add_entries(contents, metadata, stores, None)

    async def _add_entries(
        self,
        contents: Sequence[str],
        metadata: JsonObject | None,
        stores: Sequence[str] | None,
        ttl: float | None,
    ) -> list[tuple[str, list[AddResult | None]]]:
        """Do :meth:`add_many` (with ``ttl`` for every store, if given); return what it did.

        The result has one pair per target store, in order: the store's name and each entry's
        :class:`~agentrecall.types.AddResult` (``None`` when the store returned none).

        Raises:
            InvalidArgumentError: as for :meth:`add`.
            AggregateMemoryError: as for :meth:`add_many`.
        """
        targets = self._add_targets(stores)
        batch = list(contents)
        if not batch:
            return []
        await self.initialize()
        items = [(content, metadata) for content in batch]
        per_store = await asyncio.gather(
            *(add_batch_results(store, items, ttl=ttl) for store in targets)
        )
        causes = [
            [leaf for outcomes in per_store for leaf in leaves(_error(outcomes[i]))]
            for i in range(len(batch))
        ]
        failed = [entry_causes for entry_causes in causes if entry_causes]
        if failed:
            flat = [cause for entry_causes in failed for cause in entry_causes]
            raise AggregateMemoryError(
                f"MemoryManager: failed to add {len(failed)} of {len(batch)} entries: "
                + "; ".join(str(cause) for cause in flat),
                flat,
            )
        return [
            (store.name, [o if isinstance(o, AddResult) else None for o in outcomes])
            for store, outcomes in zip(targets, per_store, strict=True)
        ]

    def _add_targets(self, stores: Sequence[str] | None) -> list[MemoryStore]:
        targets = self._stores.targets(stores, "add")
        if not targets:
            raise InvalidArgumentError(
                "MemoryManager: no writable store matched; name a writable store that has add"
            )
        return targets

    async def forget(self, ids: Sequence[str], *, stores: Sequence[str] | None = None) -> int:
        """Delete the memories with these ids from the target stores; return how many went.

        Targets are the writable stores declaring
        :attr:`~agentrecall.stores.base.Capability.DELETE` (all, or those named). Ids a store
        does not hold are ignored.

        Raises:
            InvalidArgumentError: ``ids`` is not a list of strings, or a named store does not
                exist or cannot delete.
            AggregateMemoryError: some stores failed; the others' deletions stand.
        """
        if isinstance(ids, str) or not all(isinstance(i, str) for i in ids):
            raise InvalidArgumentError(f"MemoryManager: ids must be a list of strings, got {ids!r}")
        targets = self._stores.targets(stores, "forget")
        await self.initialize()
        outcomes = await settle([forget_in_store(store, ids) for store in targets])
        _raise_failures("deletes failed", targets, outcomes)
        return sum(outcomes)

    async def _forget(self, ids: list[str], stores: list[str]) -> int:
        return await self.forget(ids, stores=stores)

    async def supersede(
        self,
        memory_id: str,
        content: str,
        *,
        reason: str | None = None,
        stores: Sequence[str] | None = None,
    ) -> list[tuple[str, AddResult]]:
        """Correct a memory: each target store holding ``memory_id`` supersedes it by ``content``.

        Targets are the writable stores declaring
        :attr:`~agentrecall.stores.base.Capability.SUPERSEDE` (all, or those named). A store
        that holds the id, current or retired, adds ``content`` as a memory of its own, with
        the old memory's metadata, and retires the old one in the same transaction, keeping
        it in the history with ``reason`` (see the store's ``supersede``); searches then find
        the correction, and ``as_of`` searches still find what was held before. Repeating a
        correction changes nothing.

        Returns:
            Each store that held the id, in order, with the result of the new memory.

        Raises:
            InvalidArgumentError: ``memory_id`` or ``content`` is not a string, a named store
                does not exist or cannot supersede, or no target store holds ``memory_id``;
                or the one store holding it refused the correction (a memory already retired
                by another one, content equal to the old memory's), with its message.
            AggregateMemoryError: some stores failed; the message names each with its error,
                and the others' corrections stand.
        """
        for value, name in ((memory_id, "memory_id"), (content, "content")):
            if not isinstance(value, str):
                raise InvalidArgumentError(
                    f"MemoryManager: {name} must be a string, got {type(value).__name__}"
                )
        targets = self._stores.targets(stores, "update")
        correctors = cast("list[Superseding]", targets)  # StoreSet.updaters declare SUPERSEDE
        await self.initialize()
        found = await settle([s.get(memory_id, include_superseded=True) for s in correctors])
        _raise_failures("lookups failed", targets, found, causes=True)
        holders = [
            (store, record)
            for store, record in zip(correctors, found, strict=True)
            if record is not None
        ]
        if not holders:
            raise InvalidArgumentError(
                f"MemoryManager: no memory with id '{memory_id}' in "
                + ", ".join(store.name for store in targets)
            )
        outcomes = await settle(
            [
                store.supersede([memory_id], content, metadata=record.metadata, reason=reason)
                for store, record in holders
            ]
        )
        if len(holders) == 1 and isinstance(outcomes[0], Exception):
            raise outcomes[0]  # the store's own words say what to fix
        held = [store for store, _ in holders]
        _raise_failures("corrections failed", held, outcomes, causes=True)
        return [(store.name, result) for store, result in zip(held, outcomes, strict=True)]

    async def _update(
        self, memory_id: str, content: str, reason: str | None, stores: list[str]
    ) -> list[tuple[str, AddResult]]:
        return await self.supersede(memory_id, content, reason=reason, stores=stores)

    async def inject(self, messages: Sequence[Message]) -> list[Message]:
        """Return the messages for the next model call, with recalled memories folded in.

        See :func:`agentrecall.memory.injection.inject_memories` for when and how. Fails open: any
        error (a store, a callback, a malformed message) is logged as a warning and the result
        is a plain copy. The input is never mutated; the result is always a new list.
        """
        if self._injection is None:
            return list(messages)
        return await inject_memories(messages, self._injection, self._injection_search)

    async def _injection_search(self, query: str, limit: int) -> list[MemoryEntry]:
        return await self._searched(query, None, limit, report=False)

    def record(self, messages: Sequence[Message]) -> None:
        """Hand messages just added to the conversation to extraction (no-op without it).

        Call it with every message the conversation gains (user asks, assistant replies, tool
        results), once each, in order.

        Raises:
            InvalidArgumentError: a message is malformed; nothing was recorded.
        """
        if self._coordinator is not None:
            self._coordinator.record(messages)

    def end_turn(self) -> None:
        """Mark the end of one agent invocation; extraction triggers count these."""
        if self._coordinator is not None:
            self._coordinator.end_turn()

    async def flush(self) -> None:
        """Wait until extraction saved everything recorded, and background writes finished.

        Never raises: failures were logged where they happened.
        """
        while self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._coordinator is not None:
            await self._coordinator.flush()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if task.cancelled():
            # Its event loop ended first (asyncio.run cancels what is left): say so, since the
            # model was told the entries were accepted.
            logger.warning("memory write in the background was cancelled before it finished")
        elif task.exception() is not None:
            logger.warning("memory write in the background failed: %s", task.exception())


async def _search_one(
    store: MemoryStore, query: str, requested: int | None, as_of: str | None
) -> list[MemoryEntry]:
    limit = requested
    if limit is None:
        limit = getattr(store, "max_search_results", None)
    if limit is None:
        limit = DEFAULT_MAX_SEARCH_RESULTS
    options = {"max_search_results": limit}
    if as_of is None:  # the protocol's plain call, which every store takes
        hits = await store.search(query, options)
    else:
        hits = await store.search(query, options, as_of=as_of)  # type: ignore[call-arg]
    return [
        MemoryEntry(
            content=hit.content,
            store_name=store.name,
            metadata=hit.metadata,
            id=getattr(hit, "id", None),
        )
        for hit in hits
    ]


def _check_remembering(targets: Sequence[MemoryStore]) -> None:
    """Refuse an ``as_of`` search of stores that keep no past.

    Raises:
        InvalidArgumentError: naming those stores.
    """
    forgetful = [store.name for store in targets if not remembers(store)]
    if forgetful:
        raise InvalidArgumentError(
            f"MemoryManager: as_of: the store{'s' if len(forgetful) > 1 else ''} "
            f"{', '.join(forgetful)} cannot recall a past moment (only stores with "
            "Capability.SUPERSEDE can: SQLiteStore and PostgresStore); search them without "
            "as_of"
        )


def _raise_failures(
    what: str,
    targets: Sequence[MemoryStore | Superseding],
    outcomes: Sequence[Any],
    *,
    causes: bool = False,
) -> None:
    """Raise ``AggregateMemoryError`` naming the stores whose outcome is an exception.

    With ``causes``, each name is followed by its error's message.
    """
    failed = [
        (store.name, error)
        for store, error in zip(targets, outcomes, strict=True)
        if isinstance(error, Exception)
    ]
    if failed:
        named = (f"{name} ({error})" if causes else name for name, error in failed)
        raise AggregateMemoryError(
            f"MemoryManager: {what}: " + ", ".join(named), [error for _, error in failed]
        )


def _check_extraction_models(
    bindings: Sequence[tuple[MemoryStore, ResolvedExtraction]], model: ChatModel | None
) -> None:
    """Refuse a model extractor that would have no model: every save would fail in silence."""
    for store, resolved in bindings:
        extractor = resolved.extractor
        if isinstance(extractor, ModelExtractor) and extractor.model is None and model is None:
            raise InvalidArgumentError(
                f"MemoryManager: store '{store.name}' extracts facts with a model, but neither its "
                "ModelExtractor nor the manager has one; pass model= to the manager or to "
                "ModelExtractor"
            )


def _error(outcome: AddResult | Exception | None) -> Exception | None:
    return outcome if isinstance(outcome, Exception) else None
