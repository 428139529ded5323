"""The LoCoMo recall task: how often a store's search returns the turns that answer a question.

LoCoMo (Maharana et al., ACL 2024, arXiv 2402.17753; CC BY-NC 4.0) is a set of long
conversations with questions whose evidence is a list of dialogue-turn ids. For each
conversation the task adds every turn to a fresh, empty store as ``"<speaker>: <text>"``,
searches with each question, and scores the top 10 against the evidence (binary relevance). It
also times each search (``ms/query``: milliseconds, the query's embedding included when the
store embeds).

Loading and scoring are plain functions; only :func:`evaluate` touches a store.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrecall.stores.base import MemoryStore
from agentrecall.types import JsonObject

TOP = 10
METRICS = ("R@5", "R@10", "hit@1", "hit@5", "hit@10", "MRR@10", "nDCG@10")
TIME = "ms/query"
"""The mean time of one search, in milliseconds, when the results carry it."""
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_SESSION = re.compile(r"session_(\d+)")
_WHEN = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*0*(\d+)")
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES.split(), start=1)}


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn, as a memory to add."""

    dia_id: str
    speaker: str
    session: int
    date: str
    text: str

    def content(self) -> str:
        """Return the memory text, ``"<speaker>: <text>"``."""
        return f"{self.speaker}: {self.text}"

    def metadata(self) -> JsonObject:
        """Return the memory metadata: dia_id, speaker, session number, session date."""
        return {
            "dia_id": self.dia_id,
            "speaker": self.speaker,
            "session": self.session,
            "date": self.date,
        }


@dataclass(frozen=True, slots=True)
class Question:
    """One question with the ids of the turns that answer it."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its turns in chronological order and its answerable questions."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def parse_date(text: str) -> str:
    """Return a session date such as ``"1:56 pm on 8 May, 2023"`` in ISO 8601 (no zone).

    Raises:
        ValueError: ``text`` is not in that form.
    """
    match = _WHEN.fullmatch(text.strip())
    if match is None or match[5].lower() not in _MONTHS:
        raise ValueError(f"not a LoCoMo session date: {text!r}")
    hour = int(match[1]) % 12 + (12 if match[3].lower() == "pm" else 0)
    moment = dt.datetime(
        int(match[6]), _MONTHS[match[5].lower()], int(match[4]), hour, int(match[2])
    )
    return moment.isoformat()


def repair_evidence(raw: Iterable[str], known: frozenset[str]) -> tuple[str, ...]:
    """Return the distinct turn ids of a question's evidence, in order, repaired.

    The file holds a few malformed entries: two ids in one string (``"D8:6; D9:17"``), a
    stray colon (``"D:11:26"``), a leading zero (``"D30:05"``). Every ``D<session>:<turn>`` of a
    string is read with its numbers normalised; ids naming no turn of ``known`` are dropped.
    """
    found: dict[str, None] = {}
    for entry in raw:
        for session, number in _EVIDENCE.findall(str(entry)):
            dia_id = f"D{int(session)}:{int(number)}"
            if dia_id in known:
                found[dia_id] = None
    return tuple(found)


def parse(data: Sequence[Mapping[str, Any]]) -> list[Conversation]:
    """Return the conversations of a parsed LoCoMo file; questions without evidence are left out.

    Raises:
        ValueError: the data is not shaped like a LoCoMo file.
    """
    conversations = []
    for number, raw in enumerate(data):
        try:
            conversations.append(_conversation(raw))
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            problem = f"missing {error}" if isinstance(error, KeyError) else str(error)
            raise ValueError(
                f"not a LoCoMo file: conversation {number} is malformed: {problem}"
            ) from error
    return conversations


def load(path: str | Path) -> list[Conversation]:
    """Read and :func:`parse` a LoCoMo JSON file.

    Raises:
        ValueError: the file cannot be read or is not a LoCoMo file.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read LoCoMo file '{path}': {error}") from error
    if not isinstance(data, list):
        raise ValueError(f"'{path}' is not a LoCoMo file: expected a list of conversations")
    try:
        return parse(data)
    except ValueError as error:
        raise ValueError(f"'{path}' is {error}") from error


def _conversation(raw: Mapping[str, Any]) -> Conversation:
    talk = raw["conversation"]
    sessions = sorted(int(m[1]) for key in talk if (m := _SESSION.fullmatch(key)))
    turns = []
    for session in sessions:
        date = parse_date(talk[f"session_{session}_date_time"])
        for turn in talk[f"session_{session}"]:
            fields = [turn["dia_id"], turn["speaker"], turn["text"]]
            if not all(isinstance(field, str) for field in fields):
                raise TypeError(
                    f"a turn of session {session} has a dia_id, speaker or text "
                    "that is not a string"
                )
            turns.append(Turn(fields[0], fields[1], session, date, fields[2]))
    known = frozenset(turn.dia_id for turn in turns)
    questions = []
    for item in raw.get("qa", []):
        evidence = repair_evidence(item.get("evidence", []), known)
        if evidence:
            category = item["category"]
            if isinstance(category, bool) or not isinstance(category, (int, str)):
                raise TypeError(f"the category of question {item['question']!r} is {category!r}")
            questions.append(Question(str(item["question"]), int(category), evidence))
    return Conversation(str(raw["sample_id"]), tuple(turns), tuple(questions))


def score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """Return the metrics of one question: ``ranked`` turn ids, best first, against ``evidence``."""
    relevant = set(evidence)
    top = list(dict.fromkeys(ranked))[:TOP]
    ranks = [rank for rank, dia_id in enumerate(top, 1) if dia_id in relevant]
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(relevant), TOP) + 1))
    return {
        "R@5": sum(rank <= 5 for rank in ranks) / len(relevant),
        "R@10": len(ranks) / len(relevant),
        "hit@1": float(any(rank <= 1 for rank in ranks)),
        "hit@5": float(any(rank <= 5 for rank in ranks)),
        "hit@10": float(bool(ranks)),
        "MRR@10": 1 / ranks[0] if ranks else 0.0,
        "nDCG@10": sum(1 / math.log2(rank + 1) for rank in ranks) / ideal,
    }


@dataclass(frozen=True, slots=True)
class Row:
    """Mean metrics over a group of questions."""

    group: str
    questions: int
    means: dict[str, float]


def summarize(results: Sequence[tuple[int, dict[str, float]]]) -> list[Row]:
    """Return mean metrics overall, overall without category 5, and per category.

    Args:
        results: per question, its category and its :func:`score`, with :data:`TIME` too when
            the search was timed (then averaged as well).
    """
    groups: list[tuple[str, list[dict[str, float]]]] = [
        ("overall", [s for _, s in results]),
        ("overall w/o adversarial", [s for c, s in results if c != 5]),
    ]
    for category in sorted({c for c, _ in results}):
        name = f"{category} {CATEGORIES.get(category, '?')}"
        groups.append((name, [s for c, s in results if c == category]))
    rows = []
    for name, scores in groups:
        if scores:
            keys = [*METRICS, TIME] if all(TIME in s for s in scores) else METRICS
            rows.append(
                Row(name, len(scores), {m: sum(s[m] for s in scores) / len(scores) for m in keys})
            )
    return rows


def table(rows: Sequence[Row]) -> str:
    """Return the rows as a Markdown table (with :data:`TIME` when every row has it)."""
    timed = bool(rows) and all(TIME in row.means for row in rows)
    columns = [*METRICS, TIME] if timed else list(METRICS)
    lines = [
        "| group | n | " + " | ".join(columns) + " |",
        "|---|---:|" + "---:|" * len(columns),
    ]
    for row in rows:
        values = " | ".join(f"{row.means[m]:.3f}" for m in columns)
        lines.append(f"| {row.group} | {row.questions} | {values} |")
    return "\n".join(lines)


async def evaluate(
    conversations: Sequence[Conversation], open_store: Callable[[Path], MemoryStore]
) -> list[Row]:
    """Run the task and return :func:`summarize` of the results.

    Each conversation gets a fresh store, made by ``open_store`` in a new empty directory and
    closed (``aclose``, when it has one) after its questions.
    """
    results: list[tuple[int, dict[str, float]]] = []
    for conversation in conversations:
        with tempfile.TemporaryDirectory(prefix="agentrecall-locomo-") as directory:
            store = open_store(Path(directory))
            try:
                results.extend(await _run_conversation(store, conversation))
            finally:
                close = getattr(store, "aclose", None)
                if close is not None:
                    await close()
    return summarize(results)


async def _run_conversation(
    store: MemoryStore, conversation: Conversation
) -> list[tuple[int, dict[str, float]]]:
    items = [(turn.content(), turn.metadata()) for turn in conversation.turns]
    # A store keeps one memory for turns of the same content (a speaker saying "Thanks!"
    # twice): that memory returns every one of them.
    same: dict[str, list[str]] = {}
    for turn in conversation.turns:
        same.setdefault(turn.content().strip(), []).append(turn.dia_id)
    add_many = getattr(store, "add_many", None)
    if add_many is not None:
        await add_many(items)
    else:
        for content, metadata in items:
            await store.add(content, metadata)
    results = []
    for question in conversation.questions:
        began = time.perf_counter()
        hits = await store.search(question.text, {"max_search_results": TOP})
        elapsed = time.perf_counter() - began
        ranked = [
            dia_id
            for hit in hits
            for dia_id in same.get(hit.content.strip(), [str((hit.metadata or {}).get("dia_id"))])
        ]
        metrics = score(ranked, question.evidence)
        metrics[TIME] = elapsed * 1000
        results.append((question.category, metrics))
    return results
