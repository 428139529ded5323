"""The closing section of the store conformance suite: a closed store stays closed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentrecall.errors import StoreClosedError
from agentrecall.stores.base import Capability
from agentrecall.testing._contract_base import ContractBase, StoreFactory, has, require
from agentrecall.types import MemoryRecord

_RECORD = MemoryRecord(id="copied-1", content="Copied", created_at="2024-01-02T03:04:05.000Z")


def _calls(store: Any) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every call of the store's contract it declares, each with arguments it would take."""
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "add": lambda: store.add("Written after the close"),
        "search": lambda: store.search("anything"),
    }
    optional: dict[Capability, dict[str, Callable[[], Awaitable[Any]]]] = {
        Capability.ADD_MANY: {"add_many": lambda: store.add_many([("Batch after", None)])},
        Capability.GET: {"get": lambda: store.get("some-id")},
        Capability.UPDATE: {"update": lambda: store.update("some-id", content="Changed")},
        Capability.DELETE: {"delete": lambda: store.delete("some-id")},
        Capability.LIST: {"list": lambda: store.list()},
        Capability.COUNT: {"count": lambda: store.count()},
        Capability.CLEAR: {"clear": lambda: store.clear()},
        Capability.HISTORY: {"history": lambda: store.history("some-id")},
        Capability.IMPORT: {"import_records": lambda: store.import_records([_RECORD])},
    }
    for capability, more in optional.items():
        if has(store, capability):
            calls.update(more)
    return calls


class ClosingContract(ContractBase):
    """``aclose()`` ends a store object: every later call raises ``StoreClosedError``."""

    @pytest.mark.asyncio
    async def test_closing_ends_the_store_for_every_call(self, store: Any) -> None:
        """After ``aclose()`` each call raises ``StoreClosedError`` naming the store.

        It is not reopened behind its owner's back; closing again is harmless.
        """
        await store.add("Written before the close")
        await store.aclose()
        await store.aclose()
        for call, run in _calls(store).items():
            try:
                await run()
            except StoreClosedError as error:
                assert store.name in str(error), f"{call}: {error}"
            else:
                pytest.fail(f"{call}() ran on a closed store")

    @pytest.mark.asyncio
    async def test_closing_an_unused_store_ends_it_too(self, store: Any) -> None:
        """A store closed before any call refuses its first one."""
        await store.aclose()
        with pytest.raises(StoreClosedError):
            await store.search("anything")

    @pytest.mark.asyncio
    async def test_closing_leaves_async_with_closed(self, store: Any) -> None:
        """Leaving ``async with store:`` closes it: a call after the block is refused."""
        async with store:
            await store.add("Written in the block")
        with pytest.raises(StoreClosedError):
            await store.add("Written after the block")

    @pytest.mark.asyncio
    async def test_closing_a_view_ends_the_store_it_shares_connections_with(
        self, store: Any
    ) -> None:
        """A scope view shares its store's connections, so closing either ends both."""
        require(store, Capability.SCOPE)
        view = store.scope(user_id="ana")
        await view.add("Written through the view")
        await view.aclose()
        with pytest.raises(StoreClosedError):
            await store.search("written")
        with pytest.raises(StoreClosedError):
            await store.scope(user_id="bo").add("Written through a later view")

    @pytest.mark.asyncio
    async def test_closing_keeps_the_memories_for_a_new_store_object(
        self, make_store: StoreFactory
    ) -> None:
        """A new store object over the same memories reads what the closed one wrote."""
        if not self.persistent:
            pytest.skip(f"{type(self).__name__} declares persistent = False")
        closed = make_store("kept")
        first = await closed.add("Remembered after the close")
        await closed.aclose()
        reopened = make_store("kept")
        assert [hit.id for hit in await reopened.search("remembered")] == [first.id]
        await reopened.aclose()
