"""``SQLiteStore``: memories in one SQLite file, for millions of memories and many processes."""

from __future__ import annotations

import copy
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, TypeVar

from agentrecall._internal.checks import check_item, check_items, check_limit, seconds
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.ids import new_time_ordered_ids
from agentrecall._internal.jsonencode import compact_encoder
from agentrecall._internal.jsonvalue import check_json_object
from agentrecall._internal.paths import default_store_path
from agentrecall._internal.sqlite import Database
from agentrecall._internal.worker import Worker
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.filters import check_filter, to_sql
from agentrecall.stores.base import Capability
from agentrecall.stores.sqlite.dedup import KEY_CHUNK, find_equal, free_key, insert_new
from agentrecall.stores.sqlite.query import (
    STORED_TIME,
    Scope,
    content_hash,
    content_key,
    query_terms,
    timestamp,
)
from agentrecall.stores.sqlite.rows import RECORD_COLUMNS as _RECORD_COLUMNS
from agentrecall.stores.sqlite.rows import metadata as _metadata
from agentrecall.stores.sqlite.rows import record as _record
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS
from agentrecall.stores.sqlite.search import ranked_search
from agentrecall.stores.sqlite.writes import (
    CHUNK,
    DEFERRED_ROWS,
    Row,
    index_unindexed,
    keep_versions,
    last_seq,
    purge_expired,
    scope_number,
)
from agentrecall.types import AddResult, JsonObject, MemoryEntry, MemoryRecord, MemoryVersion

T = TypeVar("T")

DEFAULT_MAX_SEARCH_RESULTS = 10

# Aliases for annotations inside SQLiteStore, whose own ``list`` method hides the builtin there.
RecordList = list[MemoryRecord]
Items = list[tuple[str, JsonObject | None]]
AddResults = list[AddResult]
Entries = list[MemoryEntry]
Versions = list[MemoryVersion]
Params = list[object]
Rows = list[Any]
Strings = list[str]
ImportRow = tuple[str | int | None, ...]
Records = list[MemoryRecord]
# Metadata was checked to be a finite, acyclic JSON object (see compact_encoder).
_encode = compact_encoder()


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
      or migrates the tables.
    * Dedup: content equal to a memory of the same scope once both are stripped of outer
      whitespace returns that memory's id.
    * Recall: BM25 over the memories' words (diacritics folded, so ``cafe`` finds ``café``;
      a run of CJK characters is one word; k1 1.2, b 0.75). Stop words are left out of
      queries. The index picks 100 candidates from a bounded number of postings, rare terms
      first (common terms add only their newest, within the scope and filter), and those are
      ranked by exact BM25, so questions stay fast at millions of memories; on a small store
      the ranking is exact BM25. Ties go to the newer memory. ``_relevanceScore`` is the BM25
      score, higher is better. Term statistics (document frequencies, average length) are the
      whole database's, in a scope view too.
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
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset(Capability)

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
    ) -> None:
        """Configure the store; nothing is read or created until the first call.

        Args:
            path: the database file; default ``$AGENTRECALL_HOME/memory/<name>.db``.
            name: the store's name, unique within a manager.
            description: what the store holds, shown to a model next to its name.
            max_search_results: hits per search when the caller gives no limit (default 10).
            writable: whether writes are allowed.
            extraction: fact-extraction setting, kept as given for a memory manager.
            ttl: default lifetime of new memories (seconds or ``timedelta``); ``None`` keeps
                them until deleted.
            busy_timeout: seconds to wait for another process's write before retrying.
            fsync: ``True`` (the default): a write is on the disk before it returns, and survives
                a power loss. ``False``: it is handed to the operating system before it
                returns, and survives a crash of the process but maybe not of the machine;
                a single add then takes about half the time (SQLite's ``synchronous=NORMAL``).

        Raises:
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
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
            busy_timeout=busy_timeout,
            functions={
                "agentrecall_content_hash": content_hash,
                "agentrecall_content_key": content_key,
            },
            tidy=index_unindexed,
        )
        self._scope = Scope()
        self._worker = Worker(f"agentrecall {self._path}")

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

    async def setup(self) -> None:
        """Create or migrate the tables now rather than on the first call (idempotent)."""
        await self._offload(self._db.run, lambda db: None)

    async def initialize(self) -> None:
        """Same as :meth:`setup`; the hook a memory manager calls before first use."""
        await self.setup()

    async def aclose(self) -> None:
        """Close the database connection (reopened on next use)."""
        await self._offload(self._db.close)

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
            ttl: lifetime of this memory, overriding the store's default.
            expires_at: when this memory expires (aware datetime or ISO 8601 string).
        """
        expiry = self._expiry(ttl, expires_at)
        self._check_writable()
        checked = check_items([(content, metadata)])
        return (await self._offload(self._add_blocking, checked, expiry, True))[0]

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
        batch = list(items)
        if not batch:
            return []
        # A batch larger than a chunk is checked in the worker, chunk by chunk, while SQLite
        # indexes the chunk before; a bad item still stores nothing (one transaction).
        checked = len(batch) <= CHUNK
        if checked:
            check_items(batch)
        return await self._offload(self._add_blocking, batch, expiry, checked)

    async def import_records(self, records: Iterable[MemoryRecord]) -> int:
        """Store copies of memories, keeping their ids and timestamps; return how many were new.

        One transaction: every record is checked first, so a bad record stores nothing. The
        records join this view's scope. A record is skipped, and not counted, when its id is
        already in the database (in any scope), when its stripped content equals a memory of
        this scope or an earlier record of the batch, or when it has already expired.
        ``updated_at`` and ``expires_at`` are kept when present.

        Raises:
            InvalidArgumentError: the store is not writable; or a record has blank content, a
                blank id, metadata that is not a JSON object, or a timestamp not in the stored
                shape ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (the message gives the record's index).
        """
        self._check_writable()
        batch = list(records)
        # As in add_many, records are checked and turned into rows in the worker, a chunk at a
        # time while SQLite indexes the chunk before; a bad record still stores nothing.
        return await self._offload(self._import_blocking, batch) if batch else 0

    async def search(
        self,
        query: str,
        options: Mapping[str, Any] | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
    ) -> Entries:
        """Return the memories that best match ``query`` by BM25, best first.

        Args:
            query: any text; one without searchable words finds nothing.
            options: ``{"max_search_results": n}`` caps the hits for this call.
            filter: metadata conditions (see :mod:`agentrecall.retrieval.filters`).
            created_after: only memories created at or after this time.
            created_before: only memories created before this time.
        """
        requested = None if options is None else options.get("max_search_results")
        check_limit(requested, "max_search_results")
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a string, got {type(query).__name__}")
        limit = requested or self.max_search_results or DEFAULT_MAX_SEARCH_RESULTS
        where, params = self._conditions(filter, created_after, created_before)
        terms = query_terms(query)
        if not terms:
            return []
        filtered = filter is not None or created_after is not None or created_before is not None
        return await self._offload(
            ranked_search,
            self._db,
            terms,
            limit,
            where,
            params,
            self._scope,
            filtered,
            self.writable,
        )

    async def get(self, memory_id: str) -> MemoryRecord | None:
        """Return the memory with ``memory_id`` in this scope, or ``None``."""
        where, params = self._conditions(None, None, None)
        rows = await self._read(
            f"SELECT {_RECORD_COLUMNS} FROM memories AS m WHERE m.id = ? AND {where}",
            [memory_id, *params],
        )
        return _record(rows[0]) if rows else None

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
            InvalidArgumentError: blank content, metadata that is not a JSON object, or
                content equal to another memory of the same scope.
        """
        self._check_writable()
        if content is not None and (not isinstance(content, str) or not content.strip()):
            raise InvalidArgumentError("content must be a non-blank string")
        if metadata is not None:
            check_json_object(metadata, "metadata")
        return await self._offload(self._update_blocking, memory_id, content, metadata, reason)

    async def delete(self, memory_id: str, *, reason: str | None = None) -> bool:
        """Forget one memory (its history keeps it); return whether it existed."""
        return await self.delete_many([memory_id], reason=reason) == 1

    async def delete_many(self, memory_ids: Iterable[str], *, reason: str | None = None) -> int:
        """Forget every memory of this scope whose id is given; return how many."""
        self._check_writable()
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return 0
        return await self._offload(self._remove_blocking, ids, "delete", reason)

    async def clear(self) -> int:
        """Forget every memory of this scope; return how many."""
        self._check_writable()
        return await self._offload(self._remove_blocking, None, "delete", "clear")

    async def list(
        self,
        *,
        offset: int = 0,
        limit: int | None = None,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
    ) -> RecordList:
        """Return memories oldest first, skipping ``offset`` and returning at most ``limit``."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidArgumentError(f"offset must be an integer of at least 0, got {offset!r}")
        check_limit(limit, "limit")
        where, params = self._conditions(filter, created_after, created_before)
        rows = await self._read(
            f"SELECT {_RECORD_COLUMNS} FROM memories AS m WHERE {where} "
            "ORDER BY m.seq LIMIT ? OFFSET ?",
            [*params, -1 if limit is None else limit, offset],
        )
        return [_record(row) for row in rows]

    async def count(
        self,
        *,
        filter: Mapping[str, Any] | None = None,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
    ) -> int:
        """Return how many memories this scope holds (that match, with a filter)."""
        where, params = self._conditions(filter, created_after, created_before)
        rows = await self._read(f"SELECT count(*) FROM memories AS m WHERE {where}", params)
        return int(rows[0][0])

    async def history(self, memory_id: str) -> Versions:
        """Return the versions that updates, deletion or expiry replaced, oldest first."""
        where, params = self._scope.where("h")
        rows = await self._read(
            "SELECT h.content, h.metadata, h.changed_at, h.change, h.reason "
            f"FROM memory_history AS h WHERE h.id = ? AND {where} ORDER BY h.seq",
            [memory_id, *params],
        )
        return [MemoryVersion(r[0], _metadata(r[1]), r[2], r[3], r[4]) for r in rows]

    # --- checks and plumbing ------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self.writable:
            raise InvalidArgumentError(
                f"store '{self.name}' is read-only; create it with writable=True to change it"
            )

    def _import_row(self, index: int, record: MemoryRecord) -> ImportRow:
        where = f"record {index}"
        if not isinstance(record, MemoryRecord):
            raise InvalidArgumentError(f"{where} must be a MemoryRecord, got {record!r}")
        if not isinstance(record.id, str) or not record.id.strip():
            raise InvalidArgumentError(f"{where}: id must be a non-blank string")
        if not isinstance(record.content, str) or not record.content.strip():
            raise InvalidArgumentError(f"{where} ({record.id}): content must be a non-blank string")
        if record.metadata is not None:
            check_json_object(record.metadata, f"{where} ({record.id}): metadata")
        for field in ("created_at", "updated_at", "expires_at"):
            value = getattr(record, field)
            if (value is not None or field == "created_at") and not (
                isinstance(value, str) and STORED_TIME.fullmatch(value)
            ):
                raise InvalidArgumentError(
                    f"{where} ({record.id}): {field} must look like 2025-01-31T09:30:00.000Z, "
                    f"got {value!r}"
                )
        metadata = record.metadata
        return (
            record.id,
            record.content,
            content_key(record.content),
            None if metadata is None else _encode(metadata),
            record.created_at,
            record.updated_at,
            record.expires_at,
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
        return timestamp(datetime.now(timezone.utc) + timedelta(seconds=lifetime), "ttl")

    def _conditions(
        self,
        filter: Mapping[str, Any] | None,
        created_after: datetime | str | None,
        created_before: datetime | str | None,
    ) -> tuple[str, Params]:
        """Return the WHERE conditions every read applies: scope, expiry, filter, time bounds."""
        where, params = self._scope.where("m")
        parts = [where, "(m.expires_at IS NULL OR m.expires_at > ?)"]
        values: Params = [*params, utc_timestamp()]
        if filter is not None:
            check_filter(filter)
            sql, filter_params = to_sql(filter, "m.metadata")
            parts.append(f"({sql})")
            values.extend(filter_params)
        after = timestamp(created_after, "created_after")
        if after is not None:
            parts.append("m.created_at >= ?")
            values.append(after)
        before = timestamp(created_before, "created_before")
        if before is not None:
            parts.append("m.created_at < ?")
            values.append(before)
        return " AND ".join(parts), values

    async def _offload(self, function: Callable[..., T], *args: Any) -> T:
        return await self._worker.run(function, *args)

    async def _read(self, sql: str, params: Params) -> Rows:
        return await self._offload(self._db.run, lambda db: db.execute(sql, params).fetchall())

    # --- blocking work, in worker threads -----------------------------------------------------

    def _add_blocking(self, items: Items, expires_at: str | None, checked: bool) -> AddResults:
        now = utc_timestamp()
        # The results if every row goes in, made with the rows: for a large batch in the helper
        # thread, while SQLite works, rather than after it (a microsecond a memory).
        results: AddResults = []

        def build(start: int, stop: int) -> list[Row]:
            part = items[start:stop]
            if not checked:
                for index, (content, metadata) in enumerate(part, start):
                    check_item(content, metadata, f" (item {index})")
            ids = new_time_ordered_ids(len(part))
            results.extend([AddResult(id=memory_id) for memory_id in ids])
            return [
                (
                    memory_id,
                    content,
                    content_key(content),
                    None if metadata is None else _encode(metadata),
                )
                for memory_id, (content, metadata) in zip(ids, part, strict=True)
            ]

        def write(db: sqlite3.Connection) -> AddResults:
            results.clear()  # a retry after a busy database builds the rows again
            purge_expired(db, now)
            scope = scope_number(db, self._scope)
            conflict = "ON CONFLICT (scope, content_hash) DO NOTHING"
            times = (now, None, expires_at)
            # An add's ids are new, so base 0 will do (see dedup.settle).
            ids = insert_new(db, scope, len(items), build, conflict, times, 0)[1]
            if ids is None:  # no duplicate, in the batch or before it
                return results
            return [AddResult(id=_fresh(memory_id)) for memory_id in ids]

        return self._write_and_index(write, len(items))

    def _import_blocking(self, records: Records) -> int:
        now = utc_timestamp()

        def build(start: int, stop: int) -> list[Row]:
            part = records[start:stop]
            rows = (self._import_row(index, record) for index, record in enumerate(part, start))
            return [row for row in rows if not isinstance(row[6], str) or row[6] > now]

        def write(db: sqlite3.Connection) -> int:
            purge_expired(db, now)
            scope = scope_number(db, self._scope)
            # No conflict target: a taken id and a duplicate content both skip the row.
            conflict = "ON CONFLICT DO NOTHING"
            return insert_new(db, scope, len(records), build, conflict, None, last_seq(db))[0]

        return self._write_and_index(write, len(records))

    def _write_and_index(self, write: Callable[[sqlite3.Connection], T], batch: int) -> T:
        """Run an insert of ``batch`` memories; ask for the index to catch up if it deferred."""
        result = self._db.run(write, write=True, durable=self._fsync)
        if batch <= DEFERRED_ROWS:
            self._db.tidy_soon()
        return result

    def _update_blocking(
        self,
        memory_id: str,
        content: str | None,
        metadata: JsonObject | None,
        reason: str | None,
    ) -> MemoryRecord | None:
        now = utc_timestamp()
        where, params = self._scope.where("m")

        def write(db: sqlite3.Connection) -> MemoryRecord | None:
            purge_expired(db, now)
            row = db.execute(
                f"SELECT m.seq, m.content, m.metadata, m.scope, m.content_hash "
                f"FROM memories AS m WHERE m.id = ? AND {where}",
                [memory_id, *params],
            ).fetchone()
            if row is None:
                return None
            seq, old_content, old_metadata, scope, key = row
            keep_versions(db, "m.seq = ?", [seq], now, "update", reason)
            new_content = old_content if content is None else content
            if content is not None:
                key = content_key(content)
                if find_equal(db, scope, content, key, other_than=seq) is not None:
                    raise InvalidArgumentError(
                        "another memory of this scope already has that content; update would "
                        "duplicate it"
                    )
                key = free_key(db, scope, content, key, other_than=seq)
            db.execute(
                "UPDATE memories SET content = ?, content_hash = ?, metadata = ?, "
                "updated_at = ? WHERE seq = ?",
                (
                    new_content,
                    key,
                    old_metadata if metadata is None else _encode(metadata),
                    now,
                    seq,
                ),
            )
            updated = db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM memories AS m WHERE m.seq = ?", (row[0],)
            ).fetchone()
            return _record(updated)

        return self._db.run(write, write=True, durable=self._fsync)

    def _remove_blocking(self, ids: Strings | None, change: str, reason: str | None) -> int:
        now = utc_timestamp()
        where, params = self._scope.where("m")

        def write(db: sqlite3.Connection) -> int:
            purge_expired(db, now)
            removed = 0
            chunks = (
                [None]
                if ids is None
                else [ids[i : i + KEY_CHUNK] for i in range(0, len(ids), KEY_CHUNK)]
            )
            for chunk in chunks:
                condition, values = where, list(params)
                if chunk is not None:
                    condition += f" AND m.id IN ({', '.join('?' * len(chunk))})"
                    values.extend(chunk)
                keep_versions(db, condition, values, now, change, reason)
                removed += db.execute(
                    f"DELETE FROM memories AS m WHERE {condition}", values
                ).rowcount
            return removed

        return self._db.run(write, write=True, durable=self._fsync)


def _fresh(memory_id: str | None) -> str:
    """Return the id an add resolved to; an add's own ids are new, so never skipped."""
    if memory_id is None:
        raise AssertionError("an add was skipped for its id, which it made itself")
    return memory_id
