"""Injection primitives and ``inject_memories``: spec section 6 and checklist 8.5."""

from __future__ import annotations

import copy
import logging
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

import pytest
from conftest import load_fixture
from hypothesis import given
from hypothesis import strategies as st

from agentrecall.errors import InvalidArgumentError
from agentrecall.memory.escaping import NFKC_LOOKALIKES
from agentrecall.memory.injection import (
    InjectionConfig,
    default_query,
    escape_attribute,
    escape_text,
    fold_into_latest_user,
    inject_memories,
    is_user_ask,
    render_memory,
    resolve_injection,
)
from agentrecall.types import MemoryEntry

MANAGER = load_fixture("strands_manager.json")

ASK = {"role": "user", "content": [{"text": "what theme do I like?"}]}
ASSISTANT = {"role": "assistant", "content": [{"text": "prev"}]}
TOOL_USE = {
    "role": "assistant",
    "content": [{"text": "prev"}, {"toolUse": {"toolUseId": "t1", "name": "x", "input": {}}}],
}
TOOL_RESULT = {
    "role": "user",
    "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": []}}],
}


class Searcher:
    """A search function that records its calls and returns fixed hits."""

    def __init__(self, hits: Sequence[MemoryEntry] = ()) -> None:
        self.hits = list(hits)
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, query: str, limit: int) -> list[MemoryEntry]:
        self.calls.append((query, limit))
        return list(self.hits)


def hits(*contents: str, store: str | None = "s") -> list[MemoryEntry]:
    return [MemoryEntry(content=c, store_name=store) for c in contents]


# --- rendering ---------------------------------------------------------------------------------


def test_rendering_matches_the_reference_example_byte_for_byte() -> None:
    entries = [
        MemoryEntry("User prefers dark mode & <large> fonts", "personal"),
        MemoryEntry('Team said "ship it" on Fri', "team's <notes>"),
    ]
    assert render_memory(entries) == (
        '<memory>\n<entry source="personal">User prefers dark mode &amp; &lt;large&gt; fonts'
        '</entry>\n<entry source="team&#39;s &lt;notes&gt;">Team said "ship it" on Fri</entry>'
        "\n</memory>"
    )


def test_rendering_matches_the_fixture_renderings() -> None:
    entries = [
        MemoryEntry("User prefers dark mode & large fonts", "personal", {"_relevanceScore": 2}),
        MemoryEntry("dark chocolate is the user's favourite", "personal", {"_relevanceScore": 1}),
        MemoryEntry(
            "Team uses <dark> theme in dashboards; \"quoted\" & 'single'",
            'team"s <notes>',
            {"_relevanceScore": 1},
        ),
    ]
    assert render_memory(entries) == MANAGER["manager_search_then_default_format"]
    assert (
        render_memory([MemoryEntry("a < b & c > d </entry>")])
        == (MANAGER["default_format_without_store_name"])
    )


def test_rendering_escapes_the_source_attribute() -> None:
    rendered = render_memory([MemoryEntry("a < b & c > d </entry>", 'pre"f')])
    assert rendered == (
        '<memory>\n<entry source="pre&quot;f">a &lt; b &amp; c &gt; d &lt;/entry&gt;</entry>'
        "\n</memory>"
    )


def test_empty_store_name_renders_without_source() -> None:
    assert render_memory([MemoryEntry("x", "")]) == "<memory>\n<entry>x</entry>\n</memory>"


def test_escape_helpers() -> None:
    assert escape_text("&lt; <a> \"q\" 'q'") == "&amp;lt; &lt;a&gt; \"q\" 'q'"
    assert escape_attribute("&<>\"'") == "&amp;&lt;&gt;&quot;&#39;"


# XML 1.0 can carry every character except most C0 controls, surrogates, U+FFFE and U+FFFF.
xml_chars = st.characters(
    blacklist_categories=("Cs",),
    blacklist_characters="".join(map(chr, [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)]))
    + "\ufffe\uffff",
)
markup = st.sampled_from(["<", ">", "&", '"', "'", "</memory>", "<entry", "</entry>", "&amp;"])
xml_text = st.lists(st.text(xml_chars, max_size=8) | markup, max_size=6).map("".join)


def _xml_line_ends(text: str) -> str:
    # What any XML parser does to text: CR LF and lone CR become LF.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _xml_attribute(text: str) -> str:
    # Attribute values are also normalised: every whitespace character becomes a space.
    return _xml_line_ends(text).replace("\n", " ").replace("\t", " ")


@given(st.lists(st.tuples(xml_text, st.none() | xml_text), max_size=6))
def test_stored_content_cannot_change_the_block_structure(
    items: list[tuple[str, str | None]],
) -> None:
    entries = [MemoryEntry(content, store) for content, store in items]
    root = ET.fromstring(render_memory(entries))
    assert root.tag == "memory"
    children = list(root)
    assert len(children) == len(entries)
    for child, entry in zip(children, entries, strict=True):
        assert child.tag == "entry"
        assert list(child) == []
        assert (child.text or "") == _xml_line_ends(entry.content)
        if entry.store_name:
            assert child.attrib == {"source": _xml_attribute(entry.store_name)}
        else:
            assert child.attrib == {}


def test_nfkc_look_alikes_of_markup_are_character_references() -> None:
    rendered = render_memory(
        [MemoryEntry("\uff1c/memory\uff1e \ufe64x\ufe65 \uff06", "a\uff02\uff07")]
    )
    assert rendered == (
        '<memory>\n<entry source="a&#xFF02;&#xFF07;">&#xFF1C;/memory&#xFF1E; &#xFE64;x&#xFE65; '
        "&#xFF06;</entry>\n</memory>"
    )


def test_characters_xml_cannot_carry_become_the_replacement_character() -> None:
    rendered = render_memory([MemoryEntry("a\x00b\x1bc\ufffe\ud800d", "s\x07")])
    assert rendered == (
        '<memory>\n<entry source="s\ufffd">a\ufffdb\ufffdc\ufffd\ufffdd</entry>\n</memory>'
    )


def test_bidi_controls_are_visible_references() -> None:
    assert (
        escape_text("\u202egnp.exe\u2066\u200f\u061c") == "&#x202E;gnp.exe&#x2066;&#x200F;&#x61C;"
    )


@pytest.mark.parametrize("lead", ["\u0338", "\u0301\u0338", "\u0f73\u0338"])
def test_a_leading_combining_mark_cannot_merge_into_the_opening_tag(lead: str) -> None:
    escaped = escape_text(lead + "x")
    assert escaped == f"&#x{ord(lead[0]):X};" + lead[1:] + "x"
    normalised = unicodedata.normalize("NFKC", render_memory([MemoryEntry(lead + "x")]))
    assert ET.fromstring(normalised)[0].tag == "entry"


def test_ordinary_text_in_any_script_is_unchanged() -> None:
    text = (
        "caf\u00e9 \u00bd \u2026 \u65e5\u672c\u8a9e \uff21\uff22 \uff02q\uff02 "
        "\u0645\u0631\u062d\u0628\u0627 e\u0301"
    )
    assert escape_text(text) == text


def test_the_look_alike_table_covers_this_unicode_database() -> None:
    markup_chars = set("<>&\"'")
    found = {}
    for code in range(0x110000):
        char = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        form = unicodedata.normalize("NFKC", char)
        if form != char and markup_chars & set(form):
            found[char] = form
    assert found == NFKC_LOOKALIKES


def _xml_safe(text: str) -> str:
    # XML 1.0 has no way to carry these, not even as references.
    return re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]", "\ufffd", text)


RISKY = [
    *"\x00\x1b\x0b\r\ufffe\uffff\ud800\udfff\u061c\u200e\u200f\u202a\u202e\u2066\u2069",
    *"\uff1c\uff1e\uff06\uff02\uff07\ufe64\ufe65\ufe60\u0338",
    "\u0301\u0338",
    "\u0f73\u0338",
    "\uff1c/memory\uff1e",
    "\uff1cmemory\uff1e",
    "\uff1c/entry\uff1e",
    "\uff1centry source=\uff02x\uff02\uff1e",
    "\uff06amp;",
    "\uff06#x3c;",
    "&#x0;",
    "]]>",
]
any_char = st.characters(codec=None) | st.characters(categories=["Cs"])
any_text = st.lists(
    st.text(any_char, max_size=8) | st.sampled_from(RISKY) | markup, max_size=6
).map("".join)


@given(st.lists(st.tuples(any_text, st.none() | any_text), max_size=6))
def test_any_content_renders_xml_that_nfkc_cannot_forge(
    items: list[tuple[str, str | None]],
) -> None:
    entries = [MemoryEntry(content, store) for content, store in items]
    block = render_memory(entries)
    for candidate in (block, unicodedata.normalize("NFKC", block)):
        root = ET.fromstring(candidate)
        assert root.tag == "memory"
        assert len(list(root.iter("memory"))) == 1
        assert [child.tag for child in root] == ["entry"] * len(entries)
        for child, entry in zip(root, entries, strict=True):
            assert list(child) == []
            assert set(child.attrib) == ({"source"} if entry.store_name else set())
    for child, entry in zip(ET.fromstring(block), entries, strict=True):
        assert (child.text or "") == _xml_line_ends(_xml_safe(entry.content))
        if entry.store_name:
            assert child.attrib["source"] == _xml_attribute(_xml_safe(entry.store_name))


# --- placement ---------------------------------------------------------------------------------


def test_fold_appends_a_text_block_after_user_text() -> None:
    folded = fold_into_latest_user([ASK], "<memory>\n...\n</memory>")
    assert folded[0]["content"] == [
        {"text": "what theme do I like?"},
        {"text": "\n\n<memory>\n...\n</memory>"},
    ]


def test_fold_returns_a_new_list_and_leaves_the_input_untouched() -> None:
    messages = [ASSISTANT, ASK]
    before = copy.deepcopy(messages)
    folded = fold_into_latest_user(messages, "INJECTED")
    assert folded is not messages
    assert messages == before
    assert folded[0] is ASSISTANT  # unchanged messages are shared, not copied
    assert folded[1] is not ASK


def test_fold_after_a_tool_result_has_no_prefix_and_keeps_the_result_first() -> None:
    folded = fold_into_latest_user([TOOL_USE, TOOL_RESULT], "INJECTED")
    assert folded[1]["content"] == [*TOOL_RESULT["content"], {"text": "INJECTED"}]


def test_fold_into_an_image_only_message_has_no_prefix() -> None:
    image = {"role": "user", "content": [{"image": {"format": "png", "source": {}}}]}
    assert fold_into_latest_user([image], "X")[0]["content"][-1] == {"text": "X"}


def test_fold_keeps_the_prefix_when_a_cache_point_follows_the_text() -> None:
    message = {"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}
    content = fold_into_latest_user([message], "X")[0]["content"]
    assert content == [*message["content"], {"text": "\n\nX"}]
    assert sum("cachePoint" in block for block in content) == 1  # none added


def test_fold_text_starting_with_a_newline_gets_no_prefix() -> None:
    assert fold_into_latest_user([ASK], "\nX")[0]["content"][-1] == {"text": "\nX"}


def test_fold_targets_the_most_recent_user_message() -> None:
    first = {"role": "user", "content": [{"text": "first"}]}
    folded = fold_into_latest_user([first, ASSISTANT, ASK, ASSISTANT], "X")
    assert folded[0] is first
    assert folded[2]["content"][-1] == {"text": "\n\nX"}
    assert folded[3] is ASSISTANT


def test_fold_preserves_message_metadata_and_other_keys() -> None:
    message = {**ASK, "metadata": {"k": "v"}, "name": "alice"}
    folded = fold_into_latest_user([message], "X")[0]
    assert folded["metadata"] == {"k": "v"} and folded["name"] == "alice"


def test_fold_without_a_user_message_returns_an_equal_new_list() -> None:
    messages = [ASSISTANT]
    folded = fold_into_latest_user(messages, "X")
    assert folded == messages and folded is not messages and folded[0] is ASSISTANT


def test_fold_openai_string_content_stays_one_string() -> None:
    message = {"role": "user", "content": "what theme do I like?"}
    folded = fold_into_latest_user([{"role": "system", "content": "be nice"}, message], "X")
    assert folded[1] == {"role": "user", "content": "what theme do I like?\n\nX"}
    assert message["content"] == "what theme do I like?"


def test_fold_openai_parts_gain_a_typed_text_part() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:"}},
        ],
    }
    content = fold_into_latest_user([message], "X")[0]["content"]
    assert content == [*message["content"], {"type": "text", "text": "\n\nX"}]


def test_fold_openai_image_only_parts_get_no_prefix() -> None:
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    assert fold_into_latest_user([message], "X")[0]["content"][-1] == {"type": "text", "text": "X"}


def test_fold_into_missing_content() -> None:
    assert fold_into_latest_user([{"role": "user", "content": None}], "X")[0]["content"] == "X"


# --- trigger and query -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([ASK], True),
        ([TOOL_USE, TOOL_RESULT], False),
        ([ASK, ASSISTANT], False),
        ([], False),
        ([{"role": "user", "content": "hi"}], True),
        ([{"role": "tool", "tool_call_id": "c1", "content": "42"}], False),
    ],
)
def test_is_user_ask(messages: list[dict[str, Any]], expected: bool) -> None:
    assert is_user_ask(messages) is expected


def test_default_query_on_a_user_ask_is_its_text_stripped_and_joined() -> None:
    message = {"role": "user", "content": [{"text": "  a "}, {"image": {}}, {"text": "b  "}]}
    assert default_query([ASSISTANT, message]) == "a \nb"


def test_default_query_mid_task_is_the_latest_assistant_text() -> None:
    older = {"role": "assistant", "content": [{"text": "older"}]}
    assert default_query([ASK, older, TOOL_USE, TOOL_RESULT]) == "prev"


def test_default_query_is_none_when_the_latest_assistant_has_no_text() -> None:
    silent = {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "x"}}]}
    older = {"role": "assistant", "content": [{"text": "older"}]}
    assert default_query([older, silent, TOOL_RESULT]) is None
    assert default_query([]) is None
    assert default_query([{"role": "user", "content": "   "}]) is None


def test_default_query_reads_openai_messages() -> None:
    messages = [
        {"role": "user", "content": "book a seat"},
        {"role": "assistant", "content": "checking seats", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "12A"},
    ]
    assert default_query(messages[:1]) == "book a seat"
    assert default_query(messages) == "checking seats"


# --- config --------------------------------------------------------------------------------------


def test_resolve_injection_forms() -> None:
    assert resolve_injection(True) == InjectionConfig()
    assert resolve_injection(False) is None
    config = InjectionConfig(max_entries=2)
    assert resolve_injection(config) is config
    assert resolve_injection({"trigger": "everyTurn"}) == InjectionConfig(trigger="everyTurn")


@pytest.mark.parametrize(
    "value",
    [
        {"trigger": "sometimes"},
        {"max_entries": 0},
        {"max_entries": True},
        {"query": "not callable"},
        {"format": 3},
        {"unknown": 1},
        "yes",
    ],
)
def test_bad_injection_config_is_refused(value: object) -> None:
    with pytest.raises(InvalidArgumentError):
        resolve_injection(value)


# --- inject_memories ----------------------------------------------------------------------------


async def test_injects_for_a_user_ask() -> None:
    search = Searcher(hits("dark mode preferred"))
    messages = [
        {"role": "assistant", "content": [{"text": "prior"}]},
        {"role": "user", "content": [{"text": "what is my plan"}]},
    ]
    result = await inject_memories(messages, InjectionConfig(), search)
    assert result[1]["content"] == [
        {"text": "what is my plan"},
        {"text": '\n\n<memory>\n<entry source="s">dark mode preferred</entry>\n</memory>'},
    ]
    assert search.calls == [("what is my plan", 5)]


@pytest.mark.parametrize("trigger", ["userTurn", None])
async def test_default_trigger_leaves_a_tool_result_turn_alone(trigger: str | None) -> None:
    search = Searcher(hits("A"))
    config = InjectionConfig() if trigger is None else InjectionConfig(trigger="userTurn")
    messages = [ASK, TOOL_USE, TOOL_RESULT]
    assert await inject_memories(messages, config, search) == messages
    assert search.calls == []


async def test_every_turn_folds_after_a_tool_result_with_the_assistant_text() -> None:
    search = Searcher(hits("A"))
    result = await inject_memories(
        [ASK, TOOL_USE, TOOL_RESULT], InjectionConfig(trigger="everyTurn"), search
    )
    assert search.calls == [("prev", 5)]
    assert result[2]["content"][0] == TOOL_RESULT["content"][0]
    assert result[2]["content"][1] == {"text": '<memory>\n<entry source="s">A</entry>\n</memory>'}


async def test_every_turn_in_an_openai_loop_folds_into_the_last_user_message() -> None:
    search = Searcher(hits("A"))
    messages = [
        {"role": "user", "content": "book a seat"},
        {"role": "assistant", "content": "checking", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "12A"},
    ]
    result = await inject_memories(messages, InjectionConfig(trigger="everyTurn"), search)
    assert search.calls == [("checking", 5)]
    assert result[0]["content"].startswith("book a seat\n\n<memory>\n")
    assert result[1:] == messages[1:]


async def test_custom_predicate_decides_and_may_be_async() -> None:
    seen: list[object] = []

    async def only_long(messages: Sequence[Any]) -> bool:
        seen.append(messages)
        return len(messages) > 1

    search = Searcher(hits("A"))
    config = InjectionConfig(trigger=only_long)
    assert await inject_memories([ASK], config, search) == [ASK]
    assert len((await inject_memories([ASSISTANT, ASK], config, search))[1]["content"]) == 2
    assert len(seen) == 2 and search.calls == [("what theme do I like?", 5)]


async def test_raising_predicate_skips_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    def broken(messages: Sequence[Any]) -> bool:
        raise RuntimeError("boom")

    search = Searcher(hits("A"))
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.injection"):
        assert await inject_memories([ASK], InjectionConfig(trigger=broken), search) == [ASK]
    assert search.calls == []
    assert "memory injection skipped" in caplog.text and "trigger" in caplog.text


async def test_custom_query_is_used() -> None:
    search = Searcher(hits("A"))
    config = InjectionConfig(query=lambda messages: f"custom {len(messages)}")
    await inject_memories([ASK], config, search)
    assert search.calls == [("custom 1", 5)]


async def test_async_custom_query_is_awaited() -> None:
    async def query(messages: Sequence[Any]) -> str:
        return "async query"

    search = Searcher(hits("A"))
    await inject_memories([ASK], InjectionConfig(query=query), search)
    assert search.calls == [("async query", 5)]


@pytest.mark.parametrize("answer", [None, "", "   "])
async def test_custom_query_none_or_blank_skips(answer: str | None) -> None:
    search = Searcher(hits("A"))
    config = InjectionConfig(query=lambda messages: answer)
    assert await inject_memories([ASK], config, search) == [ASK]
    assert search.calls == []


async def test_raising_or_non_string_query_skips(caplog: pytest.LogCaptureFixture) -> None:
    def broken(messages: Sequence[Any]) -> str:
        raise RuntimeError("boom")

    search = Searcher(hits("A"))
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.injection"):
        assert await inject_memories([ASK], InjectionConfig(query=broken), search) == [ASK]
        config = InjectionConfig(query=lambda m: 42)  # type: ignore[arg-type,return-value]
        assert await inject_memories([ASK], config, search) == [ASK]
    assert search.calls == []
    assert caplog.text.count("memory injection skipped") == 2


async def test_latest_assistant_without_text_skips_the_search() -> None:
    silent = {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "x"}}]}
    search = Searcher(hits("A"))
    config = InjectionConfig(trigger="everyTurn")
    assert await inject_memories([ASK, silent, TOOL_RESULT], config, search) == [
        ASK,
        silent,
        TOOL_RESULT,
    ]
    assert search.calls == []


async def test_no_hits_leaves_the_messages_alone_after_searching() -> None:
    search = Searcher()
    assert await inject_memories([ASK], InjectionConfig(), search) == [ASK]
    assert search.calls == [("what theme do I like?", 5)]


async def test_max_entries_limits_per_store_and_in_total() -> None:
    search = Searcher(hits("A", "B", "C"))
    result = await inject_memories(
        [ASK],
        InjectionConfig(max_entries=2, format=lambda es: ",".join(e.content for e in es)),
        search,
    )
    assert search.calls == [("what theme do I like?", 2)]
    assert result[0]["content"][-1] == {"text": "\n\nA,B"}


async def test_custom_format_receives_the_hits_and_may_be_async() -> None:
    received: list[list[MemoryEntry]] = []

    async def render(entries: Sequence[MemoryEntry]) -> str:
        received.append(list(entries))
        return "[A]"

    search = Searcher(hits("A"))
    result = await inject_memories([ASK], InjectionConfig(format=render), search)
    assert received == [hits("A")]
    assert result[0]["content"][-1] == {"text": "\n\n[A]"}


async def test_injected_block_for_a_custom_format() -> None:
    search = Searcher(hits("A"))
    result = await inject_memories([ASK], InjectionConfig(format=lambda es: "INJECTED"), search)
    assert result[0]["content"][-1] == {"text": "\n\nINJECTED"}


@pytest.mark.parametrize("rendered", ["", "  \n"])
async def test_blank_rendering_skips(rendered: str) -> None:
    search = Searcher(hits("A"))
    config = InjectionConfig(format=lambda entries: rendered)
    assert await inject_memories([ASK], config, search) == [ASK]


async def test_raising_format_skips_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    def broken(entries: Sequence[MemoryEntry]) -> str:
        raise RuntimeError("boom")

    search = Searcher(hits("A"))
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.injection"):
        assert await inject_memories([ASK], InjectionConfig(format=broken), search) == [ASK]
    assert "memory injection skipped" in caplog.text and "format" in caplog.text


async def test_a_failing_search_fails_open(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(query: str, limit: int) -> list[MemoryEntry]:
        raise OSError("disk gone")

    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.injection"):
        assert await inject_memories([ASK], InjectionConfig(), broken) == [ASK]
    assert "search" in caplog.text


async def test_malformed_messages_fail_open(caplog: pytest.LogCaptureFixture) -> None:
    messages: list[Any] = [ASK, "not a message"]
    with caplog.at_level(logging.WARNING, logger="agentrecall.memory.injection"):
        result = await inject_memories(messages, InjectionConfig(trigger="everyTurn"), Searcher())
    assert result == messages and result is not messages
    assert "memory injection skipped" in caplog.text


async def test_the_input_is_never_mutated_and_the_result_is_always_new() -> None:
    messages = [ASSISTANT, copy.deepcopy(ASK)]
    before = copy.deepcopy(messages)
    injected = await inject_memories(messages, InjectionConfig(), Searcher(hits("A")))
    skipped = await inject_memories(messages, InjectionConfig(), Searcher())
    assert messages == before
    assert injected is not messages and skipped is not messages
    assert injected != messages and skipped == messages
