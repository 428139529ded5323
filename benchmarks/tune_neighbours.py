"""Choose conversation mode's neighbour weight, window and expansion by cross-validation.

Only the LoCoMo dev file (``data/locomo/locomo-dev.json``, 3 conversations) is ever read. Each
conversation is loaded into a fresh ``SQLiteStore`` with ``LocalEmbedder``, as
``agentrecall eval locomo --mode hybrid`` does, and each question's two rankings are taken from
the store itself: its keyword and its semantic search for
:data:`~agentrecall.stores.sqlite.semantic.POOL` hits, which are what a hybrid search of 10
fuses. They are fused with :func:`agentrecall.retrieval.fusion.fuse`, and the neighbours are
applied with the functions of :mod:`agentrecall.retrieval.neighbours` at every point of the
grid: the weight a memory gains of its best neighbour's score, the window (how many turns on
each side count as neighbours) and the anchors (how many of the best hits bring their
neighbours into the results). Before anything is reported, the result at the store's current
defaults is checked to be the store's own top 10 (``{"mode": "hybrid", "neighbours": True}``)
for every question.

Leave one conversation out, with the one-standard-error rule as in ``tune_bm25.py``: for each
conversation a point is chosen on the other two conversations' questions and measured on it;
of the points within one standard error of the best, the one nearest :data:`PLAIN` (weight 0.5,
window 1, 5 anchors: the defaults before tuning). The defaults are the point chosen the same
way on all three conversations. Multi-hop questions (category 1) are reported apart: the
neighbours cost them, and the report says how much.

Run: ``.venv/bin/python benchmarks/tune_neighbours.py``. Writes
``benchmarks/results/neighbour-tuning.md`` and prints it. Takes a few minutes (the model embeds
the 1,451 turns once).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tune_bm25 import _choose_near

from agentrecall import LocalEmbedder, SQLiteStore
from agentrecall.evaluation.locomo import Conversation, load, score
from agentrecall.retrieval import neighbours as nb
from agentrecall.retrieval.fusion import fuse
from agentrecall.stores.sqlite.semantic import POOL

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "data" / "locomo" / "locomo-dev.json"
RESULT = Path(__file__).resolve().parent / "results" / "neighbour-tuning.md"
TOP = 10
WEIGHTS = [round(0.1 * i, 1) for i in range(11)]
WINDOWS = [1, 2, 3]
ANCHORS = list(range(TOP + 1))
PLAIN = (0.5, 1, 5)
"""Weight, window and anchors before tuning; a choice departs from them only as far as the data
shows it must."""
SCALE = (1.0, 2.0, 10.0)
"""The span of each grid axis, to measure nearness to :data:`PLAIN` on one scale."""

Point = tuple[float, int, int]


@dataclass(frozen=True, slots=True)
class Question:
    """One question: its conversation, category, fused pool, the turns' sessions, evidence."""

    conversation: str
    category: int
    fused: list[tuple[int, float]]
    sessions: list[tuple[int, int, int]]
    evidence: tuple[str, ...]
    dia_ids: tuple[str, ...]


async def _questions(conversation: Conversation, embedder: LocalEmbedder) -> list[Question]:
    """Load one conversation into a fresh store; return each question's fused pool."""
    turns = conversation.turns
    position = {turn.dia_id: index for index, turn in enumerate(turns)}
    sessions = [(index, index, turn.session) for index, turn in enumerate(turns)]
    dia_ids = tuple(turn.dia_id for turn in turns)
    found = []
    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(Path(directory) / "memory.db", embedder=embedder)
        try:
            await store.add_many([(turn.content(), turn.metadata()) for turn in turns])
            for item in conversation.questions:
                lists = []
                for mode in ("keyword", "semantic"):
                    hits = await store.search(item.text, {"mode": mode, "max_search_results": POOL})
                    lists.append(
                        [
                            (position[str(h.metadata["dia_id"])], h.metadata["_relevanceScore"])
                            for h in hits
                            if h.metadata
                        ]
                    )
                fused = [(hit.key, hit.score) for hit in fuse(lists[0], lists[1])]
                question = Question(
                    conversation.sample_id, item.category, fused, sessions, item.evidence, dia_ids
                )
                options = {"mode": "hybrid", "neighbours": True, "max_search_results": TOP}
                own = await store.search(item.text, options)
                _check(question, [str(h.metadata["dia_id"]) for h in own if h.metadata])
                found.append(question)
        finally:
            await store.aclose()
    return found


def ranked(question: Question, point: Point) -> list[str]:
    """Return the top dia_ids of ``question`` with neighbours at ``point``, best first."""
    weight, window, anchors = point
    scores = dict(question.fused)
    near = nb.adjacent(question.sessions, window=window)
    smoothed = nb.smooth(scores, near, weight=weight)
    order = sorted(scores, key=lambda key: -smoothed[key])
    chosen = nb.expand(order, near, TOP, anchors=anchors)
    final = sorted(chosen, key=lambda key: -smoothed[key])
    return [question.dia_ids[key] for key in final]


def _check(question: Question, own: list[str]) -> None:
    """Fail unless the rerank at the store's defaults gives the store's own top 10."""
    mine = ranked(question, (nb.NEIGHBOUR_WEIGHT, nb.WINDOW, nb.anchors_for(TOP)))
    if set(mine) != set(own):
        raise SystemExit(f"the rerank here does not reproduce the store's results: {own}")


def _recalls(questions: Sequence[Question], point: Point) -> list[float]:
    return [score(ranked(q, point), q.evidence)["R@10"] for q in questions]


def _choose(recalls: dict[Point, list[float]]) -> Point:
    def distance(point: Point) -> float:
        return sum(((a - b) / s) ** 2 for a, b, s in zip(point, PLAIN, SCALE, strict=True))

    return _choose_near(recalls, distance)


def main() -> int:
    """Run the cross-validation; write and print the report."""
    started = time.perf_counter()
    conversations = load(DEV)
    embedder = LocalEmbedder()
    questions = [q for c in conversations for q in asyncio.run(_questions(c, embedder))]
    names = [c.sample_id for c in conversations]
    grid = [(w, n, a) for w in WEIGHTS for n in WINDOWS for a in ANCHORS]
    per = {p: _recalls(questions, p) for p in grid}

    def pick(members: Sequence[str]) -> dict[Point, list[float]]:
        keep = [i for i, q in enumerate(questions) if q.conversation in members]
        return {p: [values[i] for i in keep] for p, values in per.items()}

    folds = []
    for name in names:
        chosen = _choose(pick([other for other in names if other != name]))
        folds.append((name, chosen, statistics.fmean(pick([name])[chosen])))
    held_out = sum(len(pick([n])[p]) * v for n, p, v in folds) / len(questions)
    chosen = _choose(pick(names))
    report = _report(questions, per, folds, held_out, chosen, started)
    RESULT.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _mean(questions: Sequence[Question], values: list[float], category: int | None) -> float:
    kept = [v for q, v in zip(questions, values, strict=True) if category in (None, q.category)]
    return statistics.fmean(kept)


def _report(
    questions: list[Question],
    per: dict[Point, list[float]],
    folds: list[tuple[str, Point, float]],
    held_out: float,
    chosen: Point,
    started: float,
) -> str:
    hybrid = (0.0, 1, 0)

    def line(name: str, point: Point) -> str:
        overall, multi = _mean(questions, per[point], None), _mean(questions, per[point], 1)
        return f"| {name} | {point[0]}, {point[1]}, {point[2]} | {overall:.3f} | {multi:.3f} |"

    best = max(per, key=lambda p: statistics.fmean(per[p]))
    lines = [
        "# Conversation mode's neighbour weight, window and anchors, chosen on the LoCoMo dev file",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took "
        f"{time.perf_counter() - started:.0f} s. Python {sys.version.split()[0]}.",
        f"* Data: `data/locomo/locomo-dev.json`, 3 conversations, {len(questions)} questions "
        "(Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0); nothing else is read.",
        "* Ranking: the store's hybrid pool (keyword and semantic, LocalEmbedder), fused and "
        "given neighbours by the library's own functions at each point; at the store's "
        "defaults this was checked to equal the store's own top 10 for every question.",
        "* Method: `benchmarks/tune_neighbours.py` (its docstring says how points are chosen).",
        "",
        "## Leave one conversation out",
        "",
        "| held-out conversation | weight, window, anchors chosen on the other two | "
        "R@10 held out |",
        "|---|---|---:|",
    ]
    lines += [f"| {n} | {p[0]}, {p[1]}, {p[2]} | {v:.3f} |" for n, p, v in folds]
    lines += [
        "",
        f"Cross-validated R@10 (all {len(questions)} questions, each ranked with the point "
        f"chosen without its conversation): **{held_out:.3f}**.",
        "",
        "## Points on all three conversations",
        "",
        "| point | weight, window, anchors | R@10 overall | R@10 multi-hop |",
        "|---|---|---:|---:|",
        line("hybrid alone (no neighbours)", hybrid),
        line("before tuning", PLAIN),
        line("**chosen (the defaults)**", chosen),
        line("best on these questions", best),
        line("smoothing only", (chosen[0], chosen[1], 0)),
        line("expansion only", (0.0, chosen[1], chosen[2])),
        "",
        "## R@10 overall by weight (rows) and anchors (columns), at the chosen window",
        "",
        "| weight \\ anchors | " + " | ".join(str(a) for a in ANCHORS) + " |",
        "|---:|" + "---:|" * len(ANCHORS),
    ]
    for weight in WEIGHTS:
        cells = " | ".join(f"{statistics.fmean(per[(weight, chosen[1], a)]):.3f}" for a in ANCHORS)
        lines.append(f"| {weight} | {cells} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
