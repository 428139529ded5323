"""Benchmark: facts that change, through extraction that reconciles, against add-only extraction.

Seeded user timelines (``timelines.py``: moves, jobs, partners, preferences that flip and flip
back, facts restated in other words; 1,000 by default) are driven through the real path: per
user a :class:`~agentrecall.MemoryManager` over a scope view of one shared store, its store's
extraction a :class:`~agentrecall.extraction.ModelExtractor` with reconcile on or off, the
conversation recorded turn by turn and flushed at the end of each session, with the store's
clock (:class:`~agentrecall.testing.ManualClock`) set to the session's moment. The sessions
of all users are played in time order. The model is the deterministic
:class:`~changes_model.TimelineOracle` (extractor and reconciler that answer from the
timeline's truth), or a real one (``--model-url``). Three runs, each on a fresh store:

* ``reconcile``: the truthful model, reconcile on;
* ``add-only``: the same model, reconcile off (extraction as it was before reconcile existed);
* ``garbage``: reconcile on, the model answering garbage to 20% of its calls (see
  ``changes_model.py``; extraction garbage makes the coordinator retry the batch later).

What is reported, per run:

* **current-fact P@1**: at the end, for every attribute of every user, the top hit of the
  user's scope for its question ("Where does Ada live now?") names the true current value;
* **as_of correct**: for every change of every attribute, the same question searched
  ``as_of`` a moment between that change and the next (a day after the last change) names the
  value current then (not for ``garbage``, whose retries move the moments of changes);
* **facts lost**: facts an extraction answer gave whose value no memory of the user's scope,
  current or retired, names (must be 0);
* **model calls per batch**: extraction and reconcile calls per session flush that extracted
  facts (reconcile asks nothing when no fact has a stored memory near it, as in a user's first
  session, or when every fact's text is already current).

And the cost (``changes_latency.py``): default and ``as_of`` search over ``--latency-size``
memories (1M by default) with 10% of them retired, each against the same default search by
the code of ``--baseline`` (a git ref; by default ``349120e``, the last commit before facts
could change) on the same memories all current.

Run: ``.venv/bin/python benchmarks/bench_changes.py`` (or ``make bench``; about 10 minutes
here). Writes ``benchmarks/results/changes.md`` and ``changes.json`` and prints the table.
``--timelines``, ``--latency-size 0`` (skip the cost), ``--store postgres``
(``PostgresStore`` on the empty database of ``AGENTRECALL_BENCH_POSTGRES_DSN``, or a
throwaway server), and, to
measure a real model's decisions on the same timelines, ``--model-url URL --model NAME``
(any OpenAI-compatible endpoint; key in ``AGENTRECALL_BENCH_API_KEY``; not run by ``make``
or CI; use ``--timelines 50`` or so: two calls per session).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import platform
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from changes_latency import measure
from changes_model import CountedModel, TimelineOracle
from timelines import BASE, Timeline, mentions, timelines
from timing import load

from agentrecall import MemoryManager, PostgresStore, SQLiteStore
from agentrecall.extraction import ExtractionConfig, ModelExtractor
from agentrecall.models import ChatModel, OpenAICompatibleModel
from agentrecall.testing import ManualClock
from agentrecall.testing.postgres import TemporaryPostgres

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "changes.md"
TIMELINES = 1_000
GARBAGE = 0.2
AFTER_LAST = timedelta(days=1)
"""How long after an attribute's last change its last ``as_of`` question is asked."""
TOP1 = {"max_search_results": 1}


class _Never:
    """A trigger that never fires: each session is saved by the ``flush`` that ends it."""

    def fires(self, turn: int) -> bool:
        return False


@dataclass(frozen=True)
class Batch:
    """The model calls of one flush, and the facts its extraction answers gave (oracle only)."""

    extract_calls: int
    reconcile_calls: int
    facts: int


@dataclass(frozen=True)
class Run:
    """One run's settings."""

    label: str
    reconcile: bool
    garbage: float = 0.0
    as_of: bool = True


RUNS = (
    Run("reconcile", reconcile=True),
    Run("add-only", reconcile=False),
    Run("garbage", reconcile=True, garbage=GARBAGE, as_of=False),
)


class _User:
    """One timeline's agent: a manager over the user's scope view, its model and oracle."""

    def __init__(
        self, timeline: Timeline, store: Any, run: Run, seed: int, model: ChatModel | None
    ) -> None:
        self.timeline = timeline
        self.oracle = TimelineOracle(timeline, garbage=run.garbage, seed=seed)
        self.oracle_answers = model is None
        self.model = CountedModel(model if model is not None else self.oracle.model())
        self.view = store.scope(user_id=timeline.user_id)
        self.view.extraction = ExtractionConfig(
            trigger=_Never(), extractor=ModelExtractor(self.model), reconcile=run.reconcile
        )
        self.manager = MemoryManager([self.view], search_tool=False, injection=False)
        self.batches: list[Batch] = []  # one per flush

    async def session(self, index: int) -> None:
        session = self.timeline.sessions[index]
        self.oracle.hear(session)
        for said, answer in session.turns:
            self.manager.record([{"role": "user", "content": said}])
            self.manager.record([{"role": "assistant", "content": answer}])
            self.manager.end_turn()
        await self.flush(len(session.facts))

    async def flush(self, stated: int = 0) -> None:
        """Flush; a real model's batch counts the facts stated, the oracle's those it gave."""
        calls = self.model.extract_calls, self.model.reconcile_calls
        given = len(self.oracle.tally.extracted)
        await self.manager.flush()
        self.batches.append(
            Batch(
                self.model.extract_calls - calls[0],
                self.model.reconcile_calls - calls[1],
                len(self.oracle.tally.extracted) - given if self.oracle_answers else stated,
            )
        )

    async def finish(self) -> None:
        """Flush until no extraction is left failed (garbage makes the coordinator retry).

        A real model's failures are not known here: one more flush retries what is left.
        """
        if not self.oracle_answers:
            await self.flush()
        while self.oracle.last_extraction_failed:
            await self.flush()


class _Warnings(logging.Handler):
    """Counts the warnings agentrecall logs, and keeps them off the benchmark's output."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        self.first = self.first or record.getMessage()[:300]


@contextmanager
def _counted_warnings() -> Iterator[_Warnings]:
    logger = logging.getLogger("agentrecall")
    handler = _Warnings()
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


async def drive(
    timelines: Sequence[Timeline], store: Any, run: Run, seed: int, model: ChatModel | None
) -> dict[str, Any]:
    """Play every session of ``timelines`` in time order into ``store``; return the figures.

    The warnings agentrecall logs meanwhile (answers not followed, batches retried) are
    counted, not printed.
    """
    with _counted_warnings() as warnings:
        figures = await _drive(timelines, store, run, seed, model)
    figures["warnings"] = warnings.count
    figures["first_warning"] = warnings.first
    return figures


async def _drive(
    timelines: Sequence[Timeline], store: Any, run: Run, seed: int, model: ChatModel | None
) -> dict[str, Any]:
    began = time.perf_counter()
    users = {t.user_id: _User(t, store, run, seed, model) for t in timelines}
    order = sorted(
        (session.moment, t.user_id, index)
        for t in timelines
        for index, session in enumerate(t.sessions)
    )
    with ManualClock(BASE) as clock:
        for moment, user_id, index in order:
            clock.advance(max(moment - clock.now(), timedelta(0)))
            await users[user_id].session(index)
        clock.advance(AFTER_LAST)
        for user in users.values():
            await user.finish()
        played = time.perf_counter() - began
        figures = await _score(list(users.values()), run, model is None)
    figures["seconds_playing"] = played
    return figures


async def _score(users: list[_User], run: Run, oracle: bool) -> dict[str, Any]:
    current = as_of = as_of_asked = lost = extracted = memories = retired = 0
    asked = 0
    for user in users:
        t = user.timeline
        for attribute, value in t.truth.items():
            hits = await user.view.search(t.question(attribute), TOP1)
            current += bool(hits) and mentions(hits[0].content, value)
            asked += 1
        if run.as_of:
            for moment, attribute, value in _as_of_questions(t):
                hits = await user.view.search(t.question(attribute), TOP1, as_of=moment)
                as_of += bool(hits) and mentions(hits[0].content, value)
                as_of_asked += 1
        records = await user.view.list(include_superseded=True)
        memories += len(records)
        retired += sum(record.invalidated_at is not None for record in records)
        # The facts to find: those extraction answers gave, or with a real model (whose
        # answers are not known here) every fact the user stated.
        facts = (
            user.oracle.tally.extracted
            if oracle
            else [fact for session in t.sessions for fact in session.facts.values()]
        )
        extracted += len(facts)
        lost += sum(
            not any(mentions(record.content, fact.value) for record in records) for fact in facts
        )
    batches = [batch for user in users for batch in user.batches if batch.extract_calls]
    with_facts = [batch for batch in batches if batch.facts]
    return {
        "current_asked": asked,
        "current_correct": current,
        "p_at_1": current / asked if asked else None,
        "as_of_asked": as_of_asked,
        "as_of_correct": as_of,
        "as_of_accuracy": as_of / as_of_asked if as_of_asked else None,
        "facts_extracted": extracted,
        "facts_lost": lost,
        "memories": memories,
        "retired": retired,
        "batches": len(batches),
        "batches_with_facts": len(with_facts),
        "extract_calls_per_batch_with_facts": _mean([b.extract_calls for b in with_facts]),
        "reconcile_calls_per_batch_with_facts": _mean([b.reconcile_calls for b in with_facts]),
        "most_reconcile_calls_in_a_batch": max((b.reconcile_calls for b in batches), default=0),
        "model_calls": sum(b.extract_calls + b.reconcile_calls for b in batches),
        "garbage_answers": sum(user.oracle.tally.garbage for user in users),
        "decisions": _sum_decisions(users),
    }


def _mean(values: list[int]) -> float | None:
    return sum(values) / len(values) if values else None


def _sum_decisions(users: list[_User]) -> dict[str, int]:
    total: dict[str, int] = {}
    for user in users:
        for action, count in user.oracle.tally.decisions.items():
            total[action] = total.get(action, 0) + count
    return total


def _as_of_questions(t: Timeline) -> list[tuple[dt.datetime, str, str]]:
    """For each change: a moment between it and the attribute's next change, and the value."""
    by_attribute: dict[str, list[tuple[dt.datetime, str]]] = {}
    for change in t.changes():
        by_attribute.setdefault(change.attribute, []).append((change.moment, change.value))
    questions = []
    for attribute, changes in by_attribute.items():
        for (moment, value), following in zip(changes, [*changes[1:], None], strict=True):
            until = following[0] if following else moment + 2 * AFTER_LAST
            questions.append((moment + (until - moment) / 2, attribute, value))
    return questions


@asynccontextmanager
async def opened(kind: str, where: str, label: str) -> AsyncIterator[Any]:
    """A fresh store for one run: SQLite in directory ``where``, or PostgreSQL at DSN ``where``."""
    if kind == "sqlite":
        store: Any = SQLiteStore(os.path.join(where, f"{label}.db"), fsync=False)
    else:
        store = PostgresStore(where, name=f"bench_changes_{label}")
        if await store.count(include_superseded=True):
            await store.aclose()
            # Each run clears the store after it: never someone's memories.
            raise SystemExit(f"the PostgreSQL database {where} holds memories; give an empty one")
    try:
        yield store
    finally:
        if kind == "postgres":
            await store.clear()
        await store.aclose()


async def run_all(
    count: int, seed: int, kind: str, where: str, model: ChatModel | None, runs: Sequence[Run]
) -> dict[str, Any]:
    """Generate ``count`` timelines and play them through each of ``runs``; return figures."""
    played = list(timelines(count, seed))
    figures: dict[str, Any] = {
        "timelines": count,
        "seed": seed,
        "sessions": sum(len(t.sessions) for t in played),
        "facts_stated": sum(len(s.facts) for t in played for s in t.sessions),
        "changes": sum(len(t.changes()) for t in played),
        "store": "SQLiteStore" if kind == "sqlite" else "PostgresStore",
        "runs": {},
    }
    for run in runs:
        async with opened(kind, where, run.label) as store:
            figures["runs"][run.label] = await drive(played, store, run, seed, model)
    return figures


def _cell(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render(figures: dict[str, Any]) -> str:
    """The report: the runs' table, then the cost's."""
    runs = figures["runs"]
    labels = {
        "reconcile": "reconcile (truthful model)",
        "add-only": "add-only (reconcile off)",
        "garbage": f"reconcile, {GARBAGE:.0%} garbage answers",
    }
    shown = [label for label in labels if label in runs]
    model = figures.get("model") or "the deterministic truthful model (`changes_model.py`)"
    lines = [
        "# Facts that change: reconcile against add-only extraction",
        "",
        f"`benchmarks/bench_changes.py`, {figures['date']}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load {figures['load']}. {figures['timelines']:,} timelines "
        f"(seed {figures['seed']}): {figures['sessions']:,} sessions, "
        f"{figures['facts_stated']:,} facts stated, {figures['changes']:,} changes; "
        f"{figures['store']}; model: {model}.",
        "",
        "| figure | " + " | ".join(labels[label] for label in shown) + " |",
        "|---|" + "---:|" * len(shown),
    ]

    def row(name: str, cell: Any) -> None:
        lines.append(f"| {name} | " + " | ".join(cell(runs[label]) for label in shown) + " |")

    asked = runs[shown[0]]["current_asked"]
    row(f"current-fact P@1 ({asked:,} questions)", lambda r: _cell(r["p_at_1"]))
    row(
        "`as_of` answers correct (one per change)",
        lambda r: _cell(r["as_of_accuracy"]) if r["as_of_asked"] else "–",
    )
    row(
        "facts lost (of those extracted)",
        lambda r: f"{r['facts_lost']} of {r['facts_extracted']:,}",
    )
    row("memories / of them retired", lambda r: f"{r['memories']:,} / {r['retired']:,}")
    row(
        "model calls per batch with facts: extract + reconcile",
        lambda r: (
            f"{_cell(r['extract_calls_per_batch_with_facts'], 2)} + "
            f"{_cell(r['reconcile_calls_per_batch_with_facts'], 2)}"
        ),
    )
    row("most reconcile calls in one batch", lambda r: str(r["most_reconcile_calls_in_a_batch"]))
    row(
        "garbage answers / warnings logged",
        lambda r: f"{r['garbage_answers']:,} / {r['warnings']:,}",
    )
    row("seconds to play", lambda r: f"{r['seconds_playing']:.0f}")
    lines += [
        "",
        "Current-fact P@1: the top hit of the user's scope for the attribute's question (\"Where "
        'does Ada live now?") names its true value. `as_of`: the same question asked as of a '
        "moment between each change and the next. Lost: a fact an extraction answer gave that no "
        "memory of the user, current or retired, names. A batch is one session's flush; "
        "reconcile asks nothing when no fact has a stored memory near it (a first session) or "
        "every fact's text is already current, hence fewer than 1 reconcile call per batch.",
    ]
    latency = figures.get("latency")
    if latency:
        lines += _render_latency(latency)
    return "\n".join(lines) + "\n"


def _render_latency(cost: dict[str, Any]) -> list[str]:
    rows = {
        "baseline": f"`{cost['baseline_ref']}`: default search, every memory current",
        "default": "this checkout: default search (retired left out)",
        "as_of": f"this checkout: `as_of` {cost['as_of_moment']} (90% added by then)",
    }
    limits = {"baseline": "", "default": " (limit 1.1x)", "as_of": " (limit 2x)"}
    ratios = {"baseline": 1.0, "default": cost["default_ratio"], "as_of": cost["as_of_ratio"]}
    lines = [
        "",
        f"## Search cost at {cost['size']:,} memories, {cost['retired_share']:.0%} retired",
        "",
        f"`SQLiteStore`, keyword search, {cost['questions']} LoCoMo questions, 10 hits, in fresh "
        f"processes taking turns, {cost['rounds']} rounds (`changes_latency.py`).",
        "",
        "| code and search | median ms | p99 ms | against the baseline |",
        "|---|---:|---:|---:|",
    ]
    for name, label in rows.items():
        cell = cost[name]
        lines.append(
            f"| {label} | {cell['median_ms']:.1f} | {cell['p99_ms']:.1f} | "
            f"{ratios[name]:.2f}x{limits[name]} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--timelines", type=int, default=TIMELINES, metavar="N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--latency-size", type=int, default=1_000_000, metavar="N", help="0 skips the cost"
    )
    parser.add_argument("--baseline", default="349120e", metavar="REF", help="git ref to compare")
    parser.add_argument("--model-url", metavar="URL", help="an OpenAI-compatible API root")
    parser.add_argument("--model", metavar="NAME", help="the model name, with --model-url")
    parser.add_argument("--output", type=Path, default=RESULTS, metavar="FILE.md")
    args = parser.parse_args(argv)
    if args.timelines < 1:
        parser.error(f"--timelines must be at least 1, got {args.timelines}")
    if args.latency_size < 0:
        parser.error(f"--latency-size must be 0 (skip) or more, got {args.latency_size}")
    if (args.model_url is None) != (args.model is None):
        parser.error("--model-url and --model go together")
    figures = asyncio.run(_measure(args))
    report = render(figures)
    args.output.write_text(report, encoding="utf-8")
    args.output.with_suffix(".json").write_text(
        json.dumps(figures, indent=1) + "\n", encoding="utf-8"
    )
    sys.stdout.write(report)


async def _measure(args: argparse.Namespace) -> dict[str, Any]:
    model: ChatModel | None = None
    if args.model_url is not None:
        key = os.environ.get("AGENTRECALL_BENCH_API_KEY")
        model = OpenAICompatibleModel(args.model_url, args.model, api_key=key)
    with tempfile.TemporaryDirectory(prefix="bench-changes-") as directory:
        if args.store == "postgres":
            figures = await _on_postgres(args, model)
        else:
            figures = await run_all(
                args.timelines, args.seed, "sqlite", directory, model, _runs(model)
            )
    figures["date"] = str(dt.date.today())
    figures["model"] = None if args.model_url is None else f"`{args.model}` at {args.model_url}"
    if args.latency_size:
        figures["latency"] = measure(args.latency_size, args.baseline)
    figures["load"] = load()
    return figures


def _runs(model: ChatModel | None) -> tuple[Run, ...]:
    """Garbage is the oracle's: a real model's run has no garbage row."""
    return RUNS if model is None else RUNS[:2]


async def _on_postgres(args: argparse.Namespace, model: ChatModel | None) -> dict[str, Any]:
    dsn = os.environ.get("AGENTRECALL_BENCH_POSTGRES_DSN")
    if dsn:
        return await run_all(args.timelines, args.seed, "postgres", dsn, model, _runs(model))
    with TemporaryPostgres(durable=False) as server:
        return await run_all(args.timelines, args.seed, "postgres", server.dsn, model, _runs(model))


if __name__ == "__main__":
    main()
