"""Writing a batch of memories to any store through the store contract, batch first."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

from agentrecall.types import AddResult, JsonObject

logger = logging.getLogger(__name__)

Item = tuple[str, JsonObject | None]
"""A memory to add: its content and metadata."""


async def add_batch(store: Any, items: Sequence[Item]) -> list[Exception | None]:
    """Add each of ``items`` to ``store``; return each item's error, or ``None`` if stored.

    As :func:`add_batch_results`, without the results.
    """
    return _errors(await add_batch_results(store, items))


async def add_batch_results(
    store: Any, items: Sequence[Item], *, ttl: float | None = None
) -> list[AddResult | Exception | None]:
    """Add each of ``items`` to ``store``; return each item's result, or its error.

    A batch goes to the store's ``add_many`` in one call when it has one (for a JSON file
    store, one file write instead of one per memory). If that call fails, each item is retried
    alone with ``add``, so the outcome is reported item by item exactly as separate adds would
    report it, and one bad item does not sink the others; stores deduplicate identical content,
    so the retry cannot store an item twice. Without ``add_many`` the items are added
    concurrently. ``ttl`` (seconds) goes to every call, so only to a store that takes one.
    A stored item's result is the store's :class:`~agentrecall.types.AddResult` (or one made
    from any object with a string ``id``, such as a Strands store's), or ``None`` when the
    store returned none.
    """
    expiry: dict[str, Any] = {} if ttl is None else {"ttl": ttl}
    add_many = getattr(store, "add_many", None)
    if callable(add_many) and len(items) > 1:
        try:
            results = await add_many(list(items), **expiry)
        except Exception as error:
            name = getattr(store, "name", type(store).__name__)
            logger.info("store '%s': batch add failed (%r); adding one by one", name, error)
        else:
            if isinstance(results, list) and len(results) == len(items):
                return [_result(result) for result in results]
            return [None] * len(items)
    outcomes = await settle([store.add(content, metadata, **expiry) for content, metadata in items])
    return [o if isinstance(o, Exception) else _result(o) for o in outcomes]


def _result(returned: Any) -> AddResult | None:
    """A store's add result as an :class:`AddResult`: any object with a string ``id`` will do."""
    if isinstance(returned, AddResult):
        return returned
    memory_id = getattr(returned, "id", None)
    if not isinstance(memory_id, str):
        return None
    created = getattr(returned, "created", None)
    return AddResult(id=memory_id, created=created if isinstance(created, bool) else None)


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
