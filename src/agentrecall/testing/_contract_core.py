"""The store contract every store keeps: search, add and closing, and the basic capabilities."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.testing._contract_base import (
    FILLER,
    TIMESTAMP,
    ContractBase,
    StoreFactory,
    add_all,
    contents_of,
    has,
    require,
    score,
    visible,
)
from agentrecall.types import MemoryRecord


class CoreContract(ContractBase):
    """Search, add and closing on every store; get, delete, list, count, add_many if declared."""

    # --- core: every store ----------------------------------------------------------------

    def test_core_has_the_protocol_attributes(self, make_store: StoreFactory) -> None:
        """A store has the Strands protocol attributes, its settings and a capability set."""
        store = make_store("contract")
        assert isinstance(store, MemoryStore)
        assert store.name == "contract"
        assert store.description is None or isinstance(store.description, str)
        assert store.max_search_results is None and store.writable is True
        declared = getattr(store, "capabilities", None)
        assert isinstance(declared, (set, frozenset)), "declare capabilities as a set"
        assert all(isinstance(c, Capability) for c in declared)
        configured = make_store(
            "configured", description="Travel plans", max_search_results=3, writable=False
        )
        assert configured.description == "Travel plans"
        assert configured.max_search_results == 3 and configured.writable is False
        with pytest.raises(ValueError, match="max_search_results"):
            make_store("bad", max_search_results=0)

    @pytest.mark.asyncio
    async def test_core_add_returns_the_id_that_hits_carry(self, store: Any) -> None:
        """``add`` returns a fresh non-empty id, and search hits carry that id."""
        ids = await add_all(store, ["Likes green tea", "Owns a red bicycle", *FILLER])
        assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids)
        hits = await store.search("bicycle")
        assert [(hit.id, hit.content) for hit in hits] == [(ids[1], "Owns a red bicycle")]

    @pytest.mark.asyncio
    async def test_core_identical_content_dedups_to_the_first_memory(self, store: Any) -> None:
        """Content equal once stripped returns the first id; the first metadata stays."""
        first = await store.add("Likes green tea", {"source": "first"})
        again = await store.add("  Likes green tea \n", {"source": "second"})
        other = await store.add("Likes green coffee")
        assert again.id == first.id and other.id != first.id
        hits = await store.search("tea")
        assert [hit.id for hit in hits] == [first.id]
        assert hits[0].metadata is not None and hits[0].metadata["source"] == "first"

    @pytest.mark.asyncio
    async def test_core_content_and_metadata_are_stored_verbatim(self, store: Any) -> None:
        """Content comes back byte for byte, metadata equal, plus only ``_relevanceScore``."""
        content = "  Spaced\tout note, café 😀 \n"
        metadata = {"tags": ["a", "é"], "nested": {"n": 1.5, "ok": None}, "flag": False, "n": -7}
        memory = await store.add(content, metadata)
        await store.add("A plain note without metadata")
        (hit,) = await store.search("spaced")
        assert (hit.id, hit.content) == (memory.id, content)
        assert hit.metadata == {**metadata, "_relevanceScore": hit.metadata["_relevanceScore"]}
        (plain,) = await store.search("plain")
        assert plain.metadata == {"_relevanceScore": score(plain)}

    @pytest.mark.asyncio
    async def test_core_search_returns_the_best_hit_first(self, store: Any) -> None:
        """Hits come best first, and a better hit has a strictly higher ``_relevanceScore``."""
        await add_all(
            store,
            [
                "Maria plays tennis",
                "Maria plays violin in an orchestra",
                "Tennis lessons happen every Tuesday",
                *FILLER,
            ],
        )
        hits = await store.search("Maria violin orchestra")
        assert contents_of(hits) == ["Maria plays violin in an orchestra", "Maria plays tennis"]
        assert score(hits[0]) > score(hits[1])

    @pytest.mark.asyncio
    async def test_core_search_finds_nothing_without_a_shared_word(self, store: Any) -> None:
        """A query sharing no word with any memory, or holding no word at all, finds nothing."""
        await add_all(store, FILLER)
        assert await store.search("submarine") == []
        for query in ("", "   ", "?!...", "— …"):
            assert await store.search(query) == [], query

    @pytest.mark.asyncio
    async def test_core_search_finds_the_only_memory(self, store: Any) -> None:
        """A store holding a single memory finds it by any of its words."""
        await store.add("The user prefers aisle seats")
        assert contents_of(await store.search("aisle")) == ["The user prefers aisle seats"]

    @pytest.mark.asyncio
    async def test_core_search_caps_the_hits(self, make_store: StoreFactory) -> None:
        """The per-call limit wins over the store's, which wins over the default of 10."""
        capped = make_store("capped", max_search_results=3)
        await add_all(capped, [f"Orchid number {word}" for word in "abcdefghijkl"])
        assert len(await capped.search("orchid")) == 3
        assert len(await capped.search("orchid", {"max_search_results": 5})) == 5
        assert len(await capped.search("orchid", {"max_search_results": 1})) == 1
        assert len(await capped.search("orchid", {"max_search_results": None})) == 3
        default = make_store("default")
        await add_all(default, [f"Orchid number {word}" for word in "abcdefghijkl"])
        assert len(await default.search("orchid")) == 10
        for bad in (0, -1):
            with pytest.raises(ValueError, match="max_search_results"):
                await default.search("orchid", {"max_search_results": bad})

    @pytest.mark.asyncio
    async def test_core_hit_metadata_is_a_fresh_copy(self, store: Any) -> None:
        """Neither the caller's metadata nor a hit's, mutated later, changes what is stored."""
        metadata: dict[str, Any] = {"tags": ["a"], "nested": {"k": 1}}
        await store.add("Copied metadata note", metadata)
        metadata["tags"].append("changed by the caller")
        (hit,) = await store.search("copied")
        assert hit.metadata is not None
        hit.metadata["tags"].append("changed by a reader")
        hit.metadata["nested"]["k"] = 2
        del hit.metadata["_relevanceScore"]
        (again,) = await store.search("copied")
        assert again.metadata == {
            "tags": ["a"],
            "nested": {"k": 1},
            "_relevanceScore": score(again),
        }

    @pytest.mark.asyncio
    async def test_core_read_only_store_refuses_to_add(self, make_store: StoreFactory) -> None:
        """``add`` on a ``writable=False`` store raises ``ValueError`` and stores nothing."""
        await make_store("shared").add("An existing note")
        read_only = self.read_only_twin(make_store, "shared")
        with pytest.raises(ValueError, match="read-only"):
            await read_only.add("A refused note")
        assert await read_only.search("refused") == []
        assert await make_store("shared").search("refused") == []
        if self.persistent:
            assert contents_of(await read_only.search("existing")) == ["An existing note"]

    @pytest.mark.asyncio
    async def test_core_blank_content_is_refused(self, store: Any) -> None:
        """Blank or non-string content raises ``ValueError`` and stores nothing."""
        for content in ("", "   ", "\n\t", None, 42):
            with pytest.raises(ValueError, match="content"):
                await store.add(content)
        assert await store.search("42") == []

    @pytest.mark.asyncio
    async def test_core_metadata_must_be_a_json_object(self, store: Any) -> None:
        """Metadata that is not a JSON object raises ``ValueError`` before any write."""
        for metadata in (
            ["not", "an", "object"],
            "text",
            {"set": {1, 2}},
            {1: "integer key"},
            {"nan": float("nan")},
            {"bytes": b"x"},
        ):
            with pytest.raises(ValueError, match="metadata"):
                await store.add("Refused because of metadata", metadata)
        assert await store.search("refused") == []

    @pytest.mark.asyncio
    async def test_core_concurrent_adds_all_land(self, store: Any) -> None:
        """Adds running at once on one store all succeed, each with its own id."""
        results = await asyncio.gather(*(store.add(f"Parallel note n{i}") for i in range(20)))
        assert len({result.id for result in results}) == 20
        for i, result in enumerate(results):
            assert [hit.id for hit in await store.search(f"n{i}")] == [result.id]

    @pytest.mark.asyncio
    async def test_core_stores_of_other_names_are_separate(self, make_store: StoreFactory) -> None:
        """Stores of different names never share memories."""
        await make_store("one").add("Only in the first store")
        assert await make_store("two").search("first") == []

    @pytest.mark.asyncio
    async def test_core_memories_persist_across_instances(self, make_store: StoreFactory) -> None:
        """A new store object with the same name sees the memories and dedups against them."""
        if not self.persistent:
            pytest.skip(f"{type(self).__name__} declares persistent = False")
        first = await make_store("kept").add("Remembered across instances")
        reopened = make_store("kept")
        assert [hit.id for hit in await reopened.search("remembered")] == [first.id]
        assert (await reopened.add("Remembered across instances")).id == first.id

    @pytest.mark.asyncio
    async def test_core_async_with_gives_the_store_and_closes_it(
        self, make_store: StoreFactory
    ) -> None:
        """``async with`` gives the store itself and leaves through ``aclose()``.

        Closing twice is harmless, and the block's error still propagates after the close
        (what a closed store does next is the closing section's: ``test_closing_...``).
        """
        store = make_store("entered")
        async with store as entered:
            assert entered is store
            first = await store.add("Likes green tea")
            assert [hit.id for hit in await store.search("tea")] == [first.id]
        await store.aclose()
        with pytest.raises(LookupError, match="raised in the block"):
            async with make_store("raising") as raising:
                await raising.add("Owns a red bicycle")
                raise LookupError("raised in the block")

    # --- GET ------------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_get_returns_the_record(self, store: Any) -> None:
        """``get`` returns the memory's id, verbatim content, metadata and creation time."""
        require(store, Capability.GET)
        memory = await store.add("  Exact text kept ", {"k": [1, {"v": None}]})
        bare = await store.add("No metadata here")
        record = await store.get(memory.id)
        assert isinstance(record, MemoryRecord)
        assert (record.id, record.content, record.metadata) == (
            memory.id,
            "  Exact text kept ",
            {"k": [1, {"v": None}]},
        )
        assert TIMESTAMP.match(record.created_at), record.created_at
        bare_record = await store.get(bare.id)
        assert bare_record is not None and bare_record.metadata is None

    @pytest.mark.asyncio
    async def test_get_unknown_ids_give_none(self, store: Any) -> None:
        """``get`` of an id the store does not hold returns ``None``."""
        require(store, Capability.GET)
        await store.add("Something stored")
        for unknown in ("no-such-id", "", "00000000-0000-4000-8000-000000000000"):
            assert await store.get(unknown) is None

    @pytest.mark.asyncio
    async def test_get_metadata_is_a_fresh_copy(self, store: Any) -> None:
        """Mutating the metadata ``get`` returned changes nothing stored."""
        require(store, Capability.GET)
        memory = await store.add("Metadata copy check", {"tags": ["a"]})
        record = await store.get(memory.id)
        record.metadata["tags"].append("b")
        assert (await store.get(memory.id)).metadata == {"tags": ["a"]}

    # --- DELETE ---------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_delete_forgets_from_every_read(self, store: Any) -> None:
        """``delete`` says whether it forgot; a forgotten memory is gone from every read."""
        require(store, Capability.DELETE)
        doomed, kept = await add_all(store, ["Forget this violin", "Keep this violin"])
        assert await store.delete(doomed) is True
        assert await store.delete(doomed) is False
        assert not await visible(store, doomed, "violin")
        assert [hit.id for hit in await store.search("violin")] == [kept]
        if has(store, Capability.COUNT):
            assert await store.count() == 1
        again = await store.add("Forget this violin")
        assert await visible(store, again.id, "forget")

    @pytest.mark.asyncio
    async def test_delete_many_returns_how_many(self, store: Any) -> None:
        """``delete_many`` forgets the given ids and counts only those it held."""
        require(store, Capability.DELETE)
        a, b, c = await add_all(store, ["First harp", "Second harp", "Third harp"])
        assert await store.delete_many([a, b, "no-such-id", a]) == 2
        assert await store.delete_many([]) == 0
        assert [hit.id for hit in await store.search("harp")] == [c]

    @pytest.mark.asyncio
    async def test_delete_on_a_read_only_store_is_refused(self, make_store: StoreFactory) -> None:
        """``delete`` on a read-only store raises ``ValueError`` and forgets nothing."""
        writer = make_store("shared")
        require(writer, Capability.DELETE)
        memory = await writer.add("Protected note")
        read_only = self.read_only_twin(make_store, "shared")
        with pytest.raises(ValueError, match="read-only"):
            await read_only.delete(memory.id)
        assert await visible(writer, memory.id, "protected")

    # --- LIST and COUNT -------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_list_pages_oldest_first(self, store: Any) -> None:
        """``list`` returns memories oldest first and pages with ``offset`` and ``limit``."""
        require(store, Capability.LIST)
        assert await store.list() == []
        contents = ["One note", "Two note", "Three note", "Four note", "Five note"]
        ids = await add_all(store, contents)
        await store.add("Three note")  # a duplicate adds nothing
        records = await store.list()
        assert [(r.id, r.content) for r in records] == list(zip(ids, contents, strict=True))
        assert [r.created_at for r in records] == sorted(r.created_at for r in records)
        assert contents_of(await store.list(offset=1, limit=2)) == contents[1:3]
        assert contents_of(await store.list(offset=3)) == contents[3:]
        assert contents_of(await store.list(limit=1)) == contents[:1]
        assert await store.list(offset=5) == []
        for bad in ({"offset": -1}, {"limit": 0}, {"limit": -2}):
            with pytest.raises(ValueError):
                await store.list(**bad)

    @pytest.mark.asyncio
    async def test_count_counts_distinct_memories(self, store: Any) -> None:
        """``count`` says how many memories are held; duplicates add none."""
        require(store, Capability.COUNT)
        assert await store.count() == 0
        await add_all(store, ["Alpha note", "Beta note", " Alpha note "])
        assert await store.count() == 2

    # --- ADD_MANY -------------------------------------------------------------------------

    @pytest.mark.asyncio
    async def test_add_many_keeps_order_and_dedups(self, store: Any) -> None:
        """``add_many`` returns one result per item in order, deduplicating like separate adds."""
        require(store, Capability.ADD_MANY)
        existing = await store.add("Already stored fact")
        results = await store.add_many(
            [
                ("New fact one", {"i": 0}),
                ("Already stored fact", None),
                ("New fact two", None),
                (" New fact one ", {"i": 3}),
            ]
        )
        ids = [result.id for result in results]
        assert ids[1] == existing.id and ids[3] == ids[0]
        assert len({ids[0], ids[1], ids[2]}) == 3
        assert await store.add_many([]) == []
        (hit,) = await store.search("one")
        assert hit.id == ids[0] and hit.metadata is not None and hit.metadata["i"] == 0

    @pytest.mark.asyncio
    async def test_add_many_stores_nothing_when_an_item_is_bad(self, store: Any) -> None:
        """One bad item makes ``add_many`` raise ``ValueError`` and store none of the batch."""
        require(store, Capability.ADD_MANY)
        for bad_item in (("", None), ("Fine words", ["not", "an", "object"])):
            with pytest.raises(ValueError):
                await store.add_many([("Innocent bystander", None), bad_item])
        assert await store.search("innocent bystander fine words") == []
