"""The commands that look after stores as wholes: ``reindex``, ``migrate`` and ``eval locomo``."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentrecall._internal.text import plural
from agentrecall.cli import embedding, opening, report
from agentrecall.cli.embedding import LOCAL, embedder_named
from agentrecall.cli.options import Parents, command, emit
from agentrecall.cli.progress import terminal_bar
from agentrecall.cli.reading import SEARCH_MODES
from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.sync import SyncStore

EVAL_STORES = ("json", "sqlite")


def register(commands: Any, parents: Parents) -> None:
    """Add ``reindex`` (a store command) to ``commands``."""
    reindex = command(
        commands,
        "reindex",
        parents.store,
        help="compute the vectors for search by meaning: for memories without one, or all of "
        "them for a new model",
        example="agentrecall --db team.db reindex\n"
        "agentrecall reindex --embedder agentrecall.testing:HashEmbedder",
    )
    embedder_option(reindex)
    reindex.set_defaults(command=_reindex, verb="reindex", needs=Capability.SEMANTIC)


def register_file_commands(commands: Any, parents: Parents) -> None:
    """Add ``eval`` and ``migrate``, which name their files as arguments, to ``commands``."""
    _eval_parser(commands, parents)
    migrate = command(
        commands,
        "migrate",
        parents.output,
        help="copy every memory of one store into another (files or PostgreSQL), keeping ids",
        example="agentrecall migrate memory.json memory.db\n"
        "agentrecall migrate memory.json memory.db --embedder local",
    )
    migrate.add_argument(
        "source",
        type=_store_file,
        help="a .json, .db, .sqlite or .sqlite3 file, or a postgresql:// URL",
    )
    migrate.add_argument(
        "destination",
        type=_store_file,
        help="as the source; a file is created when missing (its directory is not)",
    )
    migrate.add_argument(
        "--flatten", action="store_true", help="copy scoped memories unscoped (into a JSON file)"
    )
    migrate.add_argument(
        "--drop-history", action="store_true", help="copy no history (into a JSON file)"
    )
    migrate.add_argument(
        "--drop-expiry",
        action="store_true",
        help="copy memories that expire without their expiry, kept for good (into a JSON file)",
    )
    migrate.add_argument(
        "--drop-superseded",
        action="store_true",
        help="copy current memories only, without world time (into a JSON file)",
    )
    embedding.add_option(
        migrate,
        each="each copied memory's",
        later="they get theirs",
    )
    migrate.set_defaults(storeless=_migrate, verb="migrate")


def embedder_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--embedder`` to ``parser``, defaulting to the local model."""
    parser.add_argument(
        "--embedder",
        default=LOCAL,
        metavar="NAME",
        help=f"'{LOCAL}' (the default: agentrecall's own model, from the embeddings extra) or "
        "MODULE:CALLABLE returning an embedder",
    )


def _reindex(memory: SyncStore, args: argparse.Namespace) -> int:
    store = memory.store
    if isinstance(store, SQLiteStore) and opening.size_of(store.path) is None:
        emit(args, {"reindexed": 0}, "the store does not exist yet: nothing to reindex")
        return report.OK
    with terminal_bar() as bar:
        count = memory.reindex(progress=bar)
    model = args.embedder if args.embedder != LOCAL else "the local model"
    text = f"computed {plural(count, 'vector')} with {model}"
    emit(args, {"reindexed": count, "path": getattr(store, "path", None)}, text)
    return report.OK


def _eval_parser(commands: Any, parents: Parents) -> None:
    evaluation = command(
        commands,
        "eval",
        parents.output,
        help="measure recall on a benchmark",
        example="agentrecall eval locomo data/locomo/locomo-dev.json",
    )
    benchmarks = evaluation.add_subparsers(required=True, metavar="BENCHMARK")
    recall = command(
        benchmarks,
        "locomo",
        parents.output,
        help="LoCoMo conversations: is the evidence found?",
        example="agentrecall eval locomo data/locomo/locomo-dev.json --store json",
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
    embedder_option(recall)
    recall.set_defaults(storeless=_eval_locomo, verb="eval locomo")


def _eval_store(args: argparse.Namespace) -> Callable[[Path], MemoryStore]:
    """Return what makes each conversation's store, as the eval options say."""
    if args.engine == "json":
        if args.mode != "keyword" or args.neighbours:
            raise report.UsageMistake("--mode and --neighbours need --store sqlite")
        from agentrecall.stores.jsonfile import JsonFileStore  # loaded only for a JSON store

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
    from agentrecall.evaluation import locomo  # the heavier modules load only when they run

    conversations = locomo.load(args.file)
    rows = asyncio.run(locomo.evaluate(conversations, _eval_store(args)))
    data = [{"group": r.group, "questions": r.questions, **r.means} for r in rows]
    emit(args, data, locomo.table(rows))
    return report.OK


def _migrate(args: argparse.Namespace) -> int:
    from agentrecall.cli.migrating import migrate_to

    result = migrate_to(args)
    source, destination = _shown_store(args.source), _shown_store(args.destination)
    data: dict[str, object] = {"source": source, "destination": destination}
    data.update(copied=result.copied, skipped=result.skipped, versions=result.versions)
    history = f" and {plural(result.versions, 'version')} of history" if result.versions else ""
    text = f"copied {plural(result.copied, 'memory', 'memories')}{history} to {destination}"
    text += f" ({result.skipped} skipped)"
    emit(args, data, text)
    return report.OK


def _shown_store(text: str) -> str:
    """Return a store argument as output shows it: a URL as its server, never its password."""
    from agentrecall.migrate import is_postgres_url

    if not is_postgres_url(text):
        return text
    from agentrecall._internal.postgres import parse_dsn

    return str(parse_dsn(text))


def _store_file(text: str) -> str:
    from agentrecall.migrate import store_kind

    try:
        store_kind(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text
