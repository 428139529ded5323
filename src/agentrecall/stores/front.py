"""The public face of an SQL store: argument checks, scope views, expiry, paging; storage below.

:class:`StoreFront` holds everything of ``SQLiteStore`` and ``PostgresStore`` that is not
storage: the checks of every argument (with the messages that name it), scope views, the
lifetime of new memories, search options and their defaults, paging through versions. A
backend subclasses it and implements the ``_``-prefixed hooks, each one transaction, and so
both backends refuse the same calls in the same words and apply the same rules.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from agentrecall._internal.checks import (
    check_content,
    check_id,
    check_ids,
    check_items,
    check_limit,
    check_offset,
    check_optional_text,
    check_pairs,
    requested_limit,
    seconds,
)
from agentrecall._internal.jsonvalue import check_json_object
from agentrecall._internal.lifetime import Lifetime
from agentrecall._internal.text import check_text
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.filters import check_filter
from agentrecall.stores.base import DEFAULT_PAGE, Capability
from agentrecall.stores.modes import SearchSettings
from agentrecall.stores.scopes import Scope
from agentrecall.stores.times import expiry_after, timestamp
from agentrecall.types import AddResult, JsonObject, MemoryEntry, MemoryRecord, MemoryVersion

F = TypeVar("F", bound="StoreFront")

DEFAULT_MAX_SEARCH_RESULTS = 10

# Aliases for annotations inside the stores, whose own ``list`` method hides the builtin there.
RecordList = list[MemoryRecord]
AddResults = list[AddResult]
Entries = list[MemoryEntry]
Versions = list[MemoryVersion]
Items = list[tuple[str, JsonObject | None]]
Ids = list[str]


@dataclass(frozen=True, slots=True)
class Conditions:
    """What a read may return: a scope, and the checked filter and time bounds of the call.

    Attributes:
        scope: the view's scope.
        filter: the metadata filter (checked), or ``None``.
        created_after: the inclusive lower bound in the stored shape, or ``None``.
        created_before: the exclusive upper bound in the stored shape, or ``None``.
        as_of: read the store as it was at this moment (stored shape), or ``None`` for now.
            Held then: created at or before it, not updated, retired, deleted or expired by
            then (an ``updated_at``, ``invalidated_at`` or ``expires_at`` at or before it
            counts), with the content and metadata of that moment.
        valid_at: only memories true in the world at this moment (stored shape): no
            ``valid_from`` after it, no ``valid_until`` at or before it; ``None``: no test.
        include_superseded: also the memories retired (by ``as_of``, or by now).
    """

    scope: Scope
    filter: Mapping[str, Any] | None = None
    created_after: str | None = None
    created_before: str | None = None
    as_of: str | None = None
    valid_at: str | None = None
    include_superseded: bool = False

    @classmethod
    def of(
        cls,
        scope: Scope,
        filter: Mapping[str, Any] | None,
        created_after: datetime | str | None,
        created_before: datetime | str | None,
        moments: Moments | None = None,
    ) -> Conditions:
        """Check a call's filter and bounds and return its conditions.

        Raises:
            InvalidArgumentError: the filter or a bound is unusable.
        """
        check_filter(filter)
        after = timestamp(created_after, "created_after")
        before = timestamp(created_before, "created_before")
        if moments is None:
            return cls(scope, filter, after, before)
        return cls(
            scope, filter, after, before, moments.as_of, moments.valid_at, moments.superseded
        )

    def filter_and_bounds(
        self, render: Callable[[Mapping[str, Any]], tuple[str, list[object]]], mark: str
    ) -> tuple[list[str], list[object]]:
        """Return the SQL conditions of the filter and the time bounds over alias ``m``.

        ``render`` turns the filter into the backend's SQL; ``mark`` is its placeholder.
        """
        parts: list[str] = []
        params: list[object] = []
        if self.filter is not None:
            sql, filter_params = render(self.filter)
            parts.append(f"({sql})")
            params += filter_params
        for bound, operator in ((self.created_after, ">="), (self.created_before, "<")):
            if bound is not None:
                parts.append(f"m.created_at {operator} {mark}")
                params.append(bound)
        return parts, params

    @property
    def filtered(self) -> bool:
        """Whether there is a metadata filter or a time bound beyond the scope."""
        return (
            self.filter is not None
            or self.created_after is not None
            or self.created_before is not None
        )


@dataclass(frozen=True, slots=True)
class Moments:
    """The checked ``as_of``, ``valid_at`` and ``include_superseded`` of one read."""

    as_of: str | None
    valid_at: str | None
    superseded: bool

    @classmethod
    def of(
        cls, as_of: datetime | str | None, valid_at: datetime | str | None, superseded: object
    ) -> Moments:
        """Check the three arguments of a read.

        Raises:
            InvalidArgumentError: a moment is not a time :func:`timestamp` accepts, or
                ``include_superseded`` is not ``True`` or ``False``.
        """
        if not isinstance(superseded, bool):
            raise InvalidArgumentError(
                f"include_superseded must be True or False, got {superseded!r}"
            )
        return cls(timestamp(as_of, "as_of"), timestamp(valid_at, "valid_at"), superseded)


CURRENT = Moments(None, None, False)
"""A read of the memories current now: the default."""


@dataclass(frozen=True, slots=True)
class Validity:
    """When a new memory's fact is true in the world (stored shape), as its writer said.

    Attributes:
        valid_from: when it became true, or ``None`` (not said).
        valid_until: when it stopped being true, or ``None`` (not said, or still true).
    """

    valid_from: str | None = None
    valid_until: str | None = None

    @classmethod
    def of(cls, valid_from: datetime | str | None, valid_until: datetime | str | None) -> Validity:
        """Check the two moments.

        Raises:
            InvalidArgumentError: a moment is not a time :func:`timestamp` accepts, or
                ``valid_until`` is not after ``valid_from``.
        """
        start = timestamp(valid_from, "valid_from")
        end = timestamp(valid_until, "valid_until")
        if start is not None and end is not None and end <= start:
            raise InvalidArgumentError(f"valid_until ({end}) must be after valid_from ({start})")
        return cls(start, end)


UNSAID = Validity()
"""The world time of a memory whose writer gave none."""


@dataclass(frozen=True, slots=True)
class Supersession:
    """A checked ``supersede``: the memories it retires and the memory that replaces them.

    Attributes:
        old_ids: the ids to retire, without repeats, in the order given.
        content: the new memory's content (checked).
        metadata: the new memory's metadata (checked), or ``None``.
        validity: the new memory's world time.
        expires_at: the new memory's expiry (the store's ``ttl``), or ``None``.
        reason: why, as the caller said, or ``None``; kept in each retired memory's version.
    """

    old_ids: Ids
    content: str
    metadata: JsonObject | None
    validity: Validity
    expires_at: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class Change:
    """A checked update: the new content and metadata (``None``: kept), and why."""

    content: str | None
    metadata: JsonObject | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class SearchCall:
    """One checked search: the query, how many hits, the mode and the conditions."""

    query: str
    limit: int
    mode: str
    neighbours: bool
    conditions: Conditions


class StoreFront:
    """The checked public methods of a store whose backend implements the hooks below.

    Subclasses set up ``_search_settings`` in their constructor after calling
    :meth:`_configure`, and implement ``setup``, ``aclose`` and each ``_`` hook.
    """

    capabilities: frozenset[Capability] = frozenset(Capability) - {Capability.SEMANTIC}
    _search_settings: SearchSettings[Any]

    def _configure(
        self,
        name: str,
        description: str | None,
        max_search_results: int | None,
        writable: bool,
        extraction: Any,
        ttl: float | timedelta | None,
    ) -> None:
        """Check and keep the settings every store has.

        Raises:
            InvalidArgumentError: an argument has an unusable value.
        """
        check_name(name)
        check_optional_text(description, "description")
        check_limit(max_search_results, "max_search_results")
        if not isinstance(writable, bool):
            raise InvalidArgumentError(f"writable must be True or False, got {writable!r}")
        self.name = name
        self._root_name = name
        self.description = description
        self.max_search_results = max_search_results
        self.writable = writable
        self.extraction = extraction
        self._ttl = seconds(ttl, "ttl")
        self._scope = Scope()
        self._lifetime = Lifetime()

    def scope(
        self: F,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        name: str | None = None,
    ) -> F:
        """Return a view that reads and writes only the memories of one user, agent or session.

        The view is a full store sharing this one's database and connections. It sees the
        memories written with all of its ids (a user's view sees that user's memories of
        every session; a view of one user's session sees only that session's), and stamps its
        ids on what it writes. Dedup is per exact scope. Its ``name`` defaults to
        ``"<name>[user=...]"``.

        Raises:
            InvalidArgumentError: an id is not ``None`` or a non-empty string, contradicts
                this view's, or ``name`` is not ``None`` or a non-blank string.
        """
        if name is not None:
            check_name(name)
        view = copy.copy(self)
        view._scope = self._scope.narrowed(
            user_id=user_id, agent_id=agent_id, session_id=session_id
        )
        view.name = f"{self._root_name}[{view._scope.label()}]" if name is None else name
        return view

    async def setup(self) -> None:
        """Create or migrate the store's tables (idempotent)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the store's connections and end it (and its views); closing again is harmless.

        Every later call raises :class:`~agentrecall.errors.StoreClosedError`: a closed store
        is not reopened behind its owner's back.
        """
        raise NotImplementedError

    def _check_open(self) -> None:
        """Raise :class:`~agentrecall.errors.StoreClosedError` once the store was closed."""
        self._lifetime.check(self.name)

    async def initialize(self) -> None:
        """Same as :meth:`setup`; the hook a memory manager calls before first use."""
        await self.setup()

    async def __aenter__(self: F) -> F:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def add(
        self,
        content: str,
        metadata: JsonObject | None = None,
        *,
        ttl: float | timedelta | None = None,
        expires_at: datetime | str | None = None,
        valid_from: datetime | str | None = None,
        valid_until: datetime | str | None = None,
    ) -> AddResult:
        """Keep ``content``; identical content current in this scope returns the existing id.

        Args:
            content: the memory, stored verbatim.
            metadata: a JSON object, or ``None``.
            ttl: lifetime of this memory, overriding the store's default; one that would end
                past the year 9999 is refused.
            expires_at: when this memory expires: an aware datetime, an ISO 8601 date
                (midnight UTC) or an ISO 8601 time with an offset; naive times are refused.
            valid_from: when the fact became true in the world, in the same forms.
            valid_until: when it stopped being true, in the same forms, after ``valid_from``.

        A memory retired by :meth:`supersede` is not current: the same content added again
        is a new memory. An add that finds its content current keeps the existing memory's
        world time as it is.
        """
        expiry = self._expiry(ttl, expires_at)
        validity = Validity.of(valid_from, valid_until)
        self._check_writable()
        items = check_items([(content, metadata)])
        return (await self._add(items, expiry, True, validity))[0]

    async def add_many(
        self,
        items: Iterable[tuple[str, JsonObject | None]],
        *,
        ttl: float | timedelta | None = None,
    ) -> AddResults:
        """Add a batch in one transaction; results follow the input order.

        A bad item (its index is in the message) stores nothing of the batch; duplicates within
        the batch and against the store dedup like separate adds. Large batches are the fast
        way to load many memories.
        """
        self._check_writable()
        expiry = self._expiry(ttl, None)
        batch = check_pairs(items)
        if not batch:
            return []
        return await self._add_many(batch, expiry)

    async def supersede(
        self,
        old_ids: Iterable[str],
        content: str,
        *,
        metadata: JsonObject | None = None,
        valid_from: datetime | str | None = None,
        valid_until: datetime | str | None = None,
        reason: str | None = None,
    ) -> AddResult:
        """Add ``content`` and retire the memories ``old_ids`` in its favour, in one transaction.

        Each old memory stays in the store, retired: ``invalidated_at`` is set to now and
        ``superseded_by`` to the new memory's id, and a ``"supersede"`` version with
        ``reason`` goes to its history. Reads leave retired memories out unless asked
        (``include_superseded``, or an ``as_of`` before the retirement). The new memory is
        added as :meth:`add` adds it (content already current in this scope is that memory).
        With ``valid_from``, an old memory without a ``valid_until`` gets ``valid_from`` as
        its ``valid_until``: the old fact stopped being true when the new one started.

        A retry is harmless: when every old memory is already retired by the memory the
        content resolves to, the call changes nothing and returns that memory
        (``created=False``).

        Returns:
            The new memory's id (``created=False`` when the content was already current).

        Raises:
            InvalidArgumentError: the store is not writable; ``old_ids`` is a single string,
                empty, or holds a non-string; an old id is not a memory of this scope, or
                is already retired by another memory; the content resolves to one of the
                old memories; or content, metadata, a moment or ``reason`` is unusable.
                Nothing is written then.
        """
        self._check_writable()
        ids = list(dict.fromkeys(check_ids(old_ids, "old_ids")))
        if not ids:
            raise InvalidArgumentError("old_ids must name at least one memory to supersede")
        check_optional_text(reason, "reason")
        [(text, meta)] = check_items([(content, metadata)])
        validity = Validity.of(valid_from, valid_until)
        call = Supersession(ids, text, meta, validity, self._expiry(None, None), reason)
        return await self._supersede(call)

    async def import_records(self, records: Iterable[MemoryRecord]) -> int:
        """Store copies of memories with their ids, timestamps and scopes; return how many are new.

        One transaction: every record is checked first, so a bad record stores nothing.
        Memories keep the order of ``records``. Each record goes into its own scope (its
        ``user_id``, ``agent_id`` and ``session_id``), which is created when new, so memories
        read from one store's ``list`` go back into the scopes they came from. In a scope view,
        the view's ids fill the ones a record leaves ``None`` (a record with none joins the
        view's scope), and a record whose id contradicts the view's is refused: a view never
        writes outside itself. A record is skipped, and not counted, when its id is already
        in the store (in any scope), when its stripped content equals a memory of its
        scope or an earlier record of the batch for that scope, or when it has already
        expired. ``updated_at`` and ``expires_at`` are kept when present, and so are
        ``invalidated_at``, ``superseded_by``, ``valid_from`` and ``valid_until``: a retired
        record stays retired (and never dedups against a current memory).

        Raises:
            InvalidArgumentError: the store is not writable; or a record has blank content, a
                blank id, metadata that is not a JSON object, a scope id that is not ``None``
                or a non-empty string, or one outside this view, or a timestamp not in the
                stored shape ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (the message gives the record's
                index).
        """
        self._check_writable()
        batch = list(records)
        return await self._import_records(batch) if batch else 0

    async def import_versions(self, versions: Iterable[MemoryVersion]) -> int:
        """Add copies of replaced versions to the history, as they are; return how many were new.

        The counterpart of :meth:`versions`, for copying a store's history: each version keeps
        its memory id, content, metadata, ``changed_at``, change and reason, and goes into its
        scope as a record does in :meth:`import_records`. The memory need not exist (the
        history of a deleted memory is kept too). One transaction; every version is checked
        first. A version identical in all of that to one already kept is that one: of ``n``
        identical versions in a call only as many as the history lacks are added, so
        importing the same pages of :meth:`versions` again adds nothing. Versions are appended,
        after any the store already keeps of the same memory.

        Raises:
            InvalidArgumentError: the store is not writable; or a version has no
                ``memory_id``, blank content, metadata that is not a JSON object, a
                ``changed_at`` not in the stored shape, a change other than ``"update"``,
                ``"delete"`` or ``"expire"``, a reason that is not a string, or a scope id as
                :meth:`import_records` refuses (the message gives the version's index).
        """
        self._check_writable()
        batch = list(versions)
        return await self._import_versions(batch) if batch else 0

    async def search(
        self,
        query: str,
        options: Mapping[str, Any] | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        as_of: datetime | str | None = None,
        valid_at: datetime | str | None = None,
        include_superseded: bool = False,
    ) -> Entries:
        """Return the memories that best match ``query``, best first.

        Args:
            query: any text. In keyword mode one without searchable words finds nothing; a
                blank one finds nothing in any mode.
            options: ``{"max_search_results": n}`` caps the hits for this call;
                ``{"mode": "keyword" | "semantic" | "hybrid"}`` and ``{"neighbours": bool}``
                override the store's defaults (``None`` keeps them).
            filter: metadata conditions (see :mod:`agentrecall.retrieval.filters`).
            created_after: only memories created at or after this time: an aware datetime,
                an ISO 8601 date (``2025-01-31``, midnight UTC) or an ISO 8601 time with an
                offset (``2025-01-31T09:30:00Z``); naive times are refused.
            created_before: only memories created before this time, in the same forms.
            as_of: answer from what the store held at this moment, in the same forms (see
                :class:`Conditions`); memories changed or deleted since are found with the
                content they had then.
            valid_at: only memories true in the world at this moment (their
                ``valid_from``/``valid_until``; a memory without them is always true).
            include_superseded: also retired memories; their hits carry
                ``_supersededBy`` and ``_invalidatedAt`` in their metadata.

        Scope, expiry, filter, time bounds and the three moments apply in every mode.
        ``_relevanceScore`` is the BM25 score (keyword), the cosine similarity (semantic), or the
        fused score from 0 to 1 (hybrid: each ranking's best ``max(100, 4 * n)``, BM25 scores
        divided by the best one and similarities min-max scaled, weighted 0.5 / 0.5, see
        :mod:`agentrecall.retrieval.fusion`), whose parts are in ``_keywordScore`` (BM25) and
        ``_semanticScore`` (cosine), ``None`` where a ranking did not find the memory. With
        neighbours, ``_relevanceScore`` is the score after neighbours helped (see
        :mod:`agentrecall.retrieval.neighbours`).

        Raises:
            InvalidArgumentError: ``options`` is not a mapping, an option, the filter or a
                bound is unusable, or a mode
                needs an embedder this store lacks.
            ImportError: a mode other than keyword without ``numpy``.
        """
        requested = requested_limit(options)
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a string, got {type(query).__name__}")
        mode, neighbours = self._search_settings.for_call(options, f"store '{self.name}'")
        limit = requested or self.max_search_results or DEFAULT_MAX_SEARCH_RESULTS
        moments = Moments.of(as_of, valid_at, include_superseded)
        conditions = Conditions.of(self._scope, filter, created_after, created_before, moments)
        return await self._search(SearchCall(query, limit, mode, neighbours, conditions))

    async def get(
        self,
        memory_id: str,
        *,
        as_of: datetime | str | None = None,
        include_superseded: bool = False,
    ) -> MemoryRecord | None:
        """Return the memory with ``memory_id`` in this scope, or ``None``.

        A retired memory is ``None`` unless ``include_superseded``; with ``as_of``, the
        memory as it was held then (see :meth:`search`), or ``None`` if it was not.

        Raises:
            InvalidArgumentError: ``memory_id`` is not a string, or a moment is unusable.
        """
        check_id(memory_id)
        moments = Moments.of(as_of, None, include_superseded)
        return await self._get(memory_id, Conditions.of(self._scope, None, None, None, moments))

    async def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        metadata: JsonObject | None = None,
        reason: str | None = None,
    ) -> MemoryRecord | None:
        """Change a memory's content and/or metadata, keeping the old version in its history.

        Returns the updated memory, or ``None`` if this scope holds no current memory with
        that id (a retired memory is corrected by superseding it again).
        Given neither content nor metadata, it changes nothing, keeps no version and returns
        the memory as it is.

        Raises:
            InvalidArgumentError: ``memory_id`` or ``reason`` is not a string, blank content,
                metadata that is not a JSON object, or content equal to another memory of the
                same scope.
        """
        self._check_writable()
        check_id(memory_id)
        check_optional_text(reason, "reason")
        if content is None and metadata is None:
            return await self.get(memory_id)
        if content is not None:
            check_content(content, "content")
        if metadata is not None:
            check_json_object(metadata, "metadata")
        return await self._update(memory_id, Change(content, metadata, reason))

    async def delete(self, memory_id: str, *, reason: str | None = None) -> bool:
        """Forget one memory, current or retired (its history keeps it); return whether it existed.

        Raises:
            InvalidArgumentError: ``memory_id`` or ``reason`` is not a string.
        """
        check_id(memory_id)
        return await self.delete_many([memory_id], reason=reason) == 1

    async def delete_many(self, memory_ids: Iterable[str], *, reason: str | None = None) -> int:
        """Forget every memory of this scope whose id is given; return how many.

        Raises:
            InvalidArgumentError: ``memory_ids`` is a single string rather than an iterable of
                ids, an id is not a string (its index is given), or ``reason`` is not a string.
        """
        self._check_writable()
        check_optional_text(reason, "reason")
        ids = list(dict.fromkeys(check_ids(memory_ids)))
        if not ids:
            return 0
        return await self._remove(ids, reason)

    async def clear(self) -> int:
        """Forget every memory of this scope; return how many."""
        self._check_writable()
        return await self._remove(None, "clear")

    async def list(
        self,
        *,
        offset: int = 0,
        limit: int | None = None,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        as_of: datetime | str | None = None,
        valid_at: datetime | str | None = None,
        include_superseded: bool = False,
    ) -> RecordList:
        """Return memories in the order they were stored, skipping ``offset``, at most ``limit``.

        The first stored comes first. An import stores its records in its source's order, so
        records imported with times out of order keep that order rather than their times'.
        ``as_of``, ``valid_at`` and ``include_superseded`` select as in :meth:`search`; with
        ``as_of``, memories come oldest ``created_at`` first (then by id), since some of them
        are read from the history.

        Raises:
            InvalidArgumentError: ``offset`` is not an integer from 0 to 2**63 - 1, ``limit``
                not ``None`` or an integer from 1 to 2**63 - 1, or a bound or filter is unusable.
        """
        check_offset(offset)
        check_limit(limit, "limit")
        moments = Moments.of(as_of, valid_at, include_superseded)
        conditions = Conditions.of(self._scope, filter, created_after, created_before, moments)
        return await self._page(conditions, offset, limit)

    async def count(
        self,
        *,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        as_of: datetime | str | None = None,
        valid_at: datetime | str | None = None,
        include_superseded: bool = False,
    ) -> int:
        """Return how many memories this scope holds (that match, with a filter).

        ``as_of``, ``valid_at`` and ``include_superseded`` select as in :meth:`search`.
        """
        moments = Moments.of(as_of, valid_at, include_superseded)
        conditions = Conditions.of(self._scope, filter, created_after, created_before, moments)
        return await self._count(conditions)

    async def history(self, memory_id: str) -> Versions:
        """Return the versions that updates, deletion, expiry or supersession replaced.

        Oldest first. With supersession the chain is followed both ways: the versions of every
        memory that ``memory_id`` replaced (and that those replaced, and so on) and of every memory
        that replaced it in turn come too, all by ``changed_at`` (then memory id), each naming its
        memory. A retired memory's ``"supersede"`` version names its successor in ``superseded_by``.

        An expired memory's last version (``change="expire"``) is here from the moment it
        expires, dated at its final ``expires_at`` (after any add that dedupped to it moved
        it later), or when it was last written if that was later (an expiry given already
        past); the next write purges the memory and leaves this version as it was.

        Raises:
            InvalidArgumentError: ``memory_id`` is not a string.
        """
        check_id(memory_id)
        return await self._history(memory_id)

    async def versions(self, *, batch: int = DEFAULT_PAGE) -> AsyncGenerator[Versions, None]:
        """Yield every replaced version this scope keeps, of every memory, a page at a time.

        Deleted memories' versions are included, and expired ones' as soon as they expire,
        as :meth:`history` gives them (an expiry after its memory's other versions, whether a
        write has purged it yet or not). Versions come by memory id, then oldest first, each
        naming its memory and scope, in pages of about ``batch``: a page also holds the
        further versions of its last memory replaced in the same millisecond, so it never
        splits versions that could be identical (see :meth:`import_versions`). Each page
        is one read; versions replaced while paging may or may not be included.

        Raises:
            InvalidArgumentError: ``batch`` is not an integer of at least 1.
        """
        check_batch(batch)
        after: Any = None
        while True:
            page, after = await self._versions_page(after, batch)
            if page:
                yield page
            if after is None:
                return

    # --- checks -------------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self.writable:
            raise InvalidArgumentError(
                f"store '{self.name}' is read-only; create it with writable=True to change it"
            )

    def _expiry(
        self, ttl: float | timedelta | None, expires_at: datetime | str | None
    ) -> str | None:
        if ttl is not None and expires_at is not None:
            raise InvalidArgumentError("give ttl or expires_at, not both")
        if expires_at is not None:
            return timestamp(expires_at, "expires_at")
        lifetime = seconds(ttl, "ttl") or self._ttl
        if lifetime is None:
            return None
        return expiry_after(lifetime, "ttl")

    # --- the backend's hooks, each one transaction on this view's scope -----------------------

    async def _add(
        self,
        items: Items,
        expires_at: str | None,
        checked: bool,
        validity: Validity = UNSAID,
    ) -> AddResults:
        """Insert ``items`` (checked unless ``checked`` is false), deduplicated per scope.

        Only current memories dedup; new ones get ``validity`` as their world time.
        """
        raise NotImplementedError

    async def _supersede(self, call: Supersession) -> AddResult:
        """Add ``call``'s memory and retire ``call.old_ids`` by it, in one transaction."""
        raise NotImplementedError

    async def _add_many(self, batch: Items, expires_at: str | None) -> AddResults:
        """Insert a batch of pairs whose contents and metadata are not checked yet."""
        check_items(batch)
        return await self._add(batch, expires_at, True)

    async def _import_records(self, records: RecordList) -> int:
        raise NotImplementedError

    async def _import_versions(self, versions: Versions) -> int:
        raise NotImplementedError

    async def _search(self, call: SearchCall) -> Entries:
        raise NotImplementedError

    async def _get(self, memory_id: str, conditions: Conditions) -> MemoryRecord | None:
        raise NotImplementedError

    async def _update(self, memory_id: str, change: Change) -> MemoryRecord | None:
        """Apply ``change`` to the memory of this scope with ``memory_id``, if there is one."""
        raise NotImplementedError

    async def _remove(self, ids: Ids | None, reason: str | None) -> int:
        """Delete the memories with ``ids`` (all of this scope's for ``None``); count them."""
        raise NotImplementedError

    async def _page(self, conditions: Conditions, offset: int, limit: int | None) -> RecordList:
        raise NotImplementedError

    async def _count(self, conditions: Conditions) -> int:
        raise NotImplementedError

    async def _history(self, memory_id: str) -> Versions:
        raise NotImplementedError

    async def _versions_page(self, after: Any, limit: int) -> tuple[Versions, Any]:
        """Return the versions after cursor ``after`` and the page's own cursor (``None``: last)."""
        raise NotImplementedError


def check_name(name: object) -> None:
    """Refuse a store or view name that is not a non-blank string UTF-8 can encode.

    Raises:
        InvalidArgumentError: ``name`` is anything else.
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"name must be a non-blank string, got {name!r}")
    check_text(name, "name")


def check_batch(batch: object) -> None:
    """Refuse a page or batch size that is not an integer of at least 1.

    Raises:
        InvalidArgumentError: ``batch`` is ``None``, not an integer, or below 1.
    """
    if batch is None:  # check_limit lets None through, meaning "no limit"
        raise InvalidArgumentError("batch must be an integer of at least 1, got None")
    check_limit(batch, "batch")
