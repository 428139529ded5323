"""The deterministic model of ``bench_changes.py``: extractor and reconciler from the truth.

One :class:`TimelineOracle` serves one timeline, behind a
:class:`~agentrecall.testing.ScriptedChatModel` (which records every call). It answers the
two prompts of extraction by reading them as a model would, and knowing the answers:

* the **extraction** prompt (its system prompt ends with the extractor's output instruction):
  each ``user:`` line of the transcript that states a fact gives that fact's memory text, from
  the answer key of the sessions heard so far (:meth:`TimelineOracle.hear`);
* the **reconcile** prompt (numbered new facts, each with the stored memories shown under it
  as ``[id: ...] text``): per fact, ``duplicate`` of a memory shown that states the same value
  of the same attribute, else ``supersede`` of every memory shown that states another value
  of it, else ``add``: what a perfect model answers.

With ``garbage`` above 0, that share of the calls (drawn from a seeded generator) gets
garbage instead: for extraction an answer without a JSON array or a failed call (the
coordinator retries the batch later); for reconcile prose, cut-off JSON, ids never shown, an
unknown action (``delete``), facts numbered wrongly, a failed call, or a ``supersede`` of
every memory shown. None of these may lose a fact. A well-formed ``duplicate`` naming a
memory that says something else is not in the mix: it is a wrong answer the reconciler must
trust (nothing is written for a duplicate), not an unreadable one.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from timelines import Fact, Session, Timeline

from agentrecall.errors import ModelError
from agentrecall.extraction.prompt import OUTPUT_INSTRUCTION
from agentrecall.messages import Message
from agentrecall.models import ChatModel
from agentrecall.testing import ModelCall, ScriptedChatModel

_USER_LINE = re.compile(r"^user: (.*)$", re.MULTILINE)
_FACT_LINE = re.compile(r"^Fact (\d+): (.*)$")
_MEMORY_LINE = re.compile(r"^\s+\d+\. \[id: ([^\]]+)\] (.*)$")


@dataclass
class Tally:
    """What a model was asked and answered, for the report.

    Attributes:
        extract_calls: extraction calls.
        reconcile_calls: reconcile calls.
        garbage: calls answered with garbage (or failed on purpose).
        extracted: every fact an extraction answer gave, in order (repeats included).
        decisions: how many facts got each action from truthful reconcile answers.
    """

    extract_calls: int = 0
    reconcile_calls: int = 0
    garbage: int = 0
    extracted: list[Fact] = field(default_factory=list)
    decisions: dict[str, int] = field(default_factory=dict)


def is_reconcile(system: str | None) -> bool:
    """Whether a call with this system prompt is a reconcile call (else an extraction)."""
    return system is not None and '"decisions"' in system


class CountedModel:
    """A chat model that counts the extraction and reconcile calls it passes on."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self.extract_calls = 0
        self.reconcile_calls = 0

    async def complete(self, messages: Sequence[Message], *, system: str | None = None) -> str:
        if is_reconcile(system):
            self.reconcile_calls += 1
        else:
            self.extract_calls += 1
        return await self.model.complete(messages, system=system)


class TimelineOracle:
    """Answers a timeline's extraction and reconcile prompts from its truth (see the module)."""

    def __init__(self, timeline: Timeline, *, garbage: float = 0.0, seed: int = 0) -> None:
        self.timeline = timeline
        self.garbage = garbage
        self.rng = random.Random(f"garbage:{seed}:{timeline.user_id}")
        self.key: dict[str, Fact] = {}
        self.tally = Tally()
        self.last_extraction_failed = False

    def model(self) -> ScriptedChatModel:
        """A chat model answering every call through this oracle."""
        return ScriptedChatModel(default=self)

    def hear(self, session: Session) -> None:
        """Learn the answer key of a session about to be recorded (newer wins)."""
        self.key.update(session.facts)

    def __call__(self, call: ModelCall) -> str:
        system = call.system or ""
        text = str(call.messages[-1]["content"]) if call.messages else ""
        if OUTPUT_INSTRUCTION in system:
            return self._extract(text)
        if is_reconcile(system):
            return self._reconcile(text)
        raise AssertionError(f"unexpected model call, system prompt {system[:80]!r}")

    def _garbled(self) -> bool:
        if self.garbage and self.rng.random() < self.garbage:
            self.tally.garbage += 1
            return True
        return False

    def _extract(self, transcript: str) -> str:
        self.tally.extract_calls += 1
        self.last_extraction_failed = self._garbled()
        if self.last_extraction_failed:
            if self.rng.random() < 0.5:
                raise ModelError("the model server answered 503")
            return "I am sorry, I cannot help with that request."
        facts = [self.key[line] for line in _USER_LINE.findall(transcript) if line in self.key]
        self.tally.extracted += facts
        return json.dumps([{"content": fact.content} for fact in facts])

    def _reconcile(self, request: str) -> str:
        self.tally.reconcile_calls += 1
        shown = read_request(request)
        if self._garbled():
            return self._garbage(shown)
        decisions = [self._decide(number, fact, memories) for number, fact, memories in shown]
        for decision in decisions:
            action = decision["action"]
            self.tally.decisions[action] = self.tally.decisions.get(action, 0) + 1
        return json.dumps({"decisions": decisions})

    def _decide(self, number: int, text: str, memories: list[tuple[str, str]]) -> dict[str, object]:
        fact = self.timeline.contents[text]
        same = [(i, self.timeline.contents.get(content)) for i, content in memories]
        alike = [(i, known) for i, known in same if known and known.attribute == fact.attribute]
        for memory_id, known in alike:
            if known.value == fact.value:
                return {"fact": number, "action": "duplicate", "id": memory_id}
        if alike:
            return {"fact": number, "action": "supersede", "ids": [i for i, _ in alike]}
        return {"fact": number, "action": "add"}

    def _garbage(self, shown: list[tuple[int, str, list[tuple[str, str]]]]) -> str:
        kind = self.rng.randrange(7)
        numbers = [number for number, _, _ in shown]
        if kind == 0:
            return "Fact 1 looks new to me, and the others are probably fine."
        if kind == 1:
            return '{"decisions": [{"fact": 1, "action": "supers'
        if kind == 2:
            unknown = {"fact": 1, "action": "supersede", "ids": ["no-such-memory"]}
            return json.dumps({"decisions": [unknown | {"fact": n} for n in numbers]})
        if kind == 3:
            return json.dumps({"decisions": [{"fact": n, "action": "delete"} for n in numbers]})
        if kind == 4:
            return json.dumps({"decisions": [{"fact": n + 100, "action": "add"} for n in numbers]})
        if kind == 5:
            raise ModelError("the model server answered 500")
        everything = [
            {"fact": n, "action": "supersede", "ids": [i for i, _ in memories]}
            for n, _, memories in shown
            if memories
        ]
        return json.dumps({"decisions": everything})


def read_request(request: str) -> list[tuple[int, str, list[tuple[str, str]]]]:
    """Read a reconcile request: ``(number, fact text, [(memory id, text), ...])`` per fact."""
    shown: list[tuple[int, str, list[tuple[str, str]]]] = []
    for line in request.splitlines():
        if fact := _FACT_LINE.match(line):
            shown.append((int(fact.group(1)), fact.group(2), []))
        elif (memory := _MEMORY_LINE.match(line)) and shown:
            shown[-1][2].append((memory.group(1), memory.group(2)))
    return shown
