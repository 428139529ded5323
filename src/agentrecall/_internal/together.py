"""Awaiting two things at once, neither left running when the other fails."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")
U = TypeVar("U")


async def both(first: Awaitable[T], second: Awaitable[U]) -> tuple[T, U]:
    """Return the results of ``first`` and ``second``, awaited at once.

    Both end before an error of either is raised (``first``'s when both fail), so nothing is
    left running on a connection the caller is about to give back.
    """
    one, two = await asyncio.gather(first, second, return_exceptions=True)
    if isinstance(one, BaseException):
        raise one
    if isinstance(two, BaseException):
        raise two
    return one, two
