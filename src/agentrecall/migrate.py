"""Copy memories from one store to another, keeping ids, timestamps, scopes and history.

:func:`migrate` pages through any store that can ``list`` and ``count`` and hands each page to
the destination's ``import_records``; where both stores keep history, it then pages through
the source's replaced versions (:meth:`SQLiteStore.versions`) into the destination's
``import_versions``. :func:`migrate_files` does the same between two files, choosing the
store by the file's extension (``.json`` for :class:`JsonFileStore`; ``.db``, ``.sqlite`` or
``.sqlite3`` for :class:`SQLiteStore`), or a ``postgresql://`` URL for the ``PostgresStore``
named ``memory`` in that database.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TextIO, cast

from agentrecall._internal.checks import check_limit
from agentrecall._internal.staging import StagingLock, remove_staged, staged_path
from agentrecall._internal.text import escape_surrogates, has_surrogate
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import InvalidArgumentError, StorageError
from agentrecall.storage.local import _fsync_directory
from agentrecall.stores.base import Capability
from agentrecall.stores.jsonfile import JsonFileStore
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.types import MemoryRecord, MemoryVersion

__all__ = [
    "MigrationResult",
    "ProgressBar",
    "RecordSink",
    "RecordSource",
    "STORE_SUFFIXES",
    "VersionSink",
    "VersionSource",
    "migrate",
    "migrate_files",
    "open_store",
    "render_bar",
    "staged_sqlite",
    "store_kind",
]

DEFAULT_BATCH = 10_000
"""Memories per batch: large enough that a bulk import into SQLite is not slowed by commits."""

STORE_SUFFIXES = {".json": "json", ".db": "sqlite", ".sqlite": "sqlite", ".sqlite3": "sqlite"}
"""The file extensions :func:`open_store` knows, and the kind of store each one opens."""

MAX_PASSES = 3
"""How many times :func:`migrate` reads a source that loses memories while it is copied."""

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""How a PostgreSQL URL starts; :func:`open_store` opens the ``PostgresStore`` it names."""


def is_postgres_url(text: str | os.PathLike[str]) -> bool:
    """Return whether ``text`` is a PostgreSQL URL rather than a file."""
    return isinstance(text, str) and text.lower().startswith(POSTGRES_SCHEMES)


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


class VersionSource(Protocol):
    """A store declaring ``Capability.HISTORY``: its replaced versions can be read, in pages."""

    def versions(self, *, batch: int = ...) -> AsyncGenerator[list[MemoryVersion], None]:
        """Yield every replaced version, in pages of about ``batch``."""
        ...


class VersionSink(Protocol):
    """A store declaring ``Capability.HISTORY``: it takes copies of replaced versions."""

    async def import_versions(self, versions: Iterable[MemoryVersion]) -> int:
        """Add the versions that are new to the history and return how many."""
        ...


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """What a migration did.

    Attributes:
        copied: memories the destination stored.
        skipped: memories it already had (same id, or same content in its scope), or that
            expired before they could be copied.
        versions: replaced versions (history) the destination stored.
    """

    copied: int
    skipped: int
    versions: int = 0


async def migrate(
    source: RecordSource,
    destination: RecordSink,
    *,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
    flatten: bool = False,
    drop_history: bool = False,
    drop_expiry: bool = False,
    drop_superseded: bool = False,
) -> MigrationResult:
    """Copy every memory of ``source`` into ``destination``, oldest first, ``batch`` at a time.

    Memories keep their ids, timestamps, metadata, expiry and scopes; then, when both stores
    declare ``Capability.HISTORY``, every replaced version follows (deleted memories' too),
    with its time, change and reason. A source declaring ``Capability.SUPERSEDE`` gives its
    retired memories too, which stay retired, with their successors and world time. Between
    two SQLite stores the copy is exact: the same memories in every scope, in the same order,
    and the same history of every id.

    Nothing is lost silently. A destination that keeps no scopes (a JSON file) is refused a
    source with scoped memories unless ``flatten``; one that keeps no history is refused a
    source with history unless ``drop_history``; one that keeps no expiry is refused a source
    with memories that expire unless ``drop_expiry`` (they would be kept for good); one that
    keeps no retirement or world time (a JSON file) is refused a source with retired memories
    or world time (a retired memory would be current again) unless ``drop_superseded``. All
    are found out before
    anything is written (for scopes, expiry and changes, by reading the source once more).
    Only ``updated_at`` has no place in a JSON file and is not kept there.

    Each batch is one ``import_records`` (or ``import_versions``) call, so one write of the
    destination: a failure keeps the batches already copied, and running the migration again
    copies only what is missing. Running it twice copies nothing the second time.

    The source may be in use meanwhile. Memories added to it are copied if they come in
    before the last page is read; a memory deleted from it (or expiring) makes no other go
    missing: the pages are checked to follow one another, and when the source shifted under
    them another pass copies what was missed (at most :data:`MAX_PASSES` in all).

    Args:
        source: the store to read; it is not changed.
        destination: the store to write.
        batch: memories (and versions) per read and per write.
        progress: called as ``progress(done, total)`` with ``done == 0`` before the first batch
            and after every batch of memories; ``total`` is the source's count when the
            migration started.
        flatten: copy every memory (and version) unscoped, into the destination's own scope.
            Equal texts of different scopes then dedup to one memory.
        drop_history: copy the memories without their history.
        drop_expiry: copy the memories without their expiry, to be kept for good.
        drop_superseded: copy the current memories only, without their world time
            (``valid_from``, ``valid_until``); the history, when copied, still holds the
            retired ones' versions.

    Raises:
        InvalidArgumentError: ``batch`` is not an integer of at least 1, a flag is not a bool,
            the copy would lose scopes or history (the message says which option allows it),
            or a memory is refused by the destination.
        StorageError: the source kept losing memories through :data:`MAX_PASSES` passes.
        AgentRecallError: either store failed (a file that cannot be read or written).
    """
    _check_options(batch, flatten, drop_history, drop_expiry, drop_superseded)
    retired = not drop_superseded
    flags = (flatten, drop_history, drop_expiry, retired)
    with_history = await _plan(source, destination, batch, *flags)
    total = await _count(source, retired)
    if progress is not None:
        progress(0, total)
    report = None if progress is None else lambda done: progress(done, total)
    options = (batch, flatten, drop_expiry, retired)
    copied, skipped, shifted = await _copy_pass(source, destination, *options, report)
    for _ in range(MAX_PASSES - 1):
        if not shifted:
            break
        # Memories already copied are skipped by id; not counted, they were counted once.
        more, _, shifted = await _copy_pass(source, destination, *options, None)
        copied += more
    if shifted:
        raise StorageError(
            f"the source kept losing memories while it was copied ({MAX_PASSES} passes): "
            "the copy may lack some; run the migration again when nothing deletes from it"
        )
    versions = 0
    if with_history:
        versions = await _copy_history(source, destination, batch, flatten)
    return MigrationResult(copied=copied, skipped=skipped, versions=versions)


async def _copy_pass(
    source: RecordSource,
    destination: RecordSink,
    batch: int,
    flatten: bool,
    drop_expiry: bool,
    retired: bool,
    report: Callable[[int], None] | None,
) -> tuple[int, int, bool]:
    """Copy the source's memories page by page; return (copied, skipped, shifted).

    ``flatten`` and ``drop_expiry`` are as :func:`migrate` takes them; without ``retired``
    (``drop_superseded``), current memories only, without their world time.
    Pages are read by offset, so a memory that leaves the source meanwhile (deleted, or
    expired) moves every later one a place back, and one would be missed. Each page is
    therefore read together with the last memory of the page before: ``shifted`` says that
    memory was not in its place any more, and that another pass must copy what was missed.
    ``report(done)`` is called after each page.
    """
    done = copied = 0
    last: str | None = None
    shifted = False
    while True:
        if last is None:
            records = await _page(source, 0, batch, retired)
        else:
            records = await _page(source, done - 1, batch + 1, retired)
            if records and records[0].id == last:
                records = records[1:]
            else:
                shifted = True
        if not records:
            break
        _check_text(records)
        if drop_expiry:
            records = [dataclasses.replace(record, expires_at=None) for record in records]
        if not retired:
            records = [
                dataclasses.replace(record, valid_from=None, valid_until=None) for record in records
            ]
        copied += await destination.import_records(_unscoped(records) if flatten else records)
        done += len(records)
        if report is not None:
            report(done)
        last = records[-1].id
        if len(records) < batch:
            break
    return copied, done - copied, shifted


def _check_text(records: Sequence[MemoryRecord]) -> None:
    """Refuse a page holding an id or content no destination can hold, naming it and a remedy.

    A JSON file written by another program may hold a lone surrogate (in an id, or a text),
    which no store can write; the destination would refuse it as "record N" of its batch,
    which names neither the memory nor what to do.
    """
    for record in records:
        field = "id" if has_surrogate(record.id) else "content"
        if field == "id" or has_surrogate(record.content):
            raise InvalidArgumentError(
                f"memory {record.id!r} of the source has {'an id' if field == 'id' else 'text'} "
                "holding a lone surrogate, which the destination cannot store; "
                f"{'give it another id' if field == 'id' else 'correct its text'} in the "
                f"source, or delete it there (agentrecall --path FILE delete "
                f"{_bash_quoted(record.id)}), and migrate again"
            )


def _bash_quoted(text: str) -> str:
    r"""Return ``text`` as bash's ``$'...'`` quoting passes it, lone surrogates as ``\uXXXX``."""
    return "$'" + escape_surrogates(text.replace("\\", "\\\\").replace("'", "\\'")) + "'"


def _check_options(batch: int, *flags: bool) -> None:
    if batch is None:  # check_limit lets None through, meaning "no limit"
        raise InvalidArgumentError("batch must be an integer of at least 1, got None")
    check_limit(batch, "batch")
    names = ("flatten", "drop_history", "drop_expiry", "drop_superseded")
    for flag, value in zip(names, flags, strict=True):
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"{flag} must be True or False, got {value!r}")


async def _copy_history(
    source: RecordSource, destination: RecordSink, batch: int, flatten: bool
) -> int:
    """Copy every replaced version of ``source`` into ``destination``; return how many."""
    reader, writer = cast(VersionSource, source), cast(VersionSink, destination)
    copied = 0
    async with aclosing(reader.versions(batch=batch)) as pages:
        async for page in pages:
            copied += await writer.import_versions(_unscoped(page) if flatten else page)
    return copied


async def _plan(
    source: RecordSource,
    destination: RecordSink,
    batch: int,
    flatten: bool,
    drop_history: bool,
    drop_expiry: bool,
    retired: bool,
) -> bool:
    """Return whether to copy history; refuse a copy that would lose scopes, expiry or history.

    ``retired`` is false with ``drop_superseded``: then retirement and world time are
    dropped on purpose, not lost.
    """
    has, takes = _capabilities(source), _capabilities(destination)
    scopes = Capability.SCOPE in has and Capability.SCOPE not in takes and not flatten
    expiry = Capability.EXPIRY in has and Capability.EXPIRY not in takes and not drop_expiry
    changes = Capability.SUPERSEDE in has and Capability.SUPERSEDE not in takes and retired
    if scopes or expiry or changes:
        # One reading of the source finds the first memory that would lose any of them.
        lossy = await _first_of(
            source,
            batch,
            retired,
            lambda record: (
                (scopes and bool(_scope_label(record)))
                or (expiry and record.expires_at is not None)
                or (changes and _changed(record))
            ),
        )
        if lossy is not None:
            raise InvalidArgumentError(_loss(lossy, scopes, expiry))
    if Capability.HISTORY not in has or drop_history:
        return False
    if Capability.HISTORY in takes:
        return True
    async with aclosing(cast(VersionSource, source).versions(batch=1)) as pages:
        async for _ in pages:
            raise InvalidArgumentError(
                "the source keeps the history of updated, deleted and expired memories and the "
                "destination keeps none: copied, that history would be lost; migrate into an "
                "SQLite store, or pass drop_history=True (agentrecall migrate --drop-history) "
                "to copy the memories without it"
            )
    return False


def _changed(record: MemoryRecord) -> bool:
    """Whether ``record`` is retired or carries world time, which only some stores keep."""
    return any(getattr(record, key) is not None for key in _CHANGE_FIELDS)


_CHANGE_FIELDS = ("invalidated_at", "superseded_by", "valid_from", "valid_until")


def _loss(record: MemoryRecord, scopes: bool, expiry: bool) -> str:
    """Say what copying ``record`` would lose: its scope, expiry or change, as checked and held."""
    if not (scopes and _scope_label(record)) and not (expiry and record.expires_at is not None):
        what = (
            f"was retired by memory {record.superseded_by} at {record.invalidated_at}"
            if record.invalidated_at is not None
            else "says when its fact was true in the world (valid_from, valid_until)"
        )
        return (
            f"the source holds memories that changed (memory {record.id} {what}) and the "
            "destination keeps no retired memories or world time: copied, a retired memory "
            "would be current again; migrate into an SQLite or PostgreSQL store, or pass "
            "drop_superseded=True (agentrecall migrate --drop-superseded) to copy the current "
            "memories only, without world time"
        )
    if scopes and _scope_label(record):
        return (
            f"the source holds scoped memories (memory {record.id} belongs to "
            f"{_scope_label(record)}) and the destination keeps no scopes: copied, they "
            "would become one unscoped pile, equal texts of different scopes merged; "
            "migrate into an SQLite store, or pass flatten=True (agentrecall migrate "
            "--flatten) to copy them unscoped all the same"
        )
    return (
        f"the source holds memories that expire (memory {record.id} expires at "
        f"{record.expires_at}) and the destination keeps no expiry: copied, they would be "
        "kept for good; migrate into an SQLite store, or pass drop_expiry=True (agentrecall "
        "migrate --drop-expiry) to copy them without their expiry all the same"
    )


async def _first_of(
    source: RecordSource, batch: int, retired: bool, wanted: Callable[[MemoryRecord], bool]
) -> MemoryRecord | None:
    """Return the first memory of ``source`` (``retired`` ones too) that is ``wanted``."""
    done = 0
    while True:
        records = await _page(source, done, batch, retired)
        for record in records:
            if wanted(record):
                return record
        if len(records) < batch:
            return None
        done += len(records)


def _capabilities(store: object) -> frozenset[Capability]:
    return frozenset(getattr(store, "capabilities", ()))


async def _page(source: RecordSource, offset: int, limit: int, retired: bool) -> list[MemoryRecord]:
    """Return a page of the source's memories, with ``retired`` its retired ones too."""
    if retired and Capability.SUPERSEDE in _capabilities(source):
        every: list[MemoryRecord] = await cast(Any, source).list(
            offset=offset, limit=limit, include_superseded=True
        )
        return every
    return await source.list(offset=offset, limit=limit)


async def _count(source: RecordSource, retired: bool) -> int:
    """Return how many memories :func:`_page` gives in all."""
    if retired and Capability.SUPERSEDE in _capabilities(source):
        total: int = await cast(Any, source).count(include_superseded=True)
        return total
    return await source.count()


def _scope_label(item: MemoryRecord | MemoryVersion) -> str:
    """Return ``user_id='ana', session_id='s1'``-style text; empty for an unscoped item."""
    ids = {key: getattr(item, key) for key in ("user_id", "agent_id", "session_id")}
    return ", ".join(f"{key}={value!r}" for key, value in ids.items() if value is not None)


def _unscoped(items: Sequence[Any]) -> list[Any]:
    """Return copies of records or versions without their scope ids."""
    return [
        dataclasses.replace(item, user_id=None, agent_id=None, session_id=None) for item in items
    ]


def store_kind(path: str | os.PathLike[str]) -> str:
    """Return the kind of store ``path`` names: ``"json"``, ``"sqlite"`` or ``"postgres"``.

    A file's kind is its extension's; a PostgreSQL URL's is ``"postgres"``.

    Raises:
        InvalidArgumentError: the extension is none of :data:`STORE_SUFFIXES`.
    """
    if is_postgres_url(path):
        return "postgres"
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    kind = STORE_SUFFIXES.get(suffix)
    if kind is None:
        known = ", ".join(STORE_SUFFIXES)
        raise InvalidArgumentError(
            f"cannot tell the kind of store of {os.fspath(path)!r}: use a file ending in {known}, "
            "or a postgresql:// URL"
        )
    return kind


def open_store(
    path: str | os.PathLike[str], *, must_exist: bool = False, embedder: Embedder | None = None
) -> Any:
    """Return the store kept in ``path``, chosen by :func:`store_kind`; no I/O beyond a check.

    A PostgreSQL URL opens its database's ``PostgresStore`` named ``memory`` (schema
    ``agentrecall``); ``must_exist`` does not apply to it. An SQLite or PostgreSQL store gets
    ``embedder``: every memory written through it gets its vector.

    Raises:
        InvalidArgumentError: an unknown extension, ``must_exist`` and no such file, or an
            ``embedder`` for a JSON file, which keeps no vectors.
        ImportError: a PostgreSQL URL without the ``postgres`` extra.
    """
    kind = store_kind(path)
    if kind == "postgres":
        from agentrecall.stores.postgres import PostgresStore

        return PostgresStore(os.fspath(path), embedder=embedder)
    if kind == "json" and embedder is not None:
        raise _no_vectors(path)
    if must_exist and not os.path.isfile(path):
        raise InvalidArgumentError(f"no store file at '{os.fspath(path)}'")
    if kind == "json":
        return JsonFileStore(name="memory", path=path)
    return SQLiteStore(path, embedder=embedder)


def _no_vectors(path: str | os.PathLike[str]) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"embedder: the JSON memory file '{os.fspath(path)}' keeps no vectors for search by "
        "meaning; migrate into an SQLite file or a PostgreSQL database to store them"
    )


async def migrate_files(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
    flatten: bool = False,
    drop_history: bool = False,
    drop_expiry: bool = False,
    drop_superseded: bool = False,
    embedder: Embedder | None = None,
) -> MigrationResult:
    """Copy the store in file ``source`` into the store in file ``destination``.

    The source must exist; the destination is created when missing. Options and errors are
    those of :func:`open_store` and :func:`migrate`, plus an ``InvalidArgumentError`` when
    both name the same file. With ``embedder`` (an SQLite or PostgreSQL destination only:
    a JSON one is refused before anything is read), each memory copied gets its vector in
    the transaction that stores it, the vector :meth:`SQLiteStore.reindex` would store, so
    search by meaning finds it once the migration returns; a destination holding vectors of
    another model (or dimension) is refused by the first batch, which then stores nothing.
    The embedder runs in the store's worker thread, never on the event loop. Memories the
    destination held before keep what they had (a ``reindex`` embeds those without one).
    What a failure (an embedder's too, or an interrupt, such as Ctrl-C) leaves:

    * nothing is written when the source cannot be read, or when the copy would lose scopes,
      expiry or history;
    * a destination that did not exist appears only complete: the copy is written to a hidden
      temporary file beside it and renamed into place at the end, and on failure the
      temporary file is removed, so no destination is left behind;
    * a JSON destination is written once, at the end: an existing one is left as it was;
    * an existing SQLite destination is merged into in place, a batch per transaction: it
      keeps the whole batches already copied, never part of one, and running the migration
      again copies the rest. (It is not replaced by a copy, which would lose what other
      processes write to it meanwhile.)
    """
    if os.fspath(source) == os.fspath(destination) or (
        not is_postgres_url(source)
        and not is_postgres_url(destination)
        and os.path.realpath(source) == os.path.realpath(destination)
    ):
        raise InvalidArgumentError(f"source and destination are the same store: '{source}'")
    kind = store_kind(destination)
    if kind == "json" and embedder is not None:
        raise _no_vectors(destination)
    options: dict[str, Any] = {"batch": batch, "progress": progress}
    options.update(flatten=flatten, drop_history=drop_history, drop_expiry=drop_expiry)
    options.update(drop_superseded=drop_superseded)
    reader = open_store(source, must_exist=True)
    try:
        if kind == "json":
            return await _into_json(reader, JsonFileStore(name="memory", path=destination), options)
        if kind == "postgres":
            # A server's store is merged into a batch per transaction, as an existing SQLite
            # file is: what was copied stays, and running the migration again copies the rest.
            writer = open_store(destination, embedder=embedder)
            try:
                return await migrate(reader, writer, **options)
            finally:
                await writer.aclose()
        return await _into_sqlite(reader, os.fspath(destination), options, embedder)
    finally:
        if not isinstance(reader, JsonFileStore):
            await reader.aclose()


async def _into_json(
    reader: RecordSource, writer: JsonFileStore, options: dict[str, Any]
) -> MigrationResult:
    """Migrate into a JSON file with one write at the end, staging the copy in memory."""
    await writer.count()  # an unreadable destination fails before the source is read
    # A JSON store holds its whole file in memory anyway; staging makes the copy one atomic
    # write instead of a rewrite of the file per batch.
    staging = JsonFileStore(name=writer.name, persist=False)
    staged = await migrate(reader, staging, **options)
    copied = await writer.import_records(await staging.list())
    return MigrationResult(copied=copied, skipped=staged.copied + staged.skipped - copied)


async def _into_sqlite(
    reader: RecordSource, destination: str, options: dict[str, Any], embedder: Embedder | None
) -> MigrationResult:
    """Migrate into an SQLite file: in place if it exists, else through a temporary file."""
    if os.path.lexists(destination):
        # Taking the staging lock sweeps what killed copies into this name left; upkeep only,
        # so a directory the lock file cannot be made in (no copy was staged there) is no error.
        with contextlib.suppress(StorageError):
            (await asyncio.to_thread(StagingLock, os.path.abspath(destination))).release()
        writer = SQLiteStore(destination, embedder=embedder)
        try:
            return await migrate(reader, writer, **options)
        finally:
            await writer.aclose()
    async with staged_sqlite(destination, embedder=embedder) as staged:
        return await migrate(reader, staged, **options)


@asynccontextmanager
async def staged_sqlite(
    destination: str | os.PathLike[str], *, embedder: Embedder | None = None
) -> AsyncIterator[SQLiteStore]:
    """Yield a store in a hidden temporary file beside ``destination``, published on success.

    When the ``with`` block ends without an exception, the store is closed and its file
    takes the name ``destination`` (none is made if nothing was written); on an exception
    (or an interrupt) the temporary file is removed, so ``destination`` appears complete or
    not at all. An existing ``destination`` is never replaced. The store gets ``embedder``,
    as :class:`SQLiteStore` takes it: what is written through it gets its vectors.

    A process killed meanwhile (``SIGKILL``) leaves its temporary files; the next staging
    of ``destination`` removes them, once no live process stages one
    (:mod:`agentrecall._internal.staging`).

    Raises:
        StorageError: ``destination`` was created by something else meanwhile.
    """
    path = os.path.abspath(destination)
    temp = staged_path(path)
    lock = await asyncio.to_thread(StagingLock, path)
    try:
        # No fsync per batch: the file counts only once published, and closing it checkpoints
        # with fsync (synchronous=NORMAL syncs every checkpoint) before the rename.
        writer = SQLiteStore(temp, fsync=False, embedder=embedder)
        published = False
        try:
            yield writer
            # Closing the only connection folds the write-ahead log into the file, so the file
            # alone is the whole database when it is renamed.
            await writer.aclose()
            if os.path.exists(temp):  # nothing written creates no file
                _publish(temp, os.fspath(destination))
            published = True
        finally:
            if not published:
                await writer.aclose()
                remove_staged(temp)
    finally:
        lock.release()


def _publish(temp: str, destination: str) -> None:
    """Give the finished file ``temp`` the name ``destination``, never replacing a file."""
    taken = (
        f"'{destination}' was created by something else during the migration and is left as "
        "it is; run the migration again to copy into it"
    )
    try:
        os.link(temp, destination)
    except FileExistsError as error:
        raise StorageError(taken) from error
    except OSError:
        # A file system without hard links: renaming may replace, so look first.
        if os.path.lexists(destination):
            raise StorageError(taken) from None
        os.replace(temp, destination)
    else:
        os.remove(temp)
    _fsync_directory(os.path.dirname(destination))


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
