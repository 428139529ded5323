"""Stopping a server on SIGINT (Ctrl-C) or SIGTERM: at any moment, gracefully, in one line."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from types import FrameType
from typing import Protocol

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stoppable(Protocol):
    """What a running server offers to be stopped (``uvicorn.Server`` has both flags)."""

    should_exit: bool
    force_exit: bool


class Stop:
    r"""The SIGINT and SIGTERM a server receives, from :meth:`install` on.

    Guarantees, once installed (in the main thread):

    * neither signal raises ``KeyboardInterrupt`` or ends the process on the spot, however
      early it comes: it is recorded, so a server still starting never starts serving;
    * the first one is reported once through ``report`` (with the signal's name), from the
      event loop once one is :meth:`attach`\ ed (or at once if the signal came before), and
      tells the server, if one is :meth:`serving`, to stop accepting connections and finish
      the requests in flight;
    * a second one tells the server to stop waiting for them; before a server serves, it
      raises ``KeyboardInterrupt`` (give up starting, as after a Ctrl-C anywhere else).
    """

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report
        self._received: list[int] = []
        self._reported = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Stoppable | None = None

    @property
    def requested(self) -> bool:
        """Whether a signal has asked the server to stop."""
        return bool(self._received)

    def install(self) -> None:
        """Take over both signals for this process (call it from the main thread).

        Both are unblocked too: a parent that started the process with them blocked (a
        supervisor in the middle of its own shutdown) gets one it sent already acted on now.
        """
        for number in SIGNALS:
            signal.signal(number, self._receive)
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)

    def attach(self) -> None:
        """Act on signals from the running event loop; report one that came before."""
        self._loop = asyncio.get_running_loop()
        self._act()

    def serving(self, server: Stoppable) -> None:
        """Tell ``server`` of the signals from now on (and of one that already came)."""
        self._server = server
        self._act()

    def _receive(self, number: int, frame: FrameType | None) -> None:
        # A Python signal handler runs between two bytecodes of the main thread, possibly in
        # the middle of the event loop's own code: the loop acts on it as its next callback.
        self._received.append(number)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._act)
        elif len(self._received) > 1:
            raise KeyboardInterrupt  # asked twice before the loop runs: stop starting

    def _act(self) -> None:
        if not self._reported and self._received:
            self._report(signal.Signals(self._received[0]).name)
            self._reported = True
        if self._server is not None and self._received:
            self._server.should_exit = True
            if len(self._received) > 1:
                self._server.force_exit = True
        elif len(self._received) > 1:
            # Asked twice while starting (a database that does not answer, say): the loop
            # ends with this, and the command reports the interruption.
            raise KeyboardInterrupt
