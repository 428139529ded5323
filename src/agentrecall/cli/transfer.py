"""``agentrecall export`` and ``agentrecall import``: a store as JSON lines, and back.

The work is :mod:`agentrecall.transfer`; this module opens the stores, shows a progress bar
on a terminal, and says what a failure left. What an import guarantees:

* into a store file that does not exist yet, the import is written to a hidden temporary
  file beside it and renamed into place at the end: the store appears complete, or not at
  all;
* into a JSON file (``--path``), it is one write of the file: all or nothing;
* into an existing SQLite store, or a PostgreSQL one (``--dsn``), each batch of 50,000 lines
  is checked whole and stored in one transaction: a failure keeps the batches before it, the
  error says which lines those were, and running the same import again with
  ``--skip-existing`` adds the rest.

An export of an SQLite or PostgreSQL store is read in one transaction (for PostgreSQL,
``REPEATABLE READ``): one consistent state, whatever is written meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import sys
import uuid
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from agentrecall.cli import embedding, opening, report, running
from agentrecall.cli.options import DEFAULT_STORE, SCOPE_OPTIONS, Parents, command
from agentrecall.cli.progress import terminal_bar
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import AgentRecallError, StorageError
from agentrecall.stores.base import MemoryStore
from agentrecall.stores.sqlite import SQLiteStore

EXPORT_EPILOG = """\
The first line is a header (format "agentrecall-export", its version, the kind of store,
the counts of memories and versions that follow); each further line is one memory or one
replaced version of one. An SQLite or PostgreSQL store is read in one transaction: the file
is one consistent state of the store, written while other processes go on using it."""

IMPORT_EPILOG = """\
FILE is an agentrecall export or a Strands TestMemoryStore JSON file (told apart by their
content). A memory whose id the store already holds stops the import with an error naming
the id and line, unless --skip-existing leaves such memories out. A new store file appears
only complete; an existing SQLite store, or a PostgreSQL one, takes the file in batches of
50,000 lines, one transaction each: after a failure it keeps the batches before the line
named, and the same import run again with --skip-existing adds the rest."""


def register(commands: Any, parents: Parents) -> None:
    """Add ``export`` and ``import`` to ``commands``."""
    export = command(
        commands,
        "export",
        parents.store,
        help="write every memory and its history as JSON lines",
        example="agentrecall --db memory.db export > memory.jsonl\n"
        "agentrecall --db memory.db export --user-id ana --output ana.jsonl",
        epilog=EXPORT_EPILOG,
    )
    export.add_argument(
        "--output", "-o", metavar="FILE", help="write to FILE (replaced whole at the end)"
    )
    export.set_defaults(serve=lambda args: _export(args, DEFAULT_STORE))

    load = command(
        commands,
        "import",
        parents.store,
        help="add the memories of an export or a Strands memory file",
        example="agentrecall --db memory.db export | agentrecall --db copy.db import -\n"
        "agentrecall --db memory.db import strands-memory.json --skip-existing\n"
        "agentrecall --db memory.db import strands-memory.json --embedder local\n"
        "agentrecall --db memory.db export | agentrecall --dsn postgresql://me@db/app import -",
        epilog=IMPORT_EPILOG,
    )
    load.add_argument("file", metavar="FILE", help="the file to read, or - for standard input")
    load.add_argument(
        "--skip-existing",
        action="store_true",
        help="leave out memories whose id the store holds, instead of stopping",
    )
    embedding.add_option(load, each="each imported memory's", later="they get theirs")
    load.set_defaults(serve=lambda args: _import(args, DEFAULT_STORE))


def _export(args: argparse.Namespace, default: str) -> int:
    store = opening.open_store(args, default=default, writable=False)
    view = opening.scoped(store, args)
    scope = {flag: getattr(args, flag, None) for flag in SCOPE_OPTIONS}
    with terminal_bar() as bar:
        if args.output is None:
            # Each write whole or an error: an unbuffered stdout drops the rest of a short write.
            whole = report.standard_output()
            if whole is None:
                sys.stdout.flush()
            stream = sys.stdout.buffer if whole is None else cast(BinaryIO, whole)
            asyncio.run(_exported(store, view, stream, scope, bar))
            return report.OK
        _check_not_the_store(args.output, store)
        with _replacing(args.output) as out:
            header = asyncio.run(_exported(store, view, out, scope, bar))
    data = {"output": args.output, "memories": header.memories, "versions": header.versions}
    text = f"exported {_memories(header.memories)}{_history(header.versions)} to {args.output}"
    _emit(args, data, text)
    return report.OK


async def _exported(
    store: MemoryStore, view: MemoryStore, out: BinaryIO, scope: dict[str, Any], bar: Any
) -> Any:
    from agentrecall.transfer import export_store

    try:
        return await export_store(view, out, scope=scope, progress=bar)
    finally:
        await _close(store)


def _import(args: argparse.Namespace, default: str) -> int:
    args.creates = True
    embedder = running.embedder_of(args)
    store = running.opened(args, default=default, embedder=embedder)
    fresh = isinstance(store, SQLiteStore) and opening.size_of(store.path) is None
    path = opening.shown(store)
    done = _Progress()
    try:
        with _no_cycle_collector(), terminal_bar() as bar, _source(args.file) as (stream, where):
            done.bar = bar
            result = asyncio.run(_imported(store, embedder, fresh, stream, where, args, done))
    except KeyboardInterrupt:
        raise KeyboardInterrupt(_kept(store, fresh, done.count)) from None
    except (AgentRecallError, OSError, ValueError) as error:
        raise AgentRecallError(
            f"{report.describe(error)} ({_kept(store, fresh, done.count)})"
        ) from error
    data = {"format": result.kind, "memories": result.memories, "versions": result.versions}
    data.update(existing=result.existing, skipped=result.skipped, store=path)
    text = f"imported {_memories(result.memories)}{_history(result.versions)} into {path}"
    if result.existing:
        text += f"; left out {result.existing} whose id the store holds"
    if result.skipped:
        text += f"; skipped {result.skipped} (the same text as a memory of their scope, or expired)"
    _emit(args, data, text)
    return report.OK


async def _imported(
    store: MemoryStore,
    embedder: Embedder | None,
    fresh: bool,
    stream: BinaryIO,
    where: str,
    args: argparse.Namespace,
    progress: _Progress,
) -> Any:
    from agentrecall.migrate import staged_sqlite
    from agentrecall.transfer import import_stream

    options: dict[str, Any] = {"skip_existing": args.skip_existing, "progress": progress}
    if not _batched(store):
        options["batch"] = sys.maxsize  # a JSON file is written once: the whole file is one batch
    try:
        if isinstance(store, SQLiteStore) and fresh:
            # Published whole at the end, so how its batches are cut is not seen.
            options["taper"] = True
            async with staged_sqlite(store.path, embedder=embedder) as staged:
                await staged.setup()  # an import of no memories still makes the (empty) store
                return await import_stream(stream, where, opening.scoped(staged, args), **options)
        return await import_stream(stream, where, opening.scoped(store, args), **options)
    finally:
        await _close(store)


class _Progress:
    """Counts the lines stored so far, for the message after a failure, and draws the bar."""

    def __init__(self) -> None:
        self.count = 0
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        self.count = done
        if self.bar is not None:
            self.bar(done, total)


def _batched(store: MemoryStore) -> bool:
    """Whether ``store`` takes an import in batches (a JSON file is one write, all or nothing)."""
    return hasattr(store, "existing_ids")


def _kept(store: MemoryStore, fresh: bool, done: int) -> str:
    if fresh or not _batched(store) or done == 0:
        return "nothing was imported"
    return (
        f"lines 2 to {done + 1} were imported before it; once the file is fixed, the same "
        "import with --skip-existing adds the rest"
    )


@contextlib.contextmanager
def _no_cycle_collector() -> Iterator[None]:
    """Hold off Python's cycle collector for the block, restoring it after.

    An import makes millions of short-lived records, dicts and rows, none in a cycle, and the
    collector kept walking them: about a tenth of an import's CPU time. Nothing it would free
    is made meanwhile, and the command's process ends after the import.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _source(name: str) -> Iterator[tuple[BinaryIO, str]]:
    """Open the file to import (``-``: standard input) and say how errors name it."""
    if name == "-":
        report.reading_stdin()
        yield sys.stdin.buffer, "standard input"
        return
    with open(name, "rb") as stream:
        yield stream, f"'{name}'"


@contextlib.contextmanager
def _replacing(path: str) -> Iterator[BinaryIO]:
    """Yield a temporary file beside ``path`` that becomes ``path`` when the block succeeds.

    The file is fsynced and renamed over ``path``, so ``path`` holds the old bytes or the whole
    new file, never part of one; on failure the temporary file is removed.

    Raises:
        StorageError: the file cannot be created or written.
    """
    from agentrecall.storage.local import _fsync_directory

    directory, name = os.path.split(os.path.abspath(path))
    temp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.exporting")
    try:
        out = open(temp, "xb")  # noqa: SIM115  (closed below, before the rename)
    except OSError as error:
        raise StorageError(f"cannot write '{path}': {error.strerror or error}") from error
    published = False
    try:
        with out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
        _fsync_directory(directory)
        published = True
    except OSError as error:
        raise StorageError(f"cannot write '{path}': {error.strerror or error}") from error
    finally:
        if not published:
            with contextlib.suppress(OSError):
                os.remove(temp)


def _check_not_the_store(output: str, store: MemoryStore) -> None:
    path = getattr(store, "path", None)
    if path and os.path.realpath(output) == os.path.realpath(path):
        raise report.UsageMistake(
            f"--output {output}: that is the store's own file; name another file to write"
        )


async def _close(store: MemoryStore) -> None:
    aclose = getattr(store, "aclose", None)
    if aclose is not None:
        await aclose()


def _memories(count: int) -> str:
    return f"{count} {'memory' if count == 1 else 'memories'}"


def _history(count: int) -> str:
    return f" and {count} {'version' if count == 1 else 'versions'} of history" if count else ""


def _emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    import json

    as_json = getattr(args, "json", False)
    report.emit(json.dumps(data, ensure_ascii=False, indent=2) if as_json else text)
