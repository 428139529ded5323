"""What the reading commands share: the filter and time-bound options, and a memory's fields."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from agentrecall.cli import values
from agentrecall.types import MemoryRecord


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
