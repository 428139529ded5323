"""The store contract for facts that change (``Capability.SUPERSEDE``).

``supersede`` retires memories in favour of a new one and keeps them; reads leave retired
memories out unless asked (``include_superseded``), answer as the store was at a moment
(``as_of``), or keep to what was true in the world then (``valid_at``); ``history`` follows
the chain of replacements both ways; copies keep all of it.

Every test moves the suite's ``clock`` (a :class:`~agentrecall.testing.ManualClock`) between
its writes, so each write has a moment of its own and each ``as_of`` falls strictly between
two writes (or, where a test says so, exactly on one), whatever the machine's speed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import pytest

from agentrecall.stores.base import Capability
from agentrecall.stores.times import stored_time
from agentrecall.testing._contract_base import (
    FILLER,
    TIMESTAMP,
    ContractBase,
    StoreFactory,
    add_all,
    contents_of,
    has,
    require,
    run_out,
    score,
    soon,
)
from agentrecall.testing.clock import ManualClock
from agentrecall.types import MemoryEntry, MemoryRecord, MemoryVersion

MARKS = ("_supersededBy", "_invalidatedAt")
"""The keys a retired memory's hit carries in its metadata."""

BEFORE_EVERYTHING = "2000-01-01T00:00:00.000Z"
"""A moment before any memory of a test was written (the clock starts at the system's time)."""


def now(clock: ManualClock) -> str:
    """Return the moment the clock shows, in the stored shape: the moment of the next write."""
    return stored_time(clock.now())


def pause(clock: ManualClock) -> str:
    """Move the clock two seconds on; return the moment in the middle.

    That moment is after every write so far and before every later one, so ``as_of`` it reads
    the store as the writes so far left it.
    """
    clock.advance(1)
    middle = now(clock)
    clock.advance(1)
    return middle


async def add_in_turn(store: Any, clock: ManualClock, contents: list[str]) -> list[str]:
    """Add each content a second after the one before (distinct ``created_at``); return ids."""
    ids = []
    for content in contents:
        ids.append((await store.add(content)).id)
        clock.advance(1)
    return ids


def ids_of(found: list[MemoryEntry] | list[MemoryRecord]) -> list[str]:
    """Return the id of each hit or record, in order."""
    return [item.id for item in found if item.id is not None]


def marks(hit: MemoryEntry) -> dict[str, Any]:
    """Return the retirement marks a hit carries (empty for a current memory)."""
    return {key: value for key, value in (hit.metadata or {}).items() if key in MARKS}


async def every_version(store: Any) -> list[MemoryVersion]:
    """Return every version ``versions()`` gives, all pages joined."""
    return [version async for page in store.versions(batch=2) for version in page]


async def snapshot(store: Any) -> tuple[list[MemoryRecord], list[MemoryVersion]]:
    """Return everything a write could change: every memory, retired ones too, and the history."""
    return await store.list(include_superseded=True), await every_version(store)


class ChangesContract(ContractBase):
    """Supersede, retired memories, ``as_of``, ``valid_at`` and the chain, where declared."""

    # --- SUPERSEDE: retiring --------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_supersede_retires_the_old_memory_from_default_reads(
        self, store: Any, clock: ManualClock
    ) -> None:
        """The old memory leaves search, list, count and get; the new one is current.

        Asked with ``include_superseded``, every read shows the old memory again, unchanged
        but marked: its record names its successor and the moment it was retired, its hit
        carries ``_supersededBy`` and ``_invalidatedAt``. The new memory carries no mark.
        """
        require(store, Capability.SUPERSEDE, Capability.GET, Capability.LIST, Capability.COUNT)
        old = await store.add("The user lives in Lyon", {"topic": "home"})
        await add_all(store, FILLER)
        before = await store.get(old.id)
        clock.advance(1)
        retired_at = now(clock)
        new = await store.supersede([old.id], "The user lives in Berlin", metadata={"n": 2})
        assert new.id != old.id and new.created is True
        clock.advance(1)

        assert ids_of(await store.search("user lives")) == [new.id]
        assert await store.get(old.id) is None
        assert old.id not in ids_of(await store.list())
        assert await store.count() == len(FILLER) + 1
        current = await store.get(new.id)
        assert current is not None
        assert (current.content, current.metadata) == ("The user lives in Berlin", {"n": 2})
        assert (current.invalidated_at, current.superseded_by) == (None, None)
        assert current.created_at == retired_at

        retired = await store.get(old.id, include_superseded=True)
        assert retired is not None
        assert (retired.content, retired.metadata, retired.created_at) == (
            before.content,
            before.metadata,
            before.created_at,
        )
        assert (retired.superseded_by, retired.invalidated_at) == (new.id, retired_at)
        assert TIMESTAMP.match(retired.invalidated_at)
        listed = await store.list(include_superseded=True)
        assert ids_of(listed)[0] == old.id and new.id in ids_of(listed)
        assert listed[0] == retired
        assert await store.count(include_superseded=True) == len(FILLER) + 2
        hits = {hit.id: hit for hit in await store.search("user lives", include_superseded=True)}
        assert set(hits) == {old.id, new.id}
        assert marks(hits[old.id]) == {"_supersededBy": new.id, "_invalidatedAt": retired_at}
        assert hits[old.id].metadata is not None and hits[old.id].metadata["topic"] == "home"
        assert marks(hits[new.id]) == {}
        score(hits[old.id])

    @pytest.mark.asyncio
    async def test_supersede_many_retired_memories_crowd_no_current_one_out(
        self, store: Any, clock: ManualClock
    ) -> None:
        """A current memory is found even when hundreds of newer retired ones share its words.

        A search that picked its best candidates before leaving retired memories out would
        return only the newest fact of a long chain, and never the older current memory.
        """
        require(store, Capability.SUPERSEDE, Capability.IMPORT)
        home = await store.add("The user lives in Paris")
        clock.advance(1)
        job = await store.add("The user works at company 300")
        retired = [
            MemoryRecord(
                id=f"retired-job-{n}",
                content=f"The user works at company {n}",
                created_at=now(clock),
                invalidated_at=now(clock),
                superseded_by=job.id,
            )
            for n in range(300)
        ]
        assert await store.import_records(retired) == 300
        clock.advance(1)
        options: list[dict[str, Any]] = [{}]
        if has(store, Capability.SEMANTIC):
            options += [{"mode": "semantic"}, {"mode": "hybrid"}, {"neighbours": True}]
        for option in options:
            found = await store.search("the user", {**option, "max_search_results": 5})
            assert sorted(ids_of(found)) == sorted([home.id, job.id]), option

    @pytest.mark.asyncio
    async def test_supersede_retires_several_memories_by_one(
        self, store: Any, clock: ManualClock
    ) -> None:
        """Every id given is retired by the one new memory, each once, with one version.

        The new memory's history holds both versions; each old one's holds only its own.
        """
        require(store, Capability.SUPERSEDE, Capability.GET, Capability.HISTORY)
        first, second, bystander = await add_in_turn(
            store, clock, ["Drinks tea in the morning", "Drinks tea after lunch", "Drinks water"]
        )
        new = await store.supersede(
            [first, second, first], "Drinks coffee all day", reason="changed habits"
        )
        clock.advance(1)
        assert sorted(ids_of(await store.search("drinks"))) == sorted([bystander, new.id])
        for old in (first, second):
            assert await store.get(old) is None
            record = await store.get(old, include_superseded=True)
            assert record is not None and record.superseded_by == new.id
            # Its history follows the chain forward (its successor, which keeps no versions)
            # and backward, never sideways to the memories retired with it.
            (version,) = await store.history(old)
            assert (version.memory_id, version.change, version.reason) == (
                old,
                "supersede",
                "changed habits",
            )
            assert version.superseded_by == new.id
        assert (await store.get(bystander)) is not None
        chain = await store.history(new.id)
        assert {v.memory_id for v in chain} == {first, second}
        assert [v.change for v in chain] == ["supersede", "supersede"]

    @pytest.mark.asyncio
    async def test_supersede_a_retry_changes_nothing(self, store: Any, clock: ManualClock) -> None:
        """The same call again returns the same memory, ``created=False``, and writes nothing.

        Not a second version, not a later ``invalidated_at``: a coordinator that retries a
        batch it already applied leaves the store as the first call left it.
        """
        require(store, Capability.SUPERSEDE, Capability.LIST, Capability.HISTORY)
        old, other = await add_in_turn(store, clock, ["Works at the bakery", "Works nights"])
        first = await store.supersede([old, other], "Works at the library", reason="new job")
        assert first.created is True
        clock.advance(1)
        after_first = await snapshot(store)
        for _ in range(2):
            again = await store.supersede([old, other], "Works at the library", reason="new job")
            clock.advance(1)
            assert (again.id, again.created) == (first.id, False)
            assert await snapshot(store) == after_first
        assert [v.change for v in await store.history(old)] == ["supersede"]
        # A retry of part of the call is a retry too; the rest is a new retirement.
        stray = (await store.add("Works weekends")).id
        clock.advance(1)
        partial = await store.supersede([old, stray], "Works at the library")
        assert (partial.id, partial.created) == (first.id, False)
        assert [v.change for v in await store.history(old)] == ["supersede"]
        (version,) = await store.history(stray)
        assert (version.change, version.superseded_by) == ("supersede", first.id)

    @pytest.mark.asyncio
    async def test_supersede_by_content_already_current_retires_in_its_favour(
        self, store: Any, clock: ManualClock
    ) -> None:
        """New content equal to a current memory is that memory (``created=False``), kept as is."""
        require(store, Capability.SUPERSEDE, Capability.GET)
        old, existing = await add_in_turn(store, clock, ["Owns a red car", "Owns a blue car"])
        kept = await store.get(existing)
        result = await store.supersede([old], "  Owns a blue car ", metadata={"new": True})
        assert (result.id, result.created) == (existing, False)
        assert await store.get(existing) == kept
        retired = await store.get(old, include_superseded=True)
        assert retired is not None and retired.superseded_by == existing
        assert ids_of(await store.search("car")) == [existing]

    @pytest.mark.asyncio
    async def test_supersede_errors_write_nothing(self, store: Any, clock: ManualClock) -> None:
        """Every refused call raises ``ValueError`` naming what is wrong, and writes nothing.

        Unknown ids (alone or beside good ones), an id retired by another memory (both ids
        named), content that is one of the old memories, no ids, a single string for the
        ids, and unusable content, metadata, moments or reason.
        """
        require(store, Capability.SUPERSEDE, Capability.LIST, Capability.HISTORY)
        current, retired = await add_in_turn(store, clock, ["Plays chess", "Plays checkers"])
        successor = (await store.supersede([retired], "Plays go")).id
        clock.advance(1)
        before = await snapshot(store)
        refused: list[tuple[Callable[[], Awaitable[Any]], list[str]]] = [
            (lambda: store.supersede(["no-such-id"], "Plays poker"), ["no-such-id"]),
            (lambda: store.supersede([current, "no-such-id"], "Plays poker"), ["no-such-id"]),
            (lambda: store.supersede([retired], "Plays poker"), [retired, successor]),
            (lambda: store.supersede([current, retired], "Plays poker"), [retired, successor]),
            (lambda: store.supersede([current], " Plays chess "), ["itself"]),
            (lambda: store.supersede([successor, current], "Plays chess"), ["itself"]),
            (lambda: store.supersede([], "Plays poker"), ["old_ids"]),
            (lambda: store.supersede(current, "Plays poker"), ["old_ids"]),
            (lambda: store.supersede([current, 7], "Plays poker"), ["old_ids"]),
            (lambda: store.supersede([current], "   "), ["content"]),
            (lambda: store.supersede([current], "Plays poker", metadata=["x"]), ["metadata"]),
            (lambda: store.supersede([current], "Plays poker", reason=3), ["reason"]),
            (lambda: store.supersede([current], "Plays poker", valid_from="soon"), ["valid_from"]),
            (
                lambda: store.supersede([current], "Plays poker", valid_from=datetime(2025, 1, 1)),
                ["valid_from"],
            ),
            (
                lambda: store.supersede(
                    [current], "Plays poker", valid_from="2025-03-01", valid_until="2025-03-01"
                ),
                ["valid_until"],
            ),
        ]
        for number, (call, named) in enumerate(refused):
            with pytest.raises(ValueError) as raised:
                await call()
            for name in named:
                assert name in str(raised.value), (number, str(raised.value))
            assert await snapshot(store) == before, number
        assert await store.search("poker") == []
        if has(store, Capability.SCOPE):
            ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
            anas = (await ana.add("Ana plays the cello")).id
            clock.advance(1)
            with pytest.raises(ValueError, match=anas):
                await bob.supersede([anas], "Bob plays the cello")
            assert await bob.search("cello") == []
            assert ids_of(await ana.search("cello")) == [anas]

    @pytest.mark.asyncio
    async def test_supersede_on_a_read_only_store_is_refused(
        self, make_store: StoreFactory
    ) -> None:
        """``supersede`` on a read-only store raises ``ValueError`` and retires nothing."""
        writer = make_store("shared")
        require(writer, Capability.SUPERSEDE, Capability.GET)
        memory = await writer.add("Frozen fact")
        read_only = self.read_only_twin(make_store, "shared")
        with pytest.raises(ValueError, match="read-only"):
            await read_only.supersede([memory.id], "Changed fact")
        assert await writer.get(memory.id) is not None
        assert await writer.search("changed") == []

    # --- SUPERSEDE: what retired memories still do ----------------------------------------

    @pytest.mark.asyncio
    async def test_supersede_dedup_is_among_current_memories_only(
        self, store: Any, clock: ManualClock
    ) -> None:
        """Content equal to a retired memory is a new memory: a preference that flips back."""
        require(store, Capability.SUPERSEDE, Capability.GET)
        tea = (await store.add("Prefers tea")).id
        clock.advance(1)
        coffee = (await store.supersede([tea], "Prefers coffee")).id
        clock.advance(1)
        again = await store.supersede([coffee], "Prefers tea")
        clock.advance(1)
        assert again.id not in (tea, coffee) and again.created is True
        assert ids_of(await store.search("prefers")) == [again.id]
        retired = await store.get(tea, include_superseded=True)
        assert retired is not None and retired.superseded_by == coffee
        back = await store.add(" Prefers coffee ")
        assert back.id != coffee and back.created is True
        if has(store, Capability.ADD_MANY):
            (batched,) = await store.add_many([("Prefers coffee", None)])
            assert batched.id == back.id
        assert sorted(ids_of(await store.search("prefers"))) == sorted([again.id, back.id])

    @pytest.mark.asyncio
    async def test_supersede_a_retired_memory_is_not_updated(
        self, store: Any, clock: ManualClock
    ) -> None:
        """``update`` of a retired memory returns ``None`` and changes nothing."""
        require(store, Capability.SUPERSEDE, Capability.UPDATE, Capability.LIST)
        old = (await store.add("Speaks Spanish", {"level": 1})).id
        clock.advance(1)
        await store.supersede([old], "Speaks Spanish and Italian")
        clock.advance(1)
        before = await snapshot(store)
        assert await store.update(old, content="Speaks Portuguese") is None
        assert await store.update(old, metadata={"level": 2}) is None
        assert await store.update(old) is None
        assert await snapshot(store) == before

    @pytest.mark.asyncio
    async def test_supersede_a_retired_memory_can_be_deleted(
        self, store: Any, clock: ManualClock
    ) -> None:
        """``delete`` forgets a retired memory from every read; its history keeps it."""
        require(
            store,
            Capability.SUPERSEDE,
            Capability.DELETE,
            Capability.GET,
            Capability.COUNT,
            Capability.HISTORY,
        )
        old = (await store.add("Collects stamps")).id
        clock.advance(1)
        new = (await store.supersede([old], "Collects coins")).id
        clock.advance(1)
        assert await store.delete(old, reason="privacy") is True
        assert await store.get(old, include_superseded=True) is None
        assert ids_of(await store.search("collects", include_superseded=True)) == [new]
        assert await store.count(include_superseded=True) == 1
        assert [(v.change, v.reason) for v in await store.history(old)] == [
            ("supersede", None),
            ("delete", "privacy"),
        ]
        assert await store.delete(old) is False
        if has(store, Capability.CLEAR):
            gone = (await store.add("Collects shells")).id
            clock.advance(1)
            await store.supersede([gone], "Collects pebbles")
            await store.clear()
            assert await store.list(include_superseded=True) == []

    # --- SUPERSEDE: world time ------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_supersede_add_keeps_world_time(self, store: Any) -> None:
        """``add(valid_from=, valid_until=)`` keeps both; a dedupped add keeps the first's.

        ``valid_until`` at or before ``valid_from``, or an unusable moment, raises
        ``ValueError`` naming the argument and stores nothing.
        """
        require(store, Capability.SUPERSEDE, Capability.GET, Capability.COUNT)
        dated = await store.add(
            "Lived in Oslo", valid_from="2019-05-01", valid_until="2021-08-15T12:00:00+02:00"
        )
        record = await store.get(dated.id)
        assert (record.valid_from, record.valid_until) == (
            "2019-05-01T00:00:00.000Z",
            "2021-08-15T10:00:00.000Z",
        )
        plain = await store.get((await store.add("Lives somewhere")).id)
        assert (plain.valid_from, plain.valid_until) == (None, None)
        again = await store.add("Lived in Oslo", valid_from="2020-01-01")
        assert again.id == dated.id
        assert await store.get(dated.id) == record
        for bad, name in (
            ({"valid_from": "2024-01-02", "valid_until": "2024-01-01"}, "valid_until"),
            ({"valid_from": "2024-01-01", "valid_until": "2024-01-01"}, "valid_until"),
            ({"valid_from": "last spring"}, "valid_from"),
            ({"valid_until": datetime(2024, 1, 1)}, "valid_until"),
        ):
            with pytest.raises(ValueError, match=name):
                await store.add("Lived in Bergen", **bad)
        assert await store.count() == 2

    @pytest.mark.asyncio
    async def test_supersede_valid_from_ends_the_old_facts(
        self, store: Any, clock: ManualClock
    ) -> None:
        """The new memory's ``valid_from`` becomes the ``valid_until`` of old ones that had none.

        An old memory whose end was known keeps it; without ``valid_from`` nothing is ended.
        """
        require(store, Capability.SUPERSEDE, Capability.GET)
        open_ended = (await store.add("Lives in Lyon", valid_from="2019-01-01")).id
        ended = (await store.add("Rents a flat in Lyon", valid_until="2025-06-30")).id
        clock.advance(1)
        new = await store.supersede(
            [open_ended, ended], "Lives in Berlin", valid_from="2025-03-01T00:00:00Z"
        )
        clock.advance(1)
        record = await store.get(new.id)
        assert (record.valid_from, record.valid_until) == ("2025-03-01T00:00:00.000Z", None)
        old = await store.get(open_ended, include_superseded=True)
        assert (old.valid_from, old.valid_until) == (
            "2019-01-01T00:00:00.000Z",
            "2025-03-01T00:00:00.000Z",
        )
        kept = await store.get(ended, include_superseded=True)
        assert kept.valid_until == "2025-06-30T00:00:00.000Z"
        undated = (await store.add("Works in Lyon")).id
        clock.advance(1)
        await store.supersede([undated], "Works in Berlin")
        assert (await store.get(undated, include_superseded=True)).valid_until is None

    @pytest.mark.asyncio
    async def test_supersede_valid_at_keeps_what_was_true_then(
        self, store: Any, clock: ManualClock
    ) -> None:
        """``valid_at`` selects by world time: ``valid_from`` inclusive, ``valid_until`` not.

        A memory without world time is always true; retired memories stay out unless
        ``include_superseded`` (what the store now knows was true then).
        """
        require(store, Capability.SUPERSEDE, Capability.LIST, Capability.COUNT)
        always = (await store.add("The user is called Sam")).id
        lyon = (await store.add("The user lives in Lyon", valid_from="2019-01-01")).id
        future = (await store.add("The user retires to Nice", valid_from="2040-01-01")).id
        clock.advance(1)
        berlin = (
            await store.supersede([lyon], "The user lives in Berlin", valid_from="2025-03-01")
        ).id
        clock.advance(1)
        cases = [
            ("2018-06-01", False, [always]),
            ("2024-06-01", False, [always]),
            ("2024-06-01", True, [always, lyon]),
            ("2025-03-01", False, [always, berlin]),
            ("2025-03-01", True, [always, berlin]),
            ("2041-01-01T00:00:00+00:00", False, [always, future, berlin]),
        ]
        for valid_at, superseded, expected in cases:
            moments = {"valid_at": valid_at, "include_superseded": superseded}
            assert ids_of(await store.list(**moments)) == expected, moments
            assert await store.count(**moments) == len(expected), moments
            found = ids_of(await store.search("the user", **moments))
            assert sorted(found) == sorted(expected), moments
        with pytest.raises(ValueError, match="valid_at"):
            await store.list(valid_at="next year")

    # --- SUPERSEDE: as_of -----------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_supersede_as_of_reads_the_store_as_it_was(
        self, store: Any, clock: ManualClock
    ) -> None:
        """``as_of`` answers from what the store held then, with the content of then.

        Before the supersede the old fact and not the new; after it, the new. A memory updated
        since shows the content of then (not its first nor its latest); one deleted since still
        shows; one expired by then, or created after, does not; one expiring since (even after
        a write purged it) still shows. ``get``, ``list``, ``count`` and every search mode agree.
        """
        require(
            store,
            Capability.SUPERSEDE,
            Capability.GET,
            Capability.LIST,
            Capability.COUNT,
            Capability.UPDATE,
            Capability.DELETE,
            Capability.EXPIRY,
        )
        old, dentist, key = await add_in_turn(
            store,
            clock,
            [
                "The user lives in Lyon",
                "The dentist is on Main Street",
                "A spare key is under the mat",
            ],
        )
        await store.update(key, content="A spare key is with the neighbour")
        clock.advance(1)
        lapsed = (await store.add("A red bicycle is parked downstairs", expires_at=soon(0.5))).id
        clock.advance(1)
        expiry = soon(30)
        scooter = (await store.add("A blue scooter is parked in the yard", expires_at=expiry)).id
        then = pause(clock)

        superseded_at = now(clock)
        new = (await store.supersede([old], "The user lives in Berlin")).id
        await store.update(dentist, content="The dentist is on Park Road")
        between = pause(clock)
        await store.update(dentist, content="The dentist is on Elm Street")
        await store.delete(key)
        run_out(clock, expiry)
        bought = (await store.add("A green bicycle was bought")).id  # a write: purges the scooter
        later = pause(clock)

        held = [
            (old, "The user lives in Lyon"),
            (dentist, "The dentist is on Main Street"),
            (key, "A spare key is with the neighbour"),
            (scooter, "A blue scooter is parked in the yard"),
        ]
        assert [(r.id, r.content) for r in await store.list(as_of=then)] == held
        assert await store.count(as_of=then) == len(held)
        for memory_id, content in held:
            record = await store.get(memory_id, as_of=then)
            assert record is not None and record.content == content, memory_id
        for absent in (lapsed, new, bought):
            assert await store.get(absent, as_of=then) is None, absent
        keyword_cases = [
            ("user lives", [(old, "The user lives in Lyon")]),
            ("dentist", [(dentist, "The dentist is on Main Street")]),
            ("Elm Road", []),
            ("spare key", [(key, "A spare key is with the neighbour")]),
            ("mat", []),
            ("bicycle", []),
            ("scooter", [(scooter, "A blue scooter is parked in the yard")]),
        ]
        for query, expected in keyword_cases:
            hits = await store.search(query, as_of=then)
            assert [(hit.id, hit.content) for hit in hits] == expected, query
            for hit in hits:
                score(hit)
                assert marks(hit) == {}, query
        if has(store, Capability.SEMANTIC):
            for mode in ("semantic", "hybrid"):
                found = contents_of(
                    await store.search("dentist street", {"mode": mode}, as_of=then)
                )
                assert "The dentist is on Main Street" in found, mode
                for unseen in ("The dentist is on Park Road", "The dentist is on Elm Street"):
                    assert unseen not in found, mode
                found = contents_of(await store.search("user lives", {"mode": mode}, as_of=then))
                assert "The user lives in Lyon" in found, mode
                assert "The user lives in Berlin" not in found, mode

        assert (await store.get(dentist, as_of=between)).content == "The dentist is on Park Road"
        assert ids_of(await store.search("dentist", as_of=between)) == [dentist]
        # The moment of a change already shows it.
        assert ids_of(await store.search("user lives", as_of=superseded_at)) == [new]
        assert await store.get(old, as_of=superseded_at) is None
        assert await store.list(as_of=later) == await store.list()
        assert await store.count(as_of=later) == await store.count() == 3
        assert ids_of(await store.search("user lives", as_of=later)) == [new]
        assert await store.list(as_of=BEFORE_EVERYTHING) == []
        assert await store.count(as_of=BEFORE_EVERYTHING) == 0
        assert await store.search("user lives", as_of=BEFORE_EVERYTHING) == []

    @pytest.mark.asyncio
    async def test_supersede_as_of_with_include_superseded(
        self, store: Any, clock: ManualClock
    ) -> None:
        """``as_of`` with ``include_superseded`` adds what was retired by then, marked.

        A memory retired after that moment was current then, so its hit is not marked.
        """
        require(store, Capability.SUPERSEDE, Capability.GET, Capability.LIST, Capability.COUNT)
        bakery = (await store.add("Works at the bakery")).id
        first = pause(clock)
        library = (await store.supersede([bakery], "Works at the library")).id
        second = pause(clock)
        museum = (await store.supersede([library], "Works at the museum")).id
        third = pause(clock)
        cases = [
            (first, False, [bakery], set()),
            (first, True, [bakery], set()),
            (second, False, [library], set()),
            (second, True, [bakery, library], {bakery}),
            (third, False, [museum], set()),
            (third, True, [bakery, library, museum], {bakery, library}),
        ]
        for as_of, superseded, expected, marked in cases:
            moments = {"as_of": as_of, "include_superseded": superseded}
            assert ids_of(await store.list(**moments)) == expected, moments
            assert await store.count(**moments) == len(expected), moments
            hits = await store.search("works", **moments)
            assert sorted(ids_of(hits)) == sorted(expected), moments
            assert {hit.id for hit in hits if marks(hit)} == marked, moments
        assert await store.get(bakery, as_of=second) is None
        record = await store.get(bakery, as_of=second, include_superseded=True)
        assert record is not None and record.content == "Works at the bakery"
        assert (await store.get(library, as_of=second)).content == "Works at the library"

    @pytest.mark.asyncio
    async def test_supersede_as_of_keeps_to_the_views_scope(
        self, store: Any, clock: ManualClock
    ) -> None:
        """A view's ``as_of`` sees its own scope's past only, memories deleted since included."""
        require(
            store,
            Capability.SUPERSEDE,
            Capability.SCOPE,
            Capability.GET,
            Capability.LIST,
            Capability.COUNT,
            Capability.UPDATE,
            Capability.DELETE,
        )
        ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
        anas = (await ana.add("Ana lives in Lyon")).id
        clock.advance(1)
        bobs, harbour = await add_in_turn(
            bob, clock, ["Bob lives in Lyon", "Bob lives near the harbour"]
        )
        then = pause(clock)
        new = (await ana.supersede([anas], "Ana lives in Berlin")).id
        await bob.delete(bobs)
        await bob.update(harbour, content="Bob lives near the station")
        clock.advance(1)

        assert [(r.id, r.content) for r in await ana.list(as_of=then)] == [
            (anas, "Ana lives in Lyon")
        ]
        assert await ana.count(as_of=then) == 1
        assert ids_of(await ana.search("lives Lyon harbour", as_of=then)) == [anas]
        for other in (bobs, harbour):
            assert await ana.get(other, as_of=then) is None
        assert contents_of(await bob.list(as_of=then)) == [
            "Bob lives in Lyon",
            "Bob lives near the harbour",
        ]
        assert await bob.count(as_of=then) == 2
        assert sorted(ids_of(await bob.search("lives Lyon", as_of=then))) == sorted([bobs, harbour])
        assert await ana.list(include_superseded=True, as_of=then) == await ana.list(as_of=then)
        assert ids_of(await ana.list(include_superseded=True)) == [anas, new]
        assert ids_of(await store.list(as_of=then)) == [anas, bobs, harbour]

    @pytest.mark.asyncio
    async def test_supersede_as_of_combines_with_filters_bounds_and_world_time(
        self, store: Any, clock: ManualClock
    ) -> None:
        """Metadata filters test the metadata of then; time bounds and ``valid_at`` apply too."""
        require(
            store,
            Capability.SUPERSEDE,
            Capability.FILTER,
            Capability.LIST,
            Capability.COUNT,
            Capability.UPDATE,
            Capability.DELETE,
        )
        oslo = (await store.add("Trip to Oslo booked", {"kind": "travel"})).id
        split = pause(clock)
        rome = (
            await store.add(
                "Trip to Rome booked",
                {"kind": "travel"},
                valid_from="2025-01-01",
                valid_until="2025-02-01",
            )
        ).id
        then = pause(clock)
        await store.update(oslo, metadata={"kind": "archive"})
        await store.delete(rome)
        clock.advance(1)
        travel, archive = {"kind": "travel"}, {"kind": "archive"}
        cases: list[tuple[dict[str, Any], list[str]]] = [
            ({"as_of": then, "filter": travel}, [oslo, rome]),
            ({"filter": travel}, []),
            ({"as_of": then, "filter": archive}, []),
            ({"filter": archive}, [oslo]),
            ({"as_of": then, "created_before": split}, [oslo]),
            ({"as_of": then, "created_after": split}, [rome]),
            ({"as_of": then, "valid_at": "2025-01-15"}, [oslo, rome]),
            ({"as_of": then, "valid_at": "2025-02-01"}, [oslo]),
            ({"as_of": then, "filter": travel, "valid_at": "2024-12-31"}, [oslo]),
        ]
        for arguments, expected in cases:
            assert ids_of(await store.list(**arguments)) == expected, arguments
            assert await store.count(**arguments) == len(expected), arguments
            found = ids_of(await store.search("trip booked", **arguments))
            assert sorted(found) == sorted(expected), arguments

    @pytest.mark.asyncio
    async def test_supersede_moments_are_checked(self, store: Any) -> None:
        """An unusable ``as_of``, ``valid_at`` or ``include_superseded`` raises, naming it."""
        require(store, Capability.SUPERSEDE, Capability.GET, Capability.LIST, Capability.COUNT)
        memory = (await store.add("A checked note")).id
        reads: list[Callable[..., Awaitable[Any]]] = [
            lambda **moments: store.search("note", **moments),
            lambda **moments: store.list(**moments),
            lambda **moments: store.count(**moments),
        ]
        refused: list[tuple[dict[str, Any], str]] = [
            ({"as_of": "yesterday"}, "as_of"),
            ({"as_of": datetime(2025, 1, 1)}, "as_of"),
            ({"valid_at": "2025-13-01"}, "valid_at"),
            ({"include_superseded": "yes"}, "include_superseded"),
        ]
        for read in reads:
            for bad, name in refused:
                with pytest.raises(ValueError, match=name):
                    await read(**bad)
        for bad, name in [refused[0], ({"include_superseded": 1}, "include_superseded")]:
            with pytest.raises(ValueError, match=name):
                await store.get(memory, **bad)

    # --- SUPERSEDE: the chain, and its copies ---------------------------------------------

    @pytest.mark.asyncio
    async def test_supersede_history_follows_the_chain_both_ways(
        self, store: Any, clock: ManualClock
    ) -> None:
        """``history`` of any memory of a chain gives the versions of the whole chain.

        Oldest first, each naming its memory; a ``"supersede"`` version names the successor
        and the moment of the retirement, and keeps the memory's ``created_at``. Deleting a
        retired memory leaves the chain whole, its ``"delete"`` version added.
        """
        require(
            store,
            Capability.SUPERSEDE,
            Capability.HISTORY,
            Capability.UPDATE,
            Capability.DELETE,
            Capability.GET,
        )
        lyon = (await store.add("Lives in Lyon", {"n": 1})).id
        created = (await store.get(lyon)).created_at
        clock.advance(1)
        paris = (await store.supersede([lyon], "Lives in Paris", reason="moved")).id
        clock.advance(1)
        await store.update(paris, content="Lives in Paris, Montmartre", reason="detail")
        clock.advance(1)
        berlin = (await store.supersede([paris], "Lives in Berlin", reason="moved again")).id
        clock.advance(1)
        unrelated = (await store.add("Likes jazz")).id
        await store.update(unrelated, content="Likes blues")
        clock.advance(1)

        expected = [
            (lyon, "Lives in Lyon", "supersede", "moved", paris),
            (paris, "Lives in Paris", "update", "detail", None),
            (paris, "Lives in Paris, Montmartre", "supersede", "moved again", berlin),
        ]

        def shown(versions: list[MemoryVersion]) -> list[tuple[Any, ...]]:
            return [(v.memory_id, v.content, v.change, v.reason, v.superseded_by) for v in versions]

        chain = await store.history(lyon)
        assert shown(chain) == expected
        for memory_id in (paris, berlin):
            assert await store.history(memory_id) == chain, memory_id
        moments = [v.changed_at for v in chain]
        assert moments == sorted(moments) and len(set(moments)) == 3
        assert chain[0].invalidated_at == chain[0].changed_at
        assert chain[0].created_at == created
        assert chain[0].metadata == {"n": 1}
        assert [v.memory_id for v in await store.history(unrelated)] == [unrelated]

        assert await store.delete(paris, reason="forget") is True
        after = await store.history(berlin)
        assert shown(after) == [
            *expected,
            (paris, "Lives in Paris, Montmartre", "delete", "forget", berlin),
        ]
        assert await store.history(lyon) == after

    @pytest.mark.asyncio
    async def test_supersede_copies_keep_retired_memories_and_their_versions(
        self, make_store: StoreFactory, clock: ManualClock
    ) -> None:
        """A copy into a fresh store holds the same memories, retired ones retired, and history.

        The copy is ``list(include_superseded=True)`` through ``import_records`` and
        ``versions()`` through ``import_versions``. A retired record is imported even beside
        a current memory of the same content, and the copy answers ``as_of`` as the source
        does. Copying again adds nothing.
        """
        source, copy = make_store("source"), make_store("copy")
        require(
            source,
            Capability.SUPERSEDE,
            Capability.IMPORT,
            Capability.HISTORY,
            Capability.LIST,
            Capability.UPDATE,
            Capability.DELETE,
        )
        tea = (await source.add("Prefers tea", {"n": 1}, valid_from="2020-01-01")).id
        clock.advance(1)
        note, gone = await add_in_turn(source, clock, ["Owns a kayak", "Owns a canoe"])
        then = pause(clock)
        coffee = (
            await source.supersede([tea], "Prefers coffee", valid_from="2024-01-01", reason="taste")
        ).id
        await source.update(note, content="Owns two kayaks")
        await source.delete(gone)
        clock.advance(1)
        await source.supersede([coffee], "Prefers tea")
        clock.advance(1)

        records = await source.list(include_superseded=True)
        versions = await every_version(source)
        assert "supersede" in {v.change for v in versions}
        assert await copy.import_records(records) == len(records) == 4
        for page in [versions[:2], versions[2:]]:
            await copy.import_versions(page)
        assert await copy.list(include_superseded=True) == records
        assert await copy.list() == await source.list()
        assert await every_version(copy) == versions
        for memory_id in (tea, coffee, note, gone):
            assert await copy.history(memory_id) == await source.history(memory_id), memory_id
        assert await copy.list(as_of=then) == await source.list(as_of=then)
        assert ids_of(await copy.search("prefers")) == ids_of(await source.search("prefers"))
        assert await copy.import_records(records) == 0
        assert await copy.import_versions(versions) == 0
        assert await every_version(copy) == versions
