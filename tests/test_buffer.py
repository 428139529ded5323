"""BufferMemory: the AgentLIB vectors (spec §10), adjusted where our decisions differ, on both
backends (in memory, SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agentrecall import BufferEntry, BufferMemory, InvalidArgumentError, StorageError


def u(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def a(text: str, *calls: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["toolCalls"] = [{"id": c, "name": "f", "arguments": {}} for c in calls]
    return message


def s(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path):
    built: list[BufferMemory] = []

    def build(*args: Any, **kwargs: Any) -> BufferMemory:
        if request.param == "sqlite":
            kwargs.setdefault("path", tmp_path / "conversations.db")
        elif request.param == "postgres":
            kwargs.setdefault("dsn", request.getfixturevalue("postgres_dsn"))
        built.append(BufferMemory(*args, **kwargs))
        return built[-1]

    yield build
    for memory in built:  # the test's database is dropped next: no connection may stay open
        asyncio.run(memory.aclose())


async def test_t1_adjusted_cut_history_starts_at_a_user_turn(make) -> None:
    memory = make(max_messages=3)
    await memory.write([s("sys"), u("u1"), a("a1"), u("u2"), a("a2")])
    assert await memory.read() == [u("u2"), a("a2")]  # AgentLIB: [a1, u2, a2]


async def test_t2_write_replaces_the_history(make) -> None:
    memory = make(max_messages=3)
    await memory.write([u("u1"), a("a1")])
    await memory.write([u("only")])
    assert await memory.read() == [u("only")]


async def test_t3_default_cap_is_twenty_messages(make) -> None:
    memory = make()
    await memory.write([u(f"m{i}") for i in range(25)])
    history = await memory.read()
    assert len(history) == 20 and history[0] == u("m5")


async def test_t4_unknown_session_reads_empty_and_creates_nothing(make) -> None:
    memory = make()
    assert await memory.read("nobody") == []
    assert memory.session_count == 0 and await memory.entries() == []


async def test_t5_adjusted_reads_are_equal_copies(make) -> None:
    memory = make()
    await memory.write([u("q"), a("r")])
    first, second = await memory.read(), await memory.read()
    assert first == second == (await memory.entries())[0].messages
    assert first is not second  # AgentLIB hands out its own list
    first[0]["content"] = "changed"
    first.append(u("extra"))
    assert await memory.read() == [u("q"), a("r")]


async def test_t6_adjusted_limit_returns_the_newest(make) -> None:
    memory = make()
    await memory.write([u(f"m{i}") for i in range(20)])
    assert await memory.read(limit=2) == [u("m18"), u("m19")]  # AgentLIB ignores limit
    await memory.write([u("q1"), a("r1"), u("q2"), a("r2")])
    assert await memory.read(limit=3) == [u("q2"), a("r2")]


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "3"])
def test_t7_t11_adjusted_limits_below_one_are_refused(value: object) -> None:
    # AgentLIB: max_messages 0 keeps all, -1 drops the first, 2.5 keeps 2; max_tokens 0 is off.
    for argument in ("max_messages", "max_tokens"):
        with pytest.raises(InvalidArgumentError, match=argument):
            BufferMemory(**{argument: value})  # type: ignore[arg-type]


async def test_none_means_unlimited(make) -> None:
    memory = make(max_messages=None, max_tokens=None)
    await memory.write([u(f"m{i}") for i in range(100)])
    assert len(await memory.read()) == 100


async def test_t9_budget_keeps_the_newest_that_fit(make) -> None:
    memory = make(max_tokens=10)
    await memory.write([u("aaaa"), a("bbbb"), u("cccccccc")])
    assert await memory.read() == [u("cccccccc")]
    assert len((await memory.entries())[0].messages) == 3  # the budget never changes storage


async def test_t9b_adjusted_budget_cut_starts_at_a_user_turn(make) -> None:
    memory = make(max_tokens=11)
    await memory.write([u("aaaa"), a("bbbb"), u("cccc")])
    assert await memory.read() == [u("cccc")]  # AgentLIB: [bbbb, cccc]


async def test_t9c_t10_t10b_budget_edges(make) -> None:
    memory = make(max_tokens=10)
    await memory.write([u("aaaa"), a("bbbb")], "equal")
    await memory.write([u("a"), a("x" * 100)], "oversized")
    assert await memory.read("equal") == [u("aaaa"), a("bbbb")]
    assert await memory.read("oversized") == []
    wider = make(max_tokens=20)
    await wider.write([u("a"), a("x" * 100), u("b")], "middle")
    assert await wider.read("middle") == [u("b")]


async def test_t12_default_store_seeds_sessions(make) -> None:
    seed = {"seed": [s("sys"), u("u"), a("a"), u("u2")]}
    memory = make(max_messages=1, max_tokens=1000, default_store=seed)
    assert await memory.read("seed") == [s("sys"), u("u"), a("a"), u("u2")]
    assert await memory.entries("seed") == []
    assert memory.session_count == 1
    await memory.write([u("new")], "seed")
    assert await memory.read("seed") == [u("new")]
    await memory.clear()
    assert await memory.read("seed") == [] and memory.session_count == 0
    # Adjusted (T12d/e): the caller's mapping is copied, never changed.
    assert seed == {"seed": [s("sys"), u("u"), a("a"), u("u2")]}


async def test_seeded_sessions_honour_limit_and_budget(make) -> None:
    memory = make(max_tokens=10, default_store={"seed": [u("aaaa"), a("bbbb"), u("cccccccc")]})
    assert await memory.read("seed") == [u("cccccccc")]
    assert await memory.read("seed", limit=1) == [u("cccccccc")]


async def test_t13_seeded_system_messages_lead_the_window(make) -> None:
    memory = make(max_tokens=1000, default_store={"k": [u("u"), s("s"), a("a")]})
    assert await memory.read("k") == [s("s"), u("u"), a("a")]


async def test_t14_rewrites_keep_id_and_creation_and_replace_the_rest(make) -> None:
    clock = Clock()
    memory = make(clock=clock)
    await memory.write([u("q")], "k", agent_name="ag", tags={"t": "1"})
    (first,) = await memory.entries("k")
    clock.now += 5
    await memory.write([u("q"), a("r")], "k")
    (second,) = await memory.entries("k")
    assert (second.id, second.metadata.created_at) == (first.id, first.metadata.created_at)
    assert (first.metadata.agent_name, first.metadata.tags) == ("ag", {"t": "1"})
    assert (second.metadata.agent_name, second.metadata.tags) == (None, None)
    assert second.metadata.accessed_at == first.metadata.accessed_at + timedelta(seconds=5)


async def test_t14b_reads_move_the_access_time(make) -> None:
    clock = Clock()
    memory = make(clock=clock)
    await memory.write([u("q")])
    clock.now += 7
    await memory.read()
    (entry,) = await memory.entries()
    assert entry.metadata.accessed_at == datetime.fromtimestamp(clock.now, timezone.utc)
    assert entry.metadata.created_at == datetime.fromtimestamp(clock.now - 7, timezone.utc)


async def test_entry_shape(make) -> None:
    memory = make()
    await memory.write([s("sys"), u("abcd"), a("abcdefgh")], "k", agent_name="bot")
    (entry,) = await memory.entries("k")
    assert isinstance(entry, BufferEntry) and len(entry.id) == 36
    assert entry.session_id == "k" and entry.messages == [u("abcd"), a("abcdefgh")]
    assert entry.metadata.token_count == 5 + 6
    assert entry.metadata.created_at.tzinfo is timezone.utc
    entry.messages.append(u("x"))
    assert len((await memory.entries("k"))[0].messages) == 2


async def test_t16_an_empty_write_creates_the_session(make) -> None:
    memory = make()
    await memory.write([], "empty")
    assert memory.session_count == 1 and await memory.read("empty") == []
    assert [e.session_id for e in await memory.entries()] == ["empty"]


async def test_t17_adjusted_clear_one_or_all(make) -> None:
    memory = make()
    for key in ("k", "other"):
        await memory.write([u(key)], key)
    await memory.clear("k")
    assert [e.session_id for e in await memory.entries()] == ["other"]
    with pytest.raises(InvalidArgumentError, match="session_id must be a non-blank string"):
        await memory.clear("")  # AgentLIB: "" clears everything; here it is refused
    assert [e.session_id for e in await memory.entries()] == ["other"]
    await memory.clear("unknown")
    await memory.clear()
    assert memory.session_count == 0


async def test_t18_adjusted_written_messages_are_copied(make) -> None:
    memory = make()
    message = u("original")
    history = [message]
    await memory.write(history)
    message["content"] = "mutated"
    history.append(u("later"))
    assert await memory.read() == [u("original")]  # AgentLIB stores the caller's objects


async def test_t19_adjusted_a_cut_tool_exchange_is_not_kept(make) -> None:
    memory = make(max_messages=3)
    await memory.write(
        [u("q"), a("", "c1"), {"role": "tool", "content": "r", "toolCallId": "c1"}, a("done")]
    )
    assert await memory.read() == []  # AgentLIB keeps [a(toolCalls), tool, a]


async def test_t20_adjusted_session_keys(make) -> None:
    memory = make()
    await memory.write([u("default")], None)
    assert await memory.read() == [u("default")] == await memory.read(None)
    # AgentLIB stores a session named "" (and lists every entry for entries("")).
    calls = {
        "write": lambda key: memory.write([u("blank")], key),
        "read": memory.read,
        "entries": memory.entries,
        "clear": memory.clear,
    }
    for call, run in calls.items():
        for key in ("", "   "):
            with pytest.raises(InvalidArgumentError) as refused:
                await run(key)
            assert str(refused.value) == (
                f"session_id must be a non-blank string naming a session, got {key!r}"
            ), call
    with pytest.raises(InvalidArgumentError, match="a session id of default_store must be"):
        make(default_store={"": [u("seeded")]})
    assert [e.session_id for e in await memory.entries()] == ["default"]


async def test_entries_keep_the_order_of_first_write(make) -> None:
    memory = make()
    for key in ("b", "a", "c", "b"):
        await memory.write([u(key)], key)
    assert [e.session_id for e in await memory.entries()] == ["b", "a", "c"]


async def test_tags_filter_reads(make) -> None:
    memory = make()
    await memory.write([u("q")], "k", tags={"user": "ana", "topic": "travel"})
    assert await memory.read("k", tags={"user": "ana"}) == [u("q")]
    assert await memory.read("k", tags={"user": "bob"}) == []
    assert await memory.read("k", query="ignored") == [u("q")]


async def test_strands_shaped_conversations_trim_at_user_turns(make) -> None:
    memory = make(max_messages=4)
    history = [
        {"role": "user", "content": [{"text": "weather?"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "sun"}]}}],
        },
        {"role": "assistant", "content": [{"text": "Sunny."}]},
        {"role": "user", "content": [{"text": "thanks"}]},
        {"role": "assistant", "content": [{"text": "Any time."}]},
    ]
    await memory.write(history)
    assert await memory.read() == history[4:]


async def test_openai_shaped_conversations_trim_at_user_turns(make) -> None:
    memory = make(max_messages=4)
    call = {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
    history = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sun"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "Any time."},
    ]
    await memory.write(history)
    assert await memory.read() == history[5:]
    assert await memory.read(limit=10) == history[5:]


@pytest.mark.parametrize(
    ("messages", "fact"),
    [
        ([u("ok"), {"role": "wizard", "content": "x"}], "messages[1] has role 'wizard'"),
        ([u("ok"), {"role": "user", "content": 3}], "messages[1] content"),
        ([u("ok"), "just text"], "messages[1] must be a mapping"),
        ("a string", "messages must be a list"),
    ],
)
async def test_bad_writes_name_the_message_and_store_nothing(make, messages, fact: str) -> None:
    memory = make()
    await memory.write([u("before")])
    with pytest.raises(InvalidArgumentError) as raised:
        await memory.write(messages)
    assert fact in str(raised.value) and isinstance(raised.value, ValueError)
    assert await memory.read() == [u("before")]


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"agent_name": 3}, "agent_name"), ({"tags": {"k": 1}}, "tags"), ({"tags": "x"}, "tags")],
)
async def test_bad_write_options_are_refused(make, kwargs: dict[str, Any], argument: str) -> None:
    with pytest.raises(InvalidArgumentError, match=argument):
        await make().write([u("q")], **kwargs)


def test_bad_constructor_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="token_counter"):
        BufferMemory(token_counter=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="idle_ttl"):
        BufferMemory(idle_ttl=0)
    with pytest.raises(InvalidArgumentError, match=r"default_store\['s'\]\[0\]"):
        BufferMemory(default_store={"s": [{"role": "nobody"}]})


def test_a_path_that_names_no_file_is_refused() -> None:
    for path in ("", "  ", b"conversations.db", 5):
        with pytest.raises(InvalidArgumentError, match="path"):
            BufferMemory(path=path)  # type: ignore[arg-type]


async def test_a_path_is_taken_as_the_stores_take_theirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "~" is the home directory and a relative path is fixed at construction, as in SQLiteStore.
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    at_home = BufferMemory(path="~/conversations.db")
    relative = BufferMemory(path="here.db")
    monkeypatch.chdir(tmp_path / "home")
    await at_home.write([u("q")])
    await relative.write([u("q")])
    await at_home.aclose()
    await relative.aclose()
    assert (tmp_path / "home" / "conversations.db").exists()
    assert (tmp_path / "here.db").exists()
    assert not (tmp_path / "~").exists() and not (tmp_path / "home" / "here.db").exists()


@pytest.mark.parametrize("tokens", ["3", 2.5, -1, None, True])
async def test_a_token_counter_returning_no_whole_number_is_named(tokens: object) -> None:
    memory = BufferMemory(max_tokens=10, token_counter=lambda message: tokens)  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidArgumentError, match="token_counter must return"):
        await memory.write([u("q")])
    assert await memory.entries() == []


async def test_custom_token_counter(make) -> None:
    memory = make(max_tokens=2, token_counter=lambda message: 1)
    await memory.write([u("a"), a("b"), u("c"), a("d")])
    assert await memory.read() == [u("c"), a("d")]
    assert (await memory.entries())[0].metadata.token_count == 4


async def test_idle_sessions_are_forgotten(make) -> None:
    clock = Clock()
    memory = make(idle_ttl=timedelta(minutes=10), clock=clock)
    await memory.write([u("old")], "idle")
    await memory.write([u("fresh")], "busy")
    (first,) = await memory.entries("idle")
    clock.now += 400
    await memory.read("busy")
    clock.now += 400  # "idle" untouched for 800 s, "busy" for 400 s
    assert await memory.read("idle") == []
    assert memory.session_count == 1
    await memory.write([u("again")], "idle")
    (restarted,) = await memory.entries("idle")
    assert restarted.id != first.id and restarted.metadata.created_at > first.metadata.created_at


async def test_concurrent_writes_to_one_session_leave_one_whole_write(make) -> None:
    memory = make()
    writes = [[u(f"q{n}"), a(f"a{n}")] for n in range(10)]
    await asyncio.gather(*(memory.write(w, "shared") for w in writes))
    assert await memory.read("shared") in writes


async def test_concurrent_writes_to_many_sessions_lose_nothing(make) -> None:
    memory = make()
    await asyncio.gather(*(memory.write([u(f"q{n}")], f"s{n}") for n in range(20)))
    assert memory.session_count == 20 and await memory.count_sessions() == 20


async def test_persisted_sessions_survive_a_new_buffer(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"
    first = BufferMemory(path=path)
    await first.write([u("q"), a("r")], "k", agent_name="bot")
    await first.aclose()
    async with BufferMemory(path=path) as second:
        assert await second.read("k") == [u("q"), a("r")]
        assert (await second.entries("k"))[0].metadata.agent_name == "bot"


async def test_persisted_buffers_need_json_messages(tmp_path: Path) -> None:
    memory = BufferMemory(path=tmp_path / "c.db")
    unusual = {"role": "user", "content": [{"image": {"source": {"bytes": {b"\x89PNG"}}}}]}
    with pytest.raises(InvalidArgumentError, match="JSON"):
        await memory.write([unusual])
    assert await memory.read() == []


async def test_an_unusable_database_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "not-a-db.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    memory = BufferMemory(path=path)
    with pytest.raises(StorageError, match="not-a-db.db"):
        await memory.read()
    assert path.read_bytes() == b"this is not sqlite at all" * 100


def test_construction_does_no_io(tmp_path: Path) -> None:
    BufferMemory(path=tmp_path / "later" / "c.db")
    assert list(tmp_path.iterdir()) == []


def test_type_is_buffer() -> None:
    assert BufferMemory().type == "buffer"


async def test_uncopyable_messages_are_named_by_their_index() -> None:
    memory = BufferMemory()
    unpicklable = {"role": "user", "content": "x", "callback": lambda: None}
    with pytest.raises(InvalidArgumentError, match=r"messages\[2\] cannot be stored.*copied"):
        await memory.write([s("sys"), u("q"), unpicklable])
    assert memory.session_count == 0


async def test_non_json_messages_are_named_by_their_index(tmp_path: Path) -> None:
    memory = BufferMemory(path=tmp_path / "c.db")
    with pytest.raises(InvalidArgumentError, match=r"messages\[1\] cannot be stored.*JSON"):
        await memory.write([u("q"), {"role": "user", "content": "x", "extra": {1, 2}}])
    assert await memory.read() == []


async def test_limit_keeps_seeded_system_messages(make) -> None:
    memory = make(
        max_tokens=100, default_store={"k": [s("sys"), u("u1"), a("a1"), u("u2"), a("a2")]}
    )
    assert await memory.read("k", limit=3) == [s("sys"), u("u2"), a("a2")]


async def test_other_mappings_come_back_as_dicts(make) -> None:
    from collections import OrderedDict

    memory = make()
    await memory.write([OrderedDict(role="user", content="q")])
    (message,) = await memory.read()
    assert type(message) is dict and message == u("q")


async def test_bytes_in_strands_messages_come_back_as_bytes(make) -> None:
    # Strands keeps images, documents and redacted reasoning as bytes.
    memory = make()
    image = {"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n\x1a\n\x00"}}}
    reasoning = {"reasoningContent": {"redactedContent": bytearray(b"\xff\x00secret")}}
    asked = {"role": "user", "content": [{"text": "What is in this picture?"}, image]}
    answered = {"role": "assistant", "content": [reasoning, {"text": "A cat."}]}
    await memory.write([asked, answered])
    assert await memory.read() == [asked, answered]
    (entry,) = await memory.entries()
    assert entry.messages[0]["content"][1]["image"]["source"]["bytes"] == b"\x89PNG\r\n\x1a\n\x00"


async def test_objects_like_the_stored_form_of_bytes_keep_their_shape(make) -> None:
    memory = make()
    near_misses = [
        {"role": "user", "content": '"$bytes" in text', "data": {"$bytes": 1}},
        {"role": "assistant", "content": "x", "data": {"$bytes": "AAAA", "other": 1}},
    ]
    await memory.write(near_misses)
    assert await memory.read() == near_misses


async def test_a_message_holding_the_stored_form_of_bytes_is_refused(tmp_path: Path) -> None:
    # In the file it would read back as bytes: refused, so nothing changes in silence.
    memory = BufferMemory(path=tmp_path / "c.db")
    await memory.write([u("q")])
    lookalike = {"role": "user", "content": [{"text": "x", "data": [{"$bytes": "AAAA"}]}]}
    with pytest.raises(InvalidArgumentError, match=r"messages\[1\] cannot be stored.*'\$bytes'"):
        await memory.write([u("q2"), lookalike])
    assert await memory.read() == [u("q")]
    await memory.aclose()


async def test_tool_input_json_cannot_hold_is_sized_by_its_text() -> None:
    # A Strands toolUse input with a key JSON cannot have: an in-memory buffer keeps it, and
    # its size for the token budget comes from its text instead of a TypeError.
    use = {"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {(1, 2): "x" * 400}}}
    messages = [
        {"role": "user", "content": [{"text": "look it up"}]},
        {"role": "assistant", "content": [use]},
    ]
    memory = BufferMemory(max_tokens=1_000)
    await memory.write(messages, "s")
    assert await memory.read("s") == messages
    small = BufferMemory(max_tokens=50)  # the input's 400 characters exceed it
    await small.write(messages, "s")
    assert await small.read("s") == []
