"""``agentrecall add|search|list|delete|reindex|eval|migrate``: each command is a few lines.

Without ``--path`` (a JSON file) or ``--db`` (an SQLite file), the store is
``SQLiteStore(name=NAME)`` (``--store NAME``, default ``memory``), the file
``$AGENTRECALL_HOME/memory/NAME.db``. Options go before or after the command. Which store is
opened and what is checked first is :mod:`agentrecall.cli.opening`; how the command ends (its
output, errors and exit status) is :mod:`agentrecall.cli.report`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentrecall import __version__
from agentrecall.cli import mcp_command, opening, report, upgrading
from agentrecall.cli.embedding import LOCAL, embedder_named
from agentrecall.cli.migrating import migrate_to
from agentrecall.errors import InvalidArgumentError
from agentrecall.evaluation import locomo
from agentrecall.migrate import ProgressBar, is_postgres_url, store_kind
from agentrecall.stores.base import MemoryStore
from agentrecall.stores.jsonfile import JsonFileStore
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.sync import SyncStore
from agentrecall.types import JsonObject

DEFAULT_STORE = "memory"

MAX_COUNT = 2**63 - 1
"""The largest ``-n``: SQLite's largest integer."""

Command = Callable[[SyncStore, argparse.Namespace], int]

EVAL_STORES = ("json", "sqlite")
SEARCH_MODES = ("keyword", "semantic", "hybrid")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status.

    0 done, 1 failed, 2 a usage mistake, 130 interrupted, 141 stdout closed early (see
    ``--help``). Every failure is one line on stderr, or one JSON object with ``--json``.
    """
    arguments = sys.argv[1:] if argv is None else list(argv)
    return report.run(lambda: _dispatch(arguments), as_json=_wants_json(arguments))


def _dispatch(arguments: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(arguments)
    chosen = [f"--{option}" for option in ("store", "path", "db") if hasattr(args, option)]
    if hasattr(args, "storeless"):
        if chosen:
            parser.error(f"argument {chosen[0]}: not used by '{args.verb}'")
        storeless: Callable[[argparse.Namespace], int] = args.storeless
        return storeless(args)
    if len(chosen) > 1:
        parser.error(f"argument {chosen[1]}: not allowed with argument {chosen[0]}")
    if hasattr(args, "serve"):  # a server opens its store itself and keeps it open
        serve: Callable[[argparse.Namespace], int] = args.serve
        return serve(args)
    return _run(args.command, args)


def _wants_json(arguments: list[str]) -> bool:
    """Whether ``--json`` is among ``arguments``, also when the rest cannot be parsed."""
    probe = report.Parser(add_help=False)
    probe.add_argument("--json", action="store_true")
    try:
        known, _ = probe.parse_known_args(arguments)
    except report.UsageError:
        return False
    return bool(known.json)


def _run(command: Command, args: argparse.Namespace) -> int:
    # Closing the SyncStore closes an SQLite store's connection, which folds the WAL back into
    # the database file before the command returns, also when run in-process.
    embedder = embedder_named(args.embedder) if hasattr(args, "embedder") else None
    with SyncStore(opening.open_store(args, default=DEFAULT_STORE, embedder=embedder)) as memory:
        upgrading.prepare(memory)
        return command(memory, args)


def _add(memory: SyncStore, args: argparse.Namespace) -> int:
    metadata = _metadata(args.meta)
    result = memory.add(args.text, metadata)
    _emit(args, {"id": result.id}, result.id)
    return report.OK


def _search(memory: SyncStore, args: argparse.Namespace) -> int:
    hits = memory.search(args.query, max_search_results=args.n)
    rows = []
    for hit in hits:
        metadata = dict(hit.metadata or {})
        score = metadata.pop("_relevanceScore", None)
        rows.append({"id": hit.id, "score": score, "content": hit.content, "metadata": metadata})
    lines = [
        f"{i}. [{_score_text(row['score'])}] {report.one_line(row['content'])}  ({row['id']})"
        for i, row in enumerate(rows, 1)
    ]
    _emit(args, rows, "\n".join(lines) if lines else "no memories match")
    return report.OK


def _list(memory: SyncStore, args: argparse.Namespace) -> int:
    records = memory.list()
    rows = [
        {"id": r.id, "content": r.content, "created_at": r.created_at, "metadata": r.metadata}
        for r in records
    ]
    lines = [f"{r.created_at}  {r.id}  {report.one_line(r.content)}" for r in records]
    _emit(args, rows, "\n".join(lines) if lines else "the store is empty")
    return report.OK


def _delete(memory: SyncStore, args: argparse.Namespace) -> int:
    if not memory.delete(args.id):
        message = f"no memory with id '{args.id}'"
        return report.fail(message, report.FAILED, as_json=getattr(args, "json", False))
    _emit(args, {"deleted": args.id}, f"deleted {args.id}")
    return report.OK


def _reindex(memory: SyncStore, args: argparse.Namespace) -> int:
    if not isinstance(memory.store, SQLiteStore):
        if hasattr(args, "path"):
            raise InvalidArgumentError("reindex needs an SQLite store (--store or --db)")
        _emit(args, {"reindexed": 0}, "the store does not exist yet: nothing to reindex")
        return report.OK
    # The bar is for a person watching; a log or a pipe gets only the summary on stdout.
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    try:
        count = memory.reindex(progress=bar)
    finally:
        if bar is not None:
            bar.close()
    model = args.embedder if args.embedder != LOCAL else "the local model"
    text = f"computed {count} {'vector' if count == 1 else 'vectors'} with {model}"
    _emit(args, {"reindexed": count, "path": memory.store.path}, text)
    return report.OK


def _eval_store(args: argparse.Namespace) -> Callable[[Path], MemoryStore]:
    """Return what makes each conversation's store, as the eval options say."""
    if args.engine == "json":
        if args.mode != "keyword" or args.neighbours:
            raise InvalidArgumentError("--mode and --neighbours need --store sqlite")
        return lambda directory: JsonFileStore(name="locomo", path=directory / "memory.json")
    # One embedder for every conversation: the model loads once.
    embedder = None if args.mode == "keyword" else embedder_named(args.embedder)
    return lambda directory: SQLiteStore(
        directory / "memory.db",
        embedder=embedder,
        search_mode=args.mode,
        neighbours=args.neighbours,
    )


def _eval_locomo(args: argparse.Namespace) -> int:
    conversations = locomo.load(args.file)
    rows = asyncio.run(locomo.evaluate(conversations, _eval_store(args)))
    data = [{"group": r.group, "questions": r.questions, **r.means} for r in rows]
    _emit(args, data, locomo.table(rows))
    return report.OK


def _migrate(args: argparse.Namespace) -> int:
    result = migrate_to(
        args.source, args.destination, flatten=args.flatten, drop_history=args.drop_history
    )
    source, destination = _shown_store(args.source), _shown_store(args.destination)
    data: dict[str, object] = {"source": source, "destination": destination}
    data.update(copied=result.copied, skipped=result.skipped, versions=result.versions)
    history = f" and {result.versions} versions of history" if result.versions else ""
    memories = "memory" if result.copied == 1 else "memories"
    text = f"copied {result.copied} {memories}{history} to {destination}"
    text += f" ({result.skipped} skipped)"
    _emit(args, data, text)
    return report.OK


def _shown_store(text: str) -> str:
    """Return a store argument as output shows it: a URL as its server, never its password."""
    if not is_postgres_url(text):
        return text
    from agentrecall._internal.postgres import parse_dsn

    return str(parse_dsn(text))


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
        except RecursionError as error:
            raise ValueError(f"--meta {key}: the JSON value is nested too deeply") from error
        except ValueError:
            metadata[key] = value
    return metadata


def _not_json(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _score_text(score: Any) -> str:
    # A BM25 score carries 16 digits; three decimals are enough to read, and --json keeps all.
    return f"{score:.3f}" if isinstance(score, float) else str(score)


def _count(text: str) -> int:
    """A whole number from 1 to the largest a store can take (SQLite's 64-bit integer)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 1 to {MAX_COUNT}, got {text!r}"
        )
    return value


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        report.emit(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        report.emit(text)


def _parser() -> argparse.ArgumentParser:
    # Shared options are accepted before or after the command; SUPPRESS keeps a subcommand's
    # unset copy from overwriting a value given before it.
    output = report.Parser(add_help=False)
    output.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    common = report.Parser(add_help=False, parents=[output])
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

    parser = report.Parser(
        prog="agentrecall",
        description="Keep memories and recall them.",
        epilog=f"Without --store, --path or --db: $AGENTRECALL_HOME/memory/{DEFAULT_STORE}.db\n"
        "(AGENTRECALL_HOME defaults to ~/.agentrecall). --path and --db name a file that\n"
        "must exist, except for add, which creates it (but not its directory).\n\n"
        + report.EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"agentrecall {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    _store_commands(commands, common)
    mcp_command.add_parser(commands, common, default=DEFAULT_STORE)
    _file_commands(commands, output)
    return parser


def _store_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The commands that work on one store, chosen by ``--store``, ``--path`` or ``--db``."""
    add = commands.add_parser("add", parents=[common], help="add a memory")
    add.add_argument("text", help="what to remember")
    add.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata (repeatable)"
    )
    add.set_defaults(command=_add, creates=True)

    search = commands.add_parser("search", parents=[common], help="recall memories for a query")
    search.add_argument("query")
    search.add_argument("-n", type=_count, default=None, help="at most N hits (default 10)")
    search.set_defaults(command=_search)

    listing = commands.add_parser("list", parents=[common], help="list memories, oldest first")
    listing.set_defaults(command=_list)

    delete = commands.add_parser("delete", parents=[common], help="forget a memory by id")
    delete.add_argument("id")
    delete.set_defaults(command=_delete)

    reindex = commands.add_parser(
        "reindex",
        parents=[common],
        help="compute the vectors for search by meaning: for memories without one, or all of "
        "them for a new model",
    )
    _embedder_option(reindex)
    reindex.set_defaults(command=_reindex)


def _embedder_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder",
        default=LOCAL,
        metavar="NAME",
        help=f"'{LOCAL}' (the default: agentrecall's own model, from the embeddings extra) or "
        "MODULE:CALLABLE returning an embedder",
    )


def _file_commands(commands: Any, output: argparse.ArgumentParser) -> None:
    """The commands that name their files as arguments: no ``--store``, ``--path`` or ``--db``."""
    evaluation = commands.add_parser("eval", parents=[output], help="measure recall on a benchmark")
    benchmarks = evaluation.add_subparsers(required=True, metavar="BENCHMARK")
    recall = benchmarks.add_parser(
        "locomo", parents=[output], help="LoCoMo conversations: is the evidence found?"
    )
    recall.add_argument("file", help="a LoCoMo JSON file")
    recall.add_argument(
        "--store",
        dest="engine",
        choices=EVAL_STORES,
        default="sqlite",
        help="the kind of store to measure (default: sqlite)",
    )
    recall.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default="keyword",
        help="how the SQLite store searches (default: keyword; the others embed the turns)",
    )
    recall.add_argument(
        "--neighbours",
        action="store_true",
        help="conversation mode: a turn's neighbours in its session help its score",
    )
    _embedder_option(recall)
    recall.set_defaults(storeless=_eval_locomo, verb="eval locomo")

    migrate = commands.add_parser(
        "migrate",
        parents=[output],
        help="copy every memory of one store file into another, keeping ids",
    )
    migrate.add_argument(
        "source", type=_store_file, help="a .json, .db or .sqlite file, or a postgresql:// URL"
    )
    migrate.add_argument(
        "destination", type=_store_file, help="created when missing (its directory is not)"
    )
    migrate.add_argument(
        "--flatten", action="store_true", help="copy scoped memories unscoped (into a JSON file)"
    )
    migrate.add_argument(
        "--drop-history", action="store_true", help="copy no history (into a JSON file)"
    )
    migrate.set_defaults(storeless=_migrate, verb="migrate")
