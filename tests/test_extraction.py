"""The extraction coordinator (spec §7.3 and the §8.3 checklist), resolution and the filter.

Third-party stores are stood in for by small fakes that record what they receive; our own
pieces (coordinator, filter, triggers, JsonFileStore) are the real ones.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from memory_doubles import CountingJsonStore

from agentrecall.errors import AggregateMemoryError, InvalidArgumentError
from agentrecall.extraction import (
    AddMessagesContext,
    ExtractionConfig,
    ExtractionCoordinator,
    ExtractionResult,
    ExtractorContext,
    IntervalTrigger,
    InvocationTrigger,
    MessageFilter,
    ModelExtractor,
    ResolvedExtraction,
    implements,
    resolve_extraction,
)
from agentrecall.extraction.config import DEFAULT_TRIGGER
from agentrecall.extraction.coordinator import EXTRACT_CHARS
from agentrecall.stores import JsonFileStore
from agentrecall.testing import ScriptedChatModel

EVERY_TURN = ExtractionConfig(trigger=InvocationTrigger())


# Fakes of third-party stores and extractors


class SinkStore:
    """A store that extracts server-side: it only has ``add_messages``."""

    def __init__(self, name: str = "sink", extraction: Any = EVERY_TURN) -> None:
        self.name = name
        self.description = None
        self.max_search_results = None
        self.writable = True
        self.extraction = extraction
        self.calls: list[tuple[list[dict[str, Any]], AddMessagesContext | None]] = []
        self.failing = False
        self.gate: asyncio.Event | None = None

    async def search(self, query: str, options: Any = None) -> list[Any]:
        return []

    async def add_messages(
        self, messages: list[dict[str, Any]], context: AddMessagesContext | None = None
    ) -> None:
        self.calls.append((messages, context))
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise ConnectionError(f"{self.name} is down")

    @property
    def texts(self) -> list[list[str]]:
        return [[_text(m) for m in messages] for messages, _ in self.calls]

    @property
    def sequences(self) -> list[list[int] | None]:
        return [None if c is None else c.sequence_numbers for _, c in self.calls]


class AddStore:
    """A client-side store: it only has ``add``."""

    def __init__(self, name: str = "facts", extraction: Any = EVERY_TURN) -> None:
        self.name = name
        self.description = None
        self.max_search_results = None
        self.writable = True
        self.extraction = extraction
        self.added: list[tuple[str, Any]] = []
        self.fail_on: set[str] = set()
        self.rendezvous: int | None = None  # adds wait until this many are in progress
        self._arrived = 0
        self._all_arrived = asyncio.Event()

    async def search(self, query: str, options: Any = None) -> list[Any]:
        return []

    async def add(self, content: str, metadata: Any = None) -> None:
        self.added.append((content, metadata))
        if self.rendezvous is not None:
            self._arrived += 1
            if self._arrived == self.rendezvous:
                self._all_arrived.set()
            await asyncio.wait_for(self._all_arrived.wait(), timeout=60)
        if content in self.fail_on:
            raise OSError(f"cannot write {content!r}")


class BothStore(SinkStore):
    async def add(self, content: str, metadata: Any = None) -> None:
        raise AssertionError("the passthrough path must not call add")


class ScriptedExtractor:
    def __init__(self, results: Sequence[ExtractionResult]) -> None:
        self.results = list(results)
        self.calls: list[tuple[list[dict[str, Any]], ExtractorContext | None]] = []

    async def extract(
        self, messages: Sequence[Any], context: ExtractorContext | None = None
    ) -> list[ExtractionResult]:
        self.calls.append((list(messages), context))
        return list(self.results)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "|".join(block.get("text", next(iter(block))) for block in content)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"text": text}]}


def tool_turn(tool_id: str = "t1") -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": tool_id, "name": "f", "input": {}}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": tool_id, "content": [{"text": "ok"}]}}],
        },
    ]


def coordinator(*stores: Any, default_model: Any = None) -> ExtractionCoordinator:
    bindings = []
    for store in stores:
        resolved = resolve_extraction(store.extraction, store)
        assert resolved is not None
        bindings.append((store, resolved))
    return ExtractionCoordinator(bindings, default_model=default_model)


async def turn(c: ExtractionCoordinator, *messages: dict[str, Any]) -> None:
    """One agent invocation: its messages, its end, and the background saves it started."""
    c.record(messages)
    c.end_turn()
    await c.wait_idle()


# Passthrough (add_messages) path


@pytest.mark.parametrize(
    "messages",
    [
        [user("I like tea"), assistant("Noted")],
        [{"role": "user", "content": "I like tea"}, {"role": "assistant", "content": "Noted"}],
    ],
    ids=["strands", "openai"],
)
async def test_a_batch_goes_to_add_messages_in_one_call(messages: list[dict[str, Any]]) -> None:
    store = SinkStore()
    c = coordinator(store)
    await turn(c, *messages)
    assert store.texts == [["I like tea", "Noted"]]
    assert store.sequences == [[0, 1]]
    assert store.calls[0][0] == messages and store.calls[0][0][0] is not messages[0]


async def test_a_store_with_both_methods_defaults_to_add_messages() -> None:
    store = BothStore()
    assert resolve_extraction(True, store) == ResolvedExtraction(
        (DEFAULT_TRIGGER,), None, MessageFilter()
    )
    c = coordinator(store)
    await turn(c, user("hi"))
    assert store.texts == [["hi"]]


async def test_default_filter_drops_tool_traffic() -> None:
    store = SinkStore()
    c = coordinator(store)
    await turn(c, user("book a flight"), *tool_turn())
    assert store.texts == [["book a flight"]]
    assert store.sequences == [[0]]


async def test_sequence_numbers_skip_filtered_messages() -> None:
    store = SinkStore()
    c = coordinator(store)
    await turn(c, user("a"), tool_turn()[0], assistant("b"))
    assert store.sequences == [[0, 2]]


async def test_a_filter_that_empties_the_batch_writes_nothing() -> None:
    store = SinkStore(
        extraction=ExtractionConfig(InvocationTrigger(), filter=MessageFilter(["text"]))
    )
    c = coordinator(store)
    await turn(c, user("a"), assistant("b"))
    await c.flush()
    assert store.calls == []


async def test_high_water_mark_sends_only_new_messages() -> None:
    store = SinkStore()
    c = coordinator(store)
    await turn(c, user("one"))
    await turn(c, assistant("two"))
    assert store.texts == [["one"], ["two"]]
    assert store.sequences == [[0], [1]]


async def test_no_new_messages_means_no_call() -> None:
    store = SinkStore()
    c = coordinator(store)
    await turn(c, user("one"))
    await turn(c)
    await c.flush()
    assert len(store.calls) == 1


async def test_a_failed_batch_is_sent_again_identically(caplog: pytest.LogCaptureFixture) -> None:
    store = SinkStore()
    c = coordinator(store)
    store.failing = True
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        await turn(c, user("a"), assistant("b"))
    store.failing = False
    await turn(c)
    assert store.texts == [["a", "b"], ["a", "b"]]
    assert store.sequences == [[0, 1], [0, 1]]
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "store 'sink'" in record.getMessage() and "1 in a row" in record.getMessage()


async def test_a_retried_later_batch_keeps_its_numbers() -> None:
    store = SinkStore()
    c = coordinator(store)
    await turn(c, user("a"))
    store.failing = True
    await turn(c, assistant("b"))
    store.failing = False
    await turn(c)
    assert store.sequences == [[0], [1], [1]]


async def test_two_stores_read_the_same_numbers() -> None:
    first, second = SinkStore("first"), SinkStore("second")
    c = coordinator(first, second)
    await turn(c, user("a"), assistant("b"))
    assert first.sequences == second.sequences == [[0, 1]]


# Cadence


async def test_interval_trigger_saves_every_nth_turn_with_the_skipped_messages() -> None:
    store = SinkStore(extraction=ExtractionConfig(trigger=IntervalTrigger(2)))
    c = coordinator(store)
    for index in range(5):
        await turn(c, user(f"m{index}"))
    assert store.texts == [["m0", "m1"], ["m2", "m3"]]
    await c.flush()
    assert store.texts[-1] == ["m4"]


async def test_default_trigger_is_every_five_turns() -> None:
    store = SinkStore(extraction=True)
    c = coordinator(store)
    for index in range(10):
        await turn(c, user(f"m{index}"))
    assert [len(batch) for batch in store.texts] == [5, 5]


async def test_triggers_compose() -> None:
    config = ExtractionConfig(trigger=[IntervalTrigger(2), IntervalTrigger(3)])
    store = SinkStore(extraction=config)
    c = coordinator(store)
    for index in range(6):
        await turn(c, user(f"m{index}"))
    assert store.texts == [["m0", "m1"], ["m2"], ["m3"], ["m4", "m5"]]


# Backoff


async def test_backoff_after_ten_failures_attempts_every_third_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = SinkStore()
    store.failing = True
    c = coordinator(store)
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        for index in range(10 + 3 * 2):
            await turn(c, user(f"m{index}"))
    assert len(store.calls) == 10 + 2
    levels = [record.levelno for record in caplog.records]
    assert levels == [logging.WARNING] * 9 + [logging.ERROR] * 3


async def test_a_successful_probe_saves_the_backlog_and_ends_backoff() -> None:
    store = SinkStore()
    store.failing = True
    c = coordinator(store)
    await turn(c, user("down0"))
    for _ in range(9):
        await turn(c)
    assert len(store.calls) == 10
    store.failing = False
    await turn(c, user("up0"))
    await turn(c)
    assert len(store.calls) == 10
    await turn(c)  # the probe
    assert store.texts[-1] == ["down0", "up0"]
    await turn(c, user("up1"))
    assert store.texts[-1] == ["up1"]


async def test_a_healthy_store_saves_while_its_sibling_backs_off() -> None:
    bad, good = SinkStore("bad"), SinkStore("good")
    bad.failing = True
    c = coordinator(bad, good)
    for index in range(13):
        await turn(c, user(f"m{index}"))
    assert len(good.calls) == 13
    assert len(bad.calls) == 11
    assert good.texts[-1] == ["m12"]


async def test_tool_only_turns_do_not_reset_the_failure_streak() -> None:
    store = SinkStore()
    store.failing = True
    c = coordinator(store)
    await turn(c, user("a"))
    for _ in range(9):
        await turn(c, *tool_turn())
    assert len(store.calls) == 10
    await turn(c, *tool_turn())
    assert len(store.calls) == 10  # backed off: the request was not a probe
    assert all(texts == ["a"] for texts in store.texts)


async def test_flush_bypasses_backoff_and_sends_backlog_and_tail_at_once() -> None:
    store = SinkStore()
    store.failing = True
    c = coordinator(store)
    for index in range(10):
        await turn(c, user(f"m{index}"))
    store.failing = False
    c.record([assistant("final")])
    await c.flush()
    assert len(store.calls) == 11
    assert store.texts[-1] == [f"m{index}" for index in range(10)] + ["final"]


async def test_flush_returns_none_while_a_store_fails() -> None:
    store = SinkStore()
    store.failing = True
    c = coordinator(store)
    c.record([user("a")])
    assert await c.flush() is None
    assert len(store.calls) == 1


# Flush


async def test_flush_saves_a_tail_no_trigger_reached() -> None:
    store = SinkStore(extraction=True)
    c = coordinator(store)
    await turn(c, user("a"), assistant("b"))
    assert store.calls == []
    await c.flush()
    assert store.texts == [["a", "b"]]
    await c.flush()
    assert len(store.calls) == 1  # nothing is sent twice


async def test_flush_with_nothing_recorded_makes_no_call() -> None:
    store = SinkStore()
    await coordinator(store).flush()
    assert store.calls == []


async def test_end_turn_returns_at_once_and_flush_awaits_the_running_save() -> None:
    store = SinkStore()
    store.gate = asyncio.Event()
    c = coordinator(store)
    c.record([user("a")])
    c.end_turn()
    flushing = asyncio.ensure_future(c.flush())
    while not store.calls:
        await asyncio.sleep(0)
    assert not flushing.done()
    store.gate.set()
    await flushing
    assert store.texts == [["a"]]


async def test_a_failing_save_in_flight_keeps_its_messages_while_a_sibling_saves() -> None:
    slow, quick = SinkStore("slow"), SinkStore("quick")
    slow.gate, slow.failing = asyncio.Event(), True
    c = coordinator(slow, quick)
    c.record([user("a"), assistant("b")])
    c.end_turn()
    while not (slow.calls and quick.calls):
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    slow.gate.set()
    await c.wait_idle()
    slow.failing, slow.gate = False, None
    await c.flush()
    assert slow.texts == [["a", "b"], ["a", "b"]]
    assert quick.texts == [["a", "b"]]


def test_end_turn_outside_an_event_loop_logs_and_keeps_the_messages(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = SinkStore()
    c = coordinator(store)
    c.record([user("a")])
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        c.end_turn()
    assert "outside an event loop" in caplog.text
    asyncio.run(c.flush())
    assert store.texts == [["a"]]


async def test_a_raising_trigger_skips_the_save(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def fires(self, turn: int) -> bool:
            raise RuntimeError("bad trigger")

    store = SinkStore(extraction=ExtractionConfig(trigger=Broken()))
    c = coordinator(store)
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        await turn(c, user("a"))
    assert store.calls == [] and "trigger of store 'sink' raised" in caplog.text


def test_record_refuses_unusable_messages() -> None:
    c = coordinator(SinkStore())
    with pytest.raises(InvalidArgumentError, match=r"messages\[1\]"):
        c.record([user("ok"), {"role": "robot", "content": "x"}])


def test_bindings_need_resolved_extraction() -> None:
    with pytest.raises(InvalidArgumentError, match="ResolvedExtraction"):
        ExtractionCoordinator([(SinkStore(), True)])  # type: ignore[list-item]


# Extractor (add) path


async def test_extracted_entries_are_added_in_order_and_never_via_add_messages() -> None:
    store = BothStore()
    extractor = ScriptedExtractor(
        [ExtractionResult("fact one"), ExtractionResult("fact two", {"k": "v"})]
    )
    store.extraction = ExtractionConfig(InvocationTrigger(), extractor=extractor)

    added: list[tuple[str, Any]] = []

    async def add(content: str, metadata: Any = None) -> None:
        added.append((content, metadata))

    store.add = add  # type: ignore[method-assign]
    model = ScriptedChatModel()
    c = coordinator(store, default_model=model)
    await turn(c, user("a"), assistant("b"))
    assert added == [("fact one", None), ("fact two", {"k": "v"})]
    assert store.calls == []
    ((messages, context),) = extractor.calls
    assert [_text(m) for m in messages] == ["a", "b"]
    assert context == ExtractorContext(default_model=model)


async def test_extracted_entries_are_added_concurrently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = AddStore()
    store.rendezvous = 2
    extractor = ScriptedExtractor([ExtractionResult("x"), ExtractionResult("y")])
    store.extraction = ExtractionConfig(InvocationTrigger(), extractor=extractor)
    c = coordinator(store)
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        await turn(c, user("a"))  # each add waits until both are in progress
    assert sorted(content for content, _ in store.added) == ["x", "y"]
    assert caplog.records == []  # one add at a time would have timed out waiting


async def test_one_failed_add_retries_the_whole_batch(caplog: pytest.LogCaptureFixture) -> None:
    store = AddStore()
    extractor = ScriptedExtractor([ExtractionResult("x"), ExtractionResult("y")])
    store.extraction = ExtractionConfig(InvocationTrigger(), extractor=extractor)
    store.fail_on = {"y"}
    c = coordinator(store)
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        await turn(c, user("a"))
    (record,) = caplog.records
    assert record.exc_info is not None
    error = record.exc_info[1]
    assert isinstance(error, AggregateMemoryError)
    assert str(error) == "failed to write 1 of 2 extracted entries"
    assert [type(e) for e in error.errors] == [OSError]
    store.fail_on = set()
    await turn(c)
    assert len(extractor.calls) == 2
    assert [[_text(m) for m in call[0]] for call in extractor.calls] == [["a"], ["a"]]
    assert len(store.added) == 4


async def test_an_add_only_store_defaults_to_the_model_extractor() -> None:
    store = AddStore(extraction=True)
    resolved = resolve_extraction(True, store)
    assert resolved is not None and isinstance(resolved.extractor, ModelExtractor)
    model = ScriptedChatModel(['[{"content": "a durable fact"}]'])
    c = coordinator(store, default_model=model)
    c.record([user("remember this")])
    await c.flush()
    assert store.added == [("a durable fact", None)]
    assert len(model.calls) == 1


async def test_extraction_into_a_json_file_store(tmp_path: Any) -> None:
    store = JsonFileStore(name="facts", path=tmp_path / "facts.json", extraction=EVERY_TURN)
    model = ScriptedChatModel(
        [
            '```json\n[{"content": "User lives in Lyon", "metadata": {"topic": "home"}}]\n```',
            OSError("model offline"),
            '[{"content": "User lives in Lyon"}, {"content": "User cycles to work"}]',
        ]
    )
    c = coordinator(store, default_model=model)
    await turn(c, user("I live in Lyon."), assistant("Nice city."))
    await turn(c, {"role": "user", "content": "I cycle to work."})
    await turn(c)
    records = await store.list()
    assert sorted((r.content, r.metadata) for r in records) == [
        ("User cycles to work", None),
        ("User lives in Lyon", {"topic": "home"}),
    ]
    assert "I cycle to work." in model.calls[2].messages[0]["content"]
    assert "I live in Lyon." not in model.calls[2].messages[0]["content"]


async def test_a_fact_with_a_half_emoji_reaches_the_store(tmp_path: Any) -> None:
    # The store refuses lone surrogates; kept as they were, the batch would fail at every retry.
    store = JsonFileStore(name="facts", path=tmp_path / "facts.json", extraction=EVERY_TURN)
    model = ScriptedChatModel([r'["User signs off with \ud83d", "User lives in Lyon"]'])
    c = coordinator(store, default_model=model)
    await turn(c, user("I live in Lyon. Bye \U0001f44b"))
    assert sorted(r.content for r in await store.list()) == [
        "User lives in Lyon",
        "User signs off with \ufffd",
    ]


def test_a_save_cancelled_with_its_event_loop_is_made_at_the_next_flush(tmp_path: Any) -> None:
    # A program that runs each turn in its own asyncio.run() cancels a save still running at
    # the end of a turn; its messages must still be saved later, not skipped.
    store = JsonFileStore(name="facts", path=tmp_path / "facts.json", extraction=EVERY_TURN)
    model = SlowFirstModel('["User lives in Lyon"]')
    c = coordinator(store, default_model=model)

    async def first_turn() -> None:
        c.record([user("I live in Lyon.")])
        c.end_turn()
        await model.started.wait()

    asyncio.run(first_turn())
    asyncio.run(c.flush())
    assert [r.content for r in asyncio.run(store.list())] == ["User lives in Lyon"]
    assert "I live in Lyon." in model.prompts[-1]


class SlowFirstModel:
    """Answers every call with ``answer``, except the first, which never ends."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[str] = []
        self.started = asyncio.Event()

    async def complete(self, messages: Sequence[Any], *, system: str | None = None) -> str:
        self.prompts.append(messages[0]["content"])
        if len(self.prompts) == 1:
            self.started.set()
            await asyncio.Event().wait()
        return self.answer


async def test_an_unreadable_answer_is_asked_again_not_taken_for_no_facts(tmp_path: Any) -> None:
    store = JsonFileStore(name="facts", path=tmp_path / "facts.json", extraction=EVERY_TURN)
    model = ScriptedChatModel(['[{"content": "User lives in Ly', '["User lives in Lyon"]'])
    c = coordinator(store, default_model=model)
    await turn(c, user("I live in Lyon."))
    assert await store.list() == []
    await c.flush()
    assert [r.content for r in await store.list()] == ["User lives in Lyon"]
    assert "I live in Lyon." in model.calls[1].messages[0]["content"]


# Resolution


def test_resolution_of_the_accepted_forms() -> None:
    store = SinkStore()
    assert resolve_extraction(None, store) is None
    assert resolve_extraction(False, store) is None
    default = resolve_extraction(True, store)
    assert default == ResolvedExtraction(
        (IntervalTrigger(5),), None, MessageFilter(["toolUse", "toolResult"])
    )
    trigger = InvocationTrigger()
    assert resolve_extraction({"trigger": trigger}, store) == ResolvedExtraction(
        (trigger,), None, MessageFilter()
    )
    resolved = resolve_extraction(ExtractionConfig(trigger=[]), store)
    assert resolved is not None and resolved.triggers == ()
    keep_all = MessageFilter(exclude=[])
    resolved = resolve_extraction({"filter": keep_all, "trigger": [trigger, trigger]}, store)
    assert resolved is not None and resolved.filter is keep_all
    assert resolved.triggers == (trigger, trigger)


def test_resolution_refuses_other_values() -> None:
    store = SinkStore("notes")
    with pytest.raises(InvalidArgumentError, match="store 'notes' extraction must be"):
        resolve_extraction(1, store)
    with pytest.raises(InvalidArgumentError, match="unknown key"):
        resolve_extraction({"triggers": []}, store)
    with pytest.raises(InvalidArgumentError, match="trigger"):
        ExtractionConfig(trigger="every turn")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="extractor"):
        ExtractionConfig(extractor=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="MessageFilter"):
        ExtractionConfig(filter={"exclude": []})  # type: ignore[arg-type]


@pytest.mark.parametrize("turns", [0, -1, True, 2.0, "3"])
def test_interval_trigger_needs_a_positive_integer(turns: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="positive integer"):
        IntervalTrigger(turns)


def test_implements_ignores_protocol_stubs() -> None:
    from strands.memory.types import MemoryStore

    class ReadOnly(MemoryStore):
        name = "ro"

        async def search(self, query: str, options: Any = None) -> list[Any]:
            return []

    class WithAdd(ReadOnly):
        async def add(self, content: str, metadata: Any = None) -> None:
            return None

    assert not implements(ReadOnly(), "add") and not implements(ReadOnly(), "add_messages")
    assert implements(WithAdd(), "add")
    assert implements(JsonFileStore(name="x", persist=False), "add")
    assert not implements(JsonFileStore(name="x", persist=False), "add_messages")
    instance = SinkStore()
    instance.add = lambda *a: None  # type: ignore[attr-defined]
    assert not implements(instance, "add")  # decided on the class


# The filter


def test_filter_on_openai_messages() -> None:
    default = MessageFilter()
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    tool_call_only = {"role": "assistant", "content": None, "tool_calls": [call]}
    with_text = {"role": "assistant", "content": "Let me look.", "tool_calls": [call]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    assert default.apply(tool_call_only) is None
    assert default.apply(with_text) == {"role": "assistant", "content": "Let me look."}
    assert "tool_calls" in with_text  # the input is untouched
    assert default.apply(result) is None
    assert MessageFilter([]).apply(result) == result
    assert MessageFilter(["text"]).apply(with_text) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [call],
    }
    assert default.apply({"role": "user", "content": ""}) is None
    parts = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": "u"}},
        ],
    }
    assert MessageFilter(["image"]).apply(parts) == {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
    }


def test_filter_on_strands_messages_keeps_metadata() -> None:
    message = {
        "role": "user",
        "content": [
            {"text": "see"},
            {"image": {"format": "png"}},
            {"cachePoint": {"type": "default"}},
        ],
        "metadata": {"id": 7},
    }
    kept = MessageFilter(["image", "cachePoint"]).apply(message)
    assert kept == {"role": "user", "content": [{"text": "see"}], "metadata": {"id": 7}}
    assert len(message["content"]) == 3
    assert MessageFilter(["text"]).apply(user("only text")) is None


def test_filter_refuses_unknown_kinds() -> None:
    with pytest.raises(InvalidArgumentError, match="toolUses"):
        MessageFilter(["toolUses"])
    with pytest.raises(InvalidArgumentError, match="collection"):
        MessageFilter("text")


async def test_extracted_entries_go_to_a_store_in_one_batch(tmp_path: Any) -> None:
    # One add_many: for a JSON file store, one durable rewrite of the file, not one per fact.
    store = CountingJsonStore(name="facts", path=tmp_path / "facts.json")
    facts = [ExtractionResult(f"fact {n}", {"n": n}) for n in range(5)]
    store.extraction = ExtractionConfig(InvocationTrigger(), extractor=ScriptedExtractor(facts))
    c = coordinator(store)
    await turn(c, user("a"))
    assert (store.add_many_calls, store.add_calls) == (1, 0)
    listed = await store.list()
    assert [(m.content, m.metadata) for m in listed] == [(f"fact {n}", {"n": n}) for n in range(5)]


async def test_a_batch_the_store_refuses_is_added_entry_by_entry(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # One entry the store refuses (metadata JSON cannot hold) sinks the batch call, not the
    # other entries; the save still counts as failed, and is retried.
    store = CountingJsonStore(name="facts", path=tmp_path / "facts.json")
    facts = [ExtractionResult("kept"), ExtractionResult("refused", {"x": float("nan")})]
    store.extraction = ExtractionConfig(InvocationTrigger(), extractor=ScriptedExtractor(facts))
    c = coordinator(store)
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        await turn(c, user("a"))
    assert store.add_calls == 2  # after the one batch call failed
    assert [m.content for m in await store.list()] == ["kept"]
    (record,) = caplog.records
    assert "failed to write 1 of 2 extracted entries" in str(record.exc_info[1])  # type: ignore[index]


class _PartsExtractor:
    """Extracts one fact per message, its first word; fails a call holding ``boom`` once."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.failed = False

    async def extract(
        self, messages: Sequence[Any], context: ExtractorContext | None = None
    ) -> list[ExtractionResult]:
        texts = [_text(m) for m in messages]
        self.calls.append([text.split()[0] for text in texts])
        if not self.failed and any("boom" in text for text in texts):
            self.failed = True
            raise ConnectionError("the model is down")
        return [ExtractionResult(f"fact from {text.split()[0]}") for text in texts]


async def test_a_large_backlog_goes_to_the_extractor_in_parts_each_saved_on_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Five messages of 10,000 characters: one call would read 50,000, past EXTRACT_CHARS.
    assert EXTRACT_CHARS == 24_000
    store = AddStore()
    extractor = _PartsExtractor()
    store.extraction = ExtractionConfig(InvocationTrigger(), extractor=extractor)
    c = coordinator(store)
    words = ["m0", "m1", "m2 boom", "m3", "m4"]
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.coordinator"):
        await turn(c, *(user(word + " " + "x" * (10_000 - len(word) - 1)) for word in words))
    # Parts of two, two and one message, oldest first; the second failed.
    assert extractor.calls == [["m0", "m1"], ["m2", "m3"]]
    assert [content for content, _ in store.added] == ["fact from m0", "fact from m1"]
    (record,) = caplog.records
    assert "saving 3 message(s)" in record.getMessage()
    await turn(c)  # the retry takes only what was not saved
    assert extractor.calls[2:] == [["m2", "m3"], ["m4"]]
    assert [content for content, _ in store.added][2:] == [f"fact from m{n}" for n in (2, 3, 4)]
