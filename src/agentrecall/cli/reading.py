"""The commands that read a store: ``search``, ``get``, ``list``, ``history`` and ``count``.

Each is a few lines over :class:`~agentrecall.SyncStore`. ``list`` shows the newest memories
first by default, a page at a time (:data:`DEFAULT_LIMIT`), and says how many more there are.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from agentrecall._internal.text import plural
from agentrecall.cli import report, tables, values
from agentrecall.cli.options import Parents, command, emit, wants_json
from agentrecall.stores.base import Capability
from agentrecall.sync import SyncStore
from agentrecall.types import MemoryRecord

DEFAULT_LIMIT = 20
"""Memories ``list`` shows without ``--limit`` or ``--all``."""

SEARCH_MODES = ("keyword", "semantic", "hybrid")
SCORE_KEYS = {"_relevanceScore": "score", "_keywordScore": "keyword_score"}
SCORE_KEYS["_semanticScore"] = "semantic_score"


def register(commands: Any, parents: Parents) -> None:
    """Add the reading commands to ``commands``."""
    _search_parser(commands, parents)
    get = command(
        commands, "get", parents.store, help="show one memory", example="agentrecall get ID"
    )
    get.add_argument("id", type=values.memory_id, help="the memory's id")
    get.set_defaults(command=_get, verb="get", reads_only=True)
    _list_parser(commands, parents)
    history = command(
        commands,
        "history",
        parents.store,
        help="show a memory's earlier versions, oldest first, then the current one",
        example="agentrecall history ID",
    )
    history.add_argument(
        "id", type=values.memory_id, help="the memory's id (a deleted memory's history is kept)"
    )
    history.set_defaults(
        command=_history, verb="history", reads_only=True, needs=Capability.HISTORY
    )
    counting = command(
        commands,
        "count",
        parents.store,
        help="say how many memories there are",
        example='agentrecall count --user-id alice --filter \'{"topic": "travel"}\'',
    )
    add_bounds(counting)
    counting.set_defaults(command=_count, verb="count", reads_only=True)


def add_bounds(parser: argparse.ArgumentParser) -> None:
    """Add ``--filter``, ``--after`` and ``--before`` to ``parser``."""
    parser.add_argument(
        "--filter",
        type=values.metadata_filter,
        metavar="JSON",
        help='metadata conditions, such as \'{"topic": "travel"}\' (SQLite and PostgreSQL stores)',
    )
    parser.add_argument(
        "--after",
        type=values.moment,
        metavar="WHEN",
        help="created at or after this ISO 8601 date or time (a time without offset is local)",
    )
    parser.add_argument("--before", type=values.moment, metavar="WHEN", help="created before")


def bounds(args: argparse.Namespace) -> dict[str, Any]:
    """The filter and time bounds the options give, as ``SyncStore`` keywords."""
    return {"filter": args.filter, "created_after": args.after, "created_before": args.before}


def record_json(record: MemoryRecord) -> dict[str, Any]:
    """A memory as ``--json`` prints it: every field of :class:`~agentrecall.MemoryRecord`."""
    return dataclasses.asdict(record)


def scope_label(item: Any) -> str:
    """``user=alice,session=s1``: the scope a record or version was written in, or ``""``."""
    ids = [(name, getattr(item, f"{name}_id")) for name in ("user", "agent", "session")]
    return ",".join(f"{name}={value}" for name, value in ids if value is not None)


def _search_parser(commands: Any, parents: Parents) -> None:
    search = command(
        commands,
        "search",
        parents.store,
        help="recall memories for a query, best first",
        example='agentrecall search "which seat does the user like" -n 5\n'
        "agentrecall search seats --mode hybrid --min-score 0.2 --after 2025-01-01\n"
        "agentrecall search -- -dark   # a query starting with -, after --",
    )
    search.add_argument(
        "query",
        type=values.utf8,
        help="what to recall (- reads standard input; a query starting with - goes after --)",
    )
    search.add_argument("-n", type=values.count, default=None, help="at most N hits (default 10)")
    search.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        help="keyword (BM25, the default), or by meaning: semantic or hybrid (SQLite and "
        "PostgreSQL stores; the vectors come from --embedder, see reindex)",
    )
    search.add_argument(
        "--embedder",
        metavar="NAME",
        help="the model for --mode semantic or hybrid: 'local' (the default) or MODULE:CALLABLE",
    )
    search.add_argument(
        "--min-score",
        type=values.score,
        metavar="SCORE",
        help="leave out hits scoring below SCORE (scores depend on the mode)",
    )
    add_bounds(search)
    search.set_defaults(command=_search, verb="search", reads_only=True)


def _search(memory: SyncStore, args: argparse.Namespace) -> int:
    options = None if args.mode is None else {"mode": args.mode}
    query = values.content(args.query, None, "query") or ""
    hits = memory.search(query, options, max_search_results=args.n, **bounds(args))
    rows = []
    for hit in hits:
        metadata = dict(hit.metadata or {})
        scores = {name: metadata.pop(key) for key, name in SCORE_KEYS.items() if key in metadata}
        rows.append({"id": hit.id, **scores, "content": hit.content, "metadata": metadata})
    if args.min_score is not None:
        rows = [row for row in rows if _number(row.get("score")) >= args.min_score]
    fit = tables.width()
    lines = []
    for rank, row in enumerate(rows, 1):
        lead, tail = f"{rank}. [{_score_text(row.get('score'))}] ", f"  ({row['id']})"
        room = None if fit is None else fit - len(lead) - len(tail)
        lines.append(lead + tables.shorten(row["content"], room) + tail)
    emit(args, rows, "\n".join(lines) if lines else "no memories match")
    return report.OK


def _get(memory: SyncStore, args: argparse.Namespace) -> int:
    record = memory.get(args.id)
    if record is None:
        return not_found([args.id], args)
    data = record_json(record)
    fields = [(key, _shown(value)) for key, value in data.items() if key != "content"]
    content = report.printable(record.content)
    text = "\n".join(tables.block(fields, fit=tables.width())) + "\n\n" + content
    emit(args, data, text)
    return report.OK


def _list_parser(commands: Any, parents: Parents) -> None:
    listing = command(
        commands,
        "list",
        parents.store,
        help=f"list memories, the last stored first, {DEFAULT_LIMIT} at a time",
        example="agentrecall list\nagentrecall list --oldest --offset 20 --limit 50\n"
        "agentrecall --json list --all --user-id alice > alice.json",
    )
    pages = listing.add_mutually_exclusive_group()
    pages.add_argument(
        "--limit",
        type=values.count,
        default=DEFAULT_LIMIT,
        help=f"at most N (default {DEFAULT_LIMIT})",
    )
    pages.add_argument("--all", action="store_true", help="every memory, no limit")
    listing.add_argument(
        "--offset", type=values.offset, default=0, help="skip the first N (default 0)"
    )
    listing.add_argument("--oldest", action="store_true", help="the first stored first")
    add_bounds(listing)
    listing.set_defaults(command=_list, verb="list", reads_only=True)


def _list(memory: SyncStore, args: argparse.Namespace) -> int:
    total = memory.count(**bounds(args))
    limit = None if args.all else args.limit
    start, end = _window(total, args.offset, limit, oldest=args.oldest)
    records = memory.list(offset=start, limit=end - start, **bounds(args)) if end > start else []
    if not args.oldest:
        records.reverse()
    table = [[r.created_at, r.id, scope_label(r), r.content] for r in records]
    lines = tables.rows(table, fit=tables.width()) or [_nothing(total, args)]
    more = total - args.offset - len(records)
    if more > 0:
        hint = f"{plural(more, 'more memory', 'more memories')}: --offset "
        hint += f"{args.offset + len(records)} shows the next page, --all every one"
        if wants_json(args):
            report.note(hint)
        else:
            lines.append(f"… {hint}")
    emit(args, [record_json(r) for r in records], "\n".join(lines))
    return report.OK


def _nothing(total: int, args: argparse.Namespace) -> str:
    """What ``list`` says when it shows no memory."""
    if total:
        return f"no memories past --offset {args.offset} (there are {total})"
    if any(value is not None for value in bounds(args).values()):
        return "no memories match"
    return "the store is empty"


def _window(total: int, offset: int, limit: int | None, *, oldest: bool) -> tuple[int, int]:
    """The slice ``[start, end)`` of the oldest-first order that a page of ``list`` shows."""
    if oldest:
        start = min(offset, total)
        return start, total if limit is None else min(total, start + limit)
    end = max(total - offset, 0)
    return (0 if limit is None else max(end - limit, 0)), end


def _history(memory: SyncStore, args: argparse.Namespace) -> int:
    versions = memory.history(args.id)
    current = memory.get(args.id)
    if not versions and current is None:
        return not_found([args.id], args)
    table = [[v.changed_at, v.change, v.reason or "", v.content] for v in versions]
    if current is not None:
        table.append([current.updated_at or current.created_at, "current", "", current.content])
    data = {
        "id": args.id,
        "versions": [dataclasses.asdict(v) for v in versions],
        "current": None if current is None else record_json(current),
    }
    emit(args, data, "\n".join(tables.rows(table, fit=tables.width())))
    return report.OK


def _count(memory: SyncStore, args: argparse.Namespace) -> int:
    total = memory.count(**bounds(args))
    emit(args, {"count": total}, str(total))
    return report.OK


def not_found(ids: list[str], args: argparse.Namespace) -> int:
    """Report the ids no memory has, as one error line; return :data:`report.FAILED`."""
    if len(ids) == 1:
        message = f"no memory with id '{ids[0]}'"
    else:
        message = "no memories with ids " + ", ".join(f"'{i}'" for i in ids)
    return report.fail(message, report.FAILED, as_json=wants_json(args))


def _number(score: Any) -> float:
    return float(score) if isinstance(score, (int, float)) else float("-inf")


def _score_text(score: Any) -> str:
    # A BM25 score carries 16 digits; three decimals are enough to read, and --json keeps all.
    return f"{score:.3f}" if isinstance(score, float) else str(score)


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
