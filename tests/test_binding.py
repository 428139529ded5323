"""The wait that keeps Python-heavy threads out of bulk inserts' way (``_internal.binding``)."""

from __future__ import annotations

import threading

import pytest

from agentrecall._internal.binding import binding, wait_for_binding


def _waiter() -> tuple[threading.Thread, threading.Event]:
    done = threading.Event()

    def wait() -> None:
        wait_for_binding()
        done.set()

    thread = threading.Thread(target=wait)
    thread.start()
    return thread, done


def test_a_wait_returns_at_once_when_nothing_binds() -> None:
    wait_for_binding()


def test_a_wait_lasts_until_every_insert_under_way_has_bound_its_rows() -> None:
    outer, inner = binding(), binding()
    outer.__enter__()
    inner.__enter__()
    thread, done = _waiter()
    inner.__exit__(None, None, None)
    assert not done.wait(0.05)  # one insert still binds
    outer.__exit__(None, None, None)
    thread.join(10)
    assert done.is_set()


def test_a_failed_insert_ends_its_binding() -> None:
    with pytest.raises(RuntimeError), binding():
        raise RuntimeError("the insert failed")
    thread, done = _waiter()
    thread.join(10)
    assert done.is_set()
