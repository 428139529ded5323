"""The reconcile prompt and the strict reading of its answer. No I/O here.

The model sees the new facts of one extraction batch, numbered from 1, each followed by the
existing memories nearest to it, numbered and with their ids, and answers one JSON object::

    {"decisions": [{"fact": 1, "action": "add"},
                   {"fact": 2, "action": "supersede", "ids": ["<id>", ...]},
                   {"fact": 3, "action": "duplicate", "id": "<id>"}]}

Each decision may carry ``"valid_from": "YYYY-MM-DD"``. Whatever cannot be followed exactly
(the answer is no such object, a fact has no decision or several, an id is not among that
fact's candidates, an action is unknown) makes that fact an ``add``: a fact is never lost to
a bad answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentrecall.extraction.prompt import json_values, world_time

Action = Literal["add", "supersede", "duplicate"]

RECONCILE_SYSTEM_PROMPT = """\
You keep the long-term memory of an AI assistant up to date. New facts about the user were \
just taken from a conversation. Under each new fact you see the stored memories most like it, \
each with its id. Decide for every new fact what to do with it:

- "add": the fact is new information. Use this when no memory shown says the same thing or \
something it replaces, and whenever you are unsure.
- "supersede": the fact replaces one or more memories shown under it, because they are no \
longer true or it corrects them (the user moved, changed jobs, changed a preference). Give \
the ids of every memory it replaces. The replaced memories are kept in the history, so only \
name the ones the new fact makes out of date, never ones that stay true beside it.
- "duplicate": a memory shown under it already says the same thing, in any words, and the new \
fact adds nothing to it. Give that memory's id. Nothing is stored.

Only use ids shown under that same fact. If the new fact says when it became true, add \
"valid_from": "YYYY-MM-DD".

Answer with one JSON object and nothing else, holding one decision per new fact:
{"decisions": [{"fact": 1, "action": "add"}, \
{"fact": 2, "action": "supersede", "ids": ["<id>"]}, \
{"fact": 3, "action": "duplicate", "id": "<id>"}]}"""
"""The system prompt of every reconcile call."""

REQUEST_INTRO = "New facts, each with the stored memories nearest to it:\n"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A stored memory shown to the model as one a new fact may replace or repeat.

    Attributes:
        id: the memory's id.
        content: its text.
    """

    id: str
    content: str


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one new fact.

    Attributes:
        action: ``"add"``, ``"supersede"`` (retire ``ids`` in its favour) or ``"duplicate"``
            (``ids`` holds the one memory that already says it; nothing is written).
        ids: the memories the action names, empty for ``"add"``.
        valid_from: when the fact became true, as the answer gave it (checked), or ``None``.
        problem: why the answer was not followed and the fact is added instead, for the log;
            ``None`` when it was followed (or not asked).
    """

    action: Action
    ids: tuple[str, ...] = ()
    valid_from: str | None = None
    problem: str | None = None


ADD = Decision("add")


def render_request(facts: Sequence[tuple[str, Sequence[Candidate]]]) -> str:
    """Return the user message: each fact, numbered from 1, then its numbered candidates."""
    lines = [REQUEST_INTRO]
    for number, (fact, candidates) in enumerate(facts, 1):
        lines.append(f"Fact {number}: {fact}")
        lines.append("Stored memories:")
        lines += [
            f"  {rank}. [id: {candidate.id}] {candidate.content}"
            for rank, candidate in enumerate(candidates, 1)
        ]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def read_decisions(answer: str, candidates: Sequence[Sequence[Candidate]]) -> list[Decision]:
    """Read one decision per fact, index for index with ``candidates`` (each fact's own).

    The first JSON object of ``answer`` with a ``"decisions"`` list is read (prose or a code
    fence around it is ignored). Each fact gets its decision when exactly one well-formed
    decision names it (or several identical ones) and every id it gives is among that fact's
    candidates; otherwise ``ADD`` with a ``problem``. Decisions for facts that do not exist
    are ignored.
    """
    decisions = _decision_list(answer)
    if decisions is None:
        problem = 'the answer holds no JSON object with a "decisions" list'
        return [Decision("add", problem=problem) for _ in candidates]
    named: dict[int, list[Mapping[str, Any]]] = {}
    for item in decisions:
        fact = item.get("fact") if isinstance(item, Mapping) else None
        if isinstance(fact, int) and not isinstance(fact, bool) and 1 <= fact <= len(candidates):
            named.setdefault(fact - 1, []).append(item)
    return [_decision(named.get(index, []), shown) for index, shown in enumerate(candidates)]


def _decision_list(answer: str) -> list[Any] | None:
    for value in json_values(answer, "{")[0]:
        if isinstance(value, dict) and isinstance(value.get("decisions"), list):
            return list(value["decisions"])
    return None


def _decision(items: list[Mapping[str, Any]], shown: Sequence[Candidate]) -> Decision:
    if not items:
        return Decision("add", problem="the answer has no decision for it")
    if any(item != items[0] for item in items[1:]):
        return Decision("add", problem="the answer has conflicting decisions for it")
    item = items[0]
    action = item.get("action")
    valid_from = world_time(item.get("valid_from"))
    known = {candidate.id for candidate in shown}
    if action == "add":
        return Decision("add", valid_from=valid_from)
    if action == "supersede":
        ids = item.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            return Decision("add", problem=f"supersede without a list of ids: {ids!r:.100}")
        unknown = [i for i in ids if i not in known]
        if unknown:
            return Decision("add", problem=f"supersede names ids not shown: {unknown!r:.200}")
        return Decision("supersede", tuple(dict.fromkeys(ids)), valid_from)
    if action == "duplicate":
        duplicate = item.get("id")
        if not isinstance(duplicate, str) or duplicate not in known:
            return Decision("add", problem=f"duplicate names an id not shown: {duplicate!r:.100}")
        return Decision("duplicate", (duplicate,), valid_from)
    return Decision("add", problem=f"unknown action {action!r:.50}")
