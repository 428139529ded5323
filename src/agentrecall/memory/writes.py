"""Writing to and deleting from one store through the store contract, batch first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from typing import Any

from agentrecall.errors import AggregateMemoryError
from agentrecall.types import JsonObject

logger = logging.getLogger(__name__)


async def add_to_store(
    store: Any, contents: Sequence[str], metadata: JsonObject | None
) -> list[Exception | None]:
    """Add each of ``contents`` to ``store``; return each entry's error, or ``None`` if stored.

    A batch goes to the store's ``add_many`` in one call when it has one (for a JSON file
    store, one file write). If that call fails, each entry is retried alone with ``add``, so
    the outcome is reported entry by entry exactly as separate adds would report it; stores
    deduplicate identical content, so the retry cannot store an entry twice. Without
    ``add_many`` the entries are added concurrently.
    """
    add_many = getattr(store, "add_many", None)
    if callable(add_many) and len(contents) > 1:
        try:
            await add_many([(content, metadata) for content in contents])
        except Exception as error:
            logger.info("store '%s': batch add failed (%r); adding one by one", store.name, error)
        else:
            return [None] * len(contents)
    return await _settle_each(store.add(content, metadata) for content in contents)


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


async def settle(calls: Sequence[Awaitable[Any]]) -> list[Any]:
    """Await ``calls`` concurrently; return each result or ``Exception``, in order.

    Every call runs to completion even when others fail. Exceptions that are not ``Exception``
    (cancellation, interpreter exit) propagate.
    """
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
            raise outcome
    return outcomes


async def _settle_each(calls: Any) -> list[Exception | None]:
    return [o if isinstance(o, Exception) else None for o in await settle(list(calls))]


def leaves(error: BaseException | None) -> list[BaseException]:
    """Return the underlying errors: nested ``AggregateMemoryError``s opened up, ``None`` none."""
    if error is None:
        return []
    if isinstance(error, AggregateMemoryError):
        return [leaf for inner in error.errors for leaf in leaves(inner)]
    return [error]
