"""ModelExtractor with a scripted model (spec §7.4 and the §8.4 checklist)."""

from __future__ import annotations

import logging

import pytest

from agentrecall.errors import InvalidArgumentError, ModelError
from agentrecall.extraction import ExtractionResult, ExtractorContext, ModelExtractor
from agentrecall.extraction.prompt import (
    DEFAULT_SYSTEM_PROMPT,
    OUTPUT_INSTRUCTION,
    parse_results,
    render_transcript,
)
from agentrecall.testing import ScriptedChatModel

CONVERSATION = [
    {
        "role": "user",
        "content": [{"text": "I prefer dark mode."}, {"text": "And I live in Berlin."}],
    },
    {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}]},
    {"role": "assistant", "content": "Noted both."},
]


async def test_parses_the_facts_the_model_returns() -> None:
    model = ScriptedChatModel(
        ['[{"content": "User prefers dark mode"}, {"content": "Lives in Berlin"}]']
    )
    results = await ModelExtractor(model).extract(CONVERSATION)
    assert results == [
        ExtractionResult("User prefers dark mode"),
        ExtractionResult("Lives in Berlin"),
    ]


async def test_prompt_shape() -> None:
    model = ScriptedChatModel(["[]"])
    await ModelExtractor(model).extract(CONVERSATION)
    (call,) = model.calls
    assert call.system == DEFAULT_SYSTEM_PROMPT + "\n\n" + OUTPUT_INSTRUCTION
    (message,) = call.messages
    assert message["role"] == "user"
    assert message["content"].endswith(
        "\n\nuser: I prefer dark mode.\nAnd I live in Berlin.\nassistant: \nassistant: Noted both."
    )
    assert message["content"] == render_transcript(CONVERSATION)


async def test_a_custom_prompt_still_gets_the_output_instruction() -> None:
    model = ScriptedChatModel(["[]"])
    await ModelExtractor(model, system_prompt="Only note food preferences.").extract(CONVERSATION)
    assert model.calls[0].system == "Only note food preferences.\n\n" + OUTPUT_INSTRUCTION


async def test_finds_the_array_inside_prose_and_a_code_fence() -> None:
    answer = (
        "Here you go:\n```json\n"
        '[{"content": "  Likes tea  ", "metadata": {"topic": "pref"}}]'
        "\n```\nDone."
    )
    results = await ModelExtractor(ScriptedChatModel([answer])).extract(CONVERSATION)
    assert results == [ExtractionResult("Likes tea", {"topic": "pref"})]


@pytest.mark.parametrize("answer", ["not json at all", "[{broken", "{}", '{"text": "x"}'])
def test_unreadable_answers_give_nothing(answer: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert parse_results(answer) == []


def test_malformed_answer_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.prompt"):
        assert parse_results("[{broken]") == []
    assert "not valid JSON" in caplog.text


async def test_a_plain_list_of_strings_is_one_fact_per_string() -> None:
    model = ScriptedChatModel(['["User prefers dark mode", "  Lives in Berlin "]'])
    results = await ModelExtractor(model).extract(CONVERSATION)
    assert results == [
        ExtractionResult("User prefers dark mode"),
        ExtractionResult("Lives in Berlin"),
    ]


async def test_strings_and_objects_mix_in_their_order() -> None:
    model = ScriptedChatModel(['```json\n["a", {"content": "b", "metadata": {"k": 1}}, "c"]\n```'])
    results = await ModelExtractor(model).extract(CONVERSATION)
    assert results == [
        ExtractionResult("a"),
        ExtractionResult("b", {"k": 1}),
        ExtractionResult("c"),
    ]


def test_unusable_items_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    answer = (
        '[{"content": ""}, {"foo": "bar"}, "bare", {"content": 3}, " ", 7, null, ["x"], '
        '{"content": " keep "}]'
    )
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.prompt"):
        assert parse_results(answer) == [ExtractionResult("bare"), ExtractionResult("keep")]
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "skipped 7 of 9 items" in record.getMessage()
    assert "{'content': ''}" in record.getMessage()


def test_a_fully_usable_answer_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="agentrecall.extraction.prompt"):
        assert parse_results('["a", {"content": "b"}]') == [
            ExtractionResult("a"),
            ExtractionResult("b"),
        ]
        assert parse_results("[]") == []
    assert caplog.records == []


def test_metadata_is_kept_only_when_it_is_an_object() -> None:
    answer = '[{"content": "a", "metadata": "x"}, {"content": "b", "metadata": {"n": [1]}}]'
    assert parse_results(answer) == [ExtractionResult("a"), ExtractionResult("b", {"n": [1]})]


async def test_empty_batch_makes_no_model_call() -> None:
    model = ScriptedChatModel()
    assert await ModelExtractor(model).extract([]) == []
    assert model.calls == []


async def test_falls_back_to_the_context_model() -> None:
    model = ScriptedChatModel(['[{"content": "fact"}]'])
    results = await ModelExtractor().extract(CONVERSATION, ExtractorContext(default_model=model))
    assert results == [ExtractionResult("fact")]


async def test_own_model_wins_over_the_context_model() -> None:
    own, other = ScriptedChatModel(["[]"]), ScriptedChatModel()
    await ModelExtractor(own).extract(CONVERSATION, ExtractorContext(default_model=other))
    assert len(own.calls) == 1 and other.calls == []


async def test_no_model_at_all_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="no model configured"):
        await ModelExtractor().extract(CONVERSATION)
    with pytest.raises(InvalidArgumentError, match="no model configured"):
        await ModelExtractor().extract(CONVERSATION, ExtractorContext())


async def test_model_errors_propagate() -> None:
    with pytest.raises(ConnectionError):
        await ModelExtractor(ScriptedChatModel([ConnectionError("down")])).extract(CONVERSATION)


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="ChatModel"):
        ModelExtractor(model="gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="system_prompt"):
        ModelExtractor(system_prompt="  ")


@pytest.mark.parametrize(
    "answer",
    [
        'I found [2] facts: [{"content": "Likes tea"}, "Lives in Berlin"]',
        '[{"content": "Likes tea"}, "Lives in Berlin"]\n\n(I left out [greetings].)',
        '[1, 2] and then ["Likes tea", "Lives in Berlin"]',
    ],
)
def test_brackets_in_the_prose_do_not_hide_the_array(answer: str) -> None:
    assert parse_results(answer) == [
        ExtractionResult("Likes tea"),
        ExtractionResult("Lives in Berlin"),
    ]


def test_an_answer_nested_too_deep_gives_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.prompt"):
        assert parse_results("[" * 100_000 + "]" * 100_000) == []
    assert "not valid JSON" in caplog.text


def test_lone_surrogates_in_the_answer_become_replacement_characters() -> None:
    # A model cutting an emoji in half writes an escape that pairs with nothing.
    answer = r'[{"content": "Loves \ud83d", "metadata": {"mood\udc00": ["\ud83d\ude00"]}}]'
    assert parse_results(answer) == [
        ExtractionResult("Loves \ufffd", {"mood\ufffd": ["\U0001f600"]})
    ]


@pytest.mark.parametrize(
    "answer", ["Sorry, I cannot help.", '[{"content": "cut sh', "<html>502</html>"]
)
async def test_an_answer_without_a_json_array_is_a_model_error(answer: str) -> None:
    model = ScriptedChatModel([answer])
    with pytest.raises(ModelError, match="no JSON array") as raised:
        await ModelExtractor(model).extract(CONVERSATION)
    assert raised.value.body == answer


async def test_an_empty_array_is_nothing_to_remember() -> None:
    assert await ModelExtractor(ScriptedChatModel(["Nothing here: []"])).extract(CONVERSATION) == []


async def test_a_lone_object_is_one_memory() -> None:
    # Small models often answer one fact without the array; asking again would get the same.
    answer = 'Here it is: {"content": " Likes tea ", "metadata": {"topic": "pref"}}'
    results = await ModelExtractor(ScriptedChatModel([answer])).extract(CONVERSATION)
    assert results == [ExtractionResult("Likes tea", {"topic": "pref"})]
