"""Keeping objects that own locks, threads and connections usable in a forked child.

``os.fork()`` copies only the thread that calls it. A lock another thread held stays locked
in the child forever, a background thread is simply gone, and an open SQLite connection is
shared with the parent. Objects register here to be told about a fork (gunicorn
``--preload``, ``multiprocessing``, Celery prefork and any ``os.fork()``), through
``os.register_at_fork``:

* ``before`` runs in the parent just before the fork, in the forking thread, object by object
  in the order they registered (so two threads forking at once take locks in one order);
* ``in_parent`` runs in the parent after the fork, in the reverse order;
* ``in_child`` runs in the child, in registration order, before any other code of the child.

The registry holds objects weakly: registering never keeps one alive. A hook must not raise
(``os.register_at_fork`` could only print the error); exceptions are left to reach that
report, since a failed hook means a broken object, not a condition to handle.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Hook = Callable[[Any], object]
_Hooks = tuple[_Hook | None, _Hook | None, _Hook]

# Insertion-ordered, like the dict it wraps: the order hooks run in.
_registry: weakref.WeakKeyDictionary[Any, _Hooks] = weakref.WeakKeyDictionary()
_guard = threading.Lock()
# What each forking thread prepared in ``before``, so that ``in_parent`` undoes exactly that
# even if objects registered or died meanwhile.
_forking = threading.local()


def register(
    owner: T,
    *,
    in_child: Callable[[T], object],
    before: Callable[[T], object] | None = None,
    in_parent: Callable[[T], object] | None = None,
) -> None:
    """Call the hooks with ``owner`` around every ``os.fork()`` while ``owner`` lives.

    Pass plain functions or unbound methods (``Class.method``), not bound methods: a bound
    method would keep ``owner`` alive.
    """
    with _guard:
        _registry[owner] = (before, in_parent, in_child)


def _snapshot() -> list[tuple[Any, _Hooks]]:
    with _guard:
        return list(_registry.items())


def _before() -> None:
    prepared = _snapshot()
    _forking.prepared = prepared
    for owner, (before, _, _) in prepared:
        if before is not None:
            before(owner)


def _after_in_parent() -> None:
    prepared: list[tuple[Any, _Hooks]] = getattr(_forking, "prepared", [])
    _forking.prepared = []
    for owner, (_, in_parent, _) in reversed(prepared):
        if in_parent is not None:
            in_parent(owner)


def _after_in_child() -> None:
    global _guard
    # Another thread of the parent may have held it while registering.
    _guard = threading.Lock()
    _forking.prepared = []
    for owner, (_, _, in_child) in _snapshot():
        in_child(owner)


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(
        before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child
    )
