"""Interoperability with the real strands-agents package (no fixtures, no network).

Part 1 drives Strands' own ``TestMemoryStore`` and our ``JsonFileStore`` on the same files.
Part 2 hands our store to Strands' ``MemoryManager`` inside a real ``strands.Agent`` whose model
is scripted: it replays canned replies and tool calls and records what it was sent.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from strands import Agent
from strands.memory import MemoryManager
from strands.models.model import Model
from strands.vended_memory_stores.test_memory_store import TestMemoryStore as StrandsStore
from strands.vended_memory_stores.test_memory_store import store as strands_store_module

from agentrecall import JsonFileStore
from agentrecall.stores import jsonfile as our_store_module

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")

# (content, metadata) in call order: unicode, nested metadata, no metadata, {} metadata, a stored
# ``_relevanceScore`` key, whitespace kept verbatim, and three repeats that must dedup.
ADDS: list[tuple[str, dict[str, Any] | None]] = [
    ("User prefers dark mode in the IDE.", {"source": "user", "confidence": 0.9}),
    (
        "The café in Zürich serves naïve crêpes — 日本語 too!",
        {"lang": "multi", "tags": ["unicode", "food"], "emoji": "😀"},
    ),
    (
        "Project deadline: 2026-03-15; budget is $35,000 (USD).",
        {"priority": 1, "flags": {"urgent": True, "owner": None, "ratio": 1.0}, "big": 10**20},
    ),
    ("user's favourite editor is VS-Code, not vim!!!", None),
    ("The cat sat on the mat", {}),
    ("the cat chased the dog in the park", {"_relevanceScore": 999, "note": "overwritten"}),
    ("  The cat sat on the mat  ", {"dropped": "a padded repeat dedups"}),
    ("The cat sat on the mat.", None),
    ("ΕΛΛΗΝΙΚΆ γράμματα and İstanbul in winter", {"nested": {"deep": [1, 2.5, "x", None, False]}}),
    ("MAX_RETRIES is 5; use snake_case for names", {"k": 'line\nbreak "quoted" \\ back'}),
    ("user's favourite editor is VS-Code, not vim!!!", {"dropped": "an exact repeat dedups"}),
    ("  padded tea memory: Earl Grey, no sugar\t", {"drink": "tea"}),
    ("Tabs\tand\nnewlines and a <tag> & an ampersand", None),
    ("\u3000The cat sat on the mat\u00a0", None),  # Unicode whitespace strips too: a repeat
    ("Empty containers stay inline", {"list": [], "obj": {}, "deep": {"a": [{}, []]}}),
]

# Index of a repeat in ADDS -> index of the add it repeats.
DEDUPS = {6: 4, 10: 3, 13: 4}

# Query, per-call options: stop words, case, repeats, unicode, punctuation, limits, no hits.
QUERIES: list[tuple[str, dict[str, Any] | None]] = [
    ("cat dog park", None),
    ("the", None),
    ("THE CAT", {"max_search_results": 2}),
    ("café 日本語", None),
    ("cafe 日本", None),
    ("user's favourite", None),
    ("vs code vim", None),
    ("2026 03 15 35,000", None),
    ("max_retries snake_case", None),
    ("snake case", None),
    ("ελληνικά", None),
    ("İstanbul", None),
    ("istanbul", None),
    ("dark dark dark mode mode", None),
    ("mat", {"max_search_results": 1}),
    ("the a is of and in", {"max_search_results": 100}),
    ("tea sugar grey", {"max_search_results": None}),
    ("tag ampersand", None),
    ("", None),
    ("   ...!!! ---", None),
    ("nothing matches zzz", None),
]


class Clock:
    """Deterministic ids and strictly increasing millisecond timestamps."""

    def __init__(self) -> None:
        self.ids = 0
        self.ticks = 0

    def new_id(self) -> str:
        self.ids += 1
        return f"00000000-0000-4000-8000-{self.ids:012d}"

    def now(self) -> str:
        self.ticks += 1
        minutes, rest = divmod(self.ticks, 60_000)
        seconds, millis = divmod(rest, 1000)
        return f"2026-01-01T00:{minutes:02d}:{seconds:02d}.{millis:03d}Z"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRECALL_HOME", str(tmp_path / "agentrecall-home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> tuple[Clock, Clock]:
    """Patch both stores' id and time sources; returns (theirs, ours)."""
    theirs, ours = Clock(), Clock()
    monkeypatch.setattr(strands_store_module, "_new_id", theirs.new_id)
    monkeypatch.setattr(strands_store_module, "_now", theirs.now)
    monkeypatch.setattr(our_store_module, "new_id", ours.new_id)
    monkeypatch.setattr(our_store_module, "utc_timestamp", ours.now)
    return theirs, ours


@pytest.fixture
def shared_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Patch both stores onto one sequence, for files both of them append to."""
    clock = Clock()
    monkeypatch.setattr(strands_store_module, "_new_id", clock.new_id)
    monkeypatch.setattr(strands_store_module, "_now", clock.now)
    monkeypatch.setattr(our_store_module, "new_id", clock.new_id)
    monkeypatch.setattr(our_store_module, "utc_timestamp", clock.now)
    return clock


def view(entries: Iterable[Any]) -> list[tuple[str, str | None, str]]:
    """Content, store name and metadata (as JSON text: key order and 1 vs 1.0 vs True count)."""
    return [(e.content, e.store_name, json.dumps(e.metadata, ensure_ascii=False)) for e in entries]


async def add_all(store: Any, adds: Sequence[tuple[str, dict[str, Any] | None]]) -> list[str]:
    return [(await store.add(content, copy.deepcopy(metadata))).id for content, metadata in adds]


async def assert_same_results(theirs: Any, ours: JsonFileStore) -> int:
    """Compare every query's hits; return how many queries found something."""
    answered = 0
    for query, options in QUERIES:
        expected = await theirs.search(query, copy.deepcopy(options))
        actual = await ours.search(query, copy.deepcopy(options))
        assert view(actual) == view(expected), query
        for entry in actual:
            score = entry.metadata["_relevanceScore"]
            assert type(score) is int and score > 0
        answered += bool(expected)
    return answered


def assert_dedups(ids: list[str]) -> None:
    assert {i: ids.index(ids[i]) for i in range(len(ids)) if ids.index(ids[i]) != i} == DEDUPS


def read_records(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return records


# --------------------------------------------------------------------------------------------
# Part 1: one file, two implementations
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("store_max", [None, 3])
async def test_file_written_by_strands_reads_identically_in_ours(
    tmp_path: Path, clocks: tuple[Clock, Clock], store_max: int | None
) -> None:
    path = tmp_path / "written-by-strands.json"
    writer = StrandsStore(name="notes", path=str(path))
    ids = await add_all(writer, ADDS)
    assert_dedups(ids)

    theirs = StrandsStore(name="notes", path=str(path), max_search_results=store_max)
    ours = JsonFileStore(name="notes", path=path, max_search_results=store_max)
    assert await assert_same_results(theirs, ours) == len(QUERIES) - 6  # 6 are built to miss

    # Every record, as the file holds it, comes back through our API too; hits carry its id.
    records = read_records(path)
    listed = await ours.list()
    assert [(r.id, r.content, r.created_at, r.metadata) for r in listed] == [
        (r["id"], r["content"], r["createdAt"], r.get("metadata")) for r in records
    ]
    id_of = {r["content"]: r["id"] for r in records}
    assert all(hit.id == id_of[hit.content] for hit in await ours.search("the cat"))
    # Reading changed nothing on disk.
    assert read_records(path) == records


@pytest.mark.parametrize("store_max", [None, 3])
async def test_file_written_by_ours_reads_identically_in_strands(
    tmp_path: Path, clocks: tuple[Clock, Clock], store_max: int | None
) -> None:
    path = tmp_path / "written-by-agentrecall.json"
    writer = JsonFileStore(name="notes", path=path)
    ids = await add_all(writer, ADDS)
    assert_dedups(ids)

    theirs = StrandsStore(name="notes", path=str(path), max_search_results=store_max)
    ours = JsonFileStore(name="notes", path=path, max_search_results=store_max)
    assert await assert_same_results(theirs, ours) == len(QUERIES) - 6
    # Strands re-reads the file on its own add and dedups against what we wrote.
    assert (await theirs.add(" The cat sat on the mat ")).id == ids[4]


async def test_same_adds_give_byte_identical_files(
    tmp_path: Path, clocks: tuple[Clock, Clock]
) -> None:
    theirs_path, ours_path = tmp_path / "theirs.json", tmp_path / "ours.json"
    theirs = StrandsStore(name="notes", path=str(theirs_path))
    ours = JsonFileStore(name="notes", path=ours_path)
    # Compare after every single add, so each rewrite (and each dedup no-op) matches.
    for content, metadata in ADDS:
        their_id = (await theirs.add(content, copy.deepcopy(metadata))).id
        our_id = (await ours.add(content, copy.deepcopy(metadata))).id
        assert our_id == their_id
        assert ours_path.read_bytes() == theirs_path.read_bytes(), content
    data = ours_path.read_bytes()
    assert not data.endswith(b"\n") and "日本語".encode() in data and b"\\u" not in data


async def test_rewrite_of_a_hand_written_file_is_byte_identical(
    tmp_path: Path, clocks: tuple[Clock, Clock]
) -> None:
    # Compact, BOM-prefixed, \u-escaped, with an unknown key and null metadata: both stores
    # must normalise it the same way on their next write.
    seed = (
        '\ufeff[{"id":"r1","content":"caf\\u00e9 notes","createdAt":"2025-01-01T00:00:00.000Z",'
        '"extra":{"keep":[1,2]},"metadata":null},'
        '{"id":"r2","content":"second","createdAt":"2025-01-02T00:00:00.000Z","metadata":{}}]'
    ).encode()
    theirs_path, ours_path = tmp_path / "theirs.json", tmp_path / "ours.json"
    theirs_path.write_bytes(seed)
    ours_path.write_bytes(seed)
    theirs = StrandsStore(name="x", path=str(theirs_path))
    ours = JsonFileStore(name="x", path=ours_path)
    assert await assert_same_results(theirs, ours) >= 1
    assert view(await ours.search("café")) == view(await theirs.search("café"))
    assert (await ours.add("third", {"n": 3})).id == (await theirs.add("third", {"n": 3})).id
    assert ours_path.read_bytes() == theirs_path.read_bytes()
    assert read_records(ours_path)[0]["extra"] == {"keep": [1, 2]}


async def test_a_safe_name_shares_its_default_file_with_strands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both default to <home>/memory/<name>.json; with one home, one name means one file.
    monkeypatch.setenv("AGENTRECALL_HOME", str(tmp_path / "user-home" / ".strands"))
    theirs = StrandsStore(name="team-notes_v1.2")
    await theirs.add("The user prefers aisle seats")
    ours = JsonFileStore(name="team-notes_v1.2")
    assert ours.path == str(tmp_path / "user-home" / ".strands" / "memory" / "team-notes_v1.2.json")
    assert [hit.content for hit in await ours.search("aisle seats")] == [
        "The user prefers aisle seats"
    ]
    await ours.add("The user flies on Tuesdays")
    assert len(await theirs.search("user")) == 2


@pytest.mark.parametrize(("first", "second"), [("日本", "中国"), ("a/b", "a_b")])
async def test_names_the_reference_maps_to_one_file_keep_apart_in_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: str, second: str
) -> None:
    # The reference's default files collide: a write under one name shows under the other.
    await StrandsStore(name=first).add("written as the first name")
    assert len(await StrandsStore(name=second).search("written first name")) == 1
    await JsonFileStore(name=first).add("ours as the first name")
    await JsonFileStore(name=second).add("ours as the second name")
    assert [h.content for h in await JsonFileStore(name=first).search("ours name")] == [
        "ours as the first name"
    ]
    assert [h.content for h in await JsonFileStore(name=second).search("ours name")] == [
        "ours as the second name"
    ]


async def test_interleaved_writers_on_one_file_both_read_everything(
    tmp_path: Path, shared_clock: Clock
) -> None:
    path = tmp_path / "shared.json"
    theirs = StrandsStore(name="shared", path=str(path))
    ours = JsonFileStore(name="shared", path=path)
    writers = [theirs, ours]
    ids: list[str] = []
    for index, (content, metadata) in enumerate(ADDS):
        writer = writers[index % 2]
        ids.append((await writer.add(content, copy.deepcopy(metadata))).id)
        # Each side sees the other's latest write immediately (our read cache must notice).
        assert [hit.content for hit in await ours.search(content)][:1] == [
            hit.content for hit in await theirs.search(content)
        ][:1]

    # Dedup works across implementations: Strands' ADDS[10] repeats our ADDS[3], our ADDS[13]
    # repeats Strands' ADDS[4], and another padded repeat returns its id without writing.
    assert_dedups(ids)
    before = path.read_bytes()
    assert (await ours.add("\tThe cat sat on the mat\n", {"x": 1})).id == ids[4]
    assert path.read_bytes() == before
    records = read_records(path)
    assert len(records) == len(ADDS) - len(DEDUPS) == await ours.count()
    assert [r["id"] for r in records] == list(dict.fromkeys(ids))
    assert [r.id for r in await ours.list()] == [r["id"] for r in records]
    assert await assert_same_results(theirs, ours) == len(QUERIES) - 6
    everything = {"max_search_results": 100}
    broad = "the a cat user s is and in no tea names tabs winter too usd ide empty"
    their_hits = await theirs.search(broad, everything)
    assert {hit.content for hit in their_hits} == {r["content"] for r in records}
    assert view(await ours.search(broad, everything)) == view(their_hits)


async def test_same_millisecond_ties_come_in_file_order_in_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Records with equal score and equal createdAt, as a batch added within one millisecond
    # has: both stores return them in the file's order, whichever wrote them.
    stamp = "2026-01-01T00:00:00.000Z"
    monkeypatch.setattr(strands_store_module, "_now", lambda: stamp)
    monkeypatch.setattr(our_store_module, "utc_timestamp", lambda: stamp)
    path = tmp_path / "ties.json"
    theirs = StrandsStore(name="ties", path=str(path))
    for word in ("alpha", "beta"):
        await theirs.add(f"shared {word}")
    ours = JsonFileStore(name="ties", path=path)
    await ours.add_many([("shared gamma", None), ("shared delta", None)])
    expected = ["shared alpha", "shared beta", "shared gamma", "shared delta"]
    for limit in (None, 3):
        options = None if limit is None else {"max_search_results": limit}
        their_hits = await theirs.search("shared", options)
        assert [h.content for h in their_hits] == expected[:limit]
        assert view(await ours.search("shared", options)) == view(their_hits)


# --------------------------------------------------------------------------------------------
# Part 2: our store inside Strands' MemoryManager and Agent
# --------------------------------------------------------------------------------------------

Block = dict[str, Any]


def say(text: str) -> list[Block]:
    return [{"text": text}]


def call(tool_use_id: str, name: str, **tool_input: Any) -> list[Block]:
    return [{"toolUse": {"toolUseId": tool_use_id, "name": name, "input": tool_input}}]


class ScriptedModel(Model):
    """A model that replays canned assistant turns and records every request it receives."""

    def __init__(self, turns: Iterable[list[Block]]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {"context_window_limit": 200_000}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[dict[str, Any]]:
        self.requests.append(
            {
                "messages": copy.deepcopy(messages),
                "tool_specs": copy.deepcopy(tool_specs),
                "system_prompt": system_prompt,
            }
        )
        assert self.turns, "the model was called more often than scripted"
        blocks = self.turns.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        for block in blocks:
            if "text" in block:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
            else:
                use = block["toolUse"]
                start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
                yield {"contentBlockStart": {"start": start}}
                yield {
                    "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(use["input"])}}}
                }
            yield {"contentBlockStop": {}}
        stop = "tool_use" if any("toolUse" in block for block in blocks) else "end_turn"
        yield {"messageStop": {"stopReason": stop}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 0},
            }
        }


def make_agent(store: Any, model: ScriptedModel, **manager_options: Any) -> Agent:
    manager = MemoryManager(stores=[store], add_tool_config=True, **manager_options)
    return Agent(model=model, memory_manager=manager, callback_handler=None)


def tool_result(message: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
    results = [b["toolResult"] for b in message["content"] if "toolResult" in b]
    assert [r["toolUseId"] for r in results] == [tool_use_id]
    result: dict[str, Any] = results[0]
    return result


def escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def memory_block(store_name: str, contents: Iterable[str]) -> str:
    lines = [f'<entry source="{store_name}">{escape_text(c)}</entry>' for c in contents]
    return "<memory>\n" + "\n".join(lines) + "\n</memory>"


SEED = [
    ("User prefers dark mode & <large> fonts", {"topic": "ui"}),
    ("User's favourite drink is Earl Grey tea", None),
    ("The team ships on Fridays", {}),
    ("Dark chocolate is the user's favourite snack", {"topic": "food"}),
    ("User's cat is called Miso", None),
    ("User's mode of transport is a bike", None),
    ("User likes the dark theme in the terminal", None),
]


def test_add_memory_tool_call_lands_in_our_file(tmp_path: Path) -> None:
    path = tmp_path / "personal.json"
    store = JsonFileStore(name="personal", path=path, description="User preferences & habits")
    facts = ["User prefers dark mode", "User lives in Zürich — near the lake"]
    model = ScriptedModel(
        [call("t1", "add_memory", entries=facts), say("Noted."), say("Still noted.")]
    )
    agent = make_agent(store, model)
    result = agent("Remember: I prefer dark mode and live in Zürich.")
    assert str(result).strip() == "Noted."
    # The model was offered both tools, each naming our store and its description.
    specs = {spec["name"]: spec for spec in model.requests[0]["tool_specs"]}
    assert set(specs) == {"search_memory", "add_memory"}
    assert all("- personal: User preferences & habits" in s["description"] for s in specs.values())

    # The tool result the model got back reports both writes.
    answer = tool_result(model.requests[1]["messages"][-1], "t1")
    assert answer["status"] == "success"
    assert json.loads(answer["content"][0]["text"])["stored"] == 2

    # On disk: a Strands-format array holding exactly the two facts, without metadata.
    records = read_records(path)
    assert sorted(r["content"] for r in records) == sorted(facts)
    for record in records:
        assert list(record) == ["id", "content", "createdAt"]
        assert UUID4.fullmatch(record["id"]) and TIMESTAMP.fullmatch(record["createdAt"])
    raw = path.read_text(encoding="utf-8")
    assert raw == json.dumps(records, indent=2, ensure_ascii=False)

    # Through our own API (on a fresh event loop, as the agent also used its own).
    listed = asyncio.run(store.list())
    assert sorted((r.id, r.content, r.metadata) for r in listed) == sorted(
        (r["id"], r["content"], None) for r in records
    )
    hits = asyncio.run(store.search("where does the user live zürich"))
    assert [h.content for h in hits] == [facts[1], facts[0]]
    # A second synchronous call (another fresh loop) injects the just-written facts.
    agent("What mode do I prefer?")
    last_user = model.requests[-1]["messages"][-1]
    assert last_user["content"][-1]["text"] == "\n\n" + memory_block(
        "personal", ["User prefers dark mode"]
    )


def test_search_memory_tool_call_returns_our_entries(
    tmp_path: Path, clocks: tuple[Clock, Clock]
) -> None:
    path = tmp_path / "personal.json"
    store = JsonFileStore(name="personal", path=path)
    asyncio.run(add_all(store, SEED))
    model = ScriptedModel(
        [
            call("s1", "search_memory", query="dark mode favourite"),
            call("s2", "search_memory", query="cat miso", max_search_results=10),
            say("You like dark mode."),
        ]
    )
    agent = make_agent(store, model, injection=False)
    assert str(agent("Hi")).strip() == "You like dark mode."
    assert len(model.requests) == 3

    for request, (use_id, query, limit) in zip(
        model.requests[1:], [("s1", "dark mode favourite", 3), ("s2", "cat miso", 10)], strict=True
    ):
        answer = tool_result(request["messages"][-1], use_id)
        assert answer["status"] == "success"
        payload = json.loads(answer["content"][0]["text"])
        expected = asyncio.run(store.search(query, {"max_search_results": limit}))
        assert expected, query
        assert payload == [
            {"content": e.content, "store_name": "personal", "metadata": e.metadata}
            for e in expected
        ]
    # The manager's default per-store cap (3) applied to the first call; ties go to the later.
    first = json.loads(tool_result(model.requests[1]["messages"][-1], "s1")["content"][0]["text"])
    assert [item["content"] for item in first] == [
        "Dark chocolate is the user's favourite snack",
        "User prefers dark mode & <large> fonts",
        "User likes the dark theme in the terminal",
    ]
    assert [item["metadata"]["_relevanceScore"] for item in first] == [2, 2, 1]


async def test_injection_folds_our_entries_into_the_user_message(tmp_path: Path) -> None:
    path = tmp_path / "personal.json"
    store = JsonFileStore(name="personal", path=path)
    await add_all(store, SEED)
    model = ScriptedModel([say("Dark, as always.")])
    agent = make_agent(store, model)
    prompt = "Which dark theme or mode does the user like?"
    result = await agent.invoke_async(prompt)
    assert str(result).strip() == "Dark, as always."

    # Injection searches all stores with the user's text, 5 per store, in our ranking order.
    expected = await store.search(prompt, {"max_search_results": 5})
    assert len(expected) == 5
    sent = model.requests[0]["messages"]
    assert sent[-1]["role"] == "user"
    assert sent[-1]["content"] == [
        {"text": prompt},
        {"text": "\n\n" + memory_block("personal", [e.content for e in expected])},
    ]
    assert "&amp; &lt;large&gt;" in sent[-1]["content"][1]["text"]
    # The fold is per call: the agent's durable history never holds the memory block.
    assert agent.messages[0]["content"] == [{"text": prompt}]
    assert "<memory>" not in json.dumps(agent.messages)


def test_refused_add_surfaces_as_a_tool_error_like_strands(tmp_path: Path) -> None:
    # A blank entry passes the tool's schema; each store refuses it with its own message, and
    # the agent keeps going with an error tool result. Nothing is written by either.
    texts = {}
    for label, store in {
        "theirs": StrandsStore(name="personal", path=str(tmp_path / "theirs.json")),
        "ours": JsonFileStore(name="personal", path=tmp_path / "ours.json"),
    }.items():
        model = ScriptedModel([call("a1", "add_memory", entries=["   "]), say("Sorry.")])
        assert str(make_agent(store, model)("Remember nothing.")).strip() == "Sorry."
        answer = tool_result(model.requests[1]["messages"][-1], "a1")
        assert answer["status"] == "error"
        texts[label] = answer["content"][0]["text"]
        assert not (tmp_path / f"{label}.json").exists()
    prefix = "Error: AggregateMemoryError - MemoryManager: failed to add 1 of 1 entries: "
    assert texts["theirs"].startswith(prefix) and texts["ours"].startswith(prefix)
    assert "content" in texts["ours"] and "content" in texts["theirs"]


def test_extraction_writes_model_extracted_facts_to_our_file(tmp_path: Path) -> None:
    path = tmp_path / "personal.json"
    store = JsonFileStore(name="personal", path=path, extraction=True)
    extracted = '```json\n[{"content": "User prefers tea"}, {"content": "User owns a cat"}]\n```'
    # Call 1 answers the user; the synchronous entry point then flushes extraction, whose
    # extractor (no model of its own) falls back to the agent's model: call 2.
    model = ScriptedModel([say("Lovely."), say(extracted)])
    agent = Agent(model=model, memory_manager=MemoryManager(stores=[store]), callback_handler=None)
    agent("I drink tea and I have a cat.")
    assert len(model.requests) == 2
    assert "I drink tea and I have a cat." in json.dumps(model.requests[1]["messages"])
    records = read_records(path)
    assert sorted(r["content"] for r in records) == ["User owns a cat", "User prefers tea"]
    assert all("metadata" not in r for r in records)


def test_scripted_conversation_is_identical_with_ours_and_with_strands_store(
    tmp_path: Path, clocks: tuple[Clock, Clock]
) -> None:
    seed_path = tmp_path / "seed.json"
    asyncio.run(add_all(StrandsStore(name="seed", path=str(seed_path)), SEED))
    their_clock, our_clock = clocks
    our_clock.ids = their_clock.ids
    our_clock.ticks = their_clock.ticks

    def script() -> list[list[Block]]:
        return [
            call("a1", "add_memory", entries=["User takes tea without sugar"]),
            say("Saved."),
            call("s0", "search_memory", query="tea", max_search_results=0),
            call("s1", "search_memory", query="tea sugar drink"),
            say("Earl Grey, no sugar."),
            call("a2", "add_memory", entries=["  User takes tea without sugar "]),
            say("Already known."),
        ]

    runs = {}
    for label, make_store in {
        "theirs": lambda p: StrandsStore(name="personal", path=str(p), description="Habits"),
        "ours": lambda p: JsonFileStore(name="personal", path=p, description="Habits"),
    }.items():
        path = tmp_path / f"{label}.json"
        path.write_bytes(seed_path.read_bytes())
        model = ScriptedModel(script())
        agent = make_agent(make_store(path), model)
        agent("Remember that I take my tea without sugar.")
        agent("What do I drink, and how?")
        agent("Remember my tea again, please.")
        history = [(m["role"], m["content"]) for m in agent.messages]
        runs[label] = (model.requests, path.read_bytes(), history)

    their_requests, their_file, their_history = runs["theirs"]
    our_requests, our_file, our_history = runs["ours"]
    assert len(our_requests) == len(their_requests) == 7
    # Every model request (messages with tool results and injected memory, tool specs, system
    # prompt) is the same whichever store backs the manager.
    assert our_requests == their_requests
    assert our_history == their_history
    assert our_file == their_file
    # And the conversation really exercised memory: injection, a search hit and a dedup.
    assert any("<memory>" in json.dumps(r["messages"]) for r in our_requests)
    # A limit of 0 is refused by either store; the manager skips the failing store: no hits.
    assert tool_result(our_requests[3]["messages"][-1], "s0")["content"] == [{"text": "[]"}]
    assert "Earl Grey" in json.dumps(our_requests[4]["messages"][-1])
    assert {s["name"] for s in our_requests[0]["tool_specs"]} == {"search_memory", "add_memory"}
    contents = [r["content"] for r in read_records(tmp_path / "ours.json")]
    assert contents.count("User takes tea without sugar") == 1
