"""``agentrecall``: the command line, a thin shell over the library.

Without ``--path`` (a JSON file), ``--db`` (an SQLite file) or ``--dsn`` (a PostgreSQL
database, with ``--pg-name`` and ``--pg-schema`` choosing the ``PostgresStore`` in it), the
store is ``SQLiteStore(name=NAME)`` (``--store NAME``, default ``memory``), the file
``$AGENTRECALL_HOME/memory/NAME.db``. Options go before or after the command. The commands
live in modules of their own, each adding its parsers with ``register``:
:mod:`~agentrecall.cli.reading` (with :mod:`~agentrecall.cli.listing`),
:mod:`~agentrecall.cli.writing`,
:mod:`~agentrecall.cli.stats`, :mod:`~agentrecall.cli.upkeep`,
:mod:`~agentrecall.cli.mcp_command` and :mod:`~agentrecall.cli.completion`. Which store is
opened is :mod:`agentrecall.cli.opening`, how a store command runs
:mod:`agentrecall.cli.running`, and how the command ends (its output, errors and exit
status) :mod:`agentrecall.cli.report`. A usage mistake is exit status 2 whether the parser or
a command finds it (:class:`~agentrecall.cli.report.UsageMistake`); a text that starts with
``-`` gets the hint to put it after ``--`` (:mod:`agentrecall.cli.dashes`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from agentrecall import __version__
from agentrecall.cli import (
    completion,
    dashes,
    mcp_command,
    reading,
    report,
    running,
    stats,
    transfer,
    upkeep,
    writing,
)
from agentrecall.cli.options import (
    DEFAULT_STORE,
    POSTGRES_OPTIONS,
    SCOPE_OPTIONS,
    STORE_OPTIONS,
    parents,
)

EPILOG = f"""\
Without --store, --path, --db or --dsn: $AGENTRECALL_HOME/memory/{DEFAULT_STORE}.db
(AGENTRECALL_HOME defaults to ~/.agentrecall). --path and --db name a file that
must exist, except for add, which creates it (but not its directory). --dsn names
a PostgreSQL database; --pg-name and --pg-schema choose the store in it.
Run 'agentrecall COMMAND --help' for a command's options and an example.

"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status.

    0 done, 1 failed, 2 a usage mistake, 130 interrupted, 141 stdout closed early (see
    ``--help``). Every failure is one line on stderr, or one JSON object with ``--json``.
    """
    arguments = sys.argv[1:] if argv is None else list(argv)
    return report.run(lambda: _dispatch(arguments), as_json=_wants_json(arguments))


def parser() -> argparse.ArgumentParser:
    """Return the parser of the whole command line (also what completion is generated from)."""
    shared = parents()
    top = report.Parser(
        prog="agentrecall",
        description="Keep memories and recall them.",
        epilog=EPILOG + report.EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[shared.store],
    )
    top.add_argument("--version", action="version", version=f"agentrecall {__version__}")
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    for module in (reading, writing, stats, upkeep):
        module.register(commands, shared)
    mcp_command.add_parser(commands, shared.store, default=DEFAULT_STORE)
    upkeep.register_file_commands(commands, shared)
    transfer.register(commands, shared)
    completion.register(commands, shared)
    return top


def _dispatch(arguments: list[str]) -> int:
    top = parser()
    try:
        args = top.parse_args(arguments)
    except report.UsageError as error:
        hint = dashes.hint(top, arguments)
        if hint is None:
            raise
        raise report.UsageError(f"{error}; {hint}", error.usage) from error
    try:
        return _run(top, args)
    except report.UsageMistake as mistake:
        # Reported with the usage of the command it was made in, as the parser reports its own.
        command_parser: argparse.ArgumentParser = getattr(args, "parser", top)
        command_parser.error(str(mistake))


def _run(top: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    chosen = [f"--{option}" for option in STORE_OPTIONS if hasattr(args, option)]
    inside = [_flag(option) for option in POSTGRES_OPTIONS if hasattr(args, option)]
    if hasattr(args, "storeless"):
        scoped = [_flag(option) for option in SCOPE_OPTIONS if hasattr(args, option)]
        if chosen or inside or scoped:
            top.error(f"argument {(chosen + inside + scoped)[0]}: not used by '{args.verb}'")
        args.root_parser = top
        storeless: Callable[[argparse.Namespace], int] = args.storeless
        return storeless(args)
    if len(chosen) > 1:
        top.error(f"argument {chosen[1]}: not allowed with argument {chosen[0]}")
    if inside and not hasattr(args, "dsn"):
        top.error(f"argument {inside[0]}: needs --dsn (it names a store in a PostgreSQL database)")
    if hasattr(args, "serve"):  # a server opens its store itself and keeps it open
        serve: Callable[[argparse.Namespace], int] = args.serve
        return serve(args)
    return running.run(args.command, args)


def _flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def _wants_json(arguments: list[str]) -> bool:
    """Whether ``--json`` is among ``arguments``, also when the rest cannot be parsed."""
    probe = report.Parser(add_help=False)
    probe.add_argument("--json", action="store_true")
    try:
        known, _ = probe.parse_known_args(arguments)
    except report.UsageError:
        return False
    return bool(known.json)
