"""Memory tools: names, schemas, payloads, result texts and errors against the reference."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import load_fixture
from memory_doubles import (
    CHOCOLATE,
    DARK_MODE,
    PREFS,
    TEAM,
    TEAM_DARK,
    RecordingStore,
    SearchOnlyStore,
    reference_stores,
)
from strict_schema import assert_strict_schema, defaults_that_do_not_fit

from agentrecall import JsonFileStore, SQLiteStore
from agentrecall.errors import AggregateMemoryError, InvalidArgumentError
from agentrecall.memory.manager import MemoryManager
from agentrecall.memory.tools import AddToolConfig, MemoryTool, ToolConfig, ToolResult
from agentrecall.testing import ManualClock

MANAGER = load_fixture("strands_manager.json")
SPECS = MANAGER["tool_specs"]
SEEN = MANAGER["tool_results_as_seen_by_model"]


def seen_text(case: str) -> str:
    return str(SEEN[case]["content"][0]["text"])


def tools_of(manager: MemoryManager) -> dict[str, MemoryTool]:
    return {tool.name: tool for tool in manager.tools}


def without_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items() if k != "description"}
    return schema


def without_null_defaults(schema: Any) -> Any:
    """The reference's schema without its ``"default": null``, which ours leaves out."""
    if isinstance(schema, dict):
        return {
            k: without_null_defaults(v)
            for k, v in schema.items()
            if not (k == "default" and v is None)
        }
    return schema


@pytest.fixture
def stores(tmp_path: Path) -> list[JsonFileStore]:
    return reference_stores(tmp_path)


@pytest.fixture
def tools(stores: list[JsonFileStore]) -> dict[str, MemoryTool]:
    return tools_of(MemoryManager(stores, add_tool=True))


# --- definitions -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["search_memory", "add_memory"])
def test_schemas_match_the_reference_apart_from_wording(
    tools: dict[str, MemoryTool], name: str
) -> None:
    ours = tools[name].input_schema
    reference = SPECS[name]["inputSchema"]["json"]
    # add_memory's metadata and ttl go beyond the reference, after its properties.
    extensions = {"search_memory": [], "add_memory": ["metadata", "ttl"]}[name]
    shared = without_descriptions(ours)
    for extension in extensions:
        del shared["properties"][extension]
    assert shared == without_null_defaults(without_descriptions(reference))
    assert list(ours["properties"]) == [*reference["properties"], *extensions]
    for prop in ours["properties"].values():
        assert prop["description"].strip()


@pytest.mark.parametrize(
    ("name", "header"),
    [("search_memory", "Available memory stores:"), ("add_memory", "Available writable stores:")],
)
def test_descriptions_are_ours_and_list_the_described_stores(
    tools: dict[str, MemoryTool], name: str, header: str
) -> None:
    ours = tools[name].description
    reference = SPECS[name]["description"]
    assert f"\n\n{header}\n- personal: {PREFS}\n\n" in ours  # the team store has no description
    assert TEAM not in ours
    intro, _, closing = ours.partition(f"\n\n{header}\n- personal: {PREFS}\n\n")
    ref_intro, _, ref_closing = reference.partition(f"\n\n{header}\n- personal: {PREFS}\n\n")
    assert intro and intro != ref_intro
    assert closing and closing != ref_closing
    assert "`stores`" in closing


def test_descriptions_without_described_stores_have_no_store_list(tmp_path: Path) -> None:
    store = JsonFileStore(name="plain", path=tmp_path / "plain.json")
    for tool in MemoryManager([store], add_tool=True, forget_tool=True).tools:
        assert "\n\n" not in tool.description and "plain" not in tool.description


def test_every_schema_is_one_strict_validators_accept(stores: list[JsonFileStore]) -> None:
    manager = MemoryManager(stores, add_tool=True, forget_tool=True)
    assert [tool.name for tool in manager.tools] == ["search_memory", "add_memory", "forget_memory"]
    for tool in manager.tools:
        assert_strict_schema(tool.input_schema)
    # The rule itself: the reference's "default": null on an integer is what it refuses.
    reference = SPECS["search_memory"]["inputSchema"]["json"]
    assert defaults_that_do_not_fit(reference) != []


def test_converters_give_each_api_its_shape(tools: dict[str, MemoryTool]) -> None:
    tool = tools["search_memory"]
    assert tool.as_openai() == {
        "type": "function",
        "function": {
            "name": "search_memory",
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }
    assert tool.as_anthropic() == {
        "name": "search_memory",
        "description": tool.description,
        "input_schema": tool.input_schema,
    }
    assert tool.as_mcp() == {
        "name": "search_memory",
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    for converted in (tool.as_anthropic()["input_schema"], tool.as_mcp()["inputSchema"]):
        converted["properties"].clear()  # callers may change what they got
    assert "query" in tool.input_schema["properties"]
    json.dumps([tool.as_openai(), tool.as_anthropic(), tool.as_mcp()])


def test_custom_names_and_descriptions(stores: list[JsonFileStore]) -> None:
    manager = MemoryManager(
        stores,
        search_tool=ToolConfig(name="recall", description="Look things up."),
        add_tool={"name": "remember"},
    )
    assert [tool.name for tool in manager.tools] == ["recall", "remember"]
    assert manager.tools[0].description.startswith("Look things up.\n\nAvailable memory stores:")


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dots.not.allowed"])
def test_tool_names_must_suit_every_api(stores: list[JsonFileStore], name: str) -> None:
    with pytest.raises(InvalidArgumentError, match="tool name"):
        MemoryManager(stores, search_tool=ToolConfig(name=name))


# --- search_memory -----------------------------------------------------------------------------


async def test_search_result_text_matches_the_reference(tools: dict[str, MemoryTool]) -> None:
    text = await tools["search_memory"](query="dark mode", max_search_results=1)
    assert text == seen_text("search_memory success")


async def test_search_payloads_match_the_reference(tools: dict[str, MemoryTool]) -> None:
    search = tools["search_memory"]
    assert json.loads(await search(query="dark mode")) == MANAGER["search_memory_payload"]
    scoped = await search(query="dark", stores=["personal"], max_search_results=1)
    assert json.loads(scoped) == MANAGER["search_memory_payload_scoped_max1"]


async def test_no_match_is_an_empty_list(tools: dict[str, MemoryTool]) -> None:
    assert await tools["search_memory"](query="zebra") == seen_text("search_memory no match")


async def test_a_failing_store_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stores = reference_stores(tmp_path)
    (tmp_path / "team.json").write_text("{not json", encoding="utf-8")
    search = tools_of(MemoryManager(stores))["search_memory"]
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.manager"):
        text = await search(query="dark")
    assert text == seen_text("search_memory with one failing store (failure skipped)")
    assert TEAM in caplog.text


async def test_all_requested_stores_out_of_scope_is_an_error(tools: dict[str, MemoryTool]) -> None:
    result = await tools["search_memory"].invoke({"query": "dark", "stores": ["nope"]})
    assert result.is_error
    reference = seen_text("search_memory all stores out of scope (ValueError)")
    assert reference.startswith("Error: MemoryManager: ")
    assert result.text.startswith("Error: MemoryManager: ")
    for fact in (
        "none of the requested memory stores are available",
        "nope",
        'available stores: personal, team"s <notes>',
    ):
        assert fact in reference and fact in result.text


async def test_unknown_names_are_dropped_with_a_warning(
    tools: dict[str, MemoryTool], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.tools"):
        text = await tools["search_memory"](query="dark", stores=["nope", "personal", "personal"])
    assert [item["content"] for item in json.loads(text)] == [DARK_MODE, CHOCOLATE]
    assert "nope" in caplog.text


async def test_empty_store_list_searches_everything(tools: dict[str, MemoryTool]) -> None:
    assert len(json.loads(await tools["search_memory"](query="dark", stores=[]))) == 3


async def test_results_leave_out_empty_keys() -> None:
    store = RecordingStore("s", ["a fact"])
    text = await tools_of(MemoryManager([store]))["search_memory"](query="fact")
    assert json.loads(text) == [{"content": "a fact", "store_name": "s"}]


async def test_a_limit_below_one_finds_nothing(tools: dict[str, MemoryTool]) -> None:
    # The store refuses the limit; the manager skips the failing store, as the reference does.
    assert await tools["search_memory"](query="dark", max_search_results=0) == "[]"


async def test_ids_come_back_only_when_forgetting_is_on(stores: list[JsonFileStore]) -> None:
    plain = await tools_of(MemoryManager(stores))["search_memory"](query="chocolate")
    assert "id" not in json.loads(plain)[0]
    forgetful = tools_of(MemoryManager(stores, forget_tool=True))["search_memory"]
    [item] = json.loads(await forgetful(query="chocolate"))
    assert item == {
        "content": CHOCOLATE,
        "store_name": "personal",
        "metadata": {"_relevanceScore": 1},
        "id": "p-chocolate",
    }


# --- add_memory --------------------------------------------------------------------------------


async def test_add_result_counts_as_the_reference_and_says_what_was_there(
    tools: dict[str, MemoryTool],
) -> None:
    first = json.loads(await tools["add_memory"](entries=["Likes tea"]))
    assert first["stored"] == json.loads(seen_text("add_memory success"))["stored"]
    payload = json.loads(await tools["add_memory"](entries=["Likes tea", "Lives in Oslo"]))
    # A deduplicated entry still counts, as in the reference, and is said to be there already.
    assert payload["stored"] == MANAGER["add_memory_payload"]["stored"]
    assert [i["content"] for i in first["new"]] == ["Likes tea", "Likes tea"]  # both stores
    assert payload["already_stored"] == first["new"]  # the same memories, ids and all
    assert [i["content"] for i in payload["new"]] == ["Lives in Oslo", "Lives in Oslo"]
    assert [i["store_name"] for i in payload["new"]] == [i["store_name"] for i in first["new"]]


async def test_add_writes_every_entry_to_every_store(stores: list[JsonFileStore]) -> None:
    add = tools_of(MemoryManager(stores, add_tool=True))["add_memory"]
    await add(entries=["Likes tea", "Lives in Oslo"])
    for store in stores:
        assert [r.content for r in await store.list()][-2:] == ["Likes tea", "Lives in Oslo"]


async def test_add_with_no_entries_is_an_error(tools: dict[str, MemoryTool]) -> None:
    result = await tools["add_memory"].invoke({"entries": []})
    assert result == ToolResult(seen_text("add_memory empty entries (ValueError)"), is_error=True)


async def test_add_failure_text_has_the_reference_structure(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("", encoding="utf-8")
    broken = JsonFileStore(name="broken", path=tmp_path / "a_file" / "store.json")
    add = tools_of(MemoryManager([broken], add_tool=True))["add_memory"]
    result = await add.invoke({"entries": ["one", "two"]})
    reference = seen_text("add_memory with one failing store (AggregateMemoryError)")
    pattern = r"Error: AggregateMemoryError - MemoryManager: failed to add 2 of 2 entries: (.+); \1"
    assert re.fullmatch(pattern, reference)
    assert result.is_error and re.fullmatch(pattern, result.text, flags=re.DOTALL)


async def test_add_failure_names_each_cause() -> None:
    failing = RecordingStore("f", add_error=OSError("write error"))
    add = tools_of(MemoryManager([failing], add_tool=True))["add_memory"]
    assert await add(entries=["a", "b"]) == (
        "Error: AggregateMemoryError - MemoryManager: failed to add 2 of 2 entries: "
        "write error; write error"
    )


async def test_add_targets_the_allowlist_and_refuses_other_stores(tmp_path: Path) -> None:
    a = RecordingStore("a", description="first")
    b = RecordingStore("b", description="second")
    read_only = SearchOnlyStore("r")
    manager = MemoryManager([a, b, read_only], add_tool=AddToolConfig(stores=[b]))
    add = tools_of(manager)["add_memory"]
    assert "- b: second" in add.description and "- a: first" not in add.description
    assert json.loads(await add(entries=["x"]))["stored"] == 1
    assert (a.adds, b.adds) == ([], [("x", None)])
    for outside in (["a"], ["r"]):
        text = await add(entries=["y"], stores=outside)
        assert "none of the requested memory stores are available" in text
    assert a.adds == [] and len(b.adds) == 1


async def test_add_without_waiting_accepts_even_failing_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failing = RecordingStore("f", add_error=OSError("write error"))
    manager = MemoryManager([failing], add_tool=AddToolConfig(wait_for_writes=False))
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.manager"):
        assert await tools_of(manager)["add_memory"](entries=["a", "b"]) == '{"accepted": 2}'
        await manager.flush()
    assert [content for content, _ in failing.adds] == ["a", "b"]
    assert "write error" in caplog.text


def test_a_write_accepted_but_cut_short_by_the_end_of_its_loop_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class StuckStore(RecordingStore):
        async def add(self, content: str, metadata: Any = None) -> Any:
            await asyncio.Event().wait()

    manager = MemoryManager([StuckStore("s")], add_tool=AddToolConfig(wait_for_writes=False))
    add = tools_of(manager)["add_memory"]
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.manager"):
        assert asyncio.run(add(entries=["a"])) == '{"accepted": 1}'
    assert "cancelled before it finished" in caplog.text


# --- forget_memory -----------------------------------------------------------------------------


async def test_forget_deletes_by_id(stores: list[JsonFileStore]) -> None:
    tools = tools_of(MemoryManager(stores, forget_tool=True))
    assert list(tools) == ["search_memory", "forget_memory"]
    schema = tools["forget_memory"].input_schema
    assert schema["required"] == ["ids"] and list(schema["properties"]) == ["ids", "stores"]
    ids = [item["id"] for item in json.loads(await tools["search_memory"](query="dark"))]
    assert await tools["forget_memory"](ids=ids[:2]) == '{"deleted": 2}'
    assert await tools["forget_memory"](ids=["no-such-id"]) == '{"deleted": 0}'
    remaining = json.loads(await tools["search_memory"](query="dark"))
    assert [item["content"] for item in remaining] == [TEAM_DARK]


async def test_forget_with_no_ids_is_an_error(stores: list[JsonFileStore]) -> None:
    forget = tools_of(MemoryManager(stores, forget_tool=True))["forget_memory"]
    assert await forget(ids=[]) == "Error: MemoryManager: forget_memory requires at least one id"


# --- update_memory and search_memory's as_of --------------------------------------------------

MARCH = datetime(2025, 3, 1, tzinfo=timezone.utc)


@pytest.fixture
async def lyon(tmp_path: Path) -> AsyncIterator[tuple[SQLiteStore, str]]:
    """A real SQLite store whose one memory, dated 1 March 2025, says the user lives in Lyon."""
    async with SQLiteStore(tmp_path / "m.db", name="personal") as store:
        with ManualClock(MARCH):
            memory_id = (await store.add("The user lives in Lyon", {"topic": "home"})).id
        yield store, memory_id


async def test_update_is_offered_only_when_asked_and_a_store_can_supersede(
    stores: list[JsonFileStore], lyon: tuple[SQLiteStore, str]
) -> None:
    store, _ = lyon
    assert "update_memory" not in tools_of(MemoryManager([store], forget_tool=True))
    tools = tools_of(MemoryManager([store], update_tool=True))
    assert list(tools) == ["search_memory", "update_memory"]
    schema = tools["update_memory"].input_schema
    assert schema["required"] == ["memory_id", "content"]
    assert list(schema["properties"]) == ["memory_id", "content", "reason", "stores"]
    assert_strict_schema(schema)
    # Only the stores that can supersede are offered, and described.
    described = SQLiteStore(store.path, name="notes", description="Notes & facts")
    mixed = tools_of(MemoryManager([*stores, described], update_tool=True))["update_memory"]
    assert "- notes: Notes & facts" in mixed.description and PREFS not in mixed.description
    with pytest.raises(
        InvalidArgumentError,
        match="update_tool is enabled but no writable "
        "store can supersede memories .*SQLiteStore and PostgresStore",
    ):
        MemoryManager(stores, update_tool=True)
    read_only = SQLiteStore(store.path, writable=False)
    with pytest.raises(InvalidArgumentError, match="update_tool is enabled"):
        MemoryManager([read_only], update_tool=ToolConfig(name="fix"))


def test_a_strands_store_offers_no_update_and_no_as_of(tmp_path: Path) -> None:
    from strands.vended_memory_stores.test_memory_store import TestMemoryStore as StrandsStore

    theirs = StrandsStore(name="theirs", path=str(tmp_path / "theirs.json"))
    with pytest.raises(InvalidArgumentError, match="update_tool is enabled"):
        MemoryManager([theirs], update_tool=True)
    search = tools_of(MemoryManager([theirs]))["search_memory"]
    assert "as_of" not in search.input_schema["properties"]


async def test_update_supersedes_by_id_and_as_of_still_finds_the_old_fact(
    lyon: tuple[SQLiteStore, str],
) -> None:
    store, lyon_id = lyon
    tools = tools_of(MemoryManager([store], update_tool=True))
    search, update = tools["search_memory"], tools["update_memory"]
    [hit] = json.loads(await search(query="where does the user live"))
    assert hit["id"] == lyon_id  # ids come with update_memory, as with forget_memory
    with ManualClock(MARCH + timedelta(days=30)):
        answer = json.loads(
            await update(memory_id=lyon_id, content="The user lives in Berlin", reason="moved")
        )
    [item] = answer["updated"]
    assert item["replaces"] == lyon_id and item["store_name"] == "personal"
    berlin_id = item["id"]
    assert [h["content"] for h in json.loads(await search(query="user lives"))] == [
        "The user lives in Berlin"
    ]
    # Before the correction the store held Lyon; a day after adding it, Berlin was unknown.
    before = json.loads(await search(query="user lives", as_of="2025-03-15"))
    assert [(h["id"], h["content"]) for h in before] == [(lyon_id, "The user lives in Lyon")]
    assert json.loads(await search(query="user lives", as_of="2025-02-01")) == []
    # The new memory keeps the old one's metadata; the old one is retired, not lost.
    new = await store.get(berlin_id)
    assert new is not None and new.metadata == {"topic": "home"}
    old = await store.get(lyon_id, include_superseded=True)
    assert old is not None and old.superseded_by == berlin_id
    [version] = await store.history(lyon_id)
    assert (version.change, version.reason, version.superseded_by) == (
        "supersede",
        "moved",
        berlin_id,
    )
    # A retry changes nothing and answers with the same memory.
    again = json.loads(await update(memory_id=lyon_id, content="The user lives in Berlin"))
    assert again == {"updated": [{"id": berlin_id, "replaces": lyon_id, "store_name": "personal"}]}
    assert await store.count(include_superseded=True) == 2


async def test_update_errors_reach_the_model_in_words(lyon: tuple[SQLiteStore, str]) -> None:
    store, lyon_id = lyon
    update = tools_of(MemoryManager([store], update_tool=True))["update_memory"]
    assert await update(memory_id="nope", content="x") == (
        "Error: MemoryManager: no memory with id 'nope' in personal"
    )
    missing = await update(memory_id=lyon_id)
    assert missing.startswith("Error: Validation failed for input parameters:")
    assert "content" in missing
    await update(memory_id=lyon_id, content="The user lives in Berlin")
    # Retired by Berlin already: correcting it to something else names both.
    twice = await update(memory_id=lyon_id, content="The user lives in Paris")
    assert twice.startswith("Error: ") and lyon_id in twice
    assert await store.count() == 1


async def test_search_as_of_is_offered_with_a_store_that_keeps_its_past(
    stores: list[JsonFileStore], lyon: tuple[SQLiteStore, str]
) -> None:
    store, lyon_id = lyon
    team = stores[1]  # the JSON store without a description; the other is also "personal"
    mixed = tools_of(MemoryManager([team, store]))["search_memory"]
    reference = SPECS["search_memory"]["inputSchema"]["json"]
    schema = without_descriptions(mixed.input_schema)
    assert schema["properties"].pop("as_of") == {"type": "string"}
    assert schema == without_null_defaults(without_descriptions(reference))
    assert_strict_schema(mixed.input_schema)
    # Without the store's name, as_of searches the stores that can answer for the past.
    found = json.loads(await mixed(query="user lives dark", as_of="2025-03-02"))
    assert [(h["content"], h["store_name"]) for h in found] == [
        ("The user lives in Lyon", "personal")
    ]
    named = await mixed(query="dark", as_of="2025-03-02", stores=[TEAM])
    assert named.startswith(f"Error: as_of: the store {TEAM} cannot recall a past moment")
    assert "SQLiteStore and PostgresStore" in named and named.endswith(": personal")


@pytest.mark.parametrize("moment", ["yesterday", "2025-03-01T10:00:00", "2025-13-01"])
async def test_a_bad_as_of_is_an_error_naming_it(
    lyon: tuple[SQLiteStore, str], moment: str
) -> None:
    store, _ = lyon
    search = tools_of(MemoryManager([store]))["search_memory"]
    result = await search.invoke({"query": "lives", "as_of": moment})
    assert result.is_error
    assert result.text.startswith("Error: as_of must be a timezone-aware datetime, an ISO 8601")
    assert repr(moment) in result.text


# --- calling convention --------------------------------------------------------------------------


async def test_missing_argument_text_has_the_reference_structure(
    tools: dict[str, MemoryTool],
) -> None:
    reference = seen_text("add_memory missing required field (validation)").splitlines()
    ours = (await tools["add_memory"]()).splitlines()
    assert (
        ours[0]
        == "Error: Validation failed for input parameters: 1 validation error for add_memory"
    )
    assert reference[0].startswith("Error: Validation failed for input parameters: 1 validation")
    assert ours[1] == reference[1] == "entries"
    suffix = " [type=missing, input_value={}, input_type=dict]"
    assert ours[2].startswith("  ") and ours[2].endswith(suffix)
    assert reference[2].startswith("  ") and reference[2].endswith(suffix)


async def test_wrong_types_are_all_reported(tools: dict[str, MemoryTool]) -> None:
    result = await tools["search_memory"].invoke(
        {"query": 5, "max_search_results": "2", "stores": ["ok", 3]}
    )
    assert result.is_error
    lines = result.text.splitlines()
    assert lines[0].endswith("3 validation errors for search_memory")
    assert lines[1:] == [
        "query",
        "  should be a string [type=string_type, input_value=5, input_type=int]",
        "max_search_results",
        "  should be an integer [type=integer_type, input_value='2', input_type=str]",
        "stores.1",
        "  should be a string [type=string_type, input_value=3, input_type=int]",
    ]


async def test_booleans_are_not_integers(tools: dict[str, MemoryTool]) -> None:
    text = await tools["search_memory"](query="dark", max_search_results=True)
    assert "integer_type" in text


async def test_lenient_inputs_are_accepted(tools: dict[str, MemoryTool]) -> None:
    search = tools["search_memory"]
    integral = json.loads(await search(query="dark", max_search_results=1.0, extra="ignored"))
    assert len(integral) == 2
    assert json.loads(await search(query="dark", stores=None, max_search_results=None))


async def test_invoke_takes_json_text_as_openai_delivers_it(tools: dict[str, MemoryTool]) -> None:
    search = tools["search_memory"]
    assert (await search.invoke('{"query": "zebra"}')) == ToolResult("[]", is_error=False)
    for bad in ("{not json", "[1, 2]"):
        result = await search.invoke(bad)
        assert result.is_error
        assert result.text.startswith("Error: Validation failed for input parameters: ")
    assert (await search.invoke(None)).text.startswith("Error: Validation failed")


async def test_error_texts_by_exception_kind() -> None:
    async def fail(kind: str) -> Any:
        raise {
            "value": InvalidArgumentError("bad value"),
            "os": OSError("disk gone"),
            "aggregate": AggregateMemoryError("several", [OSError("x")]),
        }[kind]

    tool = MemoryTool(
        "t",
        "test tool",
        {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]},
        fail,
    )
    assert await tool(kind="value") == "Error: bad value"
    assert await tool(kind="os") == "Error: OSError - disk gone"
    assert await tool(kind="aggregate") == "Error: AggregateMemoryError - several"


async def test_results_are_json_with_unicode_kept() -> None:
    async def echo(text: str) -> Any:
        return {"text": text}

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    tool = MemoryTool("echo", "echo", schema, echo)
    assert await tool(text="Zürich 日本") == '{"text": "Zürich 日本"}'
    assert await tool(self="not a clash", text="x") == '{"text": "x"}'


async def test_a_lone_surrogate_in_a_memory_reaches_the_model_as_its_escape(tmp_path: Path) -> None:
    # Another program's file may hold one; no UTF-8 transport (HTTP, MCP stdio) carries it raw.
    path = tmp_path / "theirs.json"
    record = (
        r'{"id": "m1", "content": "smile \ud83d here", "createdAt": "2026-01-01T00:00:00.000Z"}'
    )
    path.write_text(f"[{record}]", encoding="utf-8")
    search = tools_of(MemoryManager([JsonFileStore(name="theirs", path=path)]))["search_memory"]
    text = await search(query="smile")
    text.encode("utf-8")
    assert "\\ud83d" in text and json.loads(text)[0]["content"] == "smile \ud83d here"
