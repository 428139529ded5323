"""Fixtures, helpers and corpora shared by the sections of the store conformance suite."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any, ClassVar, Protocol

import pytest

from agentrecall._internal import clock as stores_clock
from agentrecall.stores.base import Capability
from agentrecall.stores.times import stored_time
from agentrecall.testing.clock import ManualClock
from agentrecall.types import MemoryEntry, MemoryRecord

TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z")
"""The one shape of every timestamp a store returns."""

FILLER = [
    "Breakfast is usually oatmeal with blueberries",
    "The project deadline moved to Thursday",
    "Their cat is called Pixel",
    "Weekend plans involve hiking near the lake",
]


class StoreFactory(Protocol):
    """Makes the store under test: ``make_store(name, **options)``.

    Each call returns a new store object named ``name``, empty at the start of each test.
    ``options`` are constructor keywords the suite passes through: ``description``,
    ``max_search_results`` and ``writable``. When the class declares ``persistent = True``,
    stores made with the same name during one test share their memories (one file, one
    database); stores made with different names never do.
    """

    def __call__(self, name: str, **options: Any) -> Any:
        """Return a store named ``name`` configured with ``options``."""
        ...


def declared(store: Any) -> frozenset[Capability]:
    """Return the capabilities ``store`` declares (none if it has no ``capabilities``)."""
    return frozenset(getattr(store, "capabilities", ()))


def require(store: Any, *needed: Capability) -> None:
    """Skip the running test unless ``store`` declares every capability in ``needed``."""
    missing = [c for c in needed if c not in declared(store)]
    if missing:
        names = ", ".join(f"Capability.{c.name}" for c in missing)
        pytest.skip(f"{type(store).__name__} does not declare {names}")


def has(store: Any, capability: Capability) -> bool:
    """Return whether ``store`` declares ``capability``."""
    return capability in declared(store)


def contents_of(hits: Iterable[MemoryEntry | MemoryRecord]) -> list[str]:
    """Return the content of each hit or record, in order."""
    return [hit.content for hit in hits]


def score(hit: MemoryEntry) -> float:
    """Return a hit's ``_relevanceScore``, failing the test unless it is a number."""
    assert hit.metadata is not None, "a hit's metadata carries _relevanceScore"
    value = hit.metadata["_relevanceScore"]
    assert isinstance(value, (int, float)) and not isinstance(value, bool), value
    return float(value)


def moment(timestamp: str) -> datetime:
    """Return a stored timestamp as an aware datetime."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


LIFETIME = 60.0
"""Seconds the memories of the expiry tests live. They run out only when the test moves its
:class:`~agentrecall.testing.ManualClock` past them (:func:`run_out`), never while a slow or
loaded machine runs the test's reads."""


async def set_up(store: Any) -> None:
    """Have ``store`` create its tables now, with a write of a memory no test looks at."""
    await store.add("A note written so that the store is set up")


def soon(seconds: float = LIFETIME) -> str:
    """Return the stored time ``seconds`` after the time the stores' clock shows."""
    return stored_time(stores_clock.now() + timedelta(seconds=seconds))


def run_out(manual: ManualClock, expires_at: str) -> None:
    """Move ``manual`` just past ``expires_at``, so that what expires then has expired."""
    manual.advance_past(expires_at)


async def add_all(store: Any, contents: Iterable[str]) -> list[str]:
    """Add one memory after another (so creation order is the given order); return the ids."""
    return [(await store.add(content)).id for content in contents]


async def visible(store: Any, memory_id: str, query: str) -> bool:
    """Return whether any read the store supports still shows the memory."""
    found = memory_id in [hit.id for hit in await store.search(query)]
    if has(store, Capability.GET):
        found = found or await store.get(memory_id) is not None
    if has(store, Capability.LIST):
        found = found or memory_id in [record.id for record in await store.list()]
    return found


class ContractBase:
    """The fixtures and settings every section of the contract uses.

    Attributes:
        persistent: whether stores made with the same name share their memories, so that
            persistence across instances and read-only twins of a store can be tested.
    """

    persistent: ClassVar[bool] = False

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        """Return the factory of the store under test; subclasses must override this fixture."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a make_store fixture returning a StoreFactory"
        )

    @pytest.fixture
    def clock(self) -> Iterator[ManualClock]:
        """A :class:`~agentrecall.testing.ManualClock` in place for the test, for expiry tests.

        It starts at the system's time and moves only when the test moves it. A store that
        reads a clock other than agentrecall's should override this fixture with one that
        controls its own clock the same way.
        """
        with ManualClock() as manual:
            yield manual

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> Any:
        """A fresh, empty, writable store named ``contract``."""
        return make_store("contract")

    def read_only_twin(self, make_store: StoreFactory, name: str) -> Any:
        """A read-only store over ``name``'s memories, or an empty one if stores do not persist."""
        return make_store(name if self.persistent else f"{name}-read-only", writable=False)
