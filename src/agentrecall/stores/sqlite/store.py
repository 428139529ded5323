"""``SQLiteStore``: memories in one SQLite file, for millions of memories and many processes."""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, TypeVar

from agentrecall._internal.checks import check_busy_timeout, check_ids, check_items
from agentrecall._internal.paths import default_store_path
from agentrecall._internal.sqlite import Database, Progress
from agentrecall._internal.worker import Worker
from agentrecall.embeddings.adapters import store_embedder
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.bm25 import query_terms
from agentrecall.stores.base import DEFAULT_PAGE, Capability
from agentrecall.stores.contentkeys import content_hash, content_key
from agentrecall.stores.coverage import VectorCoverage
from agentrecall.stores.front import (
    UNSAID,
    AddResults,
    Change,
    Conditions,
    Entries,
    Ids,
    Items,
    RecordList,
    SearchCall,
    StoreFront,
    Supersession,
    Validity,
    Versions,
    check_batch,
)
from agentrecall.stores.modes import SearchSettings
from agentrecall.stores.sqlite import (
    export,
    imports,
    longterms,
    reads,
    reindex,
    semantic,
    superseding,
    vector_sql,
    writes,
)
from agentrecall.stores.sqlite.coverage import coverage
from agentrecall.stores.sqlite.embedding import Embedding
from agentrecall.stores.sqlite.moments import Then
from agentrecall.stores.sqlite.narrowing import narrowings
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS
from agentrecall.stores.sqlite.search import ranked_search
from agentrecall.stores.sqlite.tables import CHUNK, index_unindexed
from agentrecall.stores.sqlite.vector_sql import PreparedVectors
from agentrecall.types import AddResult, MemoryRecord

T = TypeVar("T")

Texts = list[str]


class SQLiteStore(StoreFront):
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
      whitespace returns that memory's id, and that memory then lives at least as long as
      the add asked (its expiry moves to the later of the two; none if the add gave none),
      so an add is never lost with an earlier, shorter-lived copy. Its content and metadata
      stay as they were.
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
    * ``update``, ``delete`` and expiry keep the replaced version: :meth:`history`. An
      expired memory's version is there from the moment it expires, dated then (its
      ``changed_at`` is its final ``expires_at``, after any add that dedupped to it moved it
      later, or when it was written if that was already past), whether a write has purged
      it yet or not; so is it in :meth:`versions` and :meth:`snapshot`.
    * Facts that change: :meth:`supersede` adds a memory and retires older ones in one
      transaction; a retired memory keeps its row (and index entries, and vector), out of
      default reads, found with ``include_superseded`` or an ``as_of`` before its retirement.
      Dedup holds among current memories only. Default reads test retirement with the
      checks they already make, never reading the history; ``as_of`` reads cost in proportion
      to the versions kept after the moment (:mod:`~agentrecall.stores.sqlite.moments`).
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
        self._configure(name, description, max_search_results, writable, extraction, ttl)
        if not isinstance(fsync, bool):
            raise InvalidArgumentError(f"fsync must be True or False, got {fsync!r}")
        self._fsync = fsync
        self._path = _file_path(default_store_path(name, ".db") if path is None else path)
        self._db = Database(
            self._path,
            component=COMPONENT,
            migrations=MIGRATIONS,
            what="memory database",
            busy_timeout=check_busy_timeout(busy_timeout),
            functions={
                "agentrecall_content_hash": content_hash,
                "agentrecall_content_key": content_key,
                longterms.FUNCTION: longterms.counts_json,
            },
            tidy=index_unindexed,
            readonly=not writable,
        )
        self._worker = Worker(f"agentrecall {self._path}")
        vectors = None
        if embedder is not None:
            vectors = semantic.Vectors(
                Embedding(store_embedder(embedder, "an SQLiteStore with an embedder"), self._path)
            )
        self._search_settings = SearchSettings.configure(
            vectors, search_mode, neighbours, session_key, "SQLiteStore"
        )
        self._vectors = vectors
        if vectors is not None:
            self.capabilities = type(self).capabilities | {Capability.SEMANTIC}

    @property
    def path(self) -> str:
        """The database file's absolute path."""
        return self._path

    async def setup(self, *, progress: Progress | None = None) -> None:
        """Create or migrate the tables now rather than on the first call (idempotent).

        A migration that indexes every memory again (the first open of a file written before
        stemmed search) logs that it starts, at WARNING, and calls ``progress(done, total)``
        as it starts and after each chunk of memories when given (then the log is at INFO:
        the caller shows the progress). At a million memories it takes tens of seconds, once.
        """
        await self._offload(functools.partial(self._db.run, _nothing, progress=progress))

    async def aclose(self) -> None:
        """Close the database connection, shared with the scope views, and end the store.

        Indexes what is still waiting for the full-text index first; the last connection to
        the file to close also folds the WAL back into it. Closing twice is harmless; any
        other later call, of this store or of its views, raises
        :class:`~agentrecall.errors.StoreClosedError`.
        """
        self._lifetime.end()
        await self._worker.run(self._db.close)

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
        vectors = self._search_settings.require_vectors("reindex", f"store '{self.name}'")
        check_batch(batch)
        embedding = vectors.embedding
        # In the worker: the model's dimension may take a request to the embedder to learn.
        total = await self._offload(lambda: reindex.start(self._db, embedding.model))
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

    async def vector_coverage(self) -> VectorCoverage:
        """Return how many of this view's memories have a vector, and the file's model.

        Semantic search finds only those; :meth:`reindex` computes the rest. Needs no
        embedder: it reads what the file holds.
        """
        scope = self._scope
        return await self._read(lambda db: coverage(db, scope))

    # --- the hooks of StoreFront ----------------------------------------------------------------

    async def _add(
        self, items: Items, expires_at: str | None, checked: bool, validity: Validity = UNSAID
    ) -> AddResults:
        vectors = await self._prepare([content for content, _ in items])
        return await self._write(writes.add, items, expires_at, checked, vectors, validity)

    async def _supersede(self, call: Supersession) -> AddResult:
        vectors = await self._prepare([call.content])
        return await self._write(superseding.supersede, call, vectors)

    async def _add_many(self, batch: Items, expires_at: str | None) -> AddResults:
        if self._vectors is not None:
            # Checked before the model runs, in the worker, then embedded outside the write.
            await self._offload(check_items, batch)
            return await self._add(batch, expires_at, True)
        # A batch larger than a chunk is checked in the worker, chunk by chunk, while SQLite
        # indexes the chunk before; a bad item still stores nothing (one transaction). Its
        # rows are prepared while SQLite indexes the chunk before.
        checked = len(batch) <= CHUNK
        if checked:
            check_items(batch)
        return await self._write(writes.add, batch, expires_at, checked)

    async def _import_records(self, records: RecordList) -> int:
        vectors = None
        if self._vectors is not None:
            # Texts that cannot be memories are left to the import's checks, which refuse them.
            texts = [
                r.content
                for r in records
                if isinstance(r, MemoryRecord) and isinstance(r.content, str)
            ]
            vectors = await self._prepare(texts)
        # As in add_many, records are checked and turned into rows in the worker, a chunk at a
        # time while SQLite indexes the chunk before; a bad record still stores nothing.
        return await self._write(imports.import_records, records, vectors)

    async def _import_versions(self, versions: Versions) -> int:
        return await self._write(imports.import_versions, versions)

    async def _search(self, call: SearchCall) -> Entries:
        where, params = reads.conditions(call.conditions)
        terms = query_terms(call.query)
        found = call.conditions
        narrowed = narrowings(found.filter, found.created_after, found.created_before)
        then = Then.of(found)
        # Conditions that few memories may meet are checked on the postings, as filters are.
        filtered = found.filtered or found.valid_at is not None or found.as_of is not None
        if call.mode == "keyword" and not call.neighbours:
            if not terms:
                return []
            return await self._offload(
                ranked_search,
                self._db,
                terms,
                call.limit,
                where,
                params,
                self._scope,
                filtered,
                narrowed,
                self.writable,
                then,
            )
        if not call.query.strip():
            return []
        vector = None
        if self._vectors is not None and call.mode != "keyword":
            vector = await self._offload(self._vectors.embedding.query, call.query)
        request = semantic.Request(
            terms,
            vector,
            call.limit,
            where,
            params,
            self._scope,
            filtered,
            narrowed,
            self.writable,
            call.mode,
            call.neighbours,
            self._search_settings.session_key,
            then,
        )
        return await self._offload(semantic.search, self._db, self._vectors, request)

    async def _get(self, memory_id: str, conditions: Conditions) -> MemoryRecord | None:
        return await self._read(lambda db: reads.get(db, memory_id, conditions))

    async def _update(self, memory_id: str, change: Change) -> MemoryRecord | None:
        vectors = None if change.content is None else await self._prepare([change.content])
        content, metadata, reason = change.content, change.metadata, change.reason
        return await self._write(writes.update, memory_id, content, metadata, reason, vectors)

    async def _remove(self, ids: Ids | None, reason: str | None) -> int:
        return await self._write(writes.remove, ids, reason)

    async def _page(self, conditions: Conditions, offset: int, limit: int | None) -> RecordList:
        return await self._read(lambda db: reads.page(db, conditions, offset, limit))

    async def _count(self, conditions: Conditions) -> int:
        return await self._read(lambda db: reads.count(db, conditions))

    async def _history(self, memory_id: str) -> Versions:
        scope = self._scope
        return await self._read(lambda db: reads.history(db, scope, memory_id))

    async def _versions_page(self, after: Any, limit: int) -> tuple[Versions, Any]:
        read = functools.partial(reads.versions, scope=self._scope, after=after, limit=limit)
        return await self._read(read)

    async def snapshot(self, sink: export.SnapshotSink, *, batch: int = DEFAULT_PAGE) -> None:
        """Hand ``sink`` this scope's memories and history as one consistent state of the file.

        The whole read is one transaction, so the counts ``sink`` is given first are those of
        exactly the memories and versions that follow, whatever is written meanwhile; at most
        ``batch`` of them are held at a time (see :mod:`.export`). ``sink`` is called on the
        store's worker thread. Other processes go on reading and writing meanwhile.

        Raises:
            InvalidArgumentError: ``batch`` is not an integer of at least 1.
        """
        check_batch(batch)
        scope = self._scope
        await self._read(lambda db: export.snapshot(db, scope, batch, sink))

    async def existing_ids(self, memory_ids: Iterable[str]) -> set[str]:
        """Return which of ``memory_ids`` the file holds, in any scope, whatever this view.

        These are the ids :meth:`import_records` would skip as taken.

        Raises:
            InvalidArgumentError: ``memory_ids`` is a single string, or an id is not a string.
        """
        ids = list(dict.fromkeys(check_ids(memory_ids)))
        return await self._read(lambda db: export.existing_ids(db, ids)) if ids else set()

    # --- plumbing -----------------------------------------------------------------------------

    async def _prepare(self, texts: Texts) -> PreparedVectors | None:
        """Return the vectors of ``texts`` for a write, made in the worker (none: no embedder).

        Raises:
            InvalidArgumentError: the file holds vectors of a model of another id; the model
                is not run, so a large import into such a file is refused at once, not after
                its first batch was embedded (the write checks again, dimension included,
                for a change meanwhile).
        """
        if self._vectors is None:
            return None
        embedding = self._vectors.embedding
        database = self._db

        def prepare() -> PreparedVectors:
            # Only the id is compared first: reading the dimension may cost a request (an
            # embedder learns it from its first answer), which embedding makes unneeded.
            held = database.run(_held_model)
            if held is not None and held.model_id != embedding.embedder.model_id:
                raise vector_sql.mismatch(embedding.path, held, embedding.model)
            return embedding.prepare(texts)

        return await self._offload(prepare)

    async def _offload(self, function: Callable[..., T], *args: Any) -> T:
        self._check_open()
        return await self._worker.run(function, *args)

    async def _read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        return await self._offload(self._db.run, query)

    async def _write(self, transaction: Callable[..., T], *args: Any) -> T:
        """Run one of :mod:`.writes`' or :mod:`.imports`' transactions on this view's scope."""
        return await self._offload(transaction, self._db, self._scope, self._fsync, *args)


def _held_model(db: sqlite3.Connection) -> vector_sql.VectorModel | None:
    """Return the model of the file's vectors, ``None`` while it holds none."""
    model = vector_sql.recorded(db).model
    return model if model is not None and vector_sql.has_vectors(db) else None


def _file_path(path: object) -> str:
    """Return the absolute path of a database file given as text or a path object.

    Raises:
        InvalidArgumentError: ``path`` is empty (which would name the current directory),
            bytes, or not a path at all.
    """
    text = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(text, str) or not text:
        raise InvalidArgumentError(
            f"path must be a non-empty str or os.PathLike naming the database file, got {path!r}"
        )
    return os.path.abspath(os.path.expanduser(text))


def _nothing(db: sqlite3.Connection) -> None:
    """A transaction that only opens the database (creating or migrating its tables)."""
