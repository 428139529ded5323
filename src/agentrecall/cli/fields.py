"""What the reading commands share: the filter, time-bound and moment options, a memory's fields."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from agentrecall.cli import values
from agentrecall.stores.times import timestamp
from agentrecall.types import MemoryRecord

SUPERSEDING_STORES = "SQLiteStore and PostgresStore"
"""The stores that keep retired memories and the past, as messages name them."""


def add_bounds(parser: argparse.ArgumentParser) -> None:
    """Add ``--filter``, ``--after``, ``--before`` and the moments (:func:`add_moments`)."""
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
    add_moments(parser)


def add_moments(parser: argparse.ArgumentParser, *, world: bool = True) -> None:
    """Add ``--as-of``, ``--include-superseded`` and, with ``world``, ``--valid-at``.

    Each is ``None`` when not given (``--include-superseded`` too), so that the store check
    (:func:`agentrecall.cli.running.check`) sees only what the user asked for.
    """
    group = parser.add_argument_group(f"changing facts ({SUPERSEDING_STORES})")
    group.add_argument(
        "--as-of",
        type=values.moment,
        metavar="WHEN",
        help="as the store was at this ISO 8601 date or time: what it held then, with the "
        "content it had then",
    )
    if world:
        group.add_argument(
            "--valid-at",
            type=values.moment,
            metavar="WHEN",
            help="only facts true in the world at this date or time (their valid-from and "
            "valid-until; a memory without them is always true)",
        )
    group.add_argument(
        "--include-superseded",
        action="store_true",
        default=None,
        help="also the memories a newer one retired (supersede), marked as retired",
    )


def bounds(args: argparse.Namespace) -> dict[str, Any]:
    """The filter, time bounds and moments the options give, as ``SyncStore`` keywords.

    ``include_superseded`` is there only when asked, so that every value of an unasked bound
    is ``None``.
    """
    given = {"filter": args.filter, "created_after": args.after, "created_before": args.before}
    return given | moments(args)


def moments(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--as-of``, ``--valid-at`` and ``--include-superseded`` given, as keywords."""
    found: dict[str, Any] = {"as_of": args.as_of}
    if hasattr(args, "valid_at"):
        found["valid_at"] = args.valid_at
    if args.include_superseded:
        found["include_superseded"] = True
    return found


def record_json(record: MemoryRecord) -> dict[str, Any]:
    """A memory as ``--json`` prints it: every field of :class:`~agentrecall.MemoryRecord`."""
    return dataclasses.asdict(record)


def retired_label(record: MemoryRecord, as_of: str | None = None) -> str:
    """``retired by ID``: how text output marks a retired memory; ``""`` for a current one.

    With ``as_of`` (the stored shape), a memory retired only after that moment was current
    then, and is not marked.
    """
    retired = record.invalidated_at
    if retired is None or (as_of is not None and retired > as_of):
        return ""
    return f"retired by {record.superseded_by}" if record.superseded_by else "retired"


def as_of_of(args: argparse.Namespace) -> str | None:
    """``--as-of`` in the stored shape, to compare with a memory's times; ``None`` if not given.

    Raises:
        InvalidArgumentError: the moment is outside what a store keeps (the years 1 to 9999).
    """
    return timestamp(getattr(args, "as_of", None), "--as-of")


def scope_label(item: Any) -> str:
    """``user=alice,session=s1``: the scope a record or version was written in, or ``""``."""
    ids = [(name, getattr(item, f"{name}_id")) for name in ("user", "agent", "session")]
    return ",".join(f"{name}={value}" for name, value in ids if value is not None)
