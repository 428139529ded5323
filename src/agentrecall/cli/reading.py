"""The commands that read a store: ``search``, ``get``, ``list``, ``history`` and ``count``.

Each is a few lines over :class:`~agentrecall.SyncStore`; ``list`` is
:mod:`~agentrecall.cli.listing`, which streams the store a page at a time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from agentrecall.cli import listing, report, tables, values, vectors
from agentrecall.cli.fields import add_bounds, add_moments, bounds, moments, record_json
from agentrecall.cli.options import Parents, command, emit, wants_json
from agentrecall.stores.base import Capability
from agentrecall.sync import SyncStore
from agentrecall.types import MemoryVersion

SEARCH_MODES = ("keyword", "semantic", "hybrid")
SCORE_KEYS = {"_relevanceScore": "score", "_keywordScore": "keyword_score"}
SCORE_KEYS["_semanticScore"] = "semantic_score"
CHANGE_FIELDS = frozenset({"invalidated_at", "superseded_by", "valid_from", "valid_until"})
"""The fields of facts that change, which ``get`` shows as text only when set (``--json``:
always), as most memories never have them."""
RETIRED_KEYS = {"_invalidatedAt": "invalidated_at", "_supersededBy": "superseded_by"}
"""A retired hit's marks in its metadata, and their names in ``--json`` output."""


def register(commands: Any, parents: Parents) -> None:
    """Add the reading commands to ``commands``."""
    _search_parser(commands, parents)
    get = command(
        commands,
        "get",
        parents.store,
        help="show one memory",
        example="agentrecall get ID\nagentrecall get ID --as-of 2025-03-01",
    )
    get.add_argument("id", type=values.memory_id, help="the memory's id")
    add_moments(get, world=False)
    get.set_defaults(command=_get, verb="get", reads_only=True)
    listing.register(commands, parents)
    history = command(
        commands,
        "history",
        parents.store,
        help="show a memory's earlier versions, oldest first, then the current one; with "
        "supersede, those of the memories it replaced and that replaced it",
        epilog="A memory superseded by another (or that superseded others) has a chain: the\n"
        "versions of every memory in it come in the order they were replaced, each naming\n"
        "its memory, a retired memory's naming the one that replaced it.",
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


def _search_parser(commands: Any, parents: Parents) -> None:
    search = command(
        commands,
        "search",
        parents.store,
        help="recall memories for a query, best first",
        example='agentrecall search "which seat does the user like" -n 5\n'
        "agentrecall search seats --mode hybrid --min-score 0.2 --after 2025-01-01\n"
        'agentrecall search "where does the user live" --as-of 2025-03-01\n'
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
        # Asked for retired memories, every row says whether it is one (None: current).
        marks = {name: metadata.pop(key, None) for key, name in RETIRED_KEYS.items()}
        row = {"id": hit.id, **scores, "content": hit.content, "metadata": metadata}
        rows.append(row | marks if args.include_superseded else row)
    if args.min_score is not None:
        rows = [row for row in rows if _number(row.get("score")) >= args.min_score]
    fit = tables.width()
    lines = []
    for rank, row in enumerate(rows, 1):
        lead = f"{rank}. [{_score_text(row.get('score'))}] "
        tail = f"  ({row['id']}{_retired_text(row)})"
        room = None if fit is None else fit - len(lead) - len(tail)
        lines.append(lead + tables.shorten(row["content"], room) + tail)
    emit(args, rows, "\n".join(lines) if lines else "no memories match")
    if args.mode in ("semantic", "hybrid"):  # by meaning: only memories with a vector
        vectors.note_missing(memory, args)
    return report.OK


def _retired_text(row: dict[str, Any]) -> str:
    """``, retired by ID`` after a retired hit's id; ``""`` for a current one."""
    if row.get("invalidated_at") is None:
        return ""
    successor = row.get("superseded_by")
    return f", retired by {successor}" if successor else ", retired"


def _get(memory: SyncStore, args: argparse.Namespace) -> int:
    record = memory.get(args.id, **moments(args))
    if record is None:
        return not_found([args.id], args)
    data = record_json(record)
    fields = [
        (key, _shown(value))
        for key, value in data.items()
        if key != "content" and (value is not None or key not in CHANGE_FIELDS)
    ]
    content = report.printable(record.content)
    text = "\n".join(tables.block(fields, fit=tables.width())) + "\n\n" + content
    emit(args, data, text)
    return report.OK


def _history(memory: SyncStore, args: argparse.Namespace) -> int:
    versions = memory.history(args.id)
    superseding = Capability.SUPERSEDE in _capabilities(memory)
    own = memory.get(args.id, include_superseded=superseding)
    if not versions and own is None:
        return not_found([args.id], args)
    # The chain's memories: every one a version names, as its own or as its successor.
    chain = dict.fromkeys([args.id, *(v.memory_id for v in versions if v.memory_id)])
    chain |= dict.fromkeys(v.superseded_by for v in versions if v.superseded_by)
    current = [own] if own is not None and own.invalidated_at is None else []
    current += [r for i in chain if i != args.id and (r := memory.get(i)) is not None]
    current.sort(key=lambda record: (record.created_at, record.id))
    several = len(chain) > 1  # then each row names its memory
    table = [
        [v.changed_at, *([v.memory_id or ""] if several else []), _change_text(v), v.reason or ""]
        + [v.content]
        for v in versions
    ]
    for record in current:
        since = record.updated_at or record.created_at
        table.append([since, *([record.id] if several else []), "current", "", record.content])
    data = {
        "id": args.id,
        "versions": [dataclasses.asdict(v) for v in versions],
        "current": None if own is None else record_json(own),
        "chain_current": [record_json(record) for record in current],
    }
    emit(args, data, "\n".join(tables.rows(table, fit=tables.width())))
    return report.OK


def _change_text(version: MemoryVersion) -> str:
    """A version's change as the history table shows it: a retirement names its successor."""
    if version.change == "supersede" and version.superseded_by:
        return f"supersede by {version.superseded_by}"
    return version.change


def _capabilities(memory: SyncStore) -> frozenset[Capability]:
    """What the store behind ``memory`` declares."""
    return frozenset(getattr(memory.store, "capabilities", ()))


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
