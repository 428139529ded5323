"""A thread of one's own for blocking calls made from async code."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from agentrecall._internal import forks

T = TypeVar("T")

IDLE_SECONDS = 10.0
"""A worker thread with nothing to do for this long ends; the next call starts another."""

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


class Worker:
    """Runs blocking calls one at a time, in order, in one thread, for any event loop.

    ``asyncio.to_thread`` hands each call to a shared pool with a copied context; a store
    whose calls are serialized anyway gains nothing from that and pays for it on every call
    (about 0.06 ms of a 1 ms durable add). Guarantees:

    * :meth:`run` returns the call's result or raises its exception in the caller's loop;
    * calls run in the order they were made, never two at once;
    * a cancelled caller stops waiting, but a call that started runs to its end (as with
      ``to_thread``), so a write is never cut in half;
    * the thread is a daemon, starts on demand and ends after :data:`IDLE_SECONDS` idle;
    * in a forked child it starts afresh: calls waiting in the parent stay the parent's.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        forks.register(self, in_child=Worker._forget)

    def _forget(self) -> None:
        # In a forked child the thread is gone, the jobs waiting for it are the parent's, and
        # the lock may be held for good.
        self._jobs = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._thread = None

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` in the worker thread and return its result."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, function, args))
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._thread.start()
        return await future

    def _serve(self) -> None:
        while True:
            try:
                loop, future, function, args = self._jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._guard:
                    # A job put before this check is served; one put after it starts a thread.
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            try:
                outcome: tuple[bool, Any] = (True, function(*args))
            except BaseException as error:  # handed to the caller, like any result
                outcome = (False, error)
            try:
                loop.call_soon_threadsafe(_settle, future, outcome)
            except RuntimeError:
                pass  # the caller's loop is closed: nobody is waiting any more


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.cancelled():
        return
    succeeded, value = outcome
    if succeeded:
        future.set_result(value)
    else:
        future.set_exception(value)
