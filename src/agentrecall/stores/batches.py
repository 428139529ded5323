"""Writing a batch of memories to any store through the store contract, batch first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

from agentrecall.types import JsonObject

logger = logging.getLogger(__name__)

Item = tuple[str, JsonObject | None]
"""A memory to add: its content and metadata."""


async def add_batch(store: Any, items: Sequence[Item]) -> list[Exception | None]:
    """Add each of ``items`` to ``store``; return each item's error, or ``None`` if stored.

    A batch goes to the store's ``add_many`` in one call when it has one (for a JSON file
    store, one file write instead of one per memory). If that call fails, each item is retried
    alone with ``add``, so the outcome is reported item by item exactly as separate adds would
    report it, and one bad item does not sink the others; stores deduplicate identical content,
    so the retry cannot store an item twice. Without ``add_many`` the items are added
    concurrently.
    """
    add_many = getattr(store, "add_many", None)
    if callable(add_many) and len(items) > 1:
        try:
            await add_many(list(items))
        except Exception as error:
            name = getattr(store, "name", type(store).__name__)
            logger.info("store '%s': batch add failed (%r); adding one by one", name, error)
        else:
            return [None] * len(items)
    return _errors(await settle([store.add(content, metadata) for content, metadata in items]))


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


def _errors(outcomes: Iterable[Any]) -> list[Exception | None]:
    return [outcome if isinstance(outcome, Exception) else None for outcome in outcomes]
