"""Running a piece of deferred work once a burst of requests for it has settled."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from agentrecall._internal import forks


class Debouncer:
    """A thread that runs ``action`` when nudged, once the nudges pause.

    Guarantees:

    * :meth:`nudge` returns at once;
    * ``action`` runs in the thread, never two at once, after a nudge: as soon as no further
      nudge came for ``settle`` seconds, or ``longest`` seconds after the first nudge of a
      burst, whichever is sooner; nudges that arrive while it runs are served by one more run;
    * an exception from ``action`` is swallowed: the work must be safe to leave for the next
      nudge (the caller keeps correctness without it);
    * the thread starts with the first nudge (again after :meth:`stop`, or in a forked child,
      which starts with nothing pending: what the parent asked for is the parent's to do);
      :meth:`stop` ends it without running pending work, and waits for a run in progress.

    ``clock`` gives the seconds the delays are measured in (``time.monotonic`` unless a test
    gives one it moves by hand); the thread checks it again at least every ``settle`` seconds.
    """

    def __init__(
        self,
        action: Callable[[], object],
        *,
        settle: float,
        longest: float,
        name: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._action = action
        self._clock = clock
        self._settle = settle
        self._longest = longest
        self._name = name
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._requested = False
        self._first = self._last = 0.0
        forks.register(self, in_child=Debouncer._forget)

    def _forget(self) -> None:
        # In a forked child the thread is gone, and its locks may be held for good.
        self._guard = threading.Lock()
        self._thread = None
        self._wake, self._stop = threading.Event(), threading.Event()
        self._requested = False

    def nudge(self) -> None:
        """Ask for a run of the action soon."""
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._wake, self._stop = threading.Event(), threading.Event()
                self._thread = threading.Thread(
                    target=self._loop, args=(self._wake, self._stop), name=self._name, daemon=True
                )
                self._thread.start()
            self._last = self._clock()
            if not self._requested:
                # Only the first nudge of a burst wakes the thread; the others just move the
                # time it waits for, which it reads when it wakes (a wake-up per nudge would
                # cost the nudging thread a context switch every time).
                self._requested = True
                self._first = self._last
                self._wake.set()

    def stop(self, timeout: float | None = None) -> bool:
        """End the thread; wait up to ``timeout`` seconds (forever: None) for a run to end.

        Returns whether a nudge is still unserved: the caller may want to do the work itself.
        """
        with self._guard:
            thread, self._thread = self._thread, None
            self._stop.set()
            self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._guard:
            requested, self._requested = self._requested, False
        return requested

    def _loop(self, wake: threading.Event, stop: threading.Event) -> None:
        while True:
            wake.wait()
            if stop.is_set():
                return
            wake.clear()
            while True:
                with self._guard:
                    due = min(self._last + self._settle, self._first + self._longest)
                left = due - self._clock()
                if left <= 0:
                    break
                if stop.wait(min(left, self._settle)):
                    return
            with self._guard:
                if stop.is_set():
                    return
                self._requested = False
            try:
                self._action()
            except Exception:  # noqa: BLE001 - documented: the work is retried on the next nudge
                pass
