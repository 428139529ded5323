"""``SQLiteStore``: memories in one SQLite file, for millions of memories and many processes."""

from __future__ import annotations

import copy
import functools
import os
import sqlite3
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from agentrecall._internal.checks import (
    check_busy_timeout,
    check_content,
    check_id,
    check_ids,
    check_items,
    check_limit,
    check_offset,
    check_optional_text,
    check_pairs,
    seconds,
)
from agentrecall._internal.jsonvalue import check_json_object
from agentrecall._internal.paths import default_store_path
from agentrecall._internal.sqlite import Database, Progress
from agentrecall._internal.worker import Worker
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.bm25 import query_terms
from agentrecall.stores.base import DEFAULT_PAGE, Capability
from agentrecall.stores.contentkeys import content_hash, content_key
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite import imports, reads, reindex, semantic, writes
from agentrecall.stores.sqlite.narrowing import narrowings
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS
from agentrecall.stores.sqlite.search import ranked_search
from agentrecall.stores.sqlite.settings import SearchSettings
from agentrecall.stores.sqlite.tables import CHUNK, index_unindexed
from agentrecall.stores.sqlite.vector_sql import PreparedVectors
from agentrecall.stores.times import expiry_after, timestamp
from agentrecall.types import AddResult, JsonObject, MemoryEntry, MemoryRecord, MemoryVersion

T = TypeVar("T")


DEFAULT_MAX_SEARCH_RESULTS = 10

# Aliases for annotations inside SQLiteStore, whose own ``list`` method hides the builtin there.
RecordList = list[MemoryRecord]
AddResults = list[AddResult]
Entries = list[MemoryEntry]
Versions = list[MemoryVersion]
Texts = list[str]


class SQLiteStore:
    """Memories in one SQLite file: BM25 recall, scopes, metadata filters, expiry, history.

    The store people deploy on one machine. It satisfies the same contract as
    :class:`~agentrecall.JsonFileStore` (a Strands or agentrecall ``MemoryManager`` takes it
    unchanged) and adds, declared in :attr:`capabilities`: ``get``, ``update``, ``delete``,
    ``list``, ``count``, ``clear``, ``add_many``, scoped views, filters, expiry and history.

    Guarantees:

    * Every operation is one transaction: an acknowledged write survives a crash of the
      process, and of the machine too unless ``fsync=False``; a crash mid-batch leaves none
      of that batch.
    * Many processes may share the file (WAL); a busy database is waited for, never reported
      as locked. Construction does no I/O; :meth:`setup` (also run by the first call) creates
      or migrates the tables; the first open of a file written before stemmed search
      indexes every memory again, once (:meth:`setup`).
    * Dedup: content equal to a memory of the same scope once both are stripped of outer
      whitespace returns that memory's id.
    * Recall: BM25 over the memories' words, diacritics folded (``cafe`` finds ``café``) and
      stemmed (Porter: ``seats`` finds ``seat``, ``dancing`` finds ``danced``); a run of
      Chinese, Japanese or Korean characters is read as its characters and neighbouring
      pairs, so ``座位`` finds ``用户喜欢靠过道的座位`` and ``席`` finds ``通路側の席``. k1 0.9,
      b 0.25, chosen by cross-validation on LoCoMo (``benchmarks/results/bm25-tuning.md``).
      Stop words are left out of queries. The index picks 100 candidates from a bounded
      number of postings, rare terms first (common terms add only their newest, within the
      scope and filter), and those are
      ranked by exact BM25, so questions stay fast at millions of memories; on a small store
      the ranking is exact BM25. Ties go to the newer memory. ``_relevanceScore`` is the BM25
      score, higher is better. Term statistics (document frequencies, average length) are the
      whole database's, in a scope view too. A query of any length works: its 64 rarest terms
      (fewest memories holding them) are searched and scored, the others left out, so a
      pasted document is searched by its most telling words.
    * Filters and time bounds: an index of metadata values (equality and ``$in`` on keys and
      strings of up to 256 characters) and one of creation times narrow a search to the
      memories that may match before it ranks them, so a selective filter costs about what
      an unfiltered search does (``benchmarks/results/sqlite-filters.md``). On a small store
      the hits are the exact BM25 ranking of the memories that meet every condition.
    * A memory is found by a search from the moment its add returns. Writes of up to 16
      memories commit only the memories and list them as waiting for the full-text index (so
      a durable add does not also write and fsync index pages); a background thread indexes
      them shortly after, in a transaction of their own, and closing the store indexes what
      is left. Meanwhile searches read the waiting memories directly and count them in the
      term statistics, so rankings and scores are the same either way. Larger batches are
      indexed in their own transaction.
    * A scope view (:meth:`scope`) reads and writes only its own memories.
    * Database work runs one call at a time, in order, on a thread of the store's own (shared
      by its views), never on the caller's event loop.
    * Expired memories are never returned and are purged by the next write.
    * ``update``, ``delete`` and expiry keep the replaced version: :meth:`history`.
    * Copies are exact: records carry their scope, :meth:`import_records` puts each back in
      it, and :meth:`versions` with :meth:`import_versions` copies the whole history, deleted
      memories' too (what :func:`agentrecall.migrate.migrate` does).
    """

    capabilities: frozenset[Capability] = frozenset(Capability) - {Capability.SEMANTIC}
    """What every ``SQLiteStore`` supports; a store given an embedder also declares
    ``Capability.SEMANTIC`` (its own ``capabilities``)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        name: str = "memory",
        description: str | None = None,
        max_search_results: int | None = None,
        writable: bool = True,
        extraction: Any = None,
        ttl: float | timedelta | None = None,
        busy_timeout: float = 30.0,
        fsync: bool = True,
        embedder: Embedder | None = None,
        search_mode: str | None = None,
        neighbours: bool = False,
        session_key: str = "session",
    ) -> None:
        """Configure the store; nothing is read or created until the first call.

        Args:
            path: the database file; default ``$AGENTRECALL_HOME/memory/<name>.db``.
            name: the store's name, unique within a manager.
            description: what the store holds, shown to a model next to its name.
            max_search_results: hits per search when the caller gives no limit (default 10);
                an integer from 1 to 2**63 - 1 (larger ones are refused, not clamped).
            writable: whether writes are allowed. A read-only store opens the file read-only
                and never creates it: while it does not exist, the store reads as empty.
            extraction: fact-extraction setting, kept as given for a memory manager.
            ttl: default lifetime of new memories (seconds or ``timedelta``, positive and
                finite); ``None`` keeps them until deleted.
            busy_timeout: seconds to wait for another process's write before retrying: a
                number above 0, at most 2147483 (about 24 days, SQLite's limit).
            fsync: ``True`` (the default): a write is on the disk before it returns, and survives
                a power loss. ``False``: it is handed to the operating system before it
                returns, and survives a crash of the process but maybe not of the machine;
                a single add then takes about half the time (SQLite's ``synchronous=NORMAL``).
            embedder: an :class:`~agentrecall.embeddings.Embedder`, to recall by meaning too:
                every memory written through this store gets its vector, and searches may be
                ``"semantic"`` or ``"hybrid"``. Needs ``numpy`` (the ``embeddings`` extra).
            search_mode: the mode of a search whose options name none: ``"keyword"`` (BM25),
                ``"semantic"`` (cosine similarity of vectors) or ``"hybrid"`` (both, fused).
                Default: ``"hybrid"`` with an embedder, ``"keyword"`` without.
            neighbours: conversation mode by default, for stores whose memories are the
                consecutive turns of dialogues: a memory's neighbours in its session help its
                score, and the best hits' neighbours fill the rest of the results.
            session_key: the metadata key naming a memory's session in conversation mode.

        Raises:
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
            ImportError: an embedder or a mode other than ``"keyword"`` was given and ``numpy``
                is not installed (``pip install 'agentrecall[embeddings]'``).
        """
        if not isinstance(name, str) or not name.strip():
            raise InvalidArgumentError(f"name must be a non-blank string, got {name!r}")
        check_limit(max_search_results, "max_search_results")
        if not isinstance(writable, bool):
            raise InvalidArgumentError(f"writable must be True or False, got {writable!r}")
        if not isinstance(fsync, bool):
            raise InvalidArgumentError(f"fsync must be True or False, got {fsync!r}")
        self._fsync = fsync
        self.name = name
        self._root_name = name
        self.description = description
        self.max_search_results = max_search_results
        self.writable = writable
        self.extraction = extraction
        self._ttl = seconds(ttl, "ttl")
        if path is None:
            path = default_store_path(name, ".db")
        self._path = os.path.abspath(os.path.expanduser(os.fspath(path)))
        self._db = Database(
            self._path,
            component=COMPONENT,
            migrations=MIGRATIONS,
            what="memory database",
            busy_timeout=check_busy_timeout(busy_timeout),
            functions={
                "agentrecall_content_hash": content_hash,
                "agentrecall_content_key": content_key,
            },
            tidy=index_unindexed,
            readonly=not writable,
        )
        self._scope = Scope()
        self._worker = Worker(f"agentrecall {self._path}")
        self._search = SearchSettings.configure(
            embedder, search_mode, neighbours, session_key, self._path
        )
        self._vectors = self._search.vectors
        if self._vectors is not None:
            self.capabilities = type(self).capabilities | {Capability.SEMANTIC}

    @property
    def path(self) -> str:
        """The database file's absolute path."""
        return self._path

    def scope(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        name: str | None = None,
    ) -> SQLiteStore:
        """Return a view that reads and writes only the memories of one user, agent or session.

        The view is a full store sharing this one's file and connection. It sees the memories
        written with all of its ids (a user's view sees that user's memories of every session;
        a view of one user's session sees only that session's), and stamps its ids on what it
        writes. Dedup is per exact scope. Its ``name`` defaults to ``"<name>[user=...]"``.
        """
        view = copy.copy(self)
        view._scope = self._scope.narrowed(
            user_id=user_id, agent_id=agent_id, session_id=session_id
        )
        view.name = name or f"{self._root_name}[{view._scope.label()}]"
        return view

    async def setup(self, *, progress: Progress | None = None) -> None:
        """Create or migrate the tables now rather than on the first call (idempotent).

        A migration that indexes every memory again (the first open of a file written before
        stemmed search) logs that it starts, at WARNING, and calls ``progress(done, total)``
        as it starts and after each chunk of memories when given (then the log is at INFO:
        the caller shows the progress). At a million memories it takes tens of seconds, once.
        """
        await self._offload(functools.partial(self._db.run, _nothing, progress=progress))

    async def initialize(self) -> None:
        """Same as :meth:`setup`; the hook a memory manager calls before first use."""
        await self.setup()

    async def aclose(self) -> None:
        """Close the database connection, shared with the scope views (reopened on next use).

        Indexes what is still waiting for the full-text index first; the last connection to
        the file to close also folds the WAL back into it. Closing twice is harmless.
        """
        await self._offload(self._db.close)

    async def __aenter__(self) -> SQLiteStore:
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
    ) -> AddResult:
        """Keep ``content``; identical content in this scope returns the existing id.

        Args:
            content: the memory, stored verbatim.
            metadata: a JSON object, or ``None``.
            ttl: lifetime of this memory, overriding the store's default; one that would end
                past the year 9999 is refused.
            expires_at: when this memory expires: an aware datetime, an ISO 8601 date
                (midnight UTC) or an ISO 8601 time with an offset; naive times are refused.
        """
        expiry = self._expiry(ttl, expires_at)
        self._check_writable()
        checked = check_items([(content, metadata)])
        vectors = await self._prepare([content])
        return (await self._write(writes.add, checked, expiry, True, vectors))[0]

    async def add_many(
        self,
        items: Iterable[tuple[str, JsonObject | None]],
        *,
        ttl: float | timedelta | None = None,
    ) -> AddResults:
        """Add a batch in one transaction; results follow the input order.

        A bad item (its index is in the message) stores nothing of the batch; duplicates within
        the batch and against the store dedup like separate adds. Large batches are the fast
        way to load many memories: their rows are prepared while SQLite indexes the chunk
        before.
        """
        self._check_writable()
        expiry = self._expiry(ttl, None)
        batch = check_pairs(items)
        if not batch:
            return []
        if self._vectors is not None:
            # Checked before the model runs, in the worker, then embedded outside the write.
            await self._offload(check_items, batch)
            vectors = await self._prepare([content for content, _ in batch])
            return await self._write(writes.add, batch, expiry, True, vectors)
        # A batch larger than a chunk is checked in the worker, chunk by chunk, while SQLite
        # indexes the chunk before; a bad item still stores nothing (one transaction).
        checked = len(batch) <= CHUNK
        if checked:
            check_items(batch)
        return await self._write(writes.add, batch, expiry, checked)

    async def import_records(self, records: Iterable[MemoryRecord]) -> int:
        """Store copies of memories with their ids, timestamps and scopes; return how many are new.

        One transaction: every record is checked first, so a bad record stores nothing.
        Memories keep the order of ``records``. Each record goes into its own scope (its
        ``user_id``, ``agent_id`` and ``session_id``), which is created when new, so memories
        read from one store's ``list`` go back into the scopes they came from. In a scope view,
        the view's ids fill the ones a record leaves ``None`` (a record with none joins the
        view's scope), and a record whose id contradicts the view's is refused: a view never
        writes outside itself. A record is skipped, and not counted, when its id is already
        in the database (in any scope), when its stripped content equals a memory of its
        scope or an earlier record of the batch for that scope, or when it has already
        expired. ``updated_at`` and ``expires_at`` are kept when present.

        Raises:
            InvalidArgumentError: the store is not writable; or a record has blank content, a
                blank id, metadata that is not a JSON object, a scope id that is not ``None``
                or a non-empty string, or one outside this view, or a timestamp not in the
                stored shape ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (the message gives the record's
                index).
        """
        self._check_writable()
        batch = list(records)
        if not batch:
            return 0
        # Texts that cannot be memories are left to the import's checks, which refuse them.
        texts = [
            r.content for r in batch if isinstance(r, MemoryRecord) and isinstance(r.content, str)
        ]
        vectors = await self._prepare(texts)
        # As in add_many, records are checked and turned into rows in the worker, a chunk at a
        # time while SQLite indexes the chunk before; a bad record still stores nothing.
        return await self._write(imports.import_records, batch, vectors)

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
        return await self._write(imports.import_versions, batch) if batch else 0

    async def search(
        self,
        query: str,
        options: Mapping[str, Any] | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
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

        Scope, expiry, filter and time bounds apply in every mode. ``_relevanceScore`` is the
        BM25 score (keyword), the cosine similarity (semantic), or the fused score from 0 to
        1 (hybrid: each ranking's best ``max(100, 4 * n)`` min-max normalised and weighted
        0.5 / 0.5, see :mod:`agentrecall.retrieval.fusion`), whose parts are in
        ``_keywordScore`` (BM25) and ``_semanticScore`` (cosine), ``None`` where a ranking
        did not find the memory. Semantic search is exact: every vector of the scope is
        compared. Memories written without an embedder have no vector until :meth:`reindex`
        and are found by keyword only. With neighbours, ``_relevanceScore`` is the score
        after neighbours helped (see :mod:`agentrecall.retrieval.neighbours`).

        Raises:
            InvalidArgumentError: an option, the filter or a bound is unusable, a mode needs
                an embedder this store lacks, or the file's vectors are another model's.
            ImportError: a mode other than keyword without ``numpy``.
        """
        requested = None if options is None else options.get("max_search_results")
        check_limit(requested, "max_search_results")
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a string, got {type(query).__name__}")
        mode, neighbours = self._search.for_call(options, f"store '{self.name}'")
        limit = requested or self.max_search_results or DEFAULT_MAX_SEARCH_RESULTS
        where, params = reads.conditions(self._scope, filter, created_after, created_before)
        terms = query_terms(query)
        filtered = filter is not None or created_after is not None or created_before is not None
        after = timestamp(created_after, "created_after")
        narrowed = narrowings(filter, after, timestamp(created_before, "created_before"))
        if mode == "keyword" and not neighbours:
            if not terms:
                return []
            return await self._offload(
                ranked_search,
                self._db,
                terms,
                limit,
                where,
                params,
                self._scope,
                filtered,
                narrowed,
                self.writable,
            )
        if not query.strip():
            return []
        vector = None
        if self._vectors is not None and mode != "keyword":
            vector = await self._offload(self._vectors.embedding.query, query)
        request = semantic.Request(
            terms,
            vector,
            limit,
            where,
            params,
            self._scope,
            filtered,
            narrowed,
            self.writable,
            mode,
            neighbours,
            self._search.session_key,
        )
        return await self._offload(semantic.search, self._db, self._vectors, request)

    async def reindex(self, *, progress: Progress | None = None, batch: int = reindex.BATCH) -> int:
        """Compute the vectors the file lacks with this store's embedder; return how many.

        Covers the whole file, whatever the view: memories written without an embedder get
        their vector, and if the file's vectors were made by another model (or dimension),
        they are all deleted first and rebuilt with this one, which the file then records.
        Runs a batch at a time, each its own transaction, the model out of any transaction:
        an interrupted reindex keeps what it did, and running it again does the rest.
        Meanwhile semantic search finds the memories already done.

        Args:
            progress: called as ``progress(done, total)`` with ``done == 0`` first and after
                each batch; ``total`` is how many memories lacked a vector at the start.
            batch: memories per batch (per embedder call and per transaction).

        Raises:
            InvalidArgumentError: the store is read-only or has no embedder, or ``batch`` is
                not an integer of at least 1.
        """
        self._check_writable()
        vectors = self._search.require_vectors("reindex", f"store '{self.name}'")
        if batch is None:  # check_limit lets None through, meaning "no limit"
            raise InvalidArgumentError("batch must be an integer of at least 1, got None")
        check_limit(batch, "batch")
        embedding = vectors.embedding
        total = await self._offload(reindex.start, self._db, embedding.model)
        done = added = after = 0
        if progress is not None:
            progress(0, total)
        while rows := await self._offload(reindex.pending, self._db, after, batch):
            prepared = await self._offload(embedding.prepare, [content for _, content in rows])
            added += await self._offload(reindex.store, self._db, prepared, rows)
            after, done = rows[-1][0], done + len(rows)
            if progress is not None:
                progress(done, max(total, done))
        return added

    async def get(self, memory_id: str) -> MemoryRecord | None:
        """Return the memory with ``memory_id`` in this scope, or ``None``.

        Raises:
            InvalidArgumentError: ``memory_id`` is not a string.
        """
        check_id(memory_id)
        where, params = reads.conditions(self._scope, None, None, None)
        return await self._read(lambda db: reads.get(db, memory_id, where, params))

    async def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        metadata: JsonObject | None = None,
        reason: str | None = None,
    ) -> MemoryRecord | None:
        """Change a memory's content and/or metadata, keeping the old version in its history.

        Returns the updated memory, or ``None`` if this scope holds no memory with that id.

        Raises:
            InvalidArgumentError: ``memory_id`` or ``reason`` is not a string, blank content,
                metadata that is not a JSON object, or content equal to another memory of the
                same scope.
        """
        self._check_writable()
        check_id(memory_id)
        check_optional_text(reason, "reason")
        if content is not None:
            check_content(content, "content")
        if metadata is not None:
            check_json_object(metadata, "metadata")
        vectors = None if content is None else await self._prepare([content])
        return await self._write(writes.update, memory_id, content, metadata, reason, vectors)

    async def delete(self, memory_id: str, *, reason: str | None = None) -> bool:
        """Forget one memory (its history keeps it); return whether it existed.

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
        return await self._write(writes.remove, ids, reason)

    async def clear(self) -> int:
        """Forget every memory of this scope; return how many."""
        self._check_writable()
        return await self._write(writes.remove, None, "clear")

    async def list(
        self,
        *,
        offset: int = 0,
        limit: int | None = None,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
    ) -> RecordList:
        """Return memories oldest first, skipping ``offset`` and returning at most ``limit``.

        Raises:
            InvalidArgumentError: ``offset`` is not an integer from 0 to 2**63 - 1, ``limit``
                not ``None`` or an integer from 1 to 2**63 - 1, or a bound or filter is unusable.
        """
        check_offset(offset)
        check_limit(limit, "limit")
        where, params = reads.conditions(self._scope, filter, created_after, created_before)
        return await self._read(lambda db: reads.page(db, where, params, offset, limit))

    async def count(
        self,
        *,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
    ) -> int:
        """Return how many memories this scope holds (that match, with a filter)."""
        where, params = reads.conditions(self._scope, filter, created_after, created_before)
        return await self._read(lambda db: reads.count(db, where, params))

    async def history(self, memory_id: str) -> Versions:
        """Return the versions that updates, deletion or expiry replaced, oldest first.

        Raises:
            InvalidArgumentError: ``memory_id`` is not a string.
        """
        check_id(memory_id)
        scope = self._scope
        return await self._read(lambda db: reads.history(db, scope, memory_id))

    async def versions(self, *, batch: int = DEFAULT_PAGE) -> AsyncGenerator[Versions, None]:
        """Yield every replaced version this scope keeps, of every memory, a page at a time.

        Deleted memories' versions are included. Versions come by memory id, then oldest
        first, each naming its memory and scope, in pages of about ``batch``: a page also
        holds the further versions of its last memory replaced in the same millisecond, so it
        never splits versions that could be identical (see :meth:`import_versions`). Each page
        is one read; versions replaced while paging may or may not be included.

        Raises:
            InvalidArgumentError: ``batch`` is not an integer of at least 1.
        """
        if batch is None:  # check_limit lets None through, meaning "no limit"
            raise InvalidArgumentError("batch must be an integer of at least 1, got None")
        check_limit(batch, "batch")
        scope = self._scope
        after: reads.Cursor | None = None
        while True:
            read = functools.partial(reads.versions, scope=scope, after=after, limit=batch)
            page, after = await self._read(read)
            if page:
                yield page
            if after is None:
                return

    # --- checks and plumbing ------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self.writable:
            raise InvalidArgumentError(
                f"store '{self.name}' is read-only; create it with writable=True to change it"
            )

    async def _prepare(self, texts: Texts) -> PreparedVectors | None:
        """Return the vectors of ``texts`` for a write, made in the worker (none: no embedder)."""
        if self._vectors is None:
            return None
        return await self._offload(self._vectors.embedding.prepare, texts)

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

    async def _offload(self, function: Callable[..., T], *args: Any) -> T:
        return await self._worker.run(function, *args)

    async def _read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        return await self._offload(self._db.run, query)

    async def _write(self, transaction: Callable[..., T], *args: Any) -> T:
        """Run one of :mod:`.writes`' or :mod:`.imports`' transactions on this view's scope."""
        return await self._offload(transaction, self._db, self._scope, self._fsync, *args)


def _nothing(db: sqlite3.Connection) -> None:
    """A transaction that only opens the database (creating or migrating its tables)."""
