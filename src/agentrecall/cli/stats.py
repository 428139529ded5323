"""``agentrecall stats``: what a store (or scope) holds, at a glance.

It reads every memory once, a page at a time through ``list`` (a progress bar on a terminal),
so it works on any store and holds one page in memory, never the store. A store that keeps
retired memories (``supersede``) is read with them, to count them; every other figure is of
the current memories. A PostgreSQL store
has no file: its database is shown instead, and no size (its tables are shared by every store
of its schema, so their size is not this store's).
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentrecall.cli import report, tables, vectors
from agentrecall.cli.options import Parents, command, emit
from agentrecall.cli.progress import terminal_bar
from agentrecall.stores.base import Capability
from agentrecall.sync import SyncStore
from agentrecall.types import MemoryRecord

PAGE = 5_000
"""Memories read per ``list`` call."""
TOP = 10
"""Scope ids and metadata keys shown by name in the text output; ``--json`` lists 100."""
TOP_JSON = 100
SCOPES = ("user_id", "agent_id", "session_id")


def register(commands: Any, parents: Parents) -> None:
    """Add ``stats`` to ``commands``."""
    stats = command(
        commands,
        "stats",
        parents.store,
        help="show how many memories there are (and how many were retired by newer ones), the "
        "file's size (a PostgreSQL store: its database), the oldest and newest, "
        "the scopes, the most used metadata keys and how many have a vector",
        example="agentrecall stats\nagentrecall --json stats --user-id alice",
    )
    stats.set_defaults(command=_stats, verb="stats", reads_only=True)


@dataclass
class Tally:
    """What :func:`tally` counts over the memories.

    ``count`` and every figure but ``retired`` are of the current memories; ``retired`` is
    ``None`` for a store that keeps no retired memories.
    """

    count: int = 0
    retired: int | None = None
    oldest: str | None = None
    newest: str | None = None
    unscoped: int = 0
    scopes: dict[str, Counter[str]] = field(default_factory=lambda: {s: Counter() for s in SCOPES})
    keys: Counter[str] = field(default_factory=Counter)

    def add(self, record: MemoryRecord) -> None:
        """Count ``record``."""
        if record.invalidated_at is not None:
            self.retired = (self.retired or 0) + 1
            return
        self.count += 1
        created = record.created_at
        self.oldest = created if self.oldest is None else min(self.oldest, created)
        self.newest = created if self.newest is None else max(self.newest, created)
        ids = {scope: getattr(record, scope) for scope in SCOPES}
        for scope, value in ids.items():
            if value is not None:
                self.scopes[scope][value] += 1
        if not any(value is not None for value in ids.values()):
            self.unscoped += 1
        self.keys.update((record.metadata or {}).keys())


def tally(memory: SyncStore) -> Tally:
    """Count what ``memory`` holds, a page at a time, showing progress on a terminal."""
    counted = Tally()
    retiring = Capability.SUPERSEDE in getattr(memory.store, "capabilities", ())
    if retiring:
        counted.retired = 0
    total = memory.count(include_superseded=retiring)
    read = 0
    with terminal_bar() as bar:
        while read < total:
            page = memory.list(offset=read, limit=PAGE, include_superseded=retiring)
            if not page:
                break  # memories deleted meanwhile
            for record in page:
                counted.add(record)
            read += len(page)
            if bar is not None:
                bar(read, total)
    return counted


def _stats(memory: SyncStore, args: argparse.Namespace) -> int:
    counted = tally(memory)
    coverage = vectors.coverage_of(memory)
    store = memory.store
    path: str | None = getattr(store, "path", None)
    size = os.stat(path).st_size if path and os.path.exists(path) else None
    address = getattr(store, "address", None)
    data = {
        "store": store.name,
        "kind": type(store).__name__,
        "path": path,
        "file_size": size,
        "database": None if address is None else str(address),
        "schema": getattr(store, "schema", None),
        "count": counted.count,
        "retired": counted.retired,
        "oldest": counted.oldest,
        "newest": counted.newest,
        "has_scopes": Capability.SCOPE in getattr(store, "capabilities", ()),
        "unscoped": counted.unscoped,
        "scopes": {
            scope: {"distinct": len(ids), "top": dict(ids.most_common(TOP_JSON))}
            for scope, ids in counted.scopes.items()
        },
        "metadata_keys": {
            "distinct": len(counted.keys),
            "top": dict(counted.keys.most_common(TOP_JSON)),
        },
        "vectors": vectors.coverage_json(coverage),
    }
    fields = [*_fields(data, counted), ("vectors", vectors.coverage_text(coverage, args))]
    emit(args, data, "\n".join(tables.block(fields, fit=tables.width())))
    return report.OK


def _fields(data: dict[str, Any], counted: Tally) -> list[tuple[str, str]]:
    size = data["file_size"]
    fields = [("store", f"{data['store']} ({data['kind']})")]
    if data["database"] is not None:
        # The address reads "database 'x' on host:port": under the label "server", not twice.
        fields.append(("server", f"{data['database']}, schema {data['schema']}"))
        fields.append(("size", "- (the schema's tables are shared by all its stores)"))
    else:
        fields.append(("file", data["path"] or "-"))
        fields.append(("size", "-" if size is None else tables.size(size)))
    fields += [
        ("memories", str(counted.count)),
        (
            "retired",
            "- (this kind of store keeps no retired memories)"
            if counted.retired is None
            else str(counted.retired),
        ),
        ("oldest", counted.oldest or "-"),
        ("newest", counted.newest or "-"),
    ]
    if data["has_scopes"]:
        for scope in SCOPES:
            label = scope.removesuffix("_id") + "s"
            fields.append((label, _most_common(counted.scopes[scope])))
        fields.append(("unscoped", str(counted.unscoped)))
    else:
        fields.append(("scopes", "none (this kind of store has no scopes)"))
    fields.append(("metadata keys", _most_common(counted.keys)))
    return fields


def _most_common(counter: Counter[str]) -> str:
    """``3: alice (12), bob (3), carol (1)``: how many, then the most frequent with counts."""
    shown = ", ".join(f"{name} ({n})" for name, n in counter.most_common(TOP))
    rest = len(counter) - TOP
    return (
        f"{len(counter)}"
        + (f": {shown}" if shown else "")
        + (f", … {rest} more" if rest > 0 else "")
    )
