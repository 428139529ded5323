"""The store contract for copies: what a record or a version carries, and what import keeps."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentrecall.stores.base import Capability
from agentrecall.testing._contract_base import (
    ContractBase,
    StoreFactory,
    has,
    require,
    run_out,
    set_up,
    soon,
)
from agentrecall.testing.clock import ManualClock
from agentrecall.types import MemoryRecord, MemoryVersion

CREATED = "2024-05-01T10:00:00.000Z"
CHANGED = "2024-05-02T11:30:00.250Z"


def _record(memory_id: str, content: str, **scope: str) -> MemoryRecord:
    return MemoryRecord(memory_id, content, CREATED, {"copy": memory_id}, **scope)


class ImportContract(ContractBase):
    """Records and versions name their scope; import keeps ids, times, scopes and history."""

    # --- SCOPE: what reads return ---------------------------------------------------------

    @pytest.mark.asyncio
    async def test_scope_records_carry_the_scope_they_were_written_in(self, store: Any) -> None:
        """``get`` and ``list`` give each memory's exact scope, in any view that sees it."""
        require(store, Capability.SCOPE, Capability.GET, Capability.LIST)
        plain = await store.add("Written outside any scope")
        trip = await store.scope(user_id="ana", session_id="trip").add("Packed a raincoat")
        helper = await store.scope(agent_id="helper").add("Speaks French")
        for view in (store, store.scope(user_id="ana")):
            record = await view.get(trip.id)
            assert (record.user_id, record.agent_id, record.session_id) == ("ana", None, "trip")
        listed = {r.id: (r.user_id, r.agent_id, r.session_id) for r in await store.list()}
        assert listed == {
            plain.id: (None, None, None),
            trip.id: ("ana", None, "trip"),
            helper.id: (None, "helper", None),
        }

    # --- IMPORT ---------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_import_keeps_ids_times_and_metadata(self, store: Any) -> None:
        """Imported records read back as given; importing them again adds nothing."""
        require(store, Capability.IMPORT, Capability.LIST)
        records = [_record(f"copy-{n}", f"Copied memory number {n}") for n in range(3)]
        assert await store.import_records(records) == 3
        assert await store.list() == records
        assert await store.import_records(records) == 0

    @pytest.mark.asyncio
    async def test_import_keeps_each_records_scope(self, store: Any) -> None:
        """Into the root store, each record goes to its own scope, deduplicated only there."""
        require(store, Capability.IMPORT, Capability.SCOPE, Capability.LIST)
        records = [
            _record("ana-1", "Likes green tea", user_id="ana"),
            _record("bob-1", "Likes green tea", user_id="bob"),
            _record("bob-2", "Likes green tea", user_id="bob", session_id="s1"),
            _record("bob-3", " Likes green tea ", user_id="bob"),
            _record("none", "Likes green tea"),
        ]
        assert await store.import_records(records) == 4
        assert await store.list() == [r for r in records if r.id != "bob-3"]
        bob = store.scope(user_id="bob")
        assert [r.id for r in await bob.list()] == ["bob-1", "bob-2"]

    @pytest.mark.asyncio
    async def test_import_into_a_view_stays_in_the_view(self, store: Any) -> None:
        """A view stamps its ids on records without them and refuses another scope's."""
        require(store, Capability.IMPORT, Capability.SCOPE, Capability.LIST)
        ana = store.scope(user_id="ana")
        with pytest.raises(ValueError, match="record 1"):
            await ana.import_records([_record("a", "Fine"), _record("b", "No", user_id="bob")])
        assert await store.list() == []
        session = _record("c", "Own", session_id="s1")
        assert await ana.import_records([_record("a", "Fine"), session]) == 2
        scopes = [(r.user_id, r.session_id) for r in await store.list()]
        assert scopes == [("ana", None), ("ana", "s1")]

    @pytest.mark.asyncio
    async def test_import_refuses_scopes_the_store_cannot_hold(self, store: Any) -> None:
        """A store without scopes refuses a scoped record rather than drop its scope."""
        require(store, Capability.IMPORT)
        if has(store, Capability.SCOPE):
            pytest.skip(f"{type(store).__name__} holds scopes")
        with pytest.raises(ValueError, match="record 1"):
            await store.import_records([_record("a", "Fine"), _record("b", "Ana's", user_id="a")])
        if has(store, Capability.COUNT):
            assert await store.count() == 0

    # --- HISTORY: every version, and its copy ---------------------------------------------

    @pytest.mark.asyncio
    async def test_history_versions_name_their_memory_and_scope(self, store: Any) -> None:
        """``versions()`` pages through every version, deleted memories' too, by memory."""
        require(store, Capability.HISTORY, Capability.SCOPE, Capability.UPDATE, Capability.DELETE)
        ana = store.scope(user_id="ana")
        kept = await ana.add("First words")
        await ana.update(kept.id, content="Second words", reason="typo")
        gone = await store.add("Forgotten words")
        await store.delete(gone.id, reason="asked")
        found = [v async for page in store.versions(batch=1) for v in page]
        assert sorted(found, key=lambda v: v.memory_id) == found
        assert {(v.memory_id, v.user_id, v.content, v.change, v.reason) for v in found} == {
            (kept.id, "ana", "First words", "update", "typo"),
            (gone.id, None, "Forgotten words", "delete", "asked"),
        }
        assert await ana.history(kept.id) == [v for v in found if v.memory_id == kept.id]
        assert [v async for page in ana.versions() for v in page] == await ana.history(kept.id)

    @pytest.mark.asyncio
    async def test_history_import_keeps_versions_once(self, store: Any) -> None:
        """Imported versions read back as given, identical ones too; again, none are added."""
        require(store, Capability.HISTORY, Capability.IMPORT, Capability.SCOPE)
        same = MemoryVersion("Old", {"n": 1}, CHANGED, "update", None, "m1", "ana")
        versions = [same, same, MemoryVersion("Gone", None, CHANGED, "delete", "why", "m2")]
        assert await store.import_versions(versions) == 3
        assert await store.import_versions(versions) == 0
        assert await store.history("m1") == [same, same]
        assert await store.scope(user_id="ana").history("m1") == [same, same]
        assert await store.scope(user_id="bob").history("m1") == []
        assert [v async for page in store.versions(batch=1) for v in page] == versions
        with pytest.raises(ValueError, match="version 0"):
            await store.import_versions([MemoryVersion("x", None, CHANGED, "edit", None, "m3")])

    @pytest.mark.asyncio
    async def test_history_copies_across_stores(self, make_store: StoreFactory) -> None:
        """``versions()`` of one store imported into another gives every id the same history."""
        source, copy = make_store("source"), make_store("copy")
        require(source, Capability.HISTORY, Capability.IMPORT, Capability.SCOPE, Capability.UPDATE)
        memory = await source.scope(user_id="ana").add("One")
        for content in ("Two", "Three"):
            await source.update(memory.id, content=content)
        async for page in source.versions(batch=1):
            await copy.import_versions(page)
        assert await copy.history(memory.id) == await source.history(memory.id)
        assert len(await copy.history(memory.id)) == 2

    @pytest.mark.asyncio
    async def test_history_copies_keep_an_expiry_no_write_has_purged(
        self, make_store: StoreFactory, clock: ManualClock
    ) -> None:
        """A copy of ``versions()`` taken before the purge holds the expiry, as after it.

        The purge keeps the version's date (the expiry), so importing the copy again after it
        adds nothing, and both stores give the memory the same history.
        """
        source, copy = make_store("source"), make_store("copy")
        require(source, Capability.HISTORY, Capability.IMPORT, Capability.EXPIRY, Capability.SCOPE)
        await set_up(source)
        expiry = soon()
        memory = await source.scope(user_id="ana").add("Lapsed visa", {"n": 1}, expires_at=expiry)
        run_out(clock, expiry)
        found = [v async for page in source.versions(batch=1) for v in page]
        # A store may record the memory's creation in its versions, or leave it out.
        assert [dataclasses.replace(v, created_at=None) for v in found] == [
            MemoryVersion("Lapsed visa", {"n": 1}, expiry, "expire", None, memory.id, "ana")
        ]
        assert await copy.import_versions(found) == 1
        await source.add("A write, which purges the expired memory")
        assert [v async for page in source.versions(batch=1) for v in page] == found
        assert await copy.import_versions(found) == 0
        assert await copy.history(memory.id) == await source.history(memory.id) == found
