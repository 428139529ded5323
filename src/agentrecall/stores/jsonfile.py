"""``JsonFileStore``: memories in one JSON file, shared with Strands Agents' ``TestMemoryStore``."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from agentrecall._internal import forks
from agentrecall._internal.checks import (
    check_id,
    check_ids,
    check_items,
    check_limit,
    check_offset,
    check_optional_text,
    check_record,
    requested_limit,
)
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.ids import new_id
from agentrecall._internal.jsoncopy import copy_json
from agentrecall._internal.lifetime import Lifetime
from agentrecall._internal.paths import default_store_path
from agentrecall._internal.text import check_text, has_surrogate
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.tokenize import tokenize
from agentrecall.storage.base import BlockingStorage
from agentrecall.storage.local import LocalFileStorage
from agentrecall.storage.memory import InMemoryStorage
from agentrecall.stores.base import Capability
from agentrecall.stores.jsonformat import Record, new_record, parse_records
from agentrecall.stores.jsonrecords import RecordSet
from agentrecall.types import AddResult, JsonObject, MemoryEntry, MemoryRecord

T = TypeVar("T")

Moment = datetime | str | None

DEFAULT_MAX_SEARCH_RESULTS = 10

RecordList = list[MemoryRecord]
EntryList = list[MemoryEntry]


class JsonFileStore:
    """Memories in one JSON file, recalled by keyword overlap.

    The file format, ranking and scores are those of Strands Agents' ``TestMemoryStore``
    (also exported under that name): a file written by either store reads in the other, and
    both return the same hits in the same order with the same scores.

    Recall: a memory's score is the number of distinct query words in its content (words are
    lowercase runs of letters, digits and ``_``; see :mod:`agentrecall.retrieval.tokenize`).
    Hits with a score of 0 are left out; higher scores come first, then the later
    ``createdAt``, then (for equal ``createdAt``) the earlier place in the file. Each hit's
    metadata is a fresh copy of the stored metadata plus ``_relevanceScore``.

    Guarantees beyond the reference:

    * An ``add`` (or ``delete``) that returned is on disk: temp file, fsync, atomic rename,
      fsync of the directory. A crash never leaves a torn file.
    * No lost updates between processes: writers hold an exclusive lock on a sidecar file
      (``.__agentrecall_lock_<file name>``) for the whole read-modify-write.
    * A path that is a symbolic link is written through: the file it points to gets the new
      bytes and the lock sidecar, the link stays a link.
    * A rewrite keeps the file's permissions (a ``0o600`` file stays private) and, as root,
      its owner; a file whose permissions deny this process writing is refused with
      :class:`~agentrecall.errors.StorageError`, never replaced.
    * A temp file is named ``.__agentrecall_tmp_<file name>.<pid>.<random>.tmp``; one left by a
      killed writer is removed by the next write.
    * A file that cannot be parsed is reported with :class:`~agentrecall.errors.InvalidFileError`
      and never overwritten by any operation; that includes bytes that are not UTF-8.
    * Reads are cached until the file's identity (inode, size, mtime) changes: searching an
      unchanged file neither re-reads nor re-tokenizes it, while another process's write is
      seen by the next call.
    * ``metadata`` must be a JSON object of JSON values; anything else is refused before any
      write, where the reference would write a file it then cannot read. Text with a lone
      surrogate (such as U+D800, which UTF-8 cannot encode) is refused too, in content, ids
      and metadata; a file in which another program wrote one as a JSON escape reads, and is
      written back with the same escape, and a memory whose id holds one can be fetched
      and deleted by that id.
    * ``get``, ``delete``, ``list``, ``count``, ``clear`` and the batch ``add_many``.
    * Facts that change (``supersede``, and the ``as_of``, ``valid_at``, ``include_superseded``,
      ``valid_from`` and ``valid_until`` arguments) have no place in the file format: they
      raise :class:`~agentrecall.errors.InvalidArgumentError` naming the stores that keep
      them (``SQLiteStore``, ``PostgresStore``), before anything is read or written.
    * File I/O runs in worker threads, never on the event loop.
    * A store may be used across ``os.fork()``: a fork waits for the store's call in
      progress, so a child starts with the store idle and holds none of its locks.

    Deliberate differences in configuration: ``name`` is a required keyword (leaving it out is
    a ``TypeError``, where the reference raises ``KeyError``); ``max_search_results``,
    ``writable`` and ``persist`` are type-checked; ``path`` expands ``~``, is made absolute at
    construction (a later ``chdir`` does not move the store) and must name a file, checked at
    construction rather than at the first I/O. The default file is
    ``$AGENTRECALL_HOME/memory/<name>.json`` (``AGENTRECALL_HOME`` defaults to
    ``~/.agentrecall``): a name of ``[A-Za-z0-9_.-]`` without ``..`` keeps the file name the
    reference gives it; any other name is made file-safe as the reference does, plus ``+``
    and a digest of the exact name, so that distinct names never share a file (the reference
    maps ``a/b`` and ``a_b`` to one).
    """

    __test__: ClassVar[bool] = False  # exported as TestMemoryStore: not a pytest test class
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {
            Capability.GET,
            Capability.DELETE,
            Capability.LIST,
            Capability.COUNT,
            Capability.ADD_MANY,
            Capability.CLEAR,
            Capability.IMPORT,
        }
    )

    def __init__(
        self,
        *,
        name: str,
        description: str | None = None,
        max_search_results: int | None = None,
        writable: bool = True,
        extraction: Any = None,
        persist: bool = True,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        """Configure the store; nothing is read or created until the first call.

        Args:
            name: the store's name, unique within a manager; also names the default file.
            description: what the store holds, shown to a model next to its name.
            max_search_results: hits per search when the caller gives no limit (default 10);
                an integer from 1 to 2**63 - 1 (larger ones are refused, not clamped).
            writable: whether ``add`` and ``delete`` are allowed.
            extraction: fact-extraction setting, kept as given for a memory manager.
            persist: ``False`` keeps the memories in this object only, never on disk.
            path: the JSON file to use instead of the default one.

        Raises:
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
        """
        if not isinstance(name, str) or not name.strip():
            raise InvalidArgumentError(f"name must be a non-blank string, got {name!r}")
        check_optional_text(description, "description")
        check_limit(max_search_results, "max_search_results")
        for flag, value in (("writable", writable), ("persist", persist)):
            if not isinstance(value, bool):
                raise InvalidArgumentError(f"{flag} must be True or False, got {value!r}")
        file_path = _check_path(path)
        self.name = name
        self.description = description
        self.max_search_results = max_search_results
        self.writable = writable
        self.extraction = extraction
        self._storage: BlockingStorage
        if not persist:
            self._storage, self._path = InMemoryStorage(), None
            self._key = default_store_path(name, ".json").name
        else:
            if file_path is None:
                file_path = str(default_store_path(name, ".json"))
            directory, self._key = os.path.split(file_path)
            self._storage, self._path = LocalFileStorage(directory), file_path
        self._mutex = threading.Lock()
        self._lifetime = Lifetime()
        self._records: RecordSet | None = None
        forks.register(
            self,
            before=JsonFileStore._hold,
            in_parent=JsonFileStore._release,
            in_child=JsonFileStore._renew,
        )

    @property
    def path(self) -> str | None:
        """The backing file's absolute path, or ``None`` when ``persist=False``."""
        return self._path

    async def search(
        self,
        query: str,
        options: Mapping[str, Any] | None = None,
        *,
        as_of: Moment = None,
        valid_at: Moment = None,
        include_superseded: bool = False,
    ) -> list[MemoryEntry]:
        """Return the memories that share words with ``query``, best first.

        Args:
            query: any text; one without words (empty, blank, punctuation) finds nothing and
                reads nothing.
            options: ``{"max_search_results": n}`` caps the hits for this call; without it the
                store's ``max_search_results`` applies, else 10.
            as_of: refused (see :meth:`supersede`).
            valid_at: refused (see :meth:`supersede`).
            include_superseded: refused when ``True`` (see :meth:`supersede`).

        Raises:
            InvalidArgumentError: ``query`` is not a string, ``options`` is not a mapping, the
                limit is not an integer from 1 to 2**63 - 1, or a refused argument is given.
            InvalidFileError: the file exists but cannot be parsed.
            StorageError: the file cannot be read.
        """
        self._refuse_changes(as_of=as_of, valid_at=valid_at, include_superseded=include_superseded)
        requested = requested_limit(options)
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a string, got {type(query).__name__}")
        limit = requested or self.max_search_results or DEFAULT_MAX_SEARCH_RESULTS
        tokens = tokenize(query)
        if not tokens:
            return []
        return await self._offload(self._search_blocking, tokens, limit)

    async def add(
        self,
        content: str,
        metadata: JsonObject | None = None,
        *,
        valid_from: Moment = None,
        valid_until: Moment = None,
    ) -> AddResult:
        """Keep ``content`` with optional ``metadata`` and return its id.

        Content equal to a stored memory's once both are stripped of outer whitespace is not
        stored again: the existing id comes back and the new metadata is dropped. Content is
        stored exactly as given, whitespace included. ``valid_from`` and ``valid_until`` are
        refused (see :meth:`supersede`).

        Raises:
            InvalidArgumentError: the store is not writable, ``content`` is blank or not a
                string, ``metadata`` is not a JSON object, either holds a lone surrogate, or
                a world time is given.
            InvalidFileError: the file exists but cannot be parsed (it is left unchanged).
            StorageError: the file cannot be read or written.
        """
        self._refuse_changes(valid_from=valid_from, valid_until=valid_until)
        return (await self.add_many([(content, metadata)]))[0]

    async def add_many(self, items: Iterable[tuple[str, JsonObject | None]]) -> list[AddResult]:
        """Add several memories with one file write; results follow the input order.

        Every item is checked before anything is written, so a bad item stores nothing.
        Duplicates within the batch dedup like separate adds. Errors are those of :meth:`add`,
        and an item that is not a ``(content, metadata)`` pair; a bad item's message gives its
        index.
        """
        self._check_writable()
        batch = check_items(items)
        if not batch:
            return []
        return await self._offload(self._write_blocking, _Adder(batch))

    async def import_records(self, records: Iterable[MemoryRecord]) -> int:
        """Store copies of memories, keeping their ids and ``created_at``; return how many were new.

        One file write: every record is checked first, so a bad record stores nothing. A record
        is skipped, and not counted, when its id is already in the file or earlier in the batch,
        or when its stripped content equals a stored memory's or an earlier record's.
        ``created_at`` may be any string, as the file format allows; ``updated_at`` has no
        place in the format and is dropped. Scopes and expiry have no place in it either, and
        are never dropped silently: a record with a ``user_id``, ``agent_id``, ``session_id``
        or ``expires_at`` is refused (clear them to store it unscoped, or for good).

        Raises:
            InvalidArgumentError: the store is not writable; or a record has blank content, a
                blank id, a ``created_at`` that is not a string, metadata that is not a JSON
                object, a scope or an expiry (the message gives the record's index).
            InvalidFileError: the file exists but cannot be parsed (it is left unchanged).
            StorageError: the file cannot be read or written.
        """
        self._check_writable()
        batch = [_checked_record(index, record) for index, record in enumerate(records)]
        if not batch:
            return 0
        return await self._offload(self._write_blocking, _Importer(batch))

    async def get(
        self, memory_id: str, *, as_of: Moment = None, include_superseded: bool = False
    ) -> MemoryRecord | None:
        r"""Return the memory with ``memory_id``, or ``None``.

        Any string is looked up, one with a lone surrogate too: a file another program wrote
        may hold such an id (as a JSON escape, ``"\ud800"``), and what :meth:`list` shows
        can be fetched. ``as_of`` and ``include_superseded`` are refused (see
        :meth:`supersede`).

        Raises:
            InvalidArgumentError: ``memory_id`` is not a string, or a refused argument is given.
        """
        self._refuse_changes(as_of=as_of, include_superseded=include_superseded)
        check_id(memory_id, encodable=False)
        return await self._offload(self._get_blocking, memory_id)

    async def delete(self, memory_id: str) -> bool:
        """Forget the memory with ``memory_id``; return whether it existed.

        A file edited by hand may hold an id more than once: every record with it goes. Any
        string is looked up, as :meth:`get` does.

        Raises:
            InvalidArgumentError: ``memory_id`` is not a string, or the store is not writable.
        """
        check_id(memory_id, encodable=False)
        return await self.delete_many([memory_id]) > 0

    async def delete_many(self, memory_ids: Iterable[str]) -> int:
        """Forget every memory whose id is given, with one file write; return how many.

        The count is of records removed: an id that a file edited by hand holds twice counts
        twice. Ids with a lone surrogate are looked up, as :meth:`get` does; the memories
        that stay are written back as they were, such escapes included.

        Raises:
            InvalidArgumentError: the store is not writable, ``memory_ids`` is a single string
                rather than an iterable of ids, or an id is not a string (its index is given).
        """
        self._check_writable()
        wanted = frozenset(check_ids(memory_ids, encodable=False))
        if not wanted:
            return 0
        return await self._offload(self._delete_blocking, _Remover(wanted))

    async def clear(self) -> int:
        """Forget every memory, with one file write; return how many.

        An empty store (or one with no file yet) is left as it is: nothing is created on disk.

        Raises:
            InvalidArgumentError: the store is not writable.
        """
        self._check_writable()
        return await self._offload(self._delete_blocking, _Remover(None))

    async def list(
        self,
        *,
        offset: int = 0,
        limit: int | None = None,
        as_of: Moment = None,
        valid_at: Moment = None,
        include_superseded: bool = False,
    ) -> RecordList:
        """Return memories in the file's order, skipping ``offset`` and returning at most ``limit``.

        That is the order they were added, oldest first, unless the file was edited by hand or
        took imported records (which keep the order they came in, whatever their times).
        ``as_of``, ``valid_at`` and ``include_superseded`` are refused (see :meth:`supersede`).

        Raises:
            InvalidArgumentError: ``offset`` is not an integer from 0 to 2**63 - 1,
                ``limit`` not ``None`` or an integer from 1 to 2**63 - 1, or a refused
                argument is given.
        """
        self._refuse_changes(as_of=as_of, valid_at=valid_at, include_superseded=include_superseded)
        check_offset(offset)
        check_limit(limit, "limit")
        return await self._offload(self._list_blocking, offset, limit)

    async def count(
        self,
        *,
        as_of: Moment = None,
        valid_at: Moment = None,
        include_superseded: bool = False,
    ) -> int:
        """Return how many memories the store holds (served from the cache, as searches are).

        ``as_of``, ``valid_at`` and ``include_superseded`` are refused (see :meth:`supersede`).
        """
        self._refuse_changes(as_of=as_of, valid_at=valid_at, include_superseded=include_superseded)
        return await self._offload(self._count_blocking)

    async def supersede(
        self,
        old_ids: Iterable[str],
        content: str,
        *,
        metadata: JsonObject | None = None,
        valid_from: Moment = None,
        valid_until: Moment = None,
        reason: str | None = None,
    ) -> AddResult:
        """Refuse: the Strands file format keeps no retired memories, history or world time.

        A memory retired by a newer one stays in the store, hidden from recall, and reads can
        go back to any moment (``as_of``), or keep to what was true in the world then
        (``valid_at``): only stores declaring ``Capability.SUPERSEDE`` do that, which
        ``SQLiteStore`` and ``PostgresStore`` do. Here ``delete`` and ``add`` replace a fact,
        forgetting the old one.

        Raises:
            InvalidArgumentError: always, naming those stores; nothing is read or written.
        """
        raise self._unsupported(["supersede"])

    async def aclose(self) -> None:
        """Drop the records cached from the file and end the store.

        ``async with store:`` calls this on leaving the block. Closing twice is harmless; any
        other later call raises :class:`~agentrecall.errors.StoreClosedError` (a new store
        object reads the file again).
        """
        self._lifetime.end()
        await asyncio.to_thread(self._forget_blocking)

    async def __aenter__(self) -> JsonFileStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _hold(self) -> None:
        # A fork waits for the call in progress: forked in the middle of one, the child would
        # keep the lock file's descriptor (holding every writer off while it lives) and a
        # mutex no thread of its own will ever release.
        self._mutex.acquire()

    def _release(self) -> None:
        self._mutex.release()

    def _renew(self) -> None:
        self._mutex = threading.Lock()

    def _refuse_changes(self, **arguments: object) -> None:
        """Refuse the arguments given (neither ``None`` nor ``False``) of facts that change."""
        given = [
            key for key, value in arguments.items() if value is not None and value is not False
        ]
        if given:
            raise self._unsupported(given)

    def _unsupported(self, given: Sequence[str]) -> InvalidArgumentError:
        """The error for what only stores keeping facts that change take, naming them."""
        return InvalidArgumentError(
            f"store '{self.name}' (JsonFileStore) does not support {', '.join(given)}: the "
            "Strands file format keeps no retired memories, history or world time "
            "(Capability.SUPERSEDE); SQLiteStore and PostgresStore do"
        )

    def _check_writable(self) -> None:
        if not self.writable:
            raise InvalidArgumentError(
                f"store '{self.name}' is read-only; create it with writable=True to change it"
            )

    async def _offload(self, function: Callable[..., T], *args: Any) -> T:
        self._lifetime.check(self.name)
        return await asyncio.to_thread(function, *args)

    def _load(self) -> RecordSet:
        """Return the current records, from the cache while the file is unchanged."""
        version = self._storage.version_blocking(self._key)
        if self._records is not None and self._records.version == version:
            return self._records
        data, version = self._storage.read_blocking(self._key)
        records = [] if data is None else parse_records(data, self._storage.describe(self._key))
        self._records = RecordSet(records, version)
        return self._records

    def _forget_blocking(self) -> None:
        with self._mutex:
            self._records = None

    def _search_blocking(self, tokens: frozenset[str], limit: int) -> EntryList:
        with self._mutex:
            current = self._load()
            hits = current.top(tokens, limit)
            return [_entry(current.records[position], score) for position, score in hits]

    def _get_blocking(self, memory_id: str) -> MemoryRecord | None:
        with self._mutex:
            current = self._load()
            position = current.position_of(memory_id)
            return None if position is None else memory_record(current.records[position])

    def _list_blocking(self, offset: int, limit: int | None) -> RecordList:
        with self._mutex:
            records = self._load().records
            end = None if limit is None else offset + limit
            return [memory_record(record) for record in records[offset:end]]

    def _count_blocking(self) -> int:
        with self._mutex:
            return len(self._load().records)

    def _delete_blocking(self, remover: _Remover) -> int:
        # Forgetting ids the file does not hold takes no lock, so it creates nothing on disk.
        with self._mutex:
            if not remover.finds(self._load()):
                return 0
        return self._write_blocking(remover)

    def _write_blocking(self, change: Callable[[RecordSet], tuple[T, bool]]) -> T:
        """Apply ``change`` under both locks and write the file if it reports a change."""
        with self._mutex, self._storage.lock_blocking(self._key):
            current = self._load()
            try:
                result, changed = change(current)
                if changed:
                    current.version = self._storage.write_blocking(self._key, current.to_bytes())
            except BaseException:
                self._records = None  # the cached records may hold an unwritten change
                raise
            return result


class _Adder:
    """A change that appends new memories, deduplicating against the file and the batch."""

    def __init__(self, batch: Sequence[tuple[str, JsonObject | None]]) -> None:
        self.batch = batch

    def __call__(self, current: RecordSet) -> tuple[list[AddResult], bool]:
        results: list[AddResult] = []
        changed = False
        for content, metadata in self.batch:
            existing = current.duplicate_of(content)
            if existing is not None:
                results.append(AddResult(id=existing, created=False))
                continue
            record = new_record(new_id(), content, utc_timestamp(), copy_json(metadata))
            current.append(record)
            changed = True
            results.append(AddResult(id=record["id"], created=True))
        return results, changed


class _Importer:
    """A change that appends copies of memories whose id and content are both new."""

    def __init__(self, batch: Sequence[MemoryRecord]) -> None:
        self.batch = batch

    def __call__(self, current: RecordSet) -> tuple[int, bool]:
        added = 0
        for memory in self.batch:
            taken = current.position_of(memory.id) is not None
            if not taken and current.duplicate_of(memory.content) is None:
                metadata = copy_json(memory.metadata)
                current.append(new_record(memory.id, memory.content, memory.created_at, metadata))
                added += 1
        return added, added > 0


class _Remover:
    """A change that drops every record whose id is in ``ids``, or every record (``None``)."""

    def __init__(self, ids: frozenset[str] | None) -> None:
        self.ids = ids

    def finds(self, current: RecordSet) -> bool:
        """Whether ``current`` holds a record this change would drop."""
        if self.ids is None:
            return bool(current.records)
        return any(current.position_of(i) is not None for i in self.ids)

    def __call__(self, current: RecordSet) -> tuple[int, bool]:
        records = enumerate(current.records)
        doomed = {i for i, record in records if self.ids is None or record["id"] in self.ids}
        if doomed:
            current.remove(doomed)
        return len(doomed), bool(doomed)


def _entry(record: Record, score: int) -> MemoryEntry:
    metadata = copy_json(record.get("metadata") or {})
    metadata["_relevanceScore"] = score
    return MemoryEntry(content=record["content"], metadata=metadata, id=record["id"])


def memory_record(record: Record) -> MemoryRecord:
    """Return a record of the Strands file format as a :class:`MemoryRecord` (a fresh copy)."""
    return MemoryRecord(
        id=record["id"],
        content=record["content"],
        created_at=record["createdAt"],
        metadata=copy_json(record.get("metadata")),
    )


def _checked_record(index: int, record: MemoryRecord) -> MemoryRecord:
    where = check_record(index, record)
    if not isinstance(record.created_at, str):
        raise InvalidArgumentError(f"{where}: created_at must be a string")
    check_text(record.created_at, f"{where}: created_at")
    ids = {key: getattr(record, key) for key in ("user_id", "agent_id", "session_id")}
    held = ", ".join(f"{key}={value!r}" for key, value in ids.items() if value is not None)
    if held:
        raise InvalidArgumentError(
            f"{where} belongs to a scope ({held}), which a JSON memory file cannot hold; "
            "clear its user_id, agent_id and session_id to store it unscoped"
        )
    if record.expires_at is not None:
        # Stored without it, a memory meant to be forgotten would be kept for good.
        raise InvalidArgumentError(
            f"{where} expires at {record.expires_at!r}, which a JSON memory file cannot hold; "
            "keep it in an SQLite store, or clear its expires_at to keep it for good"
        )
    if record.invalidated_at is not None or record.superseded_by is not None:
        # Stored without them, a retired memory would be recalled as current again.
        raise InvalidArgumentError(
            f"{where} was retired by memory {record.superseded_by!r} at "
            f"{record.invalidated_at!r}, which a JSON memory file cannot hold; keep it in an "
            "SQLiteStore or a PostgresStore, or leave it out"
        )
    if record.valid_from is not None or record.valid_until is not None:
        raise InvalidArgumentError(
            f"{where} says when its fact was true (valid_from={record.valid_from!r}, "
            f"valid_until={record.valid_until!r}), which a JSON memory file cannot hold; keep "
            "it in an SQLiteStore or a PostgresStore, or clear valid_from and valid_until"
        )
    return record


def _check_path(path: str | os.PathLike[str] | None) -> str | None:
    if path is None:
        return None
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"path must be a str or an os.PathLike of str, got {type(text).__name__}"
        )
    if not text.strip():
        raise InvalidArgumentError("path must not be blank; leave it out to use the default file")
    if os.path.basename(text) in ("", ".", ".."):
        raise InvalidArgumentError(f"path must name a file, got {text!r}")
    absolute = os.path.abspath(os.path.expanduser(text))
    if "\0" in text:
        raise InvalidArgumentError(f"path must not contain NUL characters, got {text!r}")
    if "\\" in os.path.basename(absolute):
        raise InvalidArgumentError(f"path's file name must not contain a backslash, got {text!r}")
    if has_surrogate(os.path.basename(absolute)):
        # Bytes the file system encoding cannot decode (os.fsdecode escapes them as lone
        # surrogates) cannot be part of a file name the store writes beside the file.
        raise InvalidArgumentError(f"path's file name must be valid Unicode text, got {text!r}")
    return absolute
