"""The store contract for the capabilities of production stores: update to history."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.times import stored_time
from agentrecall.testing._contract_base import (
    FILLER,
    LIFETIME,
    TIMESTAMP,
    ContractBase,
    StoreFactory,
    add_all,
    declared,
    has,
    moment,
    require,
    run_out,
    score,
    set_up,
    soon,
    visible,
)
from agentrecall.testing.clock import ManualClock
from agentrecall.types import MemoryRecord, MemoryVersion

BOOKINGS: list[tuple[str, dict[str, Any] | None]] = [
    ("Ana booked a flight to Lisbon", {"user": "ana", "kind": "travel", "rank": 3, "pin": True}),
    ("Ana booked a hotel room", {"user": "ana", "kind": "travel", "rank": 1}),
    (
        "Bob booked a dentist appointment",
        {"user": "bob", "kind": "health", "rank": 2, "pin": False},
    ),
    ("Bob booked concert tickets", {"user": "bob", "rank": "high"}),
    ("Someone booked a table", None),
]
# Filters over BOOKINGS and the positions they select: every operator, typed equality
# (booleans are not numbers, numbers are not strings), missing keys and no metadata at all.
FILTER_CASES: list[tuple[dict[str, Any], list[int]]] = [
    ({}, [0, 1, 2, 3, 4]),
    ({"user": "ana"}, [0, 1]),
    ({"user": {"$eq": "bob"}, "rank": 2}, [2]),
    ({"user": {"$ne": "ana"}}, [2, 3, 4]),
    ({"kind": {"$in": ["health", "travel"]}}, [0, 1, 2]),
    ({"kind": {"$nin": ["travel"]}}, [2, 3, 4]),
    ({"rank": {"$gt": 1}}, [0, 2]),
    ({"rank": {"$gte": 1, "$lt": 3}}, [1, 2]),
    ({"rank": {"$lte": 2.5}}, [1, 2]),
    ({"rank": {"$gt": "a"}}, [3]),
    ({"rank": "3"}, []),
    ({"pin": True}, [0]),
    ({"pin": 1}, []),
    ({"pin": {"$exists": True}}, [0, 2]),
    ({"pin": {"$exists": False}}, [1, 3, 4]),
    ({"user": "ana", "rank": {"$lte": 1}}, [1]),
]


class CapabilityContract(ContractBase):
    """Update, clear, scopes, filters, expiry and history, each where declared."""

    # --- UPDATE ---------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_update_changes_content_in_place(self, store: Any) -> None:
        """``update`` keeps id and creation time; search and dedup follow the new content."""
        require(store, Capability.UPDATE, Capability.GET)
        memory = await store.add("Lives in Lisbon", {"v": 1})
        await add_all(store, FILLER)
        before = await store.get(memory.id)
        updated = await store.update(memory.id, content="Lives in Porto")
        assert isinstance(updated, MemoryRecord)
        assert (updated.id, updated.content, updated.metadata) == (
            memory.id,
            "Lives in Porto",
            {"v": 1},
        )
        assert updated.created_at == before.created_at
        assert updated.updated_at is not None and TIMESTAMP.match(updated.updated_at)
        assert updated.updated_at >= updated.created_at
        assert await store.get(memory.id) == updated
        assert [hit.id for hit in await store.search("Porto")] == [memory.id]
        assert await store.search("Lisbon") == []
        assert (await store.add("Lives in Porto")).id == memory.id
        assert (await store.add("Lives in Lisbon")).id != memory.id

    @pytest.mark.asyncio
    async def test_update_replaces_metadata(self, store: Any) -> None:
        """New metadata replaces the old one whole; content and metadata may change together."""
        require(store, Capability.UPDATE, Capability.GET)
        memory = await store.add("Metadata to replace", {"old": True, "keep": 1})
        updated = await store.update(memory.id, metadata={"new": [1, 2]})
        assert (updated.content, updated.metadata) == ("Metadata to replace", {"new": [1, 2]})
        both = await store.update(memory.id, content="Both replaced", metadata={})
        assert both.content == "Both replaced" and not both.metadata
        assert await store.get(memory.id) == both

    @pytest.mark.asyncio
    async def test_update_of_an_unknown_id_gives_none(self, store: Any) -> None:
        """``update`` of an id the store does not hold returns ``None``."""
        require(store, Capability.UPDATE)
        assert await store.update("no-such-id", content="Anything") is None

    @pytest.mark.asyncio
    async def test_update_refuses_bad_values_and_changes_nothing(self, store: Any) -> None:
        """Blank content, bad metadata or another memory's content raise and change nothing."""
        require(store, Capability.UPDATE, Capability.GET)
        memory = await store.add("Original words", {"v": 1})
        await store.add("Another memory")
        before = await store.get(memory.id)
        for changes in (
            {"content": ""},
            {"content": "   "},
            {"metadata": ["not", "an", "object"]},
            {"content": " Another memory "},  # would duplicate another memory
        ):
            with pytest.raises(ValueError):
                await store.update(memory.id, **changes)
        assert await store.get(memory.id) == before

    @pytest.mark.asyncio
    async def test_update_on_a_read_only_store_is_refused(self, make_store: StoreFactory) -> None:
        """``update`` on a read-only store raises ``ValueError`` and changes nothing."""
        writer = make_store("shared")
        require(writer, Capability.UPDATE, Capability.GET)
        memory = await writer.add("Frozen words")
        read_only = self.read_only_twin(make_store, "shared")
        with pytest.raises(ValueError, match="read-only"):
            await read_only.update(memory.id, content="Changed words")
        assert (await writer.get(memory.id)).content == "Frozen words"

    # --- CLEAR ----------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_clear_forgets_everything(self, store: Any) -> None:
        """``clear`` forgets every memory and returns how many it forgot."""
        require(store, Capability.CLEAR)
        ids = await add_all(store, ["Clear one note", "Clear two note", "Clear three note"])
        assert await store.clear() == 3
        assert await store.search("clear note") == []
        assert not any([await visible(store, i, "note") for i in ids])
        assert await store.clear() == 0
        assert (await store.add("Clear one note")).id not in ids

    @pytest.mark.asyncio
    async def test_clear_on_a_read_only_store_is_refused(self, make_store: StoreFactory) -> None:
        """``clear`` on a read-only store raises ``ValueError`` and forgets nothing."""
        writer = make_store("shared")
        require(writer, Capability.CLEAR)
        memory = await writer.add("Survives a refused clear")
        with pytest.raises(ValueError, match="read-only"):
            await self.read_only_twin(make_store, "shared").clear()
        assert await visible(writer, memory.id, "survives")

    # --- SCOPE ----------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_scope_views_are_named_stores(self, store: Any) -> None:
        """A scope view is a store with a name of its own; blank ids raise ``ValueError``."""
        require(store, Capability.SCOPE)
        ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
        for view in (ana, bob):
            assert isinstance(view, MemoryStore)
            assert isinstance(view.name, str) and view.name
        assert ana.name != bob.name
        for blank in ({"user_id": ""}, {"agent_id": ""}, {"session_id": ""}):
            with pytest.raises(ValueError):
                store.scope(**blank)

    @pytest.mark.asyncio
    async def test_scope_users_never_see_each_other(self, store: Any) -> None:
        """No read or write of one user's view reaches another user's memories."""
        require(store, Capability.SCOPE)
        ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
        ana_note = await ana.add("Ana likes sailing")
        bob_note = await bob.add("Bob likes sailing")
        assert [hit.id for hit in await ana.search("sailing")] == [ana_note.id]
        assert [hit.id for hit in await bob.search("sailing")] == [bob_note.id]
        for view, own, other in ((ana, ana_note.id, bob_note.id), (bob, bob_note.id, ana_note.id)):
            capabilities = declared(view)
            if Capability.GET in capabilities:
                assert await view.get(own) is not None and await view.get(other) is None
            if Capability.LIST in capabilities:
                assert [record.id for record in await view.list()] == [own]
            if Capability.COUNT in capabilities:
                assert await view.count() == 1
            if Capability.UPDATE in capabilities:
                assert await view.update(other, content="Hijacked") is None
            if Capability.DELETE in capabilities:
                assert await view.delete(other) is False
        assert await visible(ana, ana_note.id, "sailing")
        assert await visible(bob, bob_note.id, "sailing")

    @pytest.mark.asyncio
    async def test_scope_sibling_scopes_are_isolated(self, store: Any) -> None:
        """Scopes differing in any one id (user, agent or session) see none of each other's."""
        require(store, Capability.SCOPE)
        siblings = [
            ({"user_id": "u1"}, {"user_id": "u2"}),
            ({"agent_id": "a1"}, {"agent_id": "a2"}),
            ({"session_id": "s1"}, {"session_id": "s2"}),
            ({"user_id": "u", "session_id": "s1"}, {"user_id": "u", "session_id": "s2"}),
            ({"user_id": "u", "agent_id": "a1"}, {"user_id": "u", "agent_id": "a2"}),
        ]
        for number, (one, other) in enumerate(siblings):
            word = f"sibling{number}"
            memory = await store.scope(**one).add(f"Note for {word}")
            assert await store.scope(**other).search(word) == [], (one, other)
            assert [hit.id for hit in await store.scope(**one).search(word)] == [memory.id]

    @pytest.mark.asyncio
    async def test_scope_dedup_is_per_scope(self, store: Any) -> None:
        """The same content in two scopes is two memories; within one scope it dedups."""
        require(store, Capability.SCOPE)
        ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
        first = await ana.add("Prefers window seats")
        assert (await ana.add(" Prefers window seats ")).id == first.id
        assert (await bob.add("Prefers window seats")).id != first.id

    @pytest.mark.asyncio
    async def test_scope_reopened_sees_its_writes(self, make_store: StoreFactory) -> None:
        """A scope opened again, even on a new store object, sees what it wrote."""
        store = make_store("scoped")
        require(store, Capability.SCOPE)
        memory = await store.scope(user_id="ana", session_id="trip").add("Packed a raincoat")
        again = store.scope(user_id="ana", session_id="trip")
        assert [hit.id for hit in await again.search("raincoat")] == [memory.id]
        if self.persistent:
            reopened = make_store("scoped").scope(user_id="ana", session_id="trip")
            assert [hit.id for hit in await reopened.search("raincoat")] == [memory.id]

    # --- FILTER ---------------------------------------------------------------------------

    async def _bookings(self, store: Any, *, filler: bool = True) -> list[str]:
        """Add the booking memories (and, unless told not to, filler); return their ids."""
        require(store, Capability.FILTER)
        ids = [(await store.add(content, metadata)).id for content, metadata in BOOKINGS]
        if filler:  # memories without the query's words, which no filtered search may return
            await add_all(store, FILLER)
        return ids

    @pytest.mark.asyncio
    async def test_filter_search_keeps_only_matching_hits(self, store: Any) -> None:
        """``search(filter=)`` returns only the matching memories, still best first."""
        ids = await self._bookings(store)
        for filter, positions in FILTER_CASES:
            hits = await store.search("booked", filter=filter)
            assert sorted(hit.id for hit in hits) == sorted(ids[p] for p in positions), filter
            scores = [score(hit) for hit in hits]
            assert scores == sorted(scores, reverse=True)
        capped = await store.search("booked", {"max_search_results": 1}, filter={"user": "bob"})
        assert len(capped) == 1 and capped[0].id in (ids[2], ids[3])

    @pytest.mark.asyncio
    async def test_filter_list_and_count(self, store: Any) -> None:
        """``list(filter=)`` and ``count(filter=)`` select the same memories as search does."""
        require(store, Capability.LIST, Capability.COUNT)
        ids = await self._bookings(store, filler=False)
        for filter, positions in FILTER_CASES:
            records = await store.list(filter=filter)
            assert [record.id for record in records] == [ids[p] for p in positions], filter
            assert await store.count(filter=filter) == len(positions), filter
        assert [r.id for r in await store.list(filter={"user": "ana"}, offset=1)] == [ids[1]]

    @pytest.mark.asyncio
    async def test_filter_errors_name_the_operator(self, store: Any) -> None:
        """A malformed filter raises ``ValueError`` naming the operator at fault."""
        await self._bookings(store)
        reads: list[Callable[[Any], Awaitable[Any]]] = [lambda f: store.search("booked", filter=f)]
        if has(store, Capability.LIST):
            reads.append(lambda f: store.list(filter=f))
        if has(store, Capability.COUNT):
            reads.append(lambda f: store.count(filter=f))
        bad_filters = [
            ({"kind": {"$foo": 1}}, "$foo"),
            ({"rank": {"$in": 3}}, "$in"),
            ({"rank": {"$gt": True}}, "$gt"),
            ({"pin": {"$exists": "yes"}}, "$exists"),
        ]
        for read in reads:
            for filter, operator in bad_filters:
                with pytest.raises(ValueError, match=re.escape(operator)):
                    await read(filter)

    @pytest.mark.asyncio
    async def test_filter_by_creation_time(self, store: Any, clock: ManualClock) -> None:
        """``created_after`` is inclusive, ``created_before`` exclusive; both take aware times."""
        require(store, Capability.FILTER, Capability.LIST, Capability.COUNT)
        older = await store.add("Older bound note")
        clock.advance(0.01)  # distinct millisecond timestamps
        newer = await store.add("Newer bound note")
        (older_at, newer_at) = [r.created_at for r in await store.list()]
        assert older_at < newer_at
        bounds_and_ids = [
            ({"created_after": newer_at}, [newer.id]),  # the lower bound is inclusive
            ({"created_before": newer_at}, [older.id]),  # the upper bound is exclusive
            ({"created_after": older_at, "created_before": newer_at}, [older.id]),
            ({"created_after": moment(older_at)}, [older.id, newer.id]),
            (
                {"created_before": moment(newer_at).astimezone(timezone(timedelta(hours=2)))},
                [older.id],
            ),
            ({"created_after": newer_at.replace("Z", "+00:00")}, [newer.id]),
            ({"created_after": "2000-01-01T00:00:00Z"}, [older.id, newer.id]),
            ({"created_before": "2000-01-01T00:00:00+00:00"}, []),
        ]
        for bounds, expected in bounds_and_ids:
            assert [r.id for r in await store.list(**bounds)] == expected, bounds
            assert await store.count(**bounds) == len(expected), bounds
            hits = await store.search("bound note", **bounds)
            assert sorted(hit.id for hit in hits) == sorted(expected), bounds
        for bad in (datetime(2024, 1, 1), "yesterday", "2024-13-45T00:00:00Z"):
            with pytest.raises(ValueError, match="created_after"):
                await store.list(created_after=bad)

    # --- EXPIRY ---------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_expiry_past_memories_are_never_returned(self, store: Any) -> None:
        """A memory whose ``expires_at`` has passed is never returned by any read."""
        require(store, Capability.EXPIRY)
        past = datetime.now(timezone.utc) - timedelta(seconds=5)
        gone = await store.add("Expired melon note", expires_at=past)
        gone_text = await store.add("Expired lemon note", expires_at="2000-01-01T00:00:00Z")
        kept = await store.add("Lasting melon lemon note", ttl=3600)
        for memory in (gone, gone_text):
            assert not await visible(store, memory.id, "expired")
        assert [hit.id for hit in await store.search("melon lemon")] == [kept.id]
        if has(store, Capability.COUNT):
            assert await store.count() == 1
        if has(store, Capability.GET):
            record = await store.get(kept.id)
            assert record.expires_at is not None and TIMESTAMP.match(record.expires_at)
            assert record.expires_at > record.created_at

    @pytest.mark.asyncio
    async def test_expiry_ttl_runs_out(self, store: Any, clock: ManualClock) -> None:
        """A memory added with a ``ttl`` in seconds is visible until it has run out, then gone."""
        require(store, Capability.EXPIRY)
        brief = await store.add("Brief walnut note", ttl=0.05)
        assert await visible(store, brief.id, "walnut")
        clock.advance(0.049)
        assert await visible(store, brief.id, "walnut")
        clock.advance(0.002)
        assert not await visible(store, brief.id, "walnut")

    @pytest.mark.asyncio
    async def test_expiry_an_expired_memory_does_not_dedup(self, store: Any) -> None:
        """Adding content whose only copy expired stores a new, visible memory."""
        require(store, Capability.EXPIRY)
        past = datetime.now(timezone.utc) - timedelta(seconds=5)
        gone = await store.add("Recurring almond note", expires_at=past)
        again = await store.add("Recurring almond note")
        assert again.id != gone.id
        assert [hit.id for hit in await store.search("almond")] == [again.id]
        if has(store, Capability.GET):
            assert (await store.get(again.id)).expires_at is None

    @pytest.mark.asyncio
    async def test_expiry_an_add_that_dedups_lives_as_long_as_it_asked(self, store: Any) -> None:
        """An add that finds its text stored makes that memory live at least as long as asked.

        Its expiry moves to the later of the two, or goes when the add asked for none: a fact
        added for good is not lost with an earlier copy added for a minute.
        """
        require(store, Capability.EXPIRY, Capability.GET)
        brief = await store.add("Vegetarian cashew note", ttl=60)
        assert (await store.add("Vegetarian cashew note")).id == brief.id
        assert (await store.get(brief.id)).expires_at is None
        dated = await store.add("Dated hazelnut note", expires_at="2100-01-01T00:00:00Z")
        again = await store.add("Dated hazelnut note", expires_at="2200-01-01T00:00:00Z")
        assert again.id == dated.id
        assert (await store.get(dated.id)).expires_at == "2200-01-01T00:00:00.000Z"
        assert (await store.add("Dated hazelnut note", ttl=60)).id == dated.id
        assert (await store.get(dated.id)).expires_at == "2200-01-01T00:00:00.000Z"
        if has(store, Capability.ADD_MANY):
            soon = await store.add("Batched pistachio note", ttl=60)
            results = await store.add_many(
                [("Fresh chestnut note", None)] * 2 + [("Batched pistachio note", None)]
            )
            assert results[2].id == soon.id
            assert (await store.get(soon.id)).expires_at is None

    @pytest.mark.asyncio
    async def test_expiry_refuses_bad_lifetimes(self, store: Any) -> None:
        """A non-positive ``ttl``, both ``ttl`` and ``expires_at``, or a naive time raise."""
        require(store, Capability.EXPIRY)
        soon = datetime.now(timezone.utc) + timedelta(hours=1)
        for options in (
            {"ttl": 0},
            {"ttl": -1},
            {"ttl": 60, "expires_at": soon},
            {"expires_at": datetime(2099, 1, 1)},  # naive: names no instant
            {"expires_at": "someday"},
        ):
            with pytest.raises(ValueError):
                await store.add("Refused pecan note", **options)
        assert await store.search("pecan") == []

    # --- HISTORY --------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_history_keeps_replaced_versions_oldest_first(self, store: Any) -> None:
        """``history`` lists every replaced version with when, which change and why."""
        require(store, Capability.HISTORY, Capability.UPDATE, Capability.DELETE)
        memory = await store.add("Version one", {"n": 1})
        await store.update(memory.id, content="Version two", metadata={"n": 2}, reason="fix")
        await store.update(memory.id, metadata={"n": 3})
        await store.delete(memory.id, reason="asked to forget")
        versions = await store.history(memory.id)
        assert [(v.content, v.metadata, v.change, v.reason) for v in versions] == [
            ("Version one", {"n": 1}, "update", "fix"),
            ("Version two", {"n": 2}, "update", None),
            ("Version two", {"n": 3}, "delete", "asked to forget"),
        ]
        moments = [v.changed_at for v in versions]
        assert all(TIMESTAMP.match(m) for m in moments) and moments == sorted(moments)

    @pytest.mark.asyncio
    async def test_history_is_empty_until_a_change(self, store: Any) -> None:
        """A memory never changed, or an unknown id, has an empty history."""
        require(store, Capability.HISTORY)
        memory = await store.add("Never changed")
        assert await store.history(memory.id) == []
        assert await store.history("no-such-id") == []

    # --- HISTORY of an expiry -------------------------------------------------------------
    # An expired memory's last version is in its history from the moment it expires, dated at
    # its expiry, whether or when a later write purges it: reads before and after agree.

    @pytest.mark.asyncio
    async def test_history_an_expiry_is_the_last_version_once_the_ttl_passes(
        self, make_store: StoreFactory, clock: ManualClock
    ) -> None:
        """Once a ``ttl`` runs out, before any write, ``history`` ends with an ``expire``.

        That version is the memory as it was (content and metadata), dated exactly at its
        ``expires_at``, in every read of the history: ``versions()``, a read-only twin (which
        cannot purge), not in another scope's view.
        """
        store = make_store("expiring")
        require(store, Capability.EXPIRY, Capability.HISTORY, Capability.GET, Capability.UPDATE)
        await set_up(store)
        memory = await store.add("Boarding at gate four", {"gate": 4}, ttl=LIFETIME)
        await store.update(memory.id, metadata={"gate": 5}, reason="gate changed")
        record = await store.get(memory.id)
        assert record is not None and record.expires_at is not None
        assert await visible(store, memory.id, "gate")
        run_out(clock, record.expires_at)
        assert not await visible(store, memory.id, "gate")
        versions = await store.history(memory.id)
        assert [(v.content, v.metadata, v.change, v.reason) for v in versions] == [
            ("Boarding at gate four", {"gate": 4}, "update", "gate changed"),
            ("Boarding at gate four", {"gate": 5}, "expire", None),
        ]
        assert versions[-1].changed_at == record.expires_at
        assert versions[-1].memory_id == memory.id
        assert [v async for page in store.versions(batch=1) for v in page] == versions
        if self.persistent:
            assert await self.read_only_twin(make_store, "expiring").history(memory.id) == versions
        if has(store, Capability.SCOPE):
            assert await store.scope(user_id="someone else").history(memory.id) == []

    @pytest.mark.asyncio
    async def test_history_an_expiry_is_the_same_after_the_write_that_purges_it(
        self, store: Any, clock: ManualClock
    ) -> None:
        """Every kind of write purges what expired; the history reads the same before and after.

        The version keeps its date (the expiry, not the purge) and its place after the memory's
        other versions, in ``history`` and in ``versions()``.
        """
        require(store, Capability.EXPIRY, Capability.HISTORY)
        other = await store.add("Another plum note, which later writes change")
        writes: list[Callable[[], Awaitable[Any]]] = [lambda: store.add("A fresh plum note")]
        if has(store, Capability.ADD_MANY):
            writes.append(lambda: store.add_many([("A batched plum note", None)]))
        if has(store, Capability.UPDATE):
            writes.append(lambda: store.update(other.id, metadata={"changed": True}))
        if has(store, Capability.DELETE):
            writes.append(lambda: store.delete(other.id, reason="done"))
        for number, write in enumerate(writes):
            expiry = soon()
            gone = await store.add(f"Expiring plum note {number}", {"n": number}, expires_at=expiry)
            run_out(clock, expiry)
            expected = [
                MemoryVersion(f"Expiring plum note {number}", {"n": number}, expiry, "expire")
            ]
            before = await store.history(gone.id)
            assert [_unnamed(v) for v in before] == expected, number
            await write()
            assert await store.history(gone.id) == before, number
            found = [v async for page in store.versions(batch=1) for v in page]
            assert [v for v in found if v.memory_id == gone.id] == before, number

    @pytest.mark.asyncio
    async def test_history_an_expiry_a_dedup_add_moved_is_dated_at_the_final_one(
        self, store: Any, clock: ManualClock
    ) -> None:
        """An add that dedups moves the expiry later; the version is dated at the later one."""
        require(store, Capability.EXPIRY, Capability.HISTORY, Capability.GET)
        await set_up(store)
        first, later = soon(), soon(2 * LIFETIME)
        memory = await store.add("Extended fig note", expires_at=first)
        assert (await store.add(" Extended fig note ", expires_at=later)).id == memory.id
        dedupped = [(memory.id, later)]
        if has(store, Capability.ADD_MANY):
            batched = await store.add("Batched fig note", expires_at=first)
            results = await store.add_many([("Batched fig note", None)], ttl=2 * LIFETIME)
            assert results[0].id == batched.id
            record = await store.get(batched.id)
            assert record is not None and record.expires_at is not None
            assert record.expires_at > first
            dedupped.append((batched.id, record.expires_at))
        for memory_id, expiry in dedupped:
            assert (await store.get(memory_id)).expires_at == expiry
        run_out(clock, max(expiry for _, expiry in dedupped))
        for memory_id, expiry in dedupped:
            versions = await store.history(memory_id)
            assert [(v.change, v.changed_at) for v in versions] == [("expire", expiry)]
        await store.add("A later write, which purges them")
        for memory_id, expiry in dedupped:
            versions = await store.history(memory_id)
            assert [(v.change, v.changed_at) for v in versions] == [("expire", expiry)]

    @pytest.mark.asyncio
    async def test_history_an_expiry_given_already_past_is_dated_when_written(
        self, store: Any
    ) -> None:
        """An ``expires_at`` already past at the add dates the version at the add itself.

        The memory was never visible, and its history does not claim it ended before it began.
        """
        require(store, Capability.EXPIRY, Capability.HISTORY)
        start = stored_time(datetime.now(timezone.utc))
        memory = await store.add("Already expired quince note", {"q": 1}, expires_at=_PAST)
        end = stored_time(datetime.now(timezone.utc))
        assert not await visible(store, memory.id, "quince")
        versions = await store.history(memory.id)
        assert [(v.content, v.metadata, v.change) for v in versions] == [
            ("Already expired quince note", {"q": 1}, "expire")
        ]
        assert start <= versions[0].changed_at <= end
        await store.add("A later write, which purges it")
        assert await store.history(memory.id) == versions

    @pytest.mark.asyncio
    async def test_history_an_expiry_copied_in_again_is_not_doubled(
        self, store: Any, clock: ManualClock
    ) -> None:
        """Importing the expiry a store already shows adds nothing, before or after its purge.

        So running a migration again, after a memory it copied alive has expired in both
        stores, copies the source's ``expire`` version onto the one the copy shows already.
        """
        require(store, Capability.EXPIRY, Capability.HISTORY, Capability.IMPORT)
        memory = await store.add("Copied twice kiwi note", {"k": 1}, expires_at=soon())
        record = await store.get(memory.id)
        assert record is not None and record.expires_at is not None
        run_out(clock, record.expires_at)
        shown = await store.history(memory.id)
        assert [(v.change, v.changed_at) for v in shown] == [("expire", record.expires_at)]
        assert await store.import_versions(shown) == 0
        assert await store.history(memory.id) == shown
        assert await store.import_versions(shown) == 0
        assert [v async for page in store.versions() for v in page if v.memory_id == memory.id] == (
            shown
        )


_PAST = "2001-01-01T00:00:00.000Z"


def _unnamed(version: MemoryVersion) -> MemoryVersion:
    """Return ``version`` without its memory id and creation time.

    The tests build versions before the add, so they know neither; a store may leave
    ``created_at`` out of a version (``None``), or record the memory's.
    """
    assert version.created_at is None or TIMESTAMP.match(version.created_at), version
    return dataclasses.replace(version, memory_id=None, created_at=None)
