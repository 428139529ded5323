"""``agentrecall add|search|list|delete|eval|migrate``: each command is a few lines.

Without ``--path`` (a JSON file) or ``--db`` (an SQLite file), the store is
``SQLiteStore(name=NAME)`` (``--store NAME``, default ``memory``), the file
``$AGENTRECALL_HOME/memory/NAME.db``. While that file is missing and the JSON file the name used
to mean exists, every command says on stderr how to migrate it; nothing is copied unasked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentrecall.errors import AgentRecallError
from agentrecall.evaluation import locomo
from agentrecall.migrate import ProgressBar, migrate_files, store_kind
from agentrecall.stores.base import MemoryStore
from agentrecall.stores.jsonfile import JsonFileStore
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.sync import SyncStore
from agentrecall.types import JsonObject

DEFAULT_STORE = "memory"

Command = Callable[[SyncStore, argparse.Namespace], int]

EVAL_STORES: dict[str, Callable[[Path], MemoryStore]] = {
    "json": lambda directory: JsonFileStore(name="locomo", path=directory / "memory.json"),
    "sqlite": lambda directory: SQLiteStore(directory / "memory.db"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the exit status: 0 done, 1 failed.

    Usage mistakes exit through argparse with status 2 and its usage message.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    chosen = [f"--{option}" for option in ("store", "path", "db") if hasattr(args, option)]
    if len(chosen) > 1:
        parser.error(f"argument {chosen[1]}: not allowed with argument {chosen[0]}")
    try:
        if hasattr(args, "storeless"):
            storeless: Callable[[argparse.Namespace], int] = args.storeless
            return storeless(args)
        return _run(args.command, args)
    except (AgentRecallError, ValueError) as error:
        print(f"agentrecall: error: {error}", file=sys.stderr)
        return 1


def _run(command: Command, args: argparse.Namespace) -> int:
    # Closing the SyncStore closes an SQLite store's connection, which folds the WAL back into
    # the database file before the command returns, also when run in-process.
    with SyncStore(_open_store(args)) as memory:
        return command(memory, args)


def _open_store(args: argparse.Namespace) -> MemoryStore:
    """Return the store the options name: ``--path`` JSON, ``--db`` SQLite, else SQLite by name.

    A command that does not add answers from an empty store when the SQLite file is missing,
    so reading never creates it.
    """
    if hasattr(args, "path"):
        return JsonFileStore(name=DEFAULT_STORE, path=args.path)
    if hasattr(args, "db"):
        store = SQLiteStore(args.db)
    else:
        store = SQLiteStore(name=getattr(args, "store", DEFAULT_STORE))
        _note_legacy_json(store)
    if not getattr(args, "creates", False) and not os.path.exists(store.path):
        # A read that created an empty database would also end the legacy JSON notice for good.
        return JsonFileStore(name=store.name, persist=False)
    return store


def _note_legacy_json(store: SQLiteStore) -> None:
    """Say on stderr how to copy the JSON file that was this store name's default before."""
    legacy = JsonFileStore(name=store.name).path
    if legacy is None or os.path.exists(store.path) or not os.path.isfile(legacy):
        return
    command = shlex.join(["agentrecall", "migrate", legacy, store.path])
    print(
        f"agentrecall: note: {store.path} does not exist yet, but {legacy} (this store's JSON "
        f"file from before SQLite became the default) does; copy its memories with: {command}",
        file=sys.stderr,
    )


def _add(memory: SyncStore, args: argparse.Namespace) -> int:
    metadata = _metadata(args.meta)
    result = memory.add(args.text, metadata)
    _emit(args, {"id": result.id}, result.id)
    return 0


def _search(memory: SyncStore, args: argparse.Namespace) -> int:
    hits = memory.search(args.query, max_search_results=args.n)
    rows = []
    for hit in hits:
        metadata = dict(hit.metadata or {})
        score = metadata.pop("_relevanceScore", None)
        rows.append({"id": hit.id, "score": score, "content": hit.content, "metadata": metadata})
    lines = [
        f"{i}. [{_score_text(row['score'])}] {_one_line(row['content'])}  ({row['id']})"
        for i, row in enumerate(rows, 1)
    ]
    _emit(args, rows, "\n".join(lines) if lines else "no memories match")
    return 0


def _list(memory: SyncStore, args: argparse.Namespace) -> int:
    records = memory.list()
    rows = [
        {"id": r.id, "content": r.content, "created_at": r.created_at, "metadata": r.metadata}
        for r in records
    ]
    lines = [f"{r.created_at}  {r.id}  {_one_line(r.content)}" for r in records]
    _emit(args, rows, "\n".join(lines) if lines else "the store is empty")
    return 0


def _delete(memory: SyncStore, args: argparse.Namespace) -> int:
    if not memory.delete(args.id):
        print(f"agentrecall: error: no memory with id '{args.id}'", file=sys.stderr)
        return 1
    _emit(args, {"deleted": args.id}, f"deleted {args.id}")
    return 0


def _eval_locomo(args: argparse.Namespace) -> int:
    conversations = locomo.load(args.file)
    rows = asyncio.run(locomo.evaluate(conversations, EVAL_STORES[args.engine]))
    data = [{"group": r.group, "questions": r.questions, **r.means} for r in rows]
    _emit(args, data, locomo.table(rows))
    return 0


def _migrate(args: argparse.Namespace) -> int:
    bar = ProgressBar(sys.stderr)
    try:
        options = {"flatten": args.flatten, "drop_history": args.drop_history}
        result = asyncio.run(migrate_files(args.source, args.destination, progress=bar, **options))
    finally:
        bar.close()
    data = {"source": args.source, "destination": args.destination}
    data.update(copied=result.copied, skipped=result.skipped, versions=result.versions)
    history = f" and {result.versions} versions of history" if result.versions else ""
    text = f"copied {result.copied} memories{history} to {args.destination}"
    text += f" ({result.skipped} skipped)"
    _emit(args, data, text)
    return 0


def _store_file(text: str) -> str:
    try:
        store_kind(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text


def _metadata(pairs: Sequence[str]) -> JsonObject | None:
    """Turn ``KEY=VALUE`` pairs into metadata; a value that parses as JSON is kept as JSON."""
    if not pairs:
        return None
    metadata: JsonObject = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--meta expects KEY=VALUE, got {pair!r}")
        try:
            metadata[key] = json.loads(value, parse_constant=_not_json)
        except ValueError:
            metadata[key] = value
    return metadata


def _not_json(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _score_text(score: Any) -> str:
    # A BM25 score carries 16 digits; three decimals are enough to read, and --json keeps all.
    return f"{score:.3f}" if isinstance(score, float) else str(score)


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        print(text)


def _parser() -> argparse.ArgumentParser:
    # Shared options are accepted before or after the command; SUPPRESS keeps a subcommand's
    # unset copy from overwriting a value given before it.
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="NAME",
        help="the SQLite store $AGENTRECALL_HOME/memory/NAME.db; the default, with NAME "
        f"{DEFAULT_STORE}",
    )
    where.add_argument(
        "--path",
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="a JSON store file instead (the format of Strands' TestMemoryStore)",
    )
    where.add_argument(
        "--db", default=argparse.SUPPRESS, metavar="FILE", help="an SQLite store file instead"
    )
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")

    parser = argparse.ArgumentParser(
        prog="agentrecall",
        description="Keep memories and recall them.",
        epilog=f"Without --store, --path or --db: $AGENTRECALL_HOME/memory/{DEFAULT_STORE}.db "
        "(AGENTRECALL_HOME defaults to ~/.agentrecall).",
        parents=[common],
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    add = commands.add_parser("add", parents=[common], help="add a memory")
    add.add_argument("text", help="what to remember")
    add.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata (repeatable)"
    )
    add.set_defaults(command=_add, creates=True)

    search = commands.add_parser("search", parents=[common], help="recall memories for a query")
    search.add_argument("query")
    search.add_argument("-n", type=_positive_int, default=None, help="at most N hits (default 10)")
    search.set_defaults(command=_search)

    listing = commands.add_parser("list", parents=[common], help="list memories, oldest first")
    listing.set_defaults(command=_list)

    delete = commands.add_parser("delete", parents=[common], help="forget a memory by id")
    delete.add_argument("id")
    delete.set_defaults(command=_delete)

    evaluation = commands.add_parser("eval", help="measure recall on a benchmark")
    benchmarks = evaluation.add_subparsers(required=True, metavar="BENCHMARK")
    recall = benchmarks.add_parser("locomo", help="LoCoMo conversations: is the evidence found?")
    recall.add_argument("file", help="a LoCoMo JSON file")
    recall.add_argument(
        "--store",
        dest="engine",
        choices=sorted(EVAL_STORES),
        default="sqlite",
        help="the kind of store to measure (default: sqlite)",
    )
    recall.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    recall.set_defaults(storeless=_eval_locomo)

    migrate = commands.add_parser(
        "migrate", help="copy every memory of one store file into another, keeping ids"
    )
    migrate.add_argument("source", type=_store_file, help="a .json, .db or .sqlite file")
    migrate.add_argument("destination", type=_store_file, help="created when missing")
    migrate.add_argument("--json", action="store_true", help="print JSON")
    migrate.add_argument(
        "--flatten", action="store_true", help="copy scoped memories unscoped (into a JSON file)"
    )
    migrate.add_argument(
        "--drop-history", action="store_true", help="copy no history (into a JSON file)"
    )
    migrate.set_defaults(storeless=_migrate)
    return parser
