"""One event loop owned by a synchronous caller."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from agentrecall._internal import forks
from agentrecall.errors import AgentRecallError

T = TypeVar("T")


class LoopRunner:
    """Runs coroutines to completion on one private event loop, created on first use.

    The loop lives until :meth:`close`, so async resources bound to it (locks, connections)
    survive between calls, unlike ``asyncio.run`` which builds and tears down a loop per call.
    A forked child starts with a loop of its own.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        forks.register(self, in_child=LoopRunner._forget)

    def _forget(self) -> None:
        # The parent's loop may have been running in another thread at the fork, and its
        # selector belongs to the parent: the child's copy is left alone, never used or closed.
        self._loop = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` and return its result.

        Raises:
            AgentRecallError: when called from inside a running event loop, where blocking on a
                second loop would deadlock; ``await`` the async API there instead.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise AgentRecallError(
                "the synchronous API cannot be used inside a running event loop; "
                "await the store's async methods instead"
            )
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        """Close the loop; a later :meth:`run` starts a new one."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()
        self._loop = None
