"""``PostgresStore``: memories in PostgreSQL, for agents on many machines."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from psycopg import sql

from agentrecall._internal.checks import check_ids, check_items
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.postgres import (
    AsyncPostgresPool,
    ConnectionOptions,
    ServerAddress,
    parse_dsn,
)
from agentrecall._internal.postgres_schema import keyable
from agentrecall._internal.together import both
from agentrecall.embeddings.adapters import store_embedder
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import InvalidArgumentError, StorageError
from agentrecall.retrieval.bm25 import LONG_TEXT, query_terms
from agentrecall.stores import front
from agentrecall.stores.base import DEFAULT_PAGE, Capability
from agentrecall.stores.coverage import VectorCoverage
from agentrecall.stores.hybrid import Hit, entries, keyword_hit, merged, pool_size, rank
from agentrecall.stores.modes import SearchSettings
from agentrecall.stores.postgres import (
    export,
    imports,
    longterms,
    moments,
    reads,
    reindex,
    search,
    supersede,
    vectors,
    writes,
)
from agentrecall.stores.postgres.coverage import coverage
from agentrecall.stores.postgres.neighbours import with_neighbours
from agentrecall.stores.postgres.replica import Replica
from agentrecall.stores.postgres.rows import check_key_size, check_storable
from agentrecall.stores.postgres.schema import (
    check_version,
    lock_schema,
    migrate,
    stored_version,
)
from agentrecall.stores.postgres.tables import Connection, Tables, check_schema
from agentrecall.stores.postgres.vectors import Vectors
from agentrecall.stores.records import hits
from agentrecall.stores.scopes import Scope
from agentrecall.types import AddResult, MemoryRecord

if TYPE_CHECKING:
    from agentrecall.stores.sqlite.export import SnapshotSink

T = TypeVar("T")

RETRIES = 5
"""Attempts of a transaction that the server aborted for a deadlock or a serialization failure
(concurrent batches holding one another's contents); each attempt is the whole transaction."""

_RETRYABLE = frozenset({"40P01", "40001"})


class _Shared:
    """What a store and its scope views share: the pools, their tables, known scope numbers.

    The tables are known once set up; scope numbers as :func:`.writes.scope_number` learns them.
    """

    def __init__(self, pool: AsyncPostgresPool, replica: Replica | None) -> None:
        self.pool = pool
        self.replica = replica
        self.tables: Tables | None = None
        self.lock: asyncio.Lock | None = None
        self.scopes: dict[Scope, int] = {}


class PostgresStore(front.StoreFront):
    """Memories in a PostgreSQL database: the same contract as ``SQLiteStore``, many machines.

    Every agent that reaches the server shares the memories; several stores (``name``) live
    side by side in one schema without touching each other's memories, and several schemas
    in one database. It satisfies the store contract (a Strands or agentrecall
    ``MemoryManager`` takes it unchanged) and declares the same capabilities as
    :class:`~agentrecall.SQLiteStore`: ``get``, ``update``, ``delete``, ``list``, ``count``,
    ``clear``, ``add_many``, scoped views, filters, expiry, history and imports.

    Guarantees:

    * Construction does no I/O. :meth:`setup` (also run by the first call of a writable store)
      creates or migrates the tables: append-only migrations recorded in
      ``<schema>.migrations``, applied under an advisory lock, so many processes starting at
      once never collide. A read-only store never writes: before its tables exist it reads as
      empty.
    * Every operation is one transaction; an acknowledged write is committed (as durable as
      the server's ``synchronous_commit`` makes it). A batch that fails stores nothing.
    * Dedup is enforced by the database: a unique key on the scope and the 128-bit digest of
      the stripped content, written with ``ON CONFLICT DO NOTHING``, so concurrent adds of
      one content to one scope, from any number of machines, store it once and all return
      its id. A transaction the server aborts for a deadlock between concurrent batches is
      run again, up to :data:`RETRIES` times.
    * Recall: BM25 (k1 0.9, b 0.25) over the same terms as ``SQLiteStore`` (stemmed,
      diacritics folded, CJK characters and pairs): a GIN index over a ``tsvector`` of the
      terms picks candidates by the shared term plan and the shared BM25 rerank orders
      them; ties go to the newer memory; ``_relevanceScore`` is the BM25 score. Term
      statistics are the store's (every scope), kept exact by triggers.
    * With an embedder, search by meaning: vectors are stored with every write (as ``real[]``,
      which needs no extension), and semantic search walks pgvector's HNSW index (cosine) of
      the store; hybrid search fuses both rankings as ``SQLiteStore`` does. On a server
      without pgvector, keyword search works and semantic search raises a
      :class:`~agentrecall.errors.StorageError` naming the extension.
    * Conversation mode (``neighbours``) gives the results of ``SQLiteStore`` on the same
      memories: the turns around each hit, in insertion order and of the same session, are
      read in one statement per search and ranked by the shared
      :mod:`agentrecall.retrieval.neighbours`.
    * Filters, time bounds, scopes, expiry and history behave as in ``SQLiteStore``: the
      conformance suite of :mod:`agentrecall.testing` runs unchanged on both.
    * Facts that change (``Capability.SUPERSEDE``): :meth:`supersede` adds a memory and
      retires older ones in one transaction, locking their rows, so of concurrent supersedes
      of one memory exactly one retires it; retired memories stay (in search with
      ``include_superseded``, in ``history``, exports and copies); ``as_of`` reads the store
      as it was, its cost growing with the versions changed since, not with the store (see
      :mod:`.moments`); default reads skip retired memories by a test of each row they read
      anyway.
    * With ``read_dsn``, searches and plain reads (``search``, ``get``, ``list``, ``count``,
      ``history``, ``versions``) go to a read replica, everything else to the primary
      (``dsn``): writes, setup and migrations, ``reindex``, ``snapshot`` and the id checks of
      imports. A store always sees its own writes: a read the replica has not caught up with
      (by WAL position, see :mod:`.replica`) runs on the primary. Writes of other clients
      appear once the replica has replayed them; :meth:`on_primary` gives a view that reads
      the primary only.
    * A server that cannot be reached raises
      :class:`~agentrecall.errors.ServerUnavailableError` (retryable) naming the host and the
      database, after at most ``connect_timeout`` seconds; the pool checks a connection
      before lending it, so once the server is back the next call succeeds.

    Limits: content, metadata, scope ids, reasons and imported ids cannot hold U+0000
    (PostgreSQL text cannot; refused as bad arguments); an integer in
    metadata beyond 64 bits compares exactly in filters (SQLite compares it as a float). See
    ``docs/postgres.md``.
    """

    capabilities: frozenset[Capability] = frozenset(Capability) - {Capability.SEMANTIC}
    """What every ``PostgresStore`` supports."""

    def __init__(
        self,
        dsn: str,
        *,
        name: str = "memory",
        schema: str = "agentrecall",
        description: str | None = None,
        max_search_results: int | None = None,
        writable: bool = True,
        extraction: Any = None,
        ttl: float | timedelta | None = None,
        embedder: Embedder | None = None,
        search_mode: str | None = None,
        neighbours: bool = False,
        session_key: str = "session",
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        read_dsn: str | None = None,
    ) -> None:
        """Configure the store; nothing is connected or created until the first call.

        Args:
            dsn: the PostgreSQL connection string, a URL (``postgresql://user@host/db``) or
                ``key=value`` pairs; TLS and other libpq settings go there (``sslmode=...``).
            name: the store's name: its memories are apart from every other name's.
            schema: the PostgreSQL schema holding the tables, created by :meth:`setup`.
            description: what the store holds, shown to a model next to its name.
            max_search_results: hits per search when the caller gives no limit (default 10).
            writable: whether writes are allowed; a read-only store never writes.
            extraction: fact-extraction setting, kept as given for a memory manager.
            ttl: default lifetime of new memories (seconds or ``timedelta``); ``None`` keeps
                them until deleted.
            embedder: an :class:`~agentrecall.embeddings.Embedder`, to recall by meaning too:
                every memory written through this store gets its vector, and searches may be
                ``"semantic"`` or ``"hybrid"`` (which need pgvector on the server). Needs
                ``numpy`` (the ``embeddings`` extra).
            search_mode: the mode of a search whose options name none: ``"keyword"``,
                ``"semantic"`` or ``"hybrid"``; default ``"hybrid"`` with an embedder.
            neighbours: conversation mode by default, for stores whose memories are the
                consecutive turns of dialogues: a memory's neighbours in its session help its
                score, and the best hits' neighbours fill the rest of the results (as in
                ``SQLiteStore``; a search's options may turn it on or off).
            session_key: the metadata key naming a memory's session in conversation mode.
            pool_size: the most connections the store (and its views) opens at once, to the
                primary, and as many again to the replica with ``read_dsn``.
            connect_timeout: seconds to wait for the server (or the replica) before raising:
                whole seconds, at least 2 (libpq's floor), rounded up. A ``connect_timeout``
                in the DSN wins. It bounds connecting, not a statement on a connection
                already open: a server that stops answering mid-call without closing the
                connection (its process frozen, a network dropping packets) keeps the call
                waiting for TCP, which libpq's ``tcp_user_timeout`` (in the DSN) bounds for
                unacknowledged packets, or indefinitely while the server's host still
                acknowledges them.
            read_dsn: the connection string of a read replica (a streaming standby of the
                primary, or a pooler or load balancer in front of several) to send searches
                and plain reads to; ``None`` reads from the primary. A replica that cannot
                be reached fails those reads with ``ServerUnavailableError`` naming it; a
                libpq host list with ``target_session_attrs=prefer-standby`` falls back to
                another host instead.

        Raises:
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
        """
        self._configure(name, description, max_search_results, writable, extraction, ttl)
        self._address = parse_dsn(dsn)
        self._schema = check_schema(schema)
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise InvalidArgumentError(
                f"pool_size must be an integer of at least 1, got {pool_size!r}"
            )
        options = ConnectionOptions(connect_timeout=connect_timeout)
        pool = AsyncPostgresPool(
            dsn, what=f"memory store '{name}'", min_size=1, max_size=pool_size, options=options
        )
        replica = None
        if read_dsn is not None:
            parse_dsn(read_dsn, "read_dsn")
            replica = Replica(
                AsyncPostgresPool(
                    read_dsn,
                    what=f"memory store '{name}' (read replica)",
                    min_size=1,
                    max_size=pool_size,
                    options=options,
                )
            )
        self._shared = _Shared(pool, replica)
        self._primary_reads = replica is None
        self._vectors: Vectors | None = None
        if embedder is not None:
            checked = store_embedder(embedder, "a PostgresStore with an embedder")
            self._vectors = Vectors(checked, checked.model_id)
            self.capabilities = type(self).capabilities | {Capability.SEMANTIC}
        self._search_settings = SearchSettings.configure(
            self._vectors, search_mode, neighbours, session_key, "PostgresStore"
        )

    @property
    def address(self) -> ServerAddress:
        """Where the store's database is (host, port, database, user), never the password."""
        return self._address

    @property
    def read_address(self) -> ServerAddress | None:
        """Where the read replica is (``None``: the store reads from the primary)."""
        replica = self._shared.replica
        return None if replica is None else replica.pool.address

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding the store's tables."""
        return self._schema

    async def setup(self) -> None:
        """Create or migrate the tables and register this store's name now (idempotent).

        Safe to run from many processes at once (an advisory lock serialises migrations). A
        read-only store creates nothing: it connects and checks the schema's version, as
        ``SQLiteStore`` opens its file, so a memory manager may ``initialize()`` it.

        Raises:
            ServerUnavailableError: the server cannot be reached (retryable).
            StorageError: any other failure, naming the database (also a schema this
                agentrecall cannot read).
        """
        await self._ready()

    def scope(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        name: str | None = None,
    ) -> PostgresStore:
        """Return a view of one user, agent or session, as :meth:`front.StoreFront.scope` does.

        Raises:
            InvalidArgumentError: an id is not a non-blank string, or holds U+0000, which
                PostgreSQL text cannot store, or the ids pass 2,600 bytes together
                (:data:`~agentrecall._internal.postgres_schema.MAX_KEY_BYTES`).
        """
        view = super().scope(user_id=user_id, agent_id=agent_id, session_id=session_id, name=name)
        ids = view._scope.columns()
        for argument, value in ids.items():
            check_storable(value, argument)
        check_key_size(list(ids.values()), "user_id, agent_id and session_id together")
        return view

    def on_primary(self) -> PostgresStore:
        """Return a view of this store whose reads all go to the primary, never the replica.

        For reads that must see what other clients have just written (a write on another
        machine, then a message to this one); the view shares this store's scope, settings
        and connections, and so do its own scope views. Without ``read_dsn`` it is a plain
        copy.
        """
        view = copy.copy(self)
        view._primary_reads = True
        return view

    async def aclose(self) -> None:
        """Close the store's connections, shared with its scope views, and end the store.

        Closing twice is harmless; any other later call, of this store or of its views,
        raises :class:`~agentrecall.errors.StoreClosedError`.
        """
        self._lifetime.end()
        await self._shared.pool.close()
        if self._shared.replica is not None:
            await self._shared.replica.pool.close()

    async def snapshot(self, sink: SnapshotSink, *, batch: int = DEFAULT_PAGE) -> None:
        """Hand ``sink`` this scope's memories and history as one consistent state of the store.

        The whole read is one ``REPEATABLE READ`` read-only transaction, so the counts
        ``sink`` is given first are those of exactly the memories and versions that follow,
        whatever other clients write meanwhile; rows come from a server-side cursor, at most
        ``batch`` at a time (see :mod:`.export`). ``sink`` is called in a worker thread. A
        store whose tables do not exist yet hands on counts of zero. With ``read_dsn`` it
        still reads the primary, so a copy holds every acknowledged write.

        Raises:
            InvalidArgumentError: ``batch`` is not an integer of at least 1.
            ServerUnavailableError: the server cannot be reached (retryable).
            StorageError: any other failure, naming the database.
        """
        front.check_batch(batch)
        tables = await self._ready()
        if tables is None:
            await asyncio.to_thread(sink.counts, 0, 0)
            return
        # Not retried as other transactions are: the sink may have written by then.
        async with self._shared.pool.connection() as connection:
            async with connection.transaction():
                await export.snapshot(connection, tables, self._scope, batch, sink)

    async def existing_ids(self, memory_ids: Iterable[str]) -> set[str]:
        """Return which of ``memory_ids`` the store holds, in any scope, whatever this view.

        These are the ids :meth:`import_records` would skip as taken.

        Raises:
            InvalidArgumentError: ``memory_ids`` is a single string, or an id is not a string.
        """
        ids = [i for i in dict.fromkeys(check_ids(memory_ids)) if keyable(i)]
        if not ids:
            return set()
        # On the primary: an import must not take an id the replica has not seen yet.
        read = functools.partial(export.existing_ids, ids=ids)
        return await self._read(read, set(), primary=True)

    async def vector_coverage(self) -> VectorCoverage:
        """Return how many of this view's memories have a vector, and the store's model.

        Semantic search finds only those; :meth:`reindex` computes the rest. Needs no
        embedder, and reads the primary as any read does (or the replica, see ``read_dsn``).
        A store whose tables do not exist yet holds none.
        """
        read = functools.partial(coverage, scope=self._scope)
        return await self._read(read, VectorCoverage(0, 0))

    async def reindex(
        self, *, progress: Callable[[int, int], None] | None = None, batch: int = reindex.BATCH
    ) -> int:
        """Compute the vectors the store lacks with this store's embedder; return how many.

        Covers the whole store (its name), whatever the view: memories written without an
        embedder (such as those of ``agentrecall migrate``) get their vector, and if the
        store's vectors were made by another model (or dimension), they are all deleted first
        and rebuilt with this one, which the store then records. Runs a batch at a time, each
        its own transaction, the model out of any transaction: an interrupted reindex keeps
        what it did, and running it again does the rest. Meanwhile semantic search finds the
        memories already done. With many vectors to store (at least
        :data:`.reindex.DEFER_AT`, and half as many as the store holds), the store's HNSW index
        is dropped first and built once at the end, concurrently (other clients keep reading
        and writing; searches meanwhile scan the store's vectors, exact and slower); every
        reindex ends by building the index if it is missing, so the next one after an
        interruption finishes it.

        Args:
            progress: called as ``progress(done, total)`` with ``done == 0`` first and after
                each batch; ``total`` is how many memories lacked a vector at the start.
            batch: memories per batch (per embedder call and per transaction).

        Raises:
            InvalidArgumentError: the store is read-only or has no embedder, ``batch`` is not
                an integer of at least 1, or another process switched the store to another
                model meanwhile.
            ServerUnavailableError: the server cannot be reached (retryable).
        """
        self._check_writable()
        model = self._search_settings.require_vectors("reindex", f"store '{self.name}'")
        front.check_batch(batch)
        tables = await self._ready()
        assert tables is not None, "a writable store's tables exist once it is ready"
        start = functools.partial(reindex.start, schema=self._schema, model=model)
        plan = await self._transaction(start, tables)
        index = functools.partial(vectors.build_index, dimension=model.dimension)
        if plan.defer:
            await self._outside(functools.partial(vectors.drop_index, dimension=model.dimension))
        if progress is not None:
            progress(0, plan.total)

        async def read(after: int) -> reindex.Rows:
            pending = functools.partial(reindex.pending, after=after, limit=batch)
            return await self._transaction(pending, tables)

        async def write(rows: reindex.Rows, found: dict[str, str]) -> int:
            store = functools.partial(reindex.store, model=model, rows=rows, found=found)
            return await self._transaction(store, tables)

        added = await reindex.fill(read, write, model, progress, plan.total)
        await self._outside(index)
        return added

    # --- the hooks of StoreFront ----------------------------------------------------------

    async def _add(
        self,
        items: front.Items,
        expires_at: str | None,
        checked: bool,
        validity: front.Validity = front.UNSAID,
    ) -> front.AddResults:
        found = None
        if self._vectors is not None:
            # Checked before the model runs, then embedded outside the transaction.
            if not checked:
                check_items(items)
            checked, found = True, await self._prepare([content for content, _ in items])
        new = writes.NewMemories(items, utc_timestamp(), expires_at, checked, validity)
        long = await self._counted([content for content, _ in items])
        if len(items) == 1 and found is None and not long and validity == front.UNSAID:
            return [await self._add_alone(new)]
        known = self._shared.scopes
        # COPY, which larger batches use, cannot run in pipeline mode.
        pipelined = len(items) <= writes.COPY_AFTER
        write = functools.partial(
            self._write,
            writes.add,
            self._scope,
            new,
            found,
            known,
            model=found is not None,
            pipelined=pipelined,
            long=long,
        )
        return await self._indexed_after(len(items) if found else 0, write)

    async def _supersede(self, call: front.Supersession) -> AddResult:
        check_storable(call.reason, "reason")
        items = [(call.content, call.metadata)]
        found = await self._prepare([call.content])
        # The time of the call: the new memory's created_at and the old ones' retirement.
        new = writes.NewMemories(items, utc_timestamp(), call.expires_at, True, call.validity)
        return await self._write(
            supersede.supersede,
            self._scope,
            new,
            call,
            found,
            self._shared.scopes,
            model=found is not None,
            long=await self._counted([call.content]),
        )

    async def _add_alone(self, new: writes.NewMemories) -> AddResult:
        """Add one memory without a vector in one statement (:func:`.writes.add_alone`)."""
        (row,) = new.rows(0, 1).rows  # first: a bad item is refused before any I/O
        tables = await self._ready()
        assert tables is not None, "a writable store's tables exist once it is ready"
        number = self._shared.scopes.get(self._scope)
        if number is None:
            lookup = functools.partial(
                writes.scope_number, scope=self._scope, known=self._shared.scopes
            )
            number = await self._transaction(lookup, tables)
        add = functools.partial(writes.add_alone, scope=number, row=row, now=new.now)
        while True:
            # Each run either stores the row or reads its holder (and extends its expiry),
            # unless a concurrent write got in the way: the next run's snapshot shows it.
            memory_id = await self._transaction(add, tables, alone=True)
            if memory_id is not None:
                return AddResult(id=memory_id, created=memory_id == row[0])

    async def _add_many(self, batch: front.Items, expires_at: str | None) -> front.AddResults:
        # Each chunk is checked as it is built, in a thread; a bad item still stores nothing
        # (one transaction).
        return await self._add(batch, expires_at, False)

    async def _import_records(self, records: front.RecordList) -> int:
        # Texts that cannot be memories are left to the import's checks, which refuse them.
        texts = [r.content for r in records if isinstance(getattr(r, "content", None), str)]
        found = await self._prepare(texts)
        write = functools.partial(
            self._write,
            imports.import_records,
            self._scope,
            records,
            found,
            model=found is not None,
            long=await self._counted(texts),
        )
        return await self._indexed_after(len(records) if found else 0, write)

    async def _import_versions(self, versions: front.Versions) -> int:
        return await self._write(imports.import_versions, self._scope, versions)

    async def _search(self, call: front.SearchCall) -> front.Entries:
        terms = query_terms(call.query)
        if call.mode == "keyword" and not terms or not call.query.strip():
            return []
        conditions, mode, limit = call.conditions, call.mode, call.limit
        conversation = call.neighbours
        now = utc_timestamp()
        if mode == "keyword" and not conversation:

            async def ranked(connection: Connection, tables: Tables) -> front.Entries:
                return hits(await _keyword(connection, tables, terms, limit, conditions, now))

            return await self._read(ranked, [])
        pool = pool_size(mode, conversation, limit)
        # The two rankings are read at once, each on a connection of its own: their statements
        # then run side by side on the server, and the query is embedded meanwhile.
        keyword, semantic = await both(
            self._keyword_hits(terms, conditions, now, pool) if mode != "semantic" else _none(),
            self._semantic_hits(call.query, conditions, now, pool)
            if mode != "keyword"
            else _none(),
        )
        ranking = rank(mode, conversation, keyword, semantic)
        found = merged(keyword, semantic)
        if conversation:
            session_key = self._search_settings.session_key

            async def around(connection: Connection, tables: Tables) -> list[tuple[str, float]]:
                where = tables.where(conditions, now)
                marked = conditions.include_superseded
                return await with_neighbours(
                    connection, tables, ranking, found, where, session_key, limit, marked
                )

            ranking = await self._read(around, [])
            if conditions.include_superseded:
                found = {key: moments.marked_hit(hit, conditions) for key, hit in found.items()}
        return entries(found, ranking[:limit], mode)

    async def _keyword_hits(
        self, terms: dict[str, str], conditions: front.Conditions, now: str, wanted: int
    ) -> list[Hit]:
        """Return the ``wanted`` best memories for ``terms`` by BM25, none without terms."""
        if not terms:
            return []

        async def read(connection: Connection, tables: Tables) -> list[Hit]:
            found = await _keyword(connection, tables, terms, wanted, conditions, now)
            return [keyword_hit(entry) for entry in hits(found)]

        return await self._read(read, [])

    async def _semantic_hits(
        self, query: str, conditions: front.Conditions, now: str, wanted: int
    ) -> list[Hit]:
        """Return the ``wanted`` memories closest to ``query``, none without an embedder."""
        if self._vectors is None:
            return []
        model = self._vectors
        vector = await model.query(query)
        if vector is None:
            return []

        async def read(connection: Connection, tables: Tables) -> list[Hit]:
            where, params = tables.where(conditions, now)
            narrowed = (
                conditions.filtered
                or conditions.scope != Scope()
                or conditions.as_of is not None
                or conditions.valid_at is not None
            )
            marked = conditions.include_superseded
            found = await vectors.nearest(
                connection, tables, model, vector, where, params, wanted, narrowed, marked
            )
            kept = await moments.versions_held(connection, tables, conditions)
            return [*found, *await model.nearest_of(vector, kept, wanted)]

        try:
            found: list[Hit] = await self._read(read, [])
        except vectors.SemanticUnavailableError as error:
            # As every other failure of the store does, it names the store and the database.
            raise vectors.SemanticUnavailableError(
                f"memory store '{self._root_name}' ({self._address}): {error}"
            ) from None
        if conditions.include_superseded:
            found = [moments.marked_hit(hit, conditions) for hit in found]
        return sorted(found, key=lambda hit: -(hit.semantic or 0.0))[:wanted]

    async def _get(self, memory_id: str, conditions: front.Conditions) -> MemoryRecord | None:
        if not keyable(memory_id):
            return None

        async def read(connection: Connection, tables: Tables) -> MemoryRecord | None:
            return await reads.get(connection, tables, memory_id, conditions, utc_timestamp())

        return await self._read(read, None)

    async def _update(self, memory_id: str, change: front.Change) -> MemoryRecord | None:
        check_storable(change.reason, "reason")
        if not keyable(memory_id):
            return None
        found = None if change.content is None else await self._prepare([change.content])
        write = writes.update
        long = await self._counted([change.content])
        return await self._write(
            write, self._scope, memory_id, change, found, model=found is not None, long=long
        )

    async def _remove(self, ids: front.Ids | None, reason: str | None) -> int:
        check_storable(reason, "reason")
        if ids is not None:
            ids = [memory_id for memory_id in ids if keyable(memory_id)]
            if not ids:
                return 0
        return await self._write(writes.remove, self._scope, ids, reason)

    async def _page(
        self, conditions: front.Conditions, offset: int, limit: int | None
    ) -> front.RecordList:
        async def read(connection: Connection, tables: Tables) -> front.RecordList:
            return await reads.page(connection, tables, conditions, utc_timestamp(), offset, limit)

        return await self._read(read, [])

    async def _count(self, conditions: front.Conditions) -> int:
        async def read(connection: Connection, tables: Tables) -> int:
            return await reads.count(connection, tables, conditions, utc_timestamp())

        return await self._read(read, 0)

    async def _history(self, memory_id: str) -> front.Versions:
        if not keyable(memory_id):
            return []
        read = functools.partial(reads.history, scope=self._scope, memory_id=memory_id)
        return await self._read(read, [])

    async def _versions_page(self, after: Any, limit: int) -> tuple[front.Versions, Any]:
        read = functools.partial(reads.versions, scope=self._scope, after=after, limit=limit)
        return await self._read(read, ([], None))

    # --- plumbing -----------------------------------------------------------------------------

    async def _prepare(self, texts: list[str]) -> dict[str, str] | None:
        """Return the vectors of ``texts`` for a write (none: no embedder), made off the loop."""
        return None if self._vectors is None else await self._vectors.prepare(texts)

    async def _ready(self) -> Tables | None:
        """Return the store's tables, migrating them first if writable (``None``: none yet)."""
        self._check_open()
        shared = self._shared
        if shared.tables is not None and (self._vectors is None or self._vectors.learned):
            return shared.tables
        if shared.lock is None:
            shared.lock = asyncio.Lock()
        async with shared.lock:
            if self._vectors is not None:
                await self._vectors.learn()
            if shared.tables is None:
                async with shared.pool.connection() as connection:
                    number = await self._register(connection)
                    if self.writable and shared.replica is not None:
                        await shared.replica.record(connection)
                if number is not None:
                    shared.tables = Tables.of(self._schema, number)
        return shared.tables

    async def _register(self, connection: Connection) -> int | None:
        """Migrate and add the store's row (writable), or look the row up (read-only)."""
        what = f"memory store '{self._root_name}' ({self._address})"
        if self.writable:
            await migrate(connection, self._schema, what)
        else:
            version = await stored_version(connection, self._schema)
            if version is None:
                return None
            check_version(version, self._schema, what, writable=False)
        schema = sql.Identifier(self._schema)
        async with connection.transaction():
            if self.writable:
                await lock_schema(connection, self._schema)
                await connection.execute(
                    sql.SQL(
                        "INSERT INTO {}.stores (name) VALUES (%s) ON CONFLICT (name) DO NOTHING"
                    ).format(schema),
                    [self._root_name],
                )
            cursor = await connection.execute(
                sql.SQL("SELECT store FROM {}.stores WHERE name = %s").format(schema),
                [self._root_name],
            )
            found = await cursor.fetchone()
            if found is None:
                return None
            if self.writable and self._vectors is not None:
                await vectors.enable(connection, Tables.of(self._schema, found[0]), self._vectors)
            return int(found[0])

    async def _read(
        self,
        work: Callable[[Connection, Tables], Awaitable[T]],
        empty: T,
        *,
        primary: bool = False,
    ) -> T:
        """Run a read in one transaction; ``empty`` is its answer while no tables exist.

        With a replica, and unless ``primary``, the read runs there if it has replayed this
        store's writes, else on the primary.
        """
        tables = await self._ready()
        if tables is None:
            return empty
        replica = self._shared.replica
        if replica is not None and not (primary or self._primary_reads):
            answer = await self._on_replica(work, tables, replica)
            if answer:
                return answer[0]
        return await self._transaction(work, tables, read=True)

    async def _write(
        self,
        work: Callable[..., Awaitable[T]],
        *args: Any,
        model: bool = False,
        pipelined: bool = False,
        long: longterms.Counted | None = None,
    ) -> T:
        """Run one of :mod:`.writes`' or :mod:`.imports`' transactions.

        With ``model`` (the write stores vectors), the store's vectors must be this embedder's
        model, checked in the transaction, which a reindex switching model then waits for.
        ``pipelined``: see :meth:`_transaction`. ``long``: the term counts of the long
        contents the write may store (:meth:`_counted`), kept in the same transaction.
        """
        tables = await self._ready()
        assert tables is not None, "a writable store's tables exist once it is ready"

        async def run(connection: Connection, tables: Tables) -> T:
            if model and self._vectors is not None:
                await vectors.check_model(connection, tables, self._vectors, " FOR SHARE")
            done = await work(connection, tables, *args)
            if long:
                await longterms.write(connection, tables.schema, long)
            return done

        return await self._transaction(run, tables, pipelined=pipelined)

    async def _counted(self, contents: Sequence[object]) -> longterms.Counted:
        """Return the term counts of the long ones of ``contents``, counted in a thread."""
        if not any(isinstance(c, str) and len(c) > LONG_TEXT for c in contents):
            return {}
        return await asyncio.to_thread(longterms.counted, contents)

    async def _indexed_after(self, count: int, write: Callable[[], Awaitable[T]]) -> T:
        """Run ``write``, which stores ``count`` vectors; a large one builds the index after.

        When :func:`.reindex.defers` says rebuilding is cheaper than keeping the store's HNSW
        index up to date for ``count`` vectors (the store's memory count standing for its
        vectors), the index is dropped first and built once after the write (see
        :func:`.vectors.build_index`): meanwhile searches scan the store's vectors, exact and
        slower, and other stores' indexes are untouched. A write that fails still rebuilds
        the index, quietly; a failed rebuild after a committed write raises (repeating the
        write is harmless: its memories are held). A call cancelled or interrupted meanwhile
        leaves the index to the next :meth:`reindex` or large write.
        """
        model = self._vectors
        if model is None or count < reindex.DEFER_AT:
            return await write()
        tables = await self._ready()
        assert tables is not None, "a writable store's tables exist once it is ready"
        held = await self._transaction(functools.partial(vectors.held, model=model), tables)
        if not reindex.defers(count, held):
            return await write()
        drop = functools.partial(vectors.drop_index, dimension=model.dimension)
        if not await self._outside(drop):
            return await write()  # another client is building the index, which covers these
        build = functools.partial(vectors.build_index, dimension=model.dimension)
        try:
            result = await write()
        except Exception:
            with contextlib.suppress(StorageError):
                await self._outside(build)
            raise
        await self._outside(build)
        return result

    async def _outside(self, work: Callable[[Connection, Tables], Awaitable[T]]) -> T:
        """Run ``work`` outside any transaction (autocommit), as ``CONCURRENTLY`` DDL must be."""
        self._check_open()
        tables = self._shared.tables
        assert tables is not None, "the store is ready before it builds an index"
        async with self._shared.pool.connection() as connection:
            return await work(connection, tables)

    async def _transaction(
        self,
        work: Callable[[Connection, Tables], Awaitable[T]],
        tables: Tables,
        *,
        read: bool = False,
        pipelined: bool = False,
        alone: bool = False,
    ) -> T:
        """Run ``work`` in one transaction on the primary; after a write, note its position.

        It runs again after a deadlock (up to :data:`RETRIES` times). ``pipelined`` runs it in
        pipeline mode: statements are sent without waiting for the results of those before,
        until ``work`` reads one (so ``work`` must not use ``COPY``); the transaction's start
        then travels with its first statements. ``alone``: ``work`` is one statement, run in
        autocommit mode as its own transaction.
        """
        self._check_open()
        replica = None if read else self._shared.replica

        async def attempt() -> T:
            async with self._shared.pool.connection() as connection:
                if alone:
                    found = await work(connection, tables)
                else:
                    pipeline = connection.pipeline() if pipelined else contextlib.nullcontext()
                    async with pipeline, connection.transaction():
                        found = await work(connection, tables)
                if replica is not None:
                    await replica.record(connection)
                return found

        return await _retried(attempt)

    async def _on_replica(
        self, work: Callable[[Connection, Tables], Awaitable[T]], tables: Tables, replica: Replica
    ) -> list[T]:
        """Run the read ``work`` on the replica: ``[answer]``, or ``[]`` if it is behind."""

        async def attempt() -> list[T]:
            async with replica.pool.connection() as connection:
                async with connection.transaction():
                    if not await replica.serves(connection):
                        return []
                    return [await work(connection, tables)]

        return await _retried(attempt)


async def _keyword(
    connection: Connection,
    tables: Tables,
    terms: dict[str, str],
    limit: int,
    conditions: front.Conditions,
    now: str,
) -> search.Scored:
    """Return the best ``limit`` memories for ``terms`` meeting ``conditions``, by BM25.

    With ``as_of``, the live part is searched through the index and the history part's
    versions are ranked with it (:mod:`.moments`); retired hits are marked as
    ``include_superseded`` asks.
    """
    where, params = tables.where(conditions, now)
    kept = await moments.versions_held(connection, tables, conditions)
    superseded = conditions.include_superseded
    found = await search.keyword(
        connection, tables, terms, limit, where, params, marked=superseded, versions=kept
    )
    if not superseded:
        return found
    rows = moments.marked([row for _, row in found], conditions)
    return [(score, row) for (score, _), row in zip(found, rows, strict=True)]


async def _none() -> list[Hit]:
    """The hits of a ranking the search's mode leaves out."""
    return []


async def _retried(attempt: Callable[[], Awaitable[T]]) -> T:
    """Return what ``attempt`` returns, run up to :data:`RETRIES` times.

    It runs again after a deadlock or a serialization failure, which on a replica is also a
    query cancelled by a conflict with the replay of the primary's writes.
    """
    for number in range(RETRIES):
        try:
            return await attempt()
        except StorageError as error:
            state = getattr(error.__cause__, "sqlstate", None)
            if state not in _RETRYABLE or number == RETRIES - 1:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")
