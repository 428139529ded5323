"""The commands that change a store: ``add``, ``update``, ``supersede``, ``delete``, ``clear``.

Content comes as an argument, from standard input (``-``) or from ``--file``. ``supersede``
adds a memory that replaces others, which stay in the store, retired. ``delete`` takes
several ids and deletes those it finds; ``clear`` asks first, on a terminal, unless ``--yes``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentrecall._internal.text import plural
from agentrecall.cli import embedding, opening, report, values
from agentrecall.cli.fields import SUPERSEDING_STORES, record_json
from agentrecall.cli.options import Parents, command, emit, scope_of, wants_json
from agentrecall.cli.reading import not_found
from agentrecall.stores.base import Capability
from agentrecall.sync import SyncStore
from agentrecall.types import JsonObject

CONTENT_HELP = "the text (- reads standard input)"


def register(commands: Any, parents: Parents) -> None:
    """Add the writing commands to ``commands``."""
    add = command(
        commands,
        "add",
        parents.store,
        help="add a memory",
        example='agentrecall add "The user prefers aisle seats" --meta topic=travel\n'
        "agentrecall add --file notes.txt --ttl 30d --user-id alice\n"
        "echo 'Standup is at 9:30' | agentrecall add -",
    )
    add.add_argument(
        "text",
        nargs="?",
        type=values.text_argument("memory's text"),
        help=f"what to remember: {CONTENT_HELP}",
    )
    _content_options(add)
    add.add_argument(
        "--ttl",
        type=values.duration,
        metavar="TIME",
        help="forget it after this long: seconds, or 90m, 12h, 30d, 2w (SQLite and "
        "PostgreSQL stores)",
    )
    _world_options(add, until=True)
    embedding.add_option(add, each="the memory's", later="the memory gets one")
    add.set_defaults(command=_add, verb="add", creates=True)

    update = command(
        commands,
        "update",
        parents.store,
        help="change a memory's content and/or metadata, keeping the old version in its history",
        example='agentrecall update ID "The user prefers window seats" --reason "asked again"\n'
        "agentrecall update ID --meta priority=1",
    )
    update.add_argument("id", type=values.memory_id, help="the memory's id")
    update.add_argument(
        "text",
        nargs="?",
        type=values.text_argument("new content"),
        help=f"the new content: {CONTENT_HELP}",
    )
    _content_options(update, replaces=True)
    _reason_option(update, "update")
    embedding.add_option(update, each="the memory's", later="the memory gets one")
    update.set_defaults(command=_update, verb="update", needs=Capability.UPDATE)

    supersede = command(
        commands,
        "supersede",
        parents.store,
        help="replace memories by a new one that corrects them; they stay in the store, retired",
        epilog="The old memories are left out of search, list and count from now on, and\n"
        "found again with --include-superseded, or with --as-of a moment before this one;\n"
        "'history ID' shows the chain. Running it again changes nothing. SQLite and\n"
        "PostgreSQL stores.",
        example='agentrecall supersede ID "The user lives in Berlin" --valid-from 2025-03-01\n'
        'agentrecall supersede ID1 --also ID2 "The user drinks tea, not coffee" --reason '
        '"said so"',
    )
    supersede.add_argument("id", type=values.memory_id, help="the id of the memory it replaces")
    supersede.add_argument(
        "text",
        nargs="?",
        type=values.text_argument("new memory's text"),
        help=f"the new memory: {CONTENT_HELP}",
    )
    supersede.add_argument(
        "--also",
        type=values.memory_id,
        action="append",
        default=[],
        metavar="ID",
        help="another memory it replaces (repeatable)",
    )
    _content_options(supersede)
    _reason_option(supersede, "retired memories")
    _world_options(supersede, until=False)
    embedding.add_option(supersede, each="the new memory's", later="the memory gets one")
    supersede.set_defaults(command=_supersede, verb="supersede", needs=Capability.SUPERSEDE)

    delete = command(
        commands,
        "delete",
        parents.store,
        help="forget memories by id",
        epilog="Deletes the memories it finds; exit status 1 when an id was not found.",
        example="agentrecall delete ID\nagentrecall delete ID1 ID2 ID3 --reason outdated",
    )
    delete.add_argument(
        "ids", nargs="+", type=values.memory_id, metavar="ID", help="the memories' ids"
    )
    _reason_option(delete, "deletion")
    delete.set_defaults(command=_delete, verb="delete")

    clear = command(
        commands,
        "clear",
        parents.store,
        help="forget every memory of the store, or of the scope given",
        epilog="Asks first on a terminal; without one, it needs --yes.",
        example="agentrecall clear --session-id s1 --yes",
    )
    clear.add_argument("--yes", "-y", action="store_true", help="do not ask")
    clear.set_defaults(command=_clear, verb="clear", needs=Capability.CLEAR)


def _content_options(parser: argparse.ArgumentParser, *, replaces: bool = False) -> None:
    parser.add_argument("--file", metavar="PATH", help="read the content from this UTF-8 file")
    what = "the metadata (replacing it)" if replaces else "metadata"
    parser.add_argument(
        "--metadata", type=values.json_object, metavar="JSON", help=f"{what} as a JSON object"
    )
    parser.add_argument(
        "--meta",
        type=values.meta_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set one metadata key (repeatable); a VALUE that is JSON is kept as JSON, "
        "anything else (1e999 too, which no number can hold) as the text typed",
    )


def _world_options(parser: argparse.ArgumentParser, *, until: bool) -> None:
    """Add ``--valid-from`` and, with ``until``, ``--valid-until``: the fact's world time."""
    parser.add_argument(
        "--valid-from",
        type=values.moment,
        metavar="WHEN",
        help="when the fact became true in the world: an ISO 8601 date or time ("
        + (
            SUPERSEDING_STORES
            if until
            else f"the ones it replaces stopped being true then; {SUPERSEDING_STORES}"
        )
        + ")",
    )
    if until:
        parser.add_argument(
            "--valid-until",
            type=values.moment,
            metavar="WHEN",
            help=f"when it stopped being true, after --valid-from ({SUPERSEDING_STORES})",
        )


def _reason_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--reason",
        type=values.utf8,
        help=f"why, kept with the {what} in the history (SQLite and PostgreSQL stores)",
    )


def _add(memory: SyncStore, args: argparse.Namespace) -> int:
    content = values.content(args.text, args.file)
    if content is None:
        usage(args).error(
            "add needs the content: an argument, - for standard input, or --file PATH"
        )
    result = memory.add(
        content,
        values.pairs(args.meta, args.metadata),
        ttl=args.ttl,
        valid_from=args.valid_from,
        valid_until=args.valid_until,
    )
    emit(args, {"id": result.id}, result.id)
    return report.OK


def _supersede(memory: SyncStore, args: argparse.Namespace) -> int:
    content = values.content(args.text, args.file, "new content")
    if content is None:
        usage(args).error(
            "supersede needs the new memory's content: an argument, - for standard input, "
            "or --file PATH"
        )
    old_ids = list(dict.fromkeys([args.id, *args.also]))
    # Named as update and delete name them; the store would refuse them too, in its words.
    missing = [i for i in old_ids if memory.get(i, include_superseded=True) is None]
    if missing:
        return not_found(missing, args)
    result = memory.supersede(
        old_ids,
        content,
        metadata=values.pairs(args.meta, args.metadata),
        valid_from=args.valid_from,
        reason=args.reason,
    )
    data = {"id": result.id, "created": result.created, "superseded": old_ids}
    emit(args, data, result.id)
    return report.OK


def _update(memory: SyncStore, args: argparse.Namespace) -> int:
    content = values.content(args.text, args.file, "new content")
    if content is None and args.metadata is None and not args.meta:
        usage(args).error(
            "update needs new content (an argument, - or --file), --metadata or --meta"
        )
    current = memory.get(args.id)
    if current is None:
        return not_found([args.id], args)
    metadata: JsonObject | None = args.metadata
    if args.meta:
        metadata = values.pairs(args.meta, current.metadata if metadata is None else metadata)
    record = memory.update(args.id, content=content, metadata=metadata, reason=args.reason)
    if record is None:  # deleted by another process since the get
        return not_found([args.id], args)
    emit(args, record_json(record), f"updated {record.id}")
    return report.OK


def _delete(memory: SyncStore, args: argparse.Namespace) -> int:
    ids = list(dict.fromkeys(args.ids))
    found = [memory_id for memory_id in ids if memory.get(memory_id) is not None]
    missing = [memory_id for memory_id in ids if memory_id not in found]
    if found:
        memory.delete_many(found, reason=args.reason)
        emit(args, {"deleted": found}, "\n".join(f"deleted {i}" for i in found))
    return not_found(missing, args) if missing else report.OK


def _clear(memory: SyncStore, args: argparse.Namespace) -> int:
    total = memory.count()
    if total == 0:
        emit(args, {"cleared": 0}, "nothing to clear: no memories")
        return report.OK
    where = opening.quoted(memory.store)
    what = f"{plural(total, 'memory', 'memories')}{_of_scope(args)} in {where}"
    if not args.yes:
        if not sys.stdin.isatty():
            message = f"clear would forget {what}: add --yes to confirm (stdin is no terminal)"
            return report.fail(message, report.USAGE, as_json=wants_json(args))
        if not _confirmed(f"forget {what}? [y/N] "):
            return report.fail("cleared nothing", report.FAILED, as_json=wants_json(args))
    cleared = memory.clear()
    emit(args, {"cleared": cleared}, f"cleared {plural(cleared, 'memory', 'memories')}")
    return report.OK


def _of_scope(args: argparse.Namespace) -> str:
    """`` of user_id=alice``: the scope ``clear`` is narrowed to, or ``""``."""
    ids = ", ".join(f"{name}={value}" for name, value in scope_of(args).items())
    return f" of {ids}" if ids else ""


def usage(args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command ``args`` came from, to report a usage mistake with."""
    parser: argparse.ArgumentParser = args.parser
    return parser


def _confirmed(question: str) -> bool:
    """Ask ``question`` on stderr; whether the answer read from stdin is yes."""
    sys.stderr.write(question)
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")
