"""Deleting from one store through the store contract, batch first; the causes of failures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentrecall.errors import AggregateMemoryError


async def forget_in_store(store: Any, ids: Sequence[str]) -> int:
    """Delete the memories with ``ids`` from ``store``; return how many it held.

    Uses the store's ``delete_many`` (one write) when it has one, else ``delete`` per id.
    """
    delete_many = getattr(store, "delete_many", None)
    if callable(delete_many):
        return int(await delete_many(list(ids)))
    removed = 0
    for memory_id in dict.fromkeys(ids):
        removed += bool(await store.delete(memory_id))
    return removed


def leaves(error: BaseException | None) -> list[BaseException]:
    """Return the underlying errors: nested ``AggregateMemoryError``s opened up, ``None`` none."""
    if error is None:
        return []
    if isinstance(error, AggregateMemoryError):
        return [leaf for inner in error.errors for leaf in leaves(inner)]
    return [error]
