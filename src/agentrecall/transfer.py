"""Export a store as JSON lines (:mod:`agentrecall.export_format`) and import them again.

Both directions stream: at most a batch of memories is held at a time, so a million
memories cost what ten thousand do. :func:`export_store` writes one consistent state of a
store that offers a snapshot (:meth:`SQLiteStore.snapshot`, :meth:`PostgresStore.snapshot`);
:func:`import_stream` reads an export, or a
Strands ``TestMemoryStore`` JSON file (told apart by their first character), into any store
that takes ``import_records``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from agentrecall._internal.binding import wait_for_binding
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.switching import short_turns
from agentrecall._internal.text import has_surrogate, plural
from agentrecall.errors import InvalidArgumentError, InvalidFileError
from agentrecall.export_format import (
    SCOPE_KEYS,
    Header,
    encode_header,
    encode_record,
    encode_version,
    parse_header,
    parse_line,
)
from agentrecall.stores.base import Capability
from agentrecall.stores.jsonfile import memory_record
from agentrecall.stores.jsonformat import parse_records
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.types import MemoryRecord, MemoryVersion

__all__ = [
    "DEFAULT_BATCH",
    "EXPORT_BATCH",
    "TAPER_BATCH",
    "ImportResult",
    "export_store",
    "import_stream",
]

DEFAULT_BATCH = 50_000
"""Lines per batch of an import: one check, one ``import_records`` call, one transaction.

Large enough that the commits do not slow a bulk import into SQLite (at 5,000 a call it
runs at about two thirds of the speed)."""

TAPER_BATCH = 5_000
"""The smallest batch of a tapered import (``taper``): its first, and its last ones."""

EXPORT_BATCH = 10_000
"""Memories (or versions) an export holds at a time."""

Progress = Callable[[int, int], None]

_ITEM = re.compile(r"(record|version) (\d+)")


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did.

    Attributes:
        memories: memories stored.
        versions: replaced versions (history) stored.
        existing: memories left out because the store already held their id (only with
            ``skip_existing``).
        skipped: other memories left out: the same text as a memory of their scope, or
            expired by the time they were imported.
        kind: ``"export"`` or ``"strands"``, the format that was read.
    """

    memories: int
    versions: int
    existing: int
    skipped: int
    kind: str


class _LineWriter:
    """A snapshot sink writing export lines to a binary stream, and reporting progress."""

    def __init__(self, out: BinaryIO, header: Header, progress: Progress | None) -> None:
        self._out = out
        self._header = header
        self._progress = progress
        self._done = self._total = 0

    def counts(self, memories: int, versions: int) -> None:
        self._header = dataclasses.replace(self._header, memories=memories, versions=versions)
        self._total = memories + versions
        self._out.write(encode_header(self._header).encode() + b"\n")
        self._report(0)

    def records(self, batch: list[MemoryRecord]) -> None:
        self._lines([encode_record(record) for record in batch])

    def versions(self, batch: list[MemoryVersion]) -> None:
        self._lines([encode_version(version) for version in batch])

    @property
    def header(self) -> Header:
        return self._header

    def _lines(self, lines: list[str]) -> None:
        self._out.write(("\n".join(lines) + "\n").encode())
        self._report(len(lines))

    def _report(self, added: int) -> None:
        self._done += added
        if self._progress is not None:
            self._progress(self._done, self._total)


async def export_store(
    store: Any,
    out: BinaryIO,
    *,
    scope: dict[str, str | None] | None = None,
    progress: Progress | None = None,
    batch: int = EXPORT_BATCH,
) -> Header:
    """Write every memory of ``store`` (and its history, if it keeps one) to ``out``.

    A store with a ``snapshot`` method (an :class:`SQLiteStore` or ``PostgresStore``, or a
    view of one) is read in one transaction, so the file is one consistent state of the store,
    history included, and its header's counts are exact; another store (a JSON file, which
    keeps no history) is read a page at a time through ``count`` and ``list``. ``scope`` is
    what the header records as the scope exported. ``progress(done, total)`` is called after
    the header and after each batch. Returns the header written.
    """
    ids = {key: None if scope is None else scope.get(key) for key in SCOPE_KEYS}
    header = Header(
        store=_kind(store), created_at=utc_timestamp(), memories=0, versions=0, scope=ids
    )
    writer = _LineWriter(out, header, progress)
    snapshot = getattr(store, "snapshot", None)
    if snapshot is not None:
        await snapshot(writer, batch=batch)
        return writer.header
    total = await store.count()
    await asyncio.to_thread(writer.counts, total, 0)
    offset = 0
    while page := await store.list(offset=offset, limit=batch):
        await asyncio.to_thread(writer.records, page)
        offset += len(page)
    return writer.header


def _kind(store: object) -> str:
    """The kind of store a header names: ``"sqlite"``, ``"postgres"`` or ``"json"``."""
    if isinstance(store, SQLiteStore):
        return "sqlite"
    return "postgres" if type(store).__name__ == "PostgresStore" else "json"


async def import_stream(
    stream: BinaryIO,
    where: str,
    store: Any,
    *,
    skip_existing: bool = False,
    progress: Progress | None = None,
    batch: int = DEFAULT_BATCH,
    taper: bool = False,
) -> ImportResult:
    """Import an export, or a Strands memory file, from ``stream`` into ``store``.

    ``where`` names the file in errors. A file whose first character is ``[`` is a Strands
    ``TestMemoryStore`` file (read whole, as that format is); anything else must be an
    export, read a line at a time. Memories keep their ids, text, metadata, timestamps,
    scopes and expiry, and the history follows them. Each batch is checked whole and then
    stored in one ``import_records`` (or ``import_versions``) call, so a failure keeps only
    whole batches: those of the lines before it, which ``progress(done, total)`` has
    reported (``done`` items are the lines 2 to ``done + 1``).

    The next batch is read while the store writes one, so the first batch's reading and
    the last one's writing are what nothing overlaps. With ``taper``, for a store whose
    batches nobody sees (a new file published whole at the end), the memory batches start
    at :data:`TAPER_BATCH` lines, each up to three times the one before, to at most
    ``batch``, and near the end of the memories the header announces each takes half of
    what remains (at least :data:`TAPER_BATCH`).

    A memory whose id the store (or an earlier line) already holds is refused, naming the
    id and line, unless ``skip_existing``, which leaves it out and counts it.

    Raises:
        InvalidFileError: the file is empty, not an export or Strands file, of a newer format
            version, has a bad line, or holds fewer or more lines than its header announces
            (the message names the file and line).
        InvalidArgumentError: a memory's id is taken (without ``skip_existing``), or the
            store cannot take what the file holds (history, for a store keeping none).
        AgentRecallError: the store failed.
    """
    blank, first = await asyncio.to_thread(_first_line, stream)
    if not first:
        raise InvalidFileError(
            f"{where} is empty: expected an agentrecall export or a Strands memory file",
            path=where,
        )
    strands = first.lstrip(b"\xef\xbb\xbf \t").startswith(b"[")
    loader = _Loader(store, where, skip_existing, progress, "record" if strands else "line")
    if strands:
        records = await asyncio.to_thread(_strands_records, blank + first, stream, where)
        loader.total = len(records)
        await loader.memories(records)
        return loader.result("strands")
    if blank:
        raise InvalidFileError(f"{where}, line 1: expected the export's header", path=where)
    header = parse_header(first, where)
    if header.versions and Capability.HISTORY not in _capabilities(store):
        raise InvalidArgumentError(
            f"{where} holds {plural(header.versions, 'version')} of history and the store "
            "keeps none; import it into an SQLite or PostgreSQL store (--db, --store or --dsn)"
        )
    loader.total = header.memories + header.versions
    await _load_lines(loader, _LineReader(stream, where, header, batch, taper))
    return loader.result("export")


def _first_line(stream: BinaryIO) -> tuple[bytes, bytes]:
    """Return the blank lines at the start of ``stream``, and the first other line."""
    blank = b""
    while (line := stream.readline()) and not line.strip():
        blank += line
    return blank, line


def _strands_records(first: bytes, stream: BinaryIO, where: str) -> list[tuple[int, MemoryRecord]]:
    """Read the rest of a Strands file; return its records, numbered from 0 as its errors are."""
    records = parse_records(first + stream.read(), where, imported=True)
    return [(i, memory_record(r)) for i, r in enumerate(records)]


async def _load_lines(loader: _Loader, reader: _LineReader) -> None:
    """Store the reader's batches, reading the next one while the store writes this one.

    Both finish before any failure is raised, so what was stored is exactly the batches
    before the failing line, as the progress reported.
    """
    with short_turns():  # the parsing thread and the store's take turns (see switching)
        batch = await asyncio.to_thread(reader.next)
        while batch is not None:
            kind, items = batch
            write = loader.memories(items) if kind == "memory" else loader.versions(items)
            outcomes: list[Any] = await asyncio.gather(
                write, asyncio.to_thread(reader.next), return_exceptions=True
            )
            for outcome in outcomes:  # the write's failure first: it is of the earlier lines
                if isinstance(outcome, BaseException):
                    raise outcome
            batch = outcomes[1]


class _LineReader:
    """Reads an export after its header, a batch of one kind of line at a time.

    Checks what the header promises: memories first, then versions, as many of each as it
    announces, no more and no fewer.
    """

    def __init__(
        self, stream: BinaryIO, where: str, header: Header, batch: int, taper: bool
    ) -> None:
        self._lines = enumerate(stream, 2)
        self._where = where
        self._header = header
        self._batch = batch
        self._taper = taper
        self._size = min(batch, TAPER_BATCH) if taper else batch
        self._held: tuple[int, Any] | None = None
        self._memories = self._versions = 0
        self._last = 1

    def next(self) -> tuple[str, list[Any]] | None:
        """Return ``("memory" | "version", [(line number, item), ...])``, or ``None`` at the end.

        Raises:
            InvalidFileError: a line is bad, out of order or beyond the announced counts, or
                the file ends before them.
        """
        versions: list[Any] = [self._held] if self._held is not None else []
        self._held = None
        memories: list[Any] = []
        size = self._next_size()
        while len(memories) < size and len(versions) < self._batch:
            item = self._read()
            if item is None:
                break
            if isinstance(item[1], MemoryVersion):
                if memories:
                    self._held = item  # a batch holds one kind: the versions start the next
                    return "memory", memories
                versions.append(item)
            elif self._versions:
                raise self._invalid(item[0], "a memory after the history")
            else:
                memories.append(item)
        if memories:
            return "memory", memories
        return ("version", versions) if versions else None

    def _next_size(self) -> int:
        """The most memories in the next batch (see ``taper`` in :func:`import_stream`)."""
        if not self._taper:
            return self._batch
        size = self._size
        self._size = min(3 * size, self._batch)
        remaining = self._header.memories - self._memories
        return max(min(size, remaining // 2), min(TAPER_BATCH, self._batch))

    def _read(self) -> tuple[int, MemoryRecord | MemoryVersion] | None:
        header = self._header
        for number, line in self._lines:
            wait_for_binding()  # parse while SQLite indexes, not while it binds rows
            self._last = number
            if not line.strip():
                continue
            item = parse_line(line, self._where, number, header.version)
            if isinstance(item, MemoryRecord):
                self._memories += 1
            else:
                self._versions += 1
            if self._memories > header.memories or self._versions > header.versions:
                raise self._invalid(
                    number,
                    "more lines than the header announces "
                    f"({plural(header.memories, 'memory', 'memories')}, "
                    f"{plural(header.versions, 'version')})",
                )
            return number, item
        if (self._memories, self._versions) != (header.memories, header.versions):
            raise self._invalid(
                self._last + 1,
                f"the file ends after {plural(self._memories, 'memory', 'memories')} and "
                f"{plural(self._versions, 'version')}, and its header announces "
                f"{header.memories} and {header.versions}: is it truncated?",
            )
        return None

    def _invalid(self, number: int, problem: str) -> InvalidFileError:
        return InvalidFileError(f"{self._where}, line {number}: {problem}", path=self._where)


class _Loader:
    """Stores checked batches of memories and versions, each in one call of the store."""

    def __init__(
        self,
        store: Any,
        where: str,
        skip_existing: bool,
        progress: Progress | None,
        unit: str,
    ) -> None:
        self.store = store
        self.unit = unit  # how errors name an item's number: "line" or "record"
        self.where = where
        self.skip_existing = skip_existing
        self.progress = progress
        self.total = 0
        self.done = self.memory_lines = self.stored = self.existing = self.versions_stored = 0
        # A store that looks ids up in one query; another is asked a memory at a time.
        self._taken_lookup = hasattr(store, "existing_ids")

    async def memories(self, items: Sequence[tuple[int, MemoryRecord]]) -> None:
        if not items:
            return
        fresh = await self._without_taken(items)
        self.stored += await self._call(self.store.import_records, fresh)
        self.memory_lines += len(items)
        self._advance(len(items))

    async def versions(self, items: Sequence[tuple[int, MemoryVersion]]) -> None:
        if not items:
            return
        self.versions_stored += await self._call(self.store.import_versions, items)
        self._advance(len(items))

    def result(self, kind: str) -> ImportResult:
        skipped = self.memory_lines - self.stored - self.existing
        return ImportResult(self.stored, self.versions_stored, self.existing, skipped, kind)

    def _advance(self, count: int) -> None:
        self.done += count
        if self.progress is not None:
            self.progress(self.done, max(self.total, self.done))

    async def _without_taken(
        self, items: Sequence[tuple[int, MemoryRecord]]
    ) -> list[tuple[int, MemoryRecord]]:
        """Return the items whose id neither the store nor an earlier item holds."""
        ids = [record.id for _, record in items if isinstance(record.id, str)]
        taken = await self._taken(ids)
        if not taken and len(set(ids)) == len(items):
            return list(items)  # the common batch: every id new, and none twice
        fresh = []
        for number, record in items:
            if record.id in taken:
                if not self.skip_existing:
                    raise InvalidArgumentError(
                        f"{self.where}, {self.unit} {number}: the store already holds a memory "
                        f"with id {record.id!r}; pass --skip-existing to leave such memories out"
                    )
                self.existing += 1
                continue
            taken.add(record.id)
            fresh.append((number, record))
        return fresh

    async def _taken(self, ids: list[str]) -> set[str]:
        # No store can have taken an id holding a lone surrogate (none can store one): left
        # out of the lookup, which would refuse it, the record's own check names its line.
        ids = [i for i in ids if not has_surrogate(i)]
        if self._taken_lookup:
            found: set[str] = await self.store.existing_ids(ids)
            return found
        return {i for i in ids if await self.store.get(i) is not None}

    async def _call(self, method: Callable[[Any], Any], items: Sequence[tuple[int, Any]]) -> int:
        """Store the items, turning an item's index in a store's message into its line."""
        try:
            count: int = await method([item for _, item in items])
        except InvalidArgumentError as error:
            found = _ITEM.match(str(error))
            if found is None:
                raise
            number = items[int(found.group(2))][0]
            kind = "memory" if found.group(1) == "record" else "version"
            detail = str(error)[found.end() :]
            message = f"{self.where}, {self.unit} {number}: {kind}{detail}"
            raise InvalidFileError(message, path=self.where) from error
        return count


def _capabilities(store: object) -> frozenset[Capability]:
    return frozenset(getattr(store, "capabilities", ()))
