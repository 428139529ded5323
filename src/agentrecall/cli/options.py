"""The options many commands share, the parsers that carry them, and a command's output.

Shared options go before or after the command: each is defined once on a parent parser that
the top-level parser and every command inherit, with ``default=SUPPRESS`` so that a command's
unset copy never overwrites a value given before it. Read them with ``getattr(args, name,
None)``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentrecall._internal.text import escape_surrogates
from agentrecall.cli import report, values

DEFAULT_STORE = "memory"
"""The store's name without ``--store``: ``$AGENTRECALL_HOME/memory/memory.db``."""

STORE_OPTIONS = ("store", "path", "db", "dsn")
"""The options that choose a store, as attribute names."""

POSTGRES_OPTIONS = ("pg_name", "pg_schema")
"""The options that choose a store inside the database ``--dsn`` names, as attribute names."""

DEFAULT_SCHEMA = "agentrecall"
"""The PostgreSQL schema without ``--pg-schema``: :class:`~agentrecall.PostgresStore`'s own."""

SCOPE_OPTIONS = ("user_id", "agent_id", "session_id")
"""The options that narrow a command to one scope, as attribute names."""

Command = Callable[[Any, argparse.Namespace], int]
"""A store command: ``command(memory, args)`` with ``memory`` a :class:`~agentrecall.SyncStore`."""


@dataclass(frozen=True)
class Parents:
    """The parent parsers commands inherit from.

    Attributes:
        output: ``--json`` alone, for commands that name their files as arguments.
        store: ``--json``, the store's choice (``--store``, ``--path``, ``--db``, or ``--dsn``
            with ``--pg-name`` and ``--pg-schema``) and the scope (``--user-id``,
            ``--agent-id``, ``--session-id``).
    """

    output: argparse.ArgumentParser
    store: argparse.ArgumentParser


def parents() -> Parents:
    """Return new parent parsers."""
    output = report.Parser(add_help=False)
    output.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    store = report.Parser(add_help=False, parents=[output])
    where = store.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        type=values.not_blank("a store name"),
        default=argparse.SUPPRESS,
        metavar="NAME",
        help="the SQLite store $AGENTRECALL_HOME/memory/NAME.db; the default, with NAME "
        f"{DEFAULT_STORE}",
    )
    where.add_argument(
        "--path",
        type=values.not_blank("a JSON file's path"),
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="a JSON store file instead (the format of Strands' TestMemoryStore)",
    )
    where.add_argument(
        "--db",
        type=values.not_blank("an SQLite file's path"),
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="an SQLite store file instead",
    )
    where.add_argument(
        "--dsn",
        type=values.not_blank("a PostgreSQL connection string"),
        default=argparse.SUPPRESS,
        metavar="URL",
        help="a PostgresStore instead, in the database of this connection string "
        "(postgresql://USER@HOST:PORT/DATABASE or 'host=... dbname=...'; keep the password "
        "in PGPASSWORD or ~/.pgpass, out of the command line)",
    )
    server = store.add_argument_group("PostgreSQL (with --dsn)")
    server.add_argument(
        "--pg-name",
        type=values.not_blank("a store name"),
        default=argparse.SUPPRESS,
        metavar="NAME",
        help=f"the store's name in the database (default: {DEFAULT_STORE})",
    )
    server.add_argument(
        "--pg-schema",
        type=values.not_blank("a schema name"),
        default=argparse.SUPPRESS,
        metavar="SCHEMA",
        help=f"the schema holding its tables (default: {DEFAULT_SCHEMA})",
    )
    scope = store.add_argument_group("scope (SQLite and PostgreSQL stores)")
    for option in SCOPE_OPTIONS:
        flag = "--" + option.replace("_", "-")
        what = option.removesuffix("_id")
        scope.add_argument(
            flag,
            type=values.scope_id,
            default=argparse.SUPPRESS,
            metavar="ID",
            help=f"only the memories of this {what}",
        )
    return Parents(output=output, store=store)


def command(
    commands: Any,
    name: str,
    parent: argparse.ArgumentParser,
    *,
    help: str,
    example: str,
    **options: Any,
) -> argparse.ArgumentParser:
    """Add the command ``name``, its help ending with ``example`` (one or more lines).

    The command's arguments carry its parser as ``parser``, so that the command can report a
    usage mistake the parser cannot see (``args.parser.error(...)``, exit status 2).
    """
    lines = "\n".join(f"  {line}" for line in example.splitlines())
    epilog = options.pop("epilog", None)
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        parents=[parent],
        help=help,
        description=help[:1].upper() + help[1:] + ".",
        epilog=(f"{epilog}\n\n" if epilog else "") + f"example:\n{lines}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **options,
    )
    parser.set_defaults(parser=parser)  # for a command's own usage errors
    return parser


def wants_json(args: argparse.Namespace) -> bool:
    """Whether ``--json`` was given."""
    return bool(getattr(args, "json", False))


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    r"""Print ``data`` as JSON with ``--json``, else ``text``.

    A lone surrogate (a JSON file another program wrote may hold one, in an id or a text)
    has no bytes in any output encoding: it is written as its escape, ``\ud800``. In JSON
    that is JSON's own escape, which reads back as the same character.
    """
    if wants_json(args):
        report.emit(escape_surrogates(json.dumps(data, ensure_ascii=False, indent=2)))
    else:
        report.emit(report.printable(text))


def scope_of(args: argparse.Namespace) -> dict[str, str]:
    """Return the scope options given, by attribute name."""
    return {name: getattr(args, name) for name in SCOPE_OPTIONS if hasattr(args, name)}
