"""Copy memories from one store to another, keeping their ids and timestamps.

:func:`migrate` pages through any store that can ``list`` and ``count`` and hands each page to
the destination's ``import_records``; :func:`migrate_files` does the same between two files,
choosing the store by the file's extension (``.json`` for :class:`JsonFileStore`; ``.db``,
``.sqlite`` or ``.sqlite3`` for :class:`SQLiteStore`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, TextIO

from agentrecall._internal.checks import check_limit
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.jsonfile import JsonFileStore
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.types import MemoryRecord

__all__ = [
    "MigrationResult",
    "ProgressBar",
    "RecordSink",
    "RecordSource",
    "STORE_SUFFIXES",
    "migrate",
    "migrate_files",
    "open_store",
    "render_bar",
    "store_kind",
]

DEFAULT_BATCH = 10_000
"""Memories per batch: large enough that a bulk import into SQLite is not slowed by commits."""

STORE_SUFFIXES = {".json": "json", ".db": "sqlite", ".sqlite": "sqlite", ".sqlite3": "sqlite"}
"""The file extensions :func:`open_store` knows, and the kind of store each one opens."""

Progress = Callable[[int, int], None]


class RecordSource(Protocol):
    """A store that memories can be read from, oldest first."""

    async def list(self, *, offset: int = 0, limit: int | None = None) -> list[MemoryRecord]:
        """Return memories oldest first, skipping ``offset`` and returning at most ``limit``."""
        ...

    async def count(self) -> int:
        """Return how many memories the store holds."""
        ...


class RecordSink(Protocol):
    """A store that takes copies of memories with their ids and timestamps."""

    async def import_records(self, records: Iterable[MemoryRecord]) -> int:
        """Store the records that are new and return how many."""
        ...


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """What a migration did.

    Attributes:
        copied: memories the destination stored.
        skipped: memories it already had (same id, or same content in its scope).
    """

    copied: int
    skipped: int


async def migrate(
    source: RecordSource,
    destination: RecordSink,
    *,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> MigrationResult:
    """Copy every memory of ``source`` into ``destination``, oldest first, ``batch`` at a time.

    Each batch is one ``import_records`` call, so one write of the destination: a failure
    keeps the batches already copied, and running the migration again copies only what is
    missing. Running it twice copies nothing the second time.

    Args:
        source: the store to read; it is not changed.
        destination: the store to write.
        batch: memories per read and per write.
        progress: called as ``progress(done, total)`` with ``done == 0`` before the first batch
            and after every batch; ``total`` is the source's count when the migration started.

    Raises:
        InvalidArgumentError: ``batch`` is not an integer of at least 1, or a memory is refused
            by the destination.
        AgentRecallError: either store failed (a file that cannot be read or written).
    """
    check_limit(batch, "batch")
    total = await source.count()
    done = copied = 0
    if progress is not None:
        progress(0, total)
    while True:
        records = await source.list(offset=done, limit=batch)
        if not records:
            break
        copied += await destination.import_records(records)
        done += len(records)
        if progress is not None:
            progress(done, total)
        if len(records) < batch:
            break
    return MigrationResult(copied=copied, skipped=done - copied)


def store_kind(path: str | os.PathLike[str]) -> str:
    """Return ``"json"`` or ``"sqlite"`` for a store file, by its extension.

    Raises:
        InvalidArgumentError: the extension is none of :data:`STORE_SUFFIXES`.
    """
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    kind = STORE_SUFFIXES.get(suffix)
    if kind is None:
        known = ", ".join(STORE_SUFFIXES)
        raise InvalidArgumentError(
            f"cannot tell the kind of store of {os.fspath(path)!r}: use a file ending in {known}"
        )
    return kind


def open_store(
    path: str | os.PathLike[str], *, must_exist: bool = False
) -> JsonFileStore | SQLiteStore:
    """Return the store kept in ``path``, chosen by :func:`store_kind`; no I/O beyond a check.

    Raises:
        InvalidArgumentError: an unknown extension, or ``must_exist`` and no such file.
    """
    kind = store_kind(path)
    if must_exist and not os.path.isfile(path):
        raise InvalidArgumentError(f"no store file at '{os.fspath(path)}'")
    if kind == "json":
        return JsonFileStore(name="memory", path=path)
    return SQLiteStore(path)


async def migrate_files(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> MigrationResult:
    """Copy the store in file ``source`` into the store in file ``destination``.

    The source must exist; the destination is created when missing. Nothing is written when
    the source cannot be read. Errors are those of :func:`open_store` and :func:`migrate`,
    plus an ``InvalidArgumentError`` when both name the same file.
    """
    if os.path.realpath(source) == os.path.realpath(destination):
        raise InvalidArgumentError(f"source and destination are the same file: '{source}'")
    reader = open_store(source, must_exist=True)
    writer = open_store(destination)
    try:
        return await migrate(reader, writer, batch=batch, progress=progress)
    finally:
        for store in (reader, writer):
            if isinstance(store, SQLiteStore):
                await store.aclose()


def render_bar(done: int, total: int, width: int = 30) -> str:
    """Return ``[#####.....] done/total``; an empty total shows a full bar."""
    filled = width if total <= 0 else min(width, done * width // total)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


class ProgressBar:
    """A ``progress`` callback for :func:`migrate` that draws a bar on ``stream``.

    On a terminal the bar is redrawn in place; anywhere else (a pipe, a log) only the final
    state is written, as one line, by :meth:`close`.
    """

    def __init__(self, stream: TextIO) -> None:
        """Draw on ``stream``, in place only when it is a terminal."""
        self._stream = stream
        self._live = stream.isatty()
        self._last: tuple[int, int] | None = None

    def __call__(self, done: int, total: int) -> None:
        """Record progress, redrawing the bar on a terminal."""
        self._last = (done, total)
        if self._live:
            self._stream.write("\r" + render_bar(done, total))
            self._stream.flush()

    def close(self) -> None:
        """End the bar's line (or write the final state, off a terminal)."""
        if self._last is None:
            return
        self._stream.write("\n" if self._live else render_bar(*self._last) + "\n")
        self._stream.flush()
