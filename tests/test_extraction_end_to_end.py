"""A whole agent loop: chat and extraction over real HTTP, facts into a JsonFileStore."""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from agentrecall.extraction import (
    ExtractionConfig,
    ExtractionCoordinator,
    IntervalTrigger,
    ModelExtractor,
    resolve_extraction,
)
from agentrecall.extraction.prompt import OUTPUT_INSTRUCTION
from agentrecall.models import OpenAICompatibleModel
from agentrecall.stores import JsonFileStore
from agentrecall.testing import ChatServer, ReceivedRequest, Reply

PROMPTS = [
    "Hi! Please remember that my name is Ada.",
    "Please remember that my favourite colour is teal.",
    "What's the weather like on Mars?",
    "Please remember that my dog is called Pixel.",
    "Please remember that my home town is Lyon.",
    "Tell me a joke.",
    "Please remember that my job is bridge engineer.",
    "Please remember that my tea is oolong.",
    "Please remember that my bike is a red tandem.",
    "Thanks, that's all for now.",
    "Please remember that my birthday is on 3 March.",
    "Please remember that my editor is Helix.",
]
FACT = re.compile(r"^user: .*remember that my (.+?) (?:is called|is) (.+?)\.$", re.MULTILINE)


class ModelServer:
    """Answers chat turns politely and extraction requests with the facts in the transcript.

    The first ``failures`` extraction requests get a 500 instead.
    """

    def __init__(self, failures: int) -> None:
        self.failures_left = failures
        self.failed = 0
        self.extracted: list[list[str]] = []  # the facts of each answered extraction request
        self._lock = threading.Lock()

    def __call__(self, request: ReceivedRequest) -> Reply | str:
        if request.system is None or OUTPUT_INSTRUCTION not in request.system:
            return f"Sure. ({len(request.messages)} messages so far)"
        with self._lock:
            if self.failures_left:
                self.failures_left -= 1
                self.failed += 1
                return Reply.error(500, "the model server is restarting")
            transcript = request.last_user_text or ""
            facts = [f"User's {thing} is {value}" for thing, value in FACT.findall(transcript)]
            self.extracted.append(facts)
        return "Here are the facts:\n" + json.dumps([{"content": fact} for fact in facts])


async def run_agent(model: OpenAICompatibleModel, coordinator: ExtractionCoordinator) -> None:
    history: list[dict[str, Any]] = []
    for prompt in PROMPTS:
        ask = {"role": "user", "content": prompt}
        history.append(ask)
        coordinator.record([ask])
        reply = {"role": "assistant", "content": await model.complete(history, system="Be kind.")}
        history.append(reply)
        coordinator.record([reply])
        coordinator.end_turn()
    await coordinator.flush()


@pytest.mark.parametrize("max_retries", [0, 2], ids=["coordinator-retries", "client-retries"])
async def test_facts_land_once_each_despite_two_server_failures(
    tmp_path: Path, max_retries: int, caplog: pytest.LogCaptureFixture
) -> None:
    store = JsonFileStore(
        name="facts",
        path=tmp_path / "facts.json",
        extraction=ExtractionConfig(trigger=IntervalTrigger(3)),
    )
    resolved = resolve_extraction(store.extraction, store)
    assert resolved is not None and isinstance(resolved.extractor, ModelExtractor)
    responder = ModelServer(failures=2)
    with ChatServer(responder=responder) as server, caplog.at_level(logging.WARNING):
        async with OpenAICompatibleModel(
            server.base_url, "agent-model", max_retries=max_retries, retry_delay=0.001
        ) as model:
            coordinator = ExtractionCoordinator([(store, resolved)], default_model=model)
            await run_agent(model, coordinator)

    expected = sorted(
        [
            "User's name is Ada",
            "User's favourite colour is teal",
            "User's dog is Pixel",
            "User's home town is Lyon",
            "User's job is bridge engineer",
            "User's tea is oolong",
            "User's bike is a red tandem",
            "User's birthday is on 3 March",
            "User's editor is Helix",
        ]
    )
    stored = sorted(record.content for record in await store.list())
    assert stored == expected
    answered = [fact for facts in responder.extracted for fact in facts]
    assert sorted(answered) == expected  # no fact was extracted twice
    assert responder.failed == 2
    coordinator_failures = [r for r in caplog.records if r.name.endswith("coordinator")]
    assert len(coordinator_failures) == (2 if max_retries == 0 else 0)
