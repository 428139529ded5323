"""Property tests of BufferMemory on every backend (in memory, an SQLite file, PostgreSQL).

Random conversations mix OpenAI-style messages (text, content parts, ``tool_calls`` answered by
``tool`` messages), Strands-style ones (``toolUse`` blocks answered by user ``toolResult``
turns), AgentLIB's camelCase fields, system messages anywhere, tool results that arrive a few
turns late, calls never answered and results of calls never made. Every message is distinct
(texts carry a serial number, tool ids are unique), so a returned message can be located in the
written conversation.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrecall import BufferMemory, estimate_tokens

Message = dict[str, Any]

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
BACKENDS = pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"])

TEXT = st.text(max_size=24) | st.sampled_from(["", "ok", "😀😀 emoji", "ünïcödé ✓", "a" * 90])
KINDS = st.sampled_from(
    ["user"] * 3
    + ["assistant"] * 3
    + ["system", "strands_user", "strands_assistant", "stray_result"]
    + ["openai_tools", "openai_tools", "strands_tools", "strands_tools", "agentlib_tools"]
)


def json_counter(message: Message) -> int:
    return 1 + len(json.dumps(message, sort_keys=True)) // 24


COUNTERS: dict[str, Callable[[Message], int]] = {
    "estimate": estimate_tokens,
    "json": json_counter,
}


# --------------------------------------------------------------------------------------------
# what a message is, read straight from the dicts (independent of agentrecall.messages)


def _blocks(message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def call_ids(message: Message) -> set[str]:
    ids = {c["id"] for c in message.get("tool_calls") or []}
    ids |= {c["id"] for c in message.get("toolCalls") or []}
    return ids | {b["toolUse"]["toolUseId"] for b in _blocks(message) if "toolUse" in b}


def result_ids(message: Message) -> set[str]:
    ids = {message[k] for k in ("tool_call_id", "toolCallId") if k in message}
    return ids | {b["toolResult"]["toolUseId"] for b in _blocks(message) if "toolResult" in b}


def is_result(message: Message) -> bool:
    return message["role"] == "tool" or any("toolResult" in b for b in _blocks(message))


def is_fresh_user_turn(message: Message) -> bool:
    return message["role"] == "user" and not is_result(message)


def is_system(message: Message) -> bool:
    return message["role"] in ("system", "developer")


def key(message: Message) -> str:
    return json.dumps(message, sort_keys=True)


# --------------------------------------------------------------------------------------------
# the rules of the issue, written out as a model


def model_cut(messages: Sequence[Message], start: int) -> list[Message]:
    while start < len(messages) and not is_fresh_user_turn(messages[start]):
        start += 1
    kept = list(messages[start:])
    dropped_calls = set().union(*map(call_ids, messages[:start])) - set().union(
        *map(call_ids, kept)
    )
    return [m for m in kept if not (is_result(m) and result_ids(m) & dropped_calls)]


def model_newest(messages: Sequence[Message], count: int | None) -> list[Message]:
    if count is None or len(messages) <= count:
        return list(messages)
    return model_cut(messages, len(messages) - count)


def model_budget(
    messages: Sequence[Message], budget: int | None, cost: Callable[[Message], int]
) -> list[Message]:
    if budget is None:
        return list(messages)
    system = [m for m in messages if is_system(m)]
    rest = [m for m in messages if not is_system(m)]
    total, start = sum(map(cost, system)), len(rest)
    while start and total + cost(rest[start - 1]) <= budget:
        total += cost(rest[start - 1])
        start -= 1
    return system + (model_cut(rest, start) if start else rest)


# --------------------------------------------------------------------------------------------
# random conversations


class Serial:
    def __init__(self) -> None:
        self.value = 0

    def __call__(self) -> int:
        self.value += 1
        return self.value


def _tool_exchange(draw: st.DrawFn, style: str, serial: Serial) -> tuple[Message, list[Message]]:
    calls = [
        (f"call_{serial()}", draw(st.sampled_from(["search", "weather", "calc"])))
        for _ in range(draw(st.integers(1, 3)))
    ]
    ids = [i for i, _ in calls]
    if style == "openai_tools":
        call: Message = {
            "role": "assistant",
            "content": draw(st.none() | TEXT.map(lambda t: f"{t} #{serial()}")),
            "tool_calls": [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps({"q": draw(TEXT)})},
                }
                for i, n in calls
            ],
        }
        results = [
            {"role": "tool", "tool_call_id": i, "content": json.dumps({"r": draw(TEXT), "id": i})}
            for i in ids
        ]
        return call, results
    if style == "agentlib_tools":
        call = {
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": i, "name": n, "arguments": {"q": draw(TEXT)}} for i, n in calls],
        }
        return call, [
            {"role": "tool", "content": json.dumps({"id": i}), "toolCallId": i} for i in ids
        ]
    blocks: list[dict[str, Any]] = (
        [{"text": f"{draw(TEXT)} #{serial()}"}] if draw(st.booleans()) else []
    )
    blocks += [
        {"toolUse": {"toolUseId": i, "name": n, "input": {"q": draw(TEXT)}}} for i, n in calls
    ]
    result_blocks = [
        {"toolResult": {"toolUseId": i, "status": "success", "content": [{"text": draw(TEXT)}]}}
        for i in ids
    ]
    return {"role": "assistant", "content": blocks}, [{"role": "user", "content": result_blocks}]


def _simple(draw: st.DrawFn, kind: str, serial: Serial) -> Message:
    text = f"{draw(TEXT)} #{serial()}"
    if kind == "user":
        if draw(st.booleans()):
            return {"role": "user", "content": text}
        return {"role": "user", "content": [{"type": "text", "text": text}]}
    if kind == "assistant":
        return {"role": "assistant", "content": text}
    if kind == "system":
        return {"role": draw(st.sampled_from(["system", "developer"])), "content": text}
    if kind == "strands_user":
        return {"role": "user", "content": [{"text": text}]}
    if kind == "strands_assistant":
        return {"role": "assistant", "content": [{"text": text}]}
    stray = f"stray_{serial()}"  # answers a call this conversation never made
    if draw(st.booleans()):
        return {"role": "tool", "tool_call_id": stray, "content": text}
    result = {"toolUseId": stray, "status": "error", "content": [{"text": text}]}
    return {"role": "user", "content": [{"toolResult": result}]}


def _conversation(draw: st.DrawFn, serial: Serial, max_steps: int) -> list[Message]:
    messages: list[Message] = []
    pending: list[tuple[int, list[Message]]] = []  # (step after which results arrive, results)
    kinds = draw(st.lists(KINDS, min_size=1, max_size=max_steps))
    for step, kind in enumerate(kinds):
        if kind.endswith("_tools"):
            call, results = _tool_exchange(draw, kind, serial)
            messages.append(call)
            pending.append((step + draw(st.sampled_from([0, 0, 1, 1, 2, 3])), results))
        else:
            messages.append(_simple(draw, kind, serial))
        for _, results in [p for p in pending if p[0] <= step]:
            messages += results
        pending = [p for p in pending if p[0] > step]
    answer_all: bool = draw(st.booleans())  # else the conversation ends with calls unanswered
    if pending and answer_all:
        messages += [m for _, results in pending for m in results]
    return messages


@dataclass
class Scenario:
    max_messages: int | None
    max_tokens: int | None
    counter: str
    writes: list[tuple[str, list[Message], int | None]]


@st.composite
def scenarios(draw: st.DrawFn, *, max_writes: int = 4) -> Scenario:
    serial = Serial()
    last: dict[str, list[Message]] = {}
    writes = []
    for _ in range(draw(st.integers(1, max_writes))):
        session = draw(st.sampled_from(["s1", "s2", " s3 "]))
        conversation = _conversation(draw, serial, 20)
        if session in last and draw(st.booleans()):  # an agent hands over the grown history
            conversation = last[session] + conversation
        last[session] = conversation
        writes.append((session, conversation, draw(st.none() | st.integers(1, 16))))
    max_messages = draw(st.none() | st.integers(1, 16))
    counter = draw(st.sampled_from(sorted(COUNTERS)))
    max_tokens = draw(st.none() | st.integers(1, 30) | st.integers(30, 300))
    if draw(st.integers(0, 3)) == 0:  # a budget some suffix of the first history fills exactly
        history = model_newest(non_system(writes[0][1]), max_messages)
        suffix = history[draw(st.integers(0, len(history))) :]
        max_tokens = max(1, sum(map(COUNTERS[counter], suffix)))
    return Scenario(max_messages, max_tokens, counter, writes)


@st.composite
def conversations(draw: st.DrawFn, max_steps: int = 20) -> list[Message]:
    return _conversation(draw, Serial(), max_steps)


def make_buffer(backend: str, request: pytest.FixtureRequest, **options: Any) -> BufferMemory:
    """A new, empty buffer on ``backend``: a new file, or a new table of the test's database."""
    name = uuid.uuid4().hex
    if backend == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        return BufferMemory(dsn=dsn, table=f"t_{name}", **options)
    path: Path | None = request.getfixturevalue("tmp_path") / f"{name}.db"
    return BufferMemory(path=None if backend == "memory" else path, **options)


def non_system(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if not is_system(m)]


# --------------------------------------------------------------------------------------------
# the properties of one read


def check_window(
    window: list[Message],
    written: list[Message],
    *,
    max_messages: int | None,
    limit: int | None,
    max_tokens: int | None,
    cost: Callable[[Message], int],
) -> None:
    history = non_system(written)
    assert max_messages is None or len(window) <= max_messages
    assert limit is None or len(window) <= limit
    if max_tokens is not None:
        assert sum(map(cost, window)) <= max_tokens

    position = {key(m): i for i, m in enumerate(history)}
    assert len(position) == len(history), "the generator makes every message distinct"
    indexes = [position.get(key(m)) for m in window]
    assert None not in indexes, "a read returns written messages only, unchanged"
    assert indexes == sorted(set(indexes)), "in their written order"  # type: ignore[type-var]

    if window != history and window:
        assert is_fresh_user_turn(window[0]), f"a cut read starts with {window[0]}"
        start = indexes[0]
        assert start is not None
        missing = [m for m in history[start:] if key(m) not in {key(w) for w in window}]
        assert all(is_result(m) for m in missing), "after its start a window has no holes"

    every_call = set().union(*map(call_ids, history))
    window_calls = set().union(*map(call_ids, window))
    for message in window:
        orphaned = (result_ids(message) & every_call) - window_calls
        assert not orphaned, f"{message} answers calls {orphaned} not in the window"

    fits = (
        (max_messages is None or len(history) <= max_messages)
        and (limit is None or len(history) <= limit)
        and (max_tokens is None or sum(map(cost, history)) <= max_tokens)
    )
    if fits:
        assert window == history, "nothing needed cutting, so the read is the whole history"


# --------------------------------------------------------------------------------------------
# tests


@BACKENDS
@SETTINGS
@given(scenario=scenarios())
def test_reads_after_any_writes_respect_every_limit_and_the_turn_boundary(
    backend: str, request: pytest.FixtureRequest, scenario: Scenario
) -> None:
    cost = COUNTERS[scenario.counter]
    buffer = make_buffer(
        backend,
        request,
        max_messages=scenario.max_messages,
        max_tokens=scenario.max_tokens,
        token_counter=cost,
    )

    async def run() -> None:
        async with buffer:
            latest: dict[str, list[Message]] = {}
            for session, conversation, limit in scenario.writes:
                await buffer.write(conversation, session)
                latest[session] = conversation
                window = await buffer.read(session, limit=limit)
                check_window(
                    window,
                    conversation,
                    max_messages=scenario.max_messages,
                    limit=limit,
                    max_tokens=scenario.max_tokens,
                    cost=cost,
                )
                stored = model_newest(non_system(conversation), scenario.max_messages)
                expected = model_budget(model_newest(stored, limit), scenario.max_tokens, cost)
                assert window == expected
                for other, written in latest.items():  # other sessions are left alone
                    (entry,) = await buffer.entries(other)
                    assert entry.messages == model_newest(
                        non_system(written), scenario.max_messages
                    )
                    assert entry.metadata.token_count == sum(map(cost, entry.messages))
            assert await buffer.count_sessions() == len(latest)
            assert [e.session_id for e in await buffer.entries()] == list(latest)

    asyncio.run(run())


@BACKENDS
@SETTINGS
@given(
    seed=conversations(),
    max_tokens=st.none() | st.integers(1, 200),
    max_messages=st.none() | st.integers(1, 4),
)
def test_seeded_system_messages_lead_every_read_and_the_rest_fits_what_is_left(
    backend: str,
    request: pytest.FixtureRequest,
    seed: list[Message],
    max_tokens: int | None,
    max_messages: int | None,
) -> None:
    buffer = make_buffer(
        backend,
        request,
        max_messages=max_messages,
        max_tokens=max_tokens,
        default_store={"seed": seed},
    )

    async def run() -> list[Message]:
        async with buffer:
            return await buffer.read("seed")

    window = asyncio.run(run())
    if max_tokens is None:
        assert window == seed, "a seed is read as given: not trimmed, system messages kept"
        return
    system = [m for m in seed if is_system(m)]
    assert window[: len(system)] == system, "all seeded system messages, first, in order"
    rest = window[len(system) :]
    room = max(max_tokens - sum(map(estimate_tokens, system)), 0)
    check_window(rest, seed, max_messages=None, limit=None, max_tokens=room, cost=estimate_tokens)


def vandalize(value: Any) -> None:
    """Change every container inside ``value`` in place, and grow it."""
    if isinstance(value, dict):
        for name in list(value):
            if isinstance(value[name], (dict, list)):
                vandalize(value[name])
            else:
                value[name] = "vandalized"
        value["vandalized"] = True
    elif isinstance(value, list):
        for child in value:
            vandalize(child)
        value.append({"role": "user", "content": "vandalized"})


@BACKENDS
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(conversation=conversations(), limit=st.none() | st.integers(1, 12))
def test_reads_entries_and_writes_are_copies(
    backend: str, request: pytest.FixtureRequest, conversation: list[Message], limit: int | None
) -> None:
    buffer = make_buffer(backend, request, max_messages=None)
    written = copy.deepcopy(conversation)
    tags = {"topic": "copies"}

    async def run() -> None:
        async with buffer:
            await buffer.write(written, "s", agent_name="agent", tags=tags)
            vandalize(written)
            vandalize(tags)
            first = await buffer.read("s", limit=limit)
            assert first == model_newest(non_system(conversation), limit)
            kept = copy.deepcopy(first)
            vandalize(first)
            assert await buffer.read("s", limit=limit) == kept

            (entry,) = await buffer.entries("s")
            assert entry.messages == non_system(conversation)
            assert entry.metadata.tags == {"topic": "copies"}
            vandalize(entry.messages)
            vandalize(entry.metadata.tags)
            (again,) = await buffer.entries("s")
            assert again.messages == non_system(conversation)
            assert again.metadata.tags == {"topic": "copies"}
            assert await buffer.read("s", limit=limit) == kept

    asyncio.run(run())
