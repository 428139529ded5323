"""Choose ``SQLiteStore``'s BM25 parameters k1 and b by cross-validation on the LoCoMo dev file.

Only the dev file (``data/locomo/locomo-dev.json``, 3 conversations) is ever read. Each
conversation is loaded into a fresh ``SQLiteStore`` as ``agentrecall eval locomo`` does, and
each question's candidates are taken from the store itself (a search for
:data:`~agentrecall.retrieval.plan.CANDIDATES` hits returns all of them: which memories are
candidates does not depend on k1 and b). Those candidates are then ranked with the store's own
:func:`~agentrecall.retrieval.bm25.bm25_of_counts` and term weights at every point of the
grid, and recall@10 of each ranking is scored with :func:`agentrecall.evaluation.locomo.score`.
Before anything is reported, the ranking at the store's current k1 and b is checked to be
exactly the store's own top 10 for every question.

Leave one conversation out: for each conversation, a grid point is chosen on the other two
conversations' questions and measured on it. The choice follows the one-standard-error rule
(Breiman et al. 1984; Hastie, Tibshirani and Friedman, *The Elements of Statistical
Learning*, 7.10): of the points whose recall@10 is within one standard error of the best
point's, the one nearest the usual k1 1.2, b 0.75. One question moves recall@10 by about
0.002 and the surface is flat, so the single best point is mostly noise (:func:`_choose`).
The defaults are the grid point chosen in the same way on all three conversations; the
cross-validated figure estimates how they do on conversations they were not chosen on.

Run: ``.venv/bin/python benchmarks/tune_bm25.py``. Writes ``benchmarks/results/bm25-tuning.md``
and prints it. Takes a minute or two.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agentrecall import SQLiteStore
from agentrecall.evaluation.locomo import Conversation, load, score
from agentrecall.retrieval import bm25, plan
from agentrecall.retrieval.keywords import keyword_terms
from agentrecall.stores.sqlite import query

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "data" / "locomo" / "locomo-dev.json"
RESULT = Path(__file__).resolve().parent / "results" / "bm25-tuning.md"
K1_GRID = [round(0.1 * i, 1) for i in range(1, 21)]
B_GRID = [round(0.05 * i, 2) for i in range(21)]
TOP = 10
USUAL = (1.2, 0.75)
"""The k1 and b most BM25 implementations default to; a choice departs from them only as far
as the data shows it must."""

Point = tuple[float, float]
P = TypeVar("P", bound=tuple[Any, ...])


@dataclass(frozen=True, slots=True)
class Question:
    """One question with what ranking it needs: candidates, weights, evidence."""

    conversation: str
    weights: dict[str, float]
    average_length: float
    # Per candidate: its position in the conversation, dia_id, counts of the query's terms, and
    # how many terms it has.
    candidates: list[tuple[int, str, dict[str, int], int]]
    evidence: tuple[str, ...]


async def _questions(conversation: Conversation) -> list[Question]:
    """Load one conversation into a fresh store; return its questions' candidates and weights."""
    turns = [turn.content() for turn in conversation.turns]
    position = {turn.dia_id: index for index, turn in enumerate(conversation.turns)}
    terms = [keyword_terms(text) for text in turns]
    held = [set(each) for each in terms]
    found = []
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "memory.db"
        store = SQLiteStore(path)
        try:
            await store.add_many([(turn.content(), turn.metadata()) for turn in conversation.turns])
            average = _average_length(path)
            for item in conversation.questions:
                words = bm25.query_terms(item.text)
                df = {word: sum(term in each for each in held) for word, term in words.items()}
                plans = plan.plan_terms(df, len(turns))
                weights = {words[plan.term]: plan.weight for plan in plans}
                hits = await store.search(item.text, {"max_search_results": plan.CANDIDATES})
                ids = [str((hit.metadata or {})["dia_id"]) for hit in hits]
                candidates = [
                    _candidate(position[dia_id], dia_id, terms, weights) for dia_id in ids
                ]
                question = Question(
                    conversation.sample_id, weights, average, candidates, item.evidence
                )
                _check(question, ids[:TOP], hits[:TOP])
                found.append(question)
        finally:
            await store.aclose()
    return found


def _candidate(
    index: int, dia_id: str, terms: list[list[str]], weights: dict[str, float]
) -> tuple[int, str, dict[str, int], int]:
    counts = {term: terms[index].count(term) for term in weights if term in terms[index]}
    return index, dia_id, counts, len(terms[index])


def _average_length(path: Path) -> float:
    """Return the average length of the memories as the store reads it: from its index.

    The index also counts what it takes for words and the ranking does not (emoji), so this
    can differ a little from the average of the ranking's own term counts.
    """
    with closing(sqlite3.connect(path)) as db:
        block = db.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()[0]
    rows, tokens = query.averages(block)
    return tokens / rows


def _ranked(question: Question, k1: float, b: float) -> list[tuple[float, str]]:
    """Return the top (score, dia_id) of ``question``'s candidates, as the store ranks them."""
    average = question.average_length
    scored = [
        (bm25.bm25_of_counts(question.weights, counts, length, average, k1=k1, b=b), i, dia_id)
        for i, dia_id, counts, length in question.candidates
    ]
    scored.sort(key=lambda item: (-item[0], -item[1]))
    return [(value, dia_id) for value, _, dia_id in scored if value > 0][:TOP]


def _check(question: Question, ids: list[str], hits: Sequence[object]) -> None:
    """Fail unless ranking at the store's k1 and b gives the store's own top 10."""
    ranked = _ranked(question, bm25.K1, bm25.B)
    scores = [getattr(hit, "metadata", {})["_relevanceScore"] for hit in hits]
    same = [dia_id for _, dia_id in ranked] == ids and all(
        math.isclose(mine, theirs, rel_tol=1e-9)
        for (mine, _), theirs in zip(ranked, scores, strict=True)
    )
    if not same:
        raise SystemExit(f"the rerank here does not reproduce the store's ranking: {ids}")


def _recalls(questions: Sequence[Question], point: Point) -> list[float]:
    """Return the R@10 of each of ``questions`` ranked at ``point``."""
    return [score([d for _, d in _ranked(q, *point)], q.evidence)["R@10"] for q in questions]


def _choose(recalls: dict[Point, list[float]]) -> Point:
    """Return the point nearest the usual k1 and b whose R@10 is within one error of the best.

    Nearness is measured with k1 scaled to the span of b (the grids span about 2 and 1).
    """
    return _choose_near(recalls, lambda p: ((p[0] - USUAL[0]) / 2) ** 2 + (p[1] - USUAL[1]) ** 2)


def _choose_near(recalls: dict[P, list[float]], distance: Callable[[P], float]) -> P:
    """Return the point of least ``distance`` whose R@10 is within one error of the best.

    ``recalls`` holds each point's R@10 per question, for the same questions. The error is the
    standard error of the mean per-question difference from the best point; ties between
    equally good points, and between equally near ones, go to the smaller point.
    """

    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values)

    best = max(recalls, key=lambda p: (mean(recalls[p]), -distance(p)))
    top = recalls[best]
    near = []
    for point, values in recalls.items():
        gaps = [a - b for a, b in zip(top, values, strict=True)]
        spread = statistics.pstdev(gaps) / math.sqrt(len(gaps))
        if mean(gaps) <= spread:
            near.append(point)
    return min(near, key=lambda p: (distance(p), p))


def main() -> int:
    """Run the cross-validation; write and print the report."""
    started = time.perf_counter()
    conversations = load(DEV)
    questions = [q for c in conversations for q in asyncio.run(_questions(c))]
    names = [c.sample_id for c in conversations]
    grid = [(k1, b) for k1 in K1_GRID for b in B_GRID]
    per = {
        name: {p: _recalls([q for q in questions if q.conversation == name], p) for p in grid}
        for name in names
    }

    def pooled(members: Sequence[str]) -> dict[Point, list[float]]:
        return {p: [r for m in members for r in per[m][p]] for p in grid}

    folds = []
    for name in names:
        chosen = _choose(pooled([other for other in names if other != name]))
        folds.append((name, chosen, statistics.fmean(per[name][chosen])))
    held_out = sum(len(per[name][p]) * value for name, p, value in folds) / len(questions)
    everything = {p: statistics.fmean(values) for p, values in pooled(names).items()}
    chosen = _choose(pooled(names))
    report = _report(everything, folds, held_out, chosen, len(questions), started)
    RESULT.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _report(
    everything: dict[Point, float],
    folds: list[tuple[str, Point, float]],
    held_out: float,
    chosen: Point,
    questions: int,
    started: float,
) -> str:
    current = (bm25.K1, bm25.B)
    best = max(everything, key=lambda p: (everything[p], -abs(p[0] - USUAL[0]), -p[1]))
    lines = [
        "# BM25 parameters of SQLiteStore, chosen on the LoCoMo dev file",
        "",
        f"* Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; run took "
        f"{time.perf_counter() - started:.0f} s. Python {sys.version.split()[0]}.",
        f"* Data: `data/locomo/locomo-dev.json`, 3 conversations, {questions} questions "
        "(Maharana et al., ACL 2024, arXiv 2402.17753, CC BY-NC 4.0); nothing else is read.",
        "* Ranking: the store's stemmed terms and candidates, reranked by the store's "
        f"`bm25_of_counts` at each point; at the store's k1 {current[0]}, b {current[1]} the "
        "rerank was checked to equal the store's own top 10 for every question.",
        "* Method: `benchmarks/tune_bm25.py` (its docstring says how points are chosen).",
        "",
        "## Leave one conversation out",
        "",
        "| held-out conversation | k1, b chosen on the other two | R@10 held out |",
        "|---|---|---:|",
    ]
    lines += [f"| {name} | {k1}, {b} | {value:.3f} |" for name, (k1, b), value in folds]
    lines += [
        "",
        f"Cross-validated R@10 (all {questions} questions, each ranked with the point chosen "
        f"without its conversation): **{held_out:.3f}**.",
        "",
        f"Chosen on all three conversations: **k1 {chosen[0]}, b {chosen[1]}**, R@10 "
        f"{everything[chosen]:.3f}; the best point, {best[0]}, {best[1]}: "
        f"{everything[best]:.3f}; the usual {USUAL[0]}, {USUAL[1]}: {everything[USUAL]:.3f}.",
        "",
        "## R@10 on all three conversations, by k1 (rows) and b (columns)",
        "",
        "| k1 \\ b | " + " | ".join(f"{b}" for b in B_GRID) + " |",
        "|---:|" + "---:|" * len(B_GRID),
    ]
    for k1 in K1_GRID:
        cells = " | ".join(f"{everything[(k1, b)]:.3f}" for b in B_GRID)
        lines.append(f"| {k1} | {cells} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
