"""MemoryManager: construction, search, add, forget, tools, injection and extraction wiring.

Follows the reference manager's checklist (spec 8.2) with real JSON file stores where the
behaviour allows, and small recording stores where a call has to be observed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import load_fixture
from memory_doubles import (
    DARK_MODE,
    TEAM,
    CountingJsonStore,
    MessagesOnlyStore,
    RecordingStore,
    SearchOnlyStore,
    reference_stores,
)

from agentrecall import AddResult, JsonFileStore, MemoryEntry, SQLiteStore
from agentrecall.errors import AggregateMemoryError, InvalidArgumentError
from agentrecall.extraction import (
    ExtractionConfig,
    IntervalTrigger,
    InvocationTrigger,
    ModelExtractor,
)
from agentrecall.memory.injection import InjectionConfig
from agentrecall.memory.manager import MemoryManager
from agentrecall.stores.base import MemoryStore
from agentrecall.testing import ManualClock, ScriptedChatModel

MANAGER = load_fixture("strands_manager.json")
CONSTRUCTOR_ERRORS = MANAGER["constructor_errors"]


def tool_names(manager: MemoryManager) -> list[str]:
    return [tool.name for tool in manager.tools]


# --- construction ------------------------------------------------------------------------------


def test_no_stores() -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        MemoryManager([])
    assert str(raised.value) == CONSTRUCTOR_ERRORS["no stores"]["message"]
    assert isinstance(raised.value, ValueError)


def test_duplicate_names() -> None:
    with pytest.raises(ValueError, match="^MemoryManager: duplicate store name 'd'"):
        MemoryManager([RecordingStore("d"), RecordingStore("d")])
    assert CONSTRUCTOR_ERRORS["duplicate names"]["message"].startswith(
        "MemoryManager: duplicate store name 'd'"
    )


def test_writable_store_without_a_write_method() -> None:
    store = SearchOnlyStore("w")
    store.writable = True
    with pytest.raises(ValueError, match="store 'w' is writable but has no add or add_messages"):
        MemoryManager([store])


def test_stores_must_be_named_searchable_and_a_list() -> None:
    with pytest.raises(ValueError, match=r"stores\[0\] needs a non-empty string name"):
        MemoryManager([object()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="must be a list of stores"):
        MemoryManager(RecordingStore("a"))  # type: ignore[arg-type]


class OnlySearch(MemoryStore):
    """Subclasses the protocol and defines only ``search``: the stubs must not count."""

    name = "only-search"
    description = None
    max_search_results = None
    writable = False
    extraction = None

    async def search(
        self, query: str, options: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        return []


class AddOverride(OnlySearch):
    name = "add-override"
    writable = True

    def __init__(self) -> None:
        self.added: list[str] = []

    async def add(self, content: str, metadata: dict[str, Any] | None = None) -> AddResult:
        self.added.append(content)
        return AddResult(id="x")


async def test_protocol_stubs_are_not_methods() -> None:
    manager = MemoryManager([OnlySearch()])
    assert tool_names(manager) == ["search_memory"]
    with pytest.raises(ValueError, match="no writable store matched"):
        await manager.add("x")
    with pytest.raises(ValueError, match="no writable stores implement add"):
        MemoryManager([OnlySearch()], add_tool=True)
    writable = OnlySearch()
    writable.writable = True
    with pytest.raises(ValueError, match="no add or add_messages"):
        MemoryManager([writable])


async def test_an_add_override_is_found() -> None:
    store = AddOverride()
    manager = MemoryManager([store], add_tool=True)
    assert tool_names(manager) == ["search_memory", "add_memory"]
    await manager.add("fact")
    assert store.added == ["fact"]


async def test_strands_protocol_defaults_are_not_methods() -> None:
    from strands.memory import MemoryStore as StrandsMemoryStore

    class StrandsSearchOnly(StrandsMemoryStore):
        def __init__(self) -> None:
            self.name, self.description, self.max_search_results = "s", None, None
            self.writable, self.extraction = False, None

        async def search(self, query: str, options: Any = None) -> list[Any]:
            return []

    manager = MemoryManager([StrandsSearchOnly()])
    assert tool_names(manager) == ["search_memory"]
    with pytest.raises(ValueError, match="no writable stores implement add"):
        MemoryManager([StrandsSearchOnly()], add_tool=True)


def test_add_tool_needs_a_writable_store_with_add() -> None:
    with pytest.raises(ValueError) as raised:
        MemoryManager([SearchOnlyStore("r")], add_tool=True)
    reference = CONSTRUCTOR_ERRORS["add tool but only read-only store"]["message"]
    assert reference.endswith("no writable stores implement add")
    assert "no writable stores implement add" in str(raised.value)
    with pytest.raises(ValueError, match="no writable stores implement add"):
        MemoryManager([MessagesOnlyStore("m")], add_tool=True)
    assert len(MemoryManager([RecordingStore("a")], add_tool=True).tools) == 2
    assert len(MemoryManager([RecordingStore("a"), RecordingStore("b")], add_tool=True).tools) == 2


@pytest.mark.parametrize(
    ("allowlist", "problem"),
    [
        (["missing"], "add_tool store 'missing' not found"),
        (["r"], "add_tool store 'r' is not writable"),
        (["m"], "add_tool store 'm' has no add method"),
        ([RecordingStore("stranger")], "add_tool store 'stranger' not found"),
        ([], "non-empty list"),
        ("a", "non-empty list"),
    ],
)
def test_add_tool_allowlist_is_checked(allowlist: Any, problem: str) -> None:
    stores = [RecordingStore("a"), SearchOnlyStore("r"), MessagesOnlyStore("m")]
    with pytest.raises(ValueError, match=problem):
        MemoryManager(stores, add_tool={"stores": allowlist})


def test_bad_tool_options_are_refused() -> None:
    with pytest.raises(ValueError, match="search_tool"):
        MemoryManager([RecordingStore("a")], search_tool="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown keys"):
        MemoryManager([RecordingStore("a")], add_tool={"nmae": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="forget_tool is enabled but no writable store"):
        MemoryManager([RecordingStore("a")], forget_tool=True)


def test_extraction_on_a_read_only_store() -> None:
    store = SearchOnlyStore("r")
    store.extraction = True
    with pytest.raises(ValueError) as raised:
        MemoryManager([store])
    assert str(raised.value) == CONSTRUCTOR_ERRORS["extraction on read-only store"]["message"]


def test_extraction_with_no_triggers() -> None:
    store = MessagesOnlyStore("r", extraction=ExtractionConfig(trigger=[]))
    with pytest.raises(ValueError) as raised:
        MemoryManager([store])
    assert str(raised.value).startswith(CONSTRUCTOR_ERRORS["extraction trigger=[]"]["message"])


def test_extractor_needs_add_and_passthrough_needs_add_messages() -> None:
    extractor = ModelExtractor()
    with pytest.raises(ValueError, match="store 'm' has an extractor but no add method"):
        MemoryManager([MessagesOnlyStore("m", extraction={"extractor": extractor})])


@pytest.mark.parametrize("extraction", [True, {"trigger": InvocationTrigger()}, ExtractionConfig()])
def test_extraction_is_accepted_where_it_can_work(extraction: Any) -> None:
    MemoryManager([MessagesOnlyStore("m", extraction=extraction)])
    MemoryManager([RecordingStore("a", extraction=extraction)], model=ScriptedChatModel())


def test_a_model_extractor_without_any_model_is_refused() -> None:
    with pytest.raises(ValueError, match="store 'a' extracts facts with a model.*model="):
        MemoryManager([RecordingStore("a", extraction=True)])
    MemoryManager(
        [RecordingStore("a", extraction={"extractor": ModelExtractor(ScriptedChatModel())})]
    )


# --- programmatic search -----------------------------------------------------------------------


async def test_search_concatenates_stamped_hits_in_store_order() -> None:
    a, b = RecordingStore("a", ["a1", "a2"]), RecordingStore("b", ["b1"])
    hits = await MemoryManager([a, b]).search("q")
    assert [(h.content, h.store_name, h.id) for h in hits] == [
        ("a1", "a", "a-0"),
        ("a2", "a", "a-1"),
        ("b1", "b", "b-0"),
    ]


async def test_search_limits_per_store() -> None:
    own, plain = RecordingStore("own", max_search_results=5), RecordingStore("plain")
    manager = MemoryManager([own, plain])
    await manager.search("q")
    await manager.search("q", max_search_results=2)
    assert [options for _, options in own.searches] == [
        {"max_search_results": 5},
        {"max_search_results": 2},
    ]
    assert [options for _, options in plain.searches] == [
        {"max_search_results": 3},
        {"max_search_results": 2},
    ]


async def test_search_named_stores_in_the_given_order() -> None:
    a, b, c = RecordingStore("a", ["a1"]), RecordingStore("b", ["b1"]), RecordingStore("c")
    hits = await MemoryManager([a, b, c]).search("q", stores=["b", "a", "b"])
    assert [h.content for h in hits] == ["b1", "a1"]
    assert (len(a.searches), len(b.searches), len(c.searches)) == (1, 1, 0)
    assert await MemoryManager([a, b, c]).search("q", stores=[]) == []
    assert len(a.searches) == 1


async def test_search_skips_a_failing_store(caplog: pytest.LogCaptureFixture) -> None:
    broken = RecordingStore("broken", search_error=OSError("disk gone"))
    manager = MemoryManager([broken, RecordingStore("ok", ["fine"])])
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.manager"):
        assert [h.content for h in await manager.search("q")] == ["fine"]
    assert "broken" in caplog.text and "disk gone" in caplog.text
    assert await MemoryManager([broken]).search("q") == []


async def test_reporting_failed_searches_raises_naming_each_store_and_injects_anyway() -> None:
    broken = RecordingStore("broken", search_error=OSError("disk gone"))
    manager = MemoryManager([broken, RecordingStore("ok", ["fine"])], report_failed_searches=True)
    with pytest.raises(AggregateMemoryError, match=r"broken \(disk gone\)") as caught:
        await manager.search("q")
    assert [str(error) for error in caught.value.errors] == ["disk gone"]
    [tool] = manager.tools
    result = await tool.invoke({"query": "q"})
    assert result.is_error and "broken (disk gone)" in result.text
    injected = await manager.inject([{"role": "user", "content": "q"}])
    assert "fine" in json.dumps(injected)  # injection still skips the failed store


async def test_search_unknown_store_queries_nothing() -> None:
    a = RecordingStore("a")
    with pytest.raises(ValueError) as raised:
        await MemoryManager([a]).search("q", stores=["a", "nope"])
    assert str(raised.value).startswith(MANAGER["call_errors"]["search unknown store"]["message"])
    assert a.searches == []
    with pytest.raises(ValueError, match="not the string"):
        await MemoryManager([a]).search("q", stores="a")


async def test_search_real_files(tmp_path: Path) -> None:
    hits = await MemoryManager(reference_stores(tmp_path)).search("dark mode")
    assert [(h.content, h.store_name, h.metadata) for h in hits][0] == (
        DARK_MODE,
        "personal",
        {"_relevanceScore": 2},
    )
    assert [h.store_name for h in hits] == ["personal", "personal", TEAM]
    assert hits[0].id == "p-dark-mode"


# --- programmatic add --------------------------------------------------------------------------


async def test_add_writes_to_every_writable_store() -> None:
    a, b, r = RecordingStore("a"), RecordingStore("b"), SearchOnlyStore("r")
    manager = MemoryManager([a, r, b])
    assert await manager.add("fact") is None
    await manager.add("with meta", metadata={"k": "v"})
    await manager.add("only a", stores=["a", "a"])
    assert a.adds == [("fact", None), ("with meta", {"k": "v"}), ("only a", None)]
    assert b.adds == [("fact", None), ("with meta", {"k": "v"})]


async def test_add_target_errors() -> None:
    manager = MemoryManager([RecordingStore("a"), SearchOnlyStore("r")])
    with pytest.raises(ValueError, match="^MemoryManager: store 'nope' not found"):
        await manager.add("x", stores=["nope"])
    with pytest.raises(ValueError, match="^MemoryManager: store 'r' is read-only"):
        await manager.add("x", stores=["r"])
    with pytest.raises(ValueError, match="no writable store matched"):
        await manager.add("x", stores=[])
    with pytest.raises(ValueError, match="no writable store matched"):
        await MemoryManager([SearchOnlyStore("r")]).add("x")


async def test_add_failure_waits_for_the_others_and_names_the_store() -> None:
    broken = RecordingStore("broken", add_error=OSError("write error"))
    healthy = RecordingStore("healthy")
    with pytest.raises(AggregateMemoryError) as raised:
        await MemoryManager([broken, healthy]).add("x")
    assert str(raised.value) == MANAGER["manager_add_aggregate_error"]["message"]
    assert [type(e) for e in raised.value.errors] == [OSError]
    assert healthy.adds == [("x", None)]


async def test_add_to_real_files(tmp_path: Path) -> None:
    stores = reference_stores(tmp_path)
    await MemoryManager(stores).add("Lives in Oslo", metadata={"source": "chat"})
    for store in stores:
        hits = await store.search("Oslo")
        assert [(h.content, h.metadata) for h in hits] == [
            ("Lives in Oslo", {"source": "chat", "_relevanceScore": 1})
        ]


# --- batches -----------------------------------------------------------------------------------


async def test_add_memory_with_ten_entries_is_one_batch_write(tmp_path: Path) -> None:
    store = CountingJsonStore(name="counted", path=tmp_path / "counted.json")
    manager = MemoryManager([store], add_tool=True)
    [add] = [tool for tool in manager.tools if tool.name == "add_memory"]
    entries = [f"fact number {i}" for i in range(10)]
    added = json.loads(await add(entries=entries))
    assert (added["stored"], len(added["new"]), added["already_stored"]) == (10, 10, [])
    assert (store.add_many_calls, store.add_calls) == (1, 0)
    assert [record.content for record in await store.list()] == entries


async def test_a_failed_batch_is_retried_entry_by_entry(tmp_path: Path) -> None:
    store = CountingJsonStore(name="counted", path=tmp_path / "counted.json")
    with pytest.raises(AggregateMemoryError) as raised:
        await MemoryManager([store]).add_many(["good", "  ", "also good"])
    assert str(raised.value).startswith("MemoryManager: failed to add 1 of 3 entries: ")
    assert len(raised.value.errors) == 1
    assert [record.content for record in await store.list()] == ["good", "also good"]


async def test_add_many_without_a_batch_method_adds_each() -> None:
    a = RecordingStore("a")
    await MemoryManager([a]).add_many(["x", "y"], metadata={"k": 1})
    assert a.adds == [("x", {"k": 1}), ("y", {"k": 1})]
    await MemoryManager([a]).add_many([])
    assert len(a.adds) == 2


async def test_add_many_flattens_nested_failures() -> None:
    nested = AggregateMemoryError("inner", [OSError("one"), OSError("two")])
    broken = RecordingStore("broken", add_error=nested)
    with pytest.raises(AggregateMemoryError) as raised:
        await MemoryManager([broken, RecordingStore("ok")]).add_many(["a", "b"])
    assert str(raised.value) == "MemoryManager: failed to add 2 of 2 entries: one; two; one; two"
    assert [str(e) for e in raised.value.errors] == ["one", "two", "one", "two"]


# --- forget ------------------------------------------------------------------------------------


async def test_forget_by_id_in_real_files(tmp_path: Path) -> None:
    stores = reference_stores(tmp_path)
    manager = MemoryManager([*stores, RecordingStore("no-delete")])
    assert await manager.forget(["p-chocolate", "t-dashboards", "unknown"]) == 2
    assert [h.id for h in await manager.search("dark")] == ["p-dark-mode"]
    assert await manager.forget(["p-dark-mode"], stores=[TEAM]) == 0
    with pytest.raises(ValueError, match="store 'no-delete' is read-only"):
        await manager.forget(["x"], stores=["no-delete"])
    with pytest.raises(ValueError, match="list of strings"):
        await manager.forget("p-dark-mode")


# --- supersede and as_of -----------------------------------------------------------------------


async def test_supersede_corrects_in_every_store_holding_the_id(tmp_path: Path) -> None:
    json_stores = reference_stores(tmp_path)
    async with (
        SQLiteStore(tmp_path / "a.db", name="a") as first,
        SQLiteStore(tmp_path / "b.db", name="b") as second,
    ):
        with ManualClock(datetime(2025, 3, 1, tzinfo=timezone.utc)):
            record = await first.get((await first.add("User drinks coffee", {"k": 1})).id)
            assert record is not None
            await second.import_records([record])  # a copy keeps its id, as migrate does
        manager = MemoryManager([*json_stores, first, second])
        done = await manager.supersede(record.id, "User drinks tea", reason="switched")
        assert [(name, result.created) for name, result in done] == [("a", True), ("b", True)]
        for store, (_, result) in zip((first, second), done, strict=True):
            assert [h.content for h in await store.search("user drinks")] == ["User drinks tea"]
            assert (await store.get(result.id)).metadata == {"k": 1}  # type: ignore[union-attr]
            hits = await manager.search("drinks", stores=[store.name], as_of="2025-03-02")
            assert [(h.content, h.id) for h in hits] == [("User drinks coffee", record.id)]
        with pytest.raises(
            ValueError, match="store 'personal' is read-only for update .*Capability.SUPERSEDE"
        ):
            await manager.supersede(record.id, "x", stores=["personal"])
        with pytest.raises(ValueError, match="no memory with id 'nope' in a, b"):
            await manager.supersede("nope", "x")
        with pytest.raises(ValueError, match="content must be a string"):
            await manager.supersede(record.id, None)  # type: ignore[arg-type]


async def test_search_as_of_refuses_stores_without_a_past_and_bad_times(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "m.db", name="m") as store:
        manager = MemoryManager([*reference_stores(tmp_path), store])
        with pytest.raises(ValueError, match="as_of: the stores personal, .* cannot recall"):
            await manager.search("dark", as_of="2025-01-01")
        assert await manager.search("dark", stores=["m"], as_of="2025-01-01") == []
        # Checked before any store is searched: not a failed store skipped with a warning.
        with pytest.raises(ValueError, match="as_of must be a timezone-aware datetime"):
            await manager.search("dark", stores=["m"], as_of="2025-01-01T00:00:00")


# --- tools -------------------------------------------------------------------------------------


def test_tool_sets() -> None:
    store = RecordingStore("a")
    assert tool_names(MemoryManager([store])) == ["search_memory"]
    assert tool_names(MemoryManager([store], add_tool=True)) == ["search_memory", "add_memory"]
    assert tool_names(MemoryManager([store], search_tool=False)) == []
    manager = MemoryManager([store], search_tool={"name": "recall"}, add_tool={"name": "remember"})
    assert tool_names(manager) == ["recall", "remember"]
    assert manager.tools is not manager.tools  # a fresh list each time


def test_store_descriptions_reach_both_tools() -> None:
    stores = [RecordingStore("a", description="first"), RecordingStore("b", description="second")]
    for tool in MemoryManager(stores, add_tool=True).tools:
        assert "\n- a: first\n- b: second\n\n" in tool.description


# --- injection ---------------------------------------------------------------------------------


def test_injection_settings() -> None:
    store = RecordingStore("a")
    assert MemoryManager([store]).injection == InjectionConfig()
    assert MemoryManager([store], injection=True).injection == InjectionConfig()
    assert MemoryManager([store], injection=False).injection is None
    config = InjectionConfig(trigger="everyTurn")
    assert MemoryManager([store], injection=config).injection is config
    with pytest.raises(ValueError, match="injection"):
        MemoryManager([store], injection={"max_entries": 0})


async def test_inject_folds_memories_into_the_ask() -> None:
    store = RecordingStore("s", ["dark mode preferred"])
    messages = [
        {"role": "assistant", "content": [{"text": "prior"}]},
        {"role": "user", "content": [{"text": "what is my plan"}]},
    ]
    result = await MemoryManager([store]).inject(messages)
    assert result[1]["content"] == [
        {"text": "what is my plan"},
        {"text": '\n\n<memory>\n<entry source="s">dark mode preferred</entry>\n</memory>'},
    ]
    assert store.searches == [("what is my plan", {"max_search_results": 5})]
    assert messages[1]["content"] == [{"text": "what is my plan"}]


async def test_inject_renders_the_fixture_from_real_files(tmp_path: Path) -> None:
    manager = MemoryManager(reference_stores(tmp_path))
    [message] = await manager.inject([{"role": "user", "content": "dark mode"}])
    assert message["content"] == "dark mode\n\n" + MANAGER["provide_memory_context_for_user_turn"]


async def test_inject_takes_at_most_max_entries_in_store_order() -> None:
    a, b = RecordingStore("a", ["A", "B"]), RecordingStore("b", ["C"])
    manager = MemoryManager([a, b], injection={"max_entries": 2, "format": _contents})
    [message] = await manager.inject([{"role": "user", "content": "q"}])
    assert message["content"] == "q\n\nA,B"
    assert b.searches == [("q", {"max_search_results": 2})]


def _contents(entries: Sequence[MemoryEntry]) -> str:
    return ",".join(entry.content for entry in entries)


async def test_inject_disabled_returns_a_copy_without_searching() -> None:
    store = RecordingStore("a", ["A"])
    messages = [{"role": "user", "content": "q"}]
    result = await MemoryManager([store], injection=False).inject(messages)
    assert result == messages and result is not messages and store.searches == []


async def test_inject_fails_open_when_a_store_cannot_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Unready(RecordingStore):
        async def initialize(self) -> None:
            raise OSError("cannot connect")

    messages = [{"role": "user", "content": "q"}]
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.injection"):
        assert await MemoryManager([Unready("u", ["A"])]).inject(messages) == messages
    assert "memory injection skipped" in caplog.text


async def test_stores_are_initialized_once_in_order() -> None:
    started: list[str] = []

    class Slow(RecordingStore):
        async def initialize(self) -> None:
            await asyncio.sleep(0)
            started.append(self.name)

    manager = MemoryManager([Slow("a"), RecordingStore("plain"), Slow("b")])
    await asyncio.gather(manager.search("q"), manager.add("x"), manager.initialize())
    assert started == ["a", "b"]


# --- extraction --------------------------------------------------------------------------------


class ScriptedModel:
    """A chat model that answers every call with the same text and records the calls."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls: list[tuple[list[Any], str | None]] = []

    async def complete(self, messages: Sequence[Any], *, system: str | None = None) -> str:
        self.calls.append((list(messages), system))
        return self.answer


def turn(number: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"question {number}"},
        {"role": "assistant", "content": f"answer {number}"},
    ]


async def test_without_extraction_record_end_turn_and_flush_do_nothing() -> None:
    manager = MemoryManager([RecordingStore("a")])
    manager.record(turn(1))
    manager.end_turn()
    assert await manager.flush() is None


async def test_default_extraction_saves_on_the_fifth_turn() -> None:
    saved = asyncio.Event()

    class Signalling(MessagesOnlyStore):
        async def add_messages(self, messages: list[Any], context: Any = None) -> None:
            await super().add_messages(messages, context)
            saved.set()

    store = Signalling("m", extraction=True)
    manager = MemoryManager([store])
    for number in range(1, 5):
        manager.record(turn(number))
        manager.end_turn()
    await asyncio.sleep(0)
    assert store.batches == []
    manager.record(turn(5))
    manager.end_turn()
    await asyncio.wait_for(saved.wait(), timeout=30)
    assert [m["content"] for m in store.batches[0]] == [
        text for n in range(1, 6) for text in (f"question {n}", f"answer {n}")
    ]


async def test_flush_saves_the_tail_once() -> None:
    store = MessagesOnlyStore("m", extraction={"trigger": IntervalTrigger(2)})
    manager = MemoryManager([store])
    manager.record(turn(1))
    manager.end_turn()
    await manager.flush()
    await manager.flush()
    assert [len(batch) for batch in store.batches] == [2]


async def test_extracted_facts_reach_a_real_file_through_the_managers_model(
    tmp_path: Path,
) -> None:
    model = ScriptedModel('[{"content": "User likes tea"}, {"content": "User lives in Oslo"}]')
    store = JsonFileStore(name="facts", path=tmp_path / "facts.json", extraction=True)
    manager = MemoryManager([store], model=model)
    manager.record(turn(1))
    manager.end_turn()
    await manager.flush()
    assert len(model.calls) == 1
    assert sorted(r.content for r in await store.list()) == ["User likes tea", "User lives in Oslo"]


async def test_openai_style_loop_end_to_end(tmp_path: Path) -> None:
    store = JsonFileStore(name="personal", path=tmp_path / "personal.json")
    manager = MemoryManager([store], add_tool=True)
    tools = {tool.name: tool for tool in manager.tools}
    arguments = json.dumps({"entries": ["User prefers aisle seats"]})
    assert json.loads((await tools["add_memory"].invoke(arguments)).text)["stored"] == 1
    messages = [
        {"role": "system", "content": "You book flights."},
        {"role": "user", "content": "Book seats as usual"},
    ]
    prepared = await manager.inject(messages)
    assert prepared[1]["content"] == (
        "Book seats as usual\n\n<memory>\n"
        '<entry source="personal">User prefers aisle seats</entry>\n</memory>'
    )
    assert messages[1]["content"] == "Book seats as usual"


async def test_a_strands_store_works_in_our_manager(tmp_path: Path) -> None:
    from strands.vended_memory_stores.test_memory_store import TestMemoryStore as StrandsStore

    theirs = StrandsStore(name="theirs", path=str(tmp_path / "theirs.json"))
    manager = MemoryManager([theirs], add_tool=True)
    [_, add] = manager.tools
    added = json.loads(await add(entries=["User prefers aisle seats", "User lives in Oslo"]))
    assert added["stored"] == 2 and added["already_stored"] == []
    assert [(item["content"], item["store_name"]) for item in added["new"]] == [
        ("User prefers aisle seats", "theirs"),
        ("User lives in Oslo", "theirs"),
    ]
    hits = await manager.search("aisle seats")
    assert [(h.content, h.store_name, h.id) for h in hits] == [
        ("User prefers aisle seats", "theirs", None)
    ]
