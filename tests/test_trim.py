"""Trimming decisions and token estimates, on both message shapes."""

from __future__ import annotations

import pytest

from agentrecall.conversation.tokens import estimate_tokens
from agentrecall.conversation.trim import fit_budget, keep_newest
from agentrecall.errors import InvalidArgumentError
from agentrecall.messages import (
    check_message,
    is_tool_result,
    is_user_turn,
    message_text,
    tool_call_ids,
    tool_result_ids,
)


def u(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def a(text: str, *calls: str) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for c in calls
        ]
    return message


def tool(call: str) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call, "content": "result"}


def s(text: str) -> dict[str, object]:
    return {"role": "system", "content": text}


def strands_call(call: str) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": call, "name": "f", "input": {"q": 1}}}],
    }


def strands_result(call: str) -> dict[str, object]:
    return {
        "role": "user",
        "content": [{"toolResult": {"toolUseId": call, "status": "success", "content": []}}],
    }


def test_t8_estimates_count_utf16_units() -> None:
    assert [estimate_tokens(u(t)) - 4 for t in ["", "a", "abcd", "abcde", "😀"]] == [0, 1, 1, 2, 1]
    assert estimate_tokens({"role": "assistant", "content": None}) == 4


def test_estimates_read_every_content_shape() -> None:
    parts = {"role": "user", "content": [{"type": "text", "text": "abcd"}, {"type": "image_url"}]}
    assert estimate_tokens(parts) == 5
    blocks = {"role": "user", "content": [{"text": "ab"}, {"text": "cd"}, {"image": {}}]}
    assert estimate_tokens(blocks) == 5
    # toolUse counts its name and JSON input: "f" + '{"q": 1}' = 9 units -> 3 tokens.
    assert estimate_tokens(strands_call("c1")) == 3 + 4


def test_message_shapes_are_read_alike() -> None:
    assert message_text({"role": "user", "content": [{"text": "a"}, {"text": "b"}]}) == "a\nb"
    assert message_text({"role": "user", "content": [{"type": "text", "text": "x"}]}) == "x"
    assert tool_call_ids(a("", "c1", "c2")) == {"c1", "c2"}
    assert tool_call_ids(strands_call("c3")) == {"c3"}
    assert tool_call_ids({"role": "assistant", "toolCalls": [{"id": "c4"}]}) == {"c4"}
    assert tool_result_ids(tool("c1")) == {"c1"}
    assert tool_result_ids(strands_result("c3")) == {"c3"}
    assert tool_result_ids({"role": "tool", "toolCallId": "c4"}) == {"c4"}
    assert is_tool_result(strands_result("c3")) and not is_user_turn(strands_result("c3"))
    assert is_user_turn(u("hi")) and not is_user_turn(a("hi"))


@pytest.mark.parametrize(
    ("message", "fact"),
    [
        ("text", "messages[3] must be a mapping"),
        ({"content": "x"}, "messages[3] has role None"),
        ({"role": "robot", "content": "x"}, "role 'robot'"),
        ({"role": "user", "content": 5}, "messages[3] content must be a string"),
        ({"role": "user", "content": ["x"]}, "messages[3] content[0] must be a mapping"),
    ],
)
def test_bad_messages_are_named_by_index(message: object, fact: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        check_message(message, 3)
    assert fact in str(raised.value)


def test_t1_adjusted_count_cut_starts_at_a_user_turn() -> None:
    # AgentLIB keeps [a1, u2, a2]; a window may not open with an assistant message.
    assert keep_newest([u("u1"), a("a1"), u("u2"), a("a2")], 3) == [u("u2"), a("a2")]


def test_t19_adjusted_a_cut_tool_exchange_is_dropped_whole() -> None:
    # AgentLIB keeps [a(toolCalls), tool, a]: an orphaned exchange no model API accepts.
    assert keep_newest([u("q"), a("", "c1"), tool("c1"), a("done")], 3) == []


def test_count_cut_keeps_whole_tool_exchanges_after_the_user_turn() -> None:
    history = [u("q1"), a("a1"), u("q2"), a("", "c1"), tool("c1"), a("a2")]
    assert keep_newest(history, 5) == history[2:]
    assert keep_newest(history, 6) == history


def test_strands_result_turns_are_not_user_turns() -> None:
    history = [u("q1"), strands_call("c1"), strands_result("c1"), a("a1"), u("q2"), a("a2")]
    assert keep_newest(history, 4) == [u("q2"), a("a2")]


def test_orphaned_results_after_the_cut_are_dropped() -> None:
    # A malformed history where a user turn sits between a call and its result.
    history = [u("q1"), a("", "c1"), u("q2"), tool("c1"), a("a2")]
    assert keep_newest(history, 4) == [u("q2"), a("a2")]


def test_nothing_is_cut_when_the_window_fits() -> None:
    history = [a("greeting"), u("q"), a("answer")]
    assert keep_newest(history, 3) == history
    assert keep_newest(history, None) == history
    assert fit_budget(history, None, estimate_tokens) == history


def test_t9_budget_keeps_the_newest_that_fit() -> None:
    history = [u("aaaa"), a("bbbb"), u("cccccccc")]  # costs 5, 5, 6
    assert fit_budget(history, 10, estimate_tokens) == [u("cccccccc")]


def test_t9b_adjusted_budget_cut_starts_at_a_user_turn() -> None:
    # AgentLIB returns [bbbb, cccc]; we drop the leading assistant message.
    history = [u("aaaa"), a("bbbb"), u("cccc")]
    assert fit_budget(history, 11, estimate_tokens) == [u("cccc")]


def test_t9c_a_total_equal_to_the_budget_fits() -> None:
    history = [u("aaaa"), a("bbbb")]
    assert fit_budget(history, 10, estimate_tokens) == history


def test_t10_an_oversized_newest_message_blocks_everything() -> None:
    assert fit_budget([u("a"), a("x" * 100)], 10, estimate_tokens) == []


def test_t10b_an_oversized_message_cuts_everything_older() -> None:
    assert fit_budget([u("a"), a("x" * 100), u("b")], 20, estimate_tokens) == [u("b")]


def test_t13_system_messages_come_first_and_are_always_kept() -> None:
    assert fit_budget([u("u"), s("s"), a("a")], 1000, estimate_tokens) == [s("s"), u("u"), a("a")]
    assert fit_budget([s("x" * 100), u("a")], 5, estimate_tokens) == [s("x" * 100)]


def test_budget_cut_drops_orphaned_strands_results() -> None:
    history = [u("q"), strands_call("c1"), strands_result("c1"), a("done"), u("next")]
    assert fit_budget(history, 14, estimate_tokens) == [u("next")]


def test_custom_counter_is_used() -> None:
    history = [u("a"), a("b"), u("c")]
    assert fit_budget(history, 2, lambda m: 1) == [u("c")]
    assert fit_budget(history, 3, lambda m: 1) == history


def anthropic_call(call: str) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": call, "name": "weather", "input": {"city": "Porto"}},
        ],
    }


def anthropic_result(call: str) -> dict[str, object]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call, "content": "sunny"}],
    }


def test_anthropic_shapes_are_read() -> None:
    assert tool_call_ids(anthropic_call("t1")) == {"t1"}
    assert tool_result_ids(anthropic_result("t1")) == {"t1"}
    assert is_tool_result(anthropic_result("t1")) and not is_user_turn(anthropic_result("t1"))
    # "checking" (8) + "weather" (7) + '{"city": "Porto"}' (17) = 32 units -> 8 tokens.
    assert estimate_tokens(anthropic_call("t1")) == 8 + 4
    assert estimate_tokens(anthropic_result("t1")) == 2 + 4


def test_anthropic_tool_exchanges_are_cut_whole() -> None:
    history = [u("q1"), anthropic_call("t1"), anthropic_result("t1"), a("a1"), u("q2"), a("a2")]
    assert keep_newest(history, 5) == [u("q2"), a("a2")]
    assert keep_newest(history, 6) == history


def test_tool_calls_cost_their_name_and_arguments_in_every_shape() -> None:
    # "f" and '{"q": 1}' are 9 UTF-16 units: 3 tokens, plus 4 for the message.
    openai = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"q": 1}'}}
        ],
    }
    agentlib = {
        "role": "assistant",
        "content": "",
        "toolCalls": [{"id": "c1", "name": "f", "arguments": {"q": 1}}],
    }
    assert (
        estimate_tokens(openai)
        == estimate_tokens(agentlib)
        == estimate_tokens(strands_call("c1"))
        == 7
    )
    with_text = {**openai, "content": "abc"}  # 3 + 9 = 12 units
    assert estimate_tokens(with_text) == 3 + 4


def test_a_budget_counts_the_arguments_of_openai_tool_calls() -> None:
    # Tool arguments can be the bulk of a conversation; a budget that ignored them would not
    # keep the window within what the model takes.
    call = {"id": "c1", "type": "function", "function": {"name": "write", "arguments": "x" * 4000}}
    conversation = [
        u("Write the report."),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        tool("c1"),
        a("Done."),
        u("Thanks!"),
    ]
    assert fit_budget(conversation, 100, estimate_tokens) == [u("Thanks!")]


def test_tool_call_arguments_json_cannot_hold_are_still_counted() -> None:
    message = {"role": "assistant", "content": "", "toolCalls": [{"arguments": {1j: 2}}]}
    assert estimate_tokens(message) == -(-len(str({1j: 2})) // 4) + 4
