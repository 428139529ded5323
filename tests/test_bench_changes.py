"""Small runs of ``benchmarks/bench_changes.py``: the figures it reports hold, without timing.

The benchmark plays seeded user timelines through the extraction coordinator with a model
that answers from the truth; here 30 timelines. What must hold: reconcile with the truthful
model answers every "where does X live now" question and every ``as_of`` question right,
add-only extraction does worse on the same timelines, a model answering garbage a fifth of
the time loses no fact, and reconcile costs at most one model call per batch. The cost part
runs at 10,000 memories against this repository's ``HEAD`` to show it works; its figures are
not asserted (they depend on the machine).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_changes  # noqa: E402
import changes_latency  # noqa: E402
from changes_model import TimelineOracle, read_request  # noqa: E402
from timelines import ATTRIBUTES, PHRASINGS, QUESTIONS, mentions, timeline, timelines  # noqa: E402

from agentrecall.extraction.reconcile_prompt import Candidate, render_request  # noqa: E402
from agentrecall.retrieval.keywords import keyword_terms  # noqa: E402
from agentrecall.retrieval.tokenize import STOP_WORDS  # noqa: E402
from agentrecall.testing import ChatServer, ModelCall, ReceivedRequest  # noqa: E402

TIMELINES = 30


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import asyncio

    directory = str(tmp_path_factory.mktemp("changes"))
    return asyncio.run(
        bench_changes.run_all(TIMELINES, 0, "sqlite", directory, None, bench_changes.RUNS)
    )


def test_truthful_reconcile_answers_every_current_and_as_of_question(
    figures: dict[str, Any],
) -> None:
    run = figures["runs"]["reconcile"]
    assert run["current_asked"] > 3 * TIMELINES
    assert run["p_at_1"] == 1.0
    assert run["as_of_asked"] == figures["changes"]
    assert run["as_of_accuracy"] == 1.0
    assert run["facts_lost"] == 0
    assert run["retired"] > 0
    assert run["warnings"] == 0, run["first_warning"]
    assert set(run["decisions"]) == {"add", "supersede", "duplicate"}


def test_add_only_extraction_answers_worse_on_the_same_timelines(figures: dict[str, Any]) -> None:
    runs = figures["runs"]
    assert runs["add-only"]["p_at_1"] < runs["reconcile"]["p_at_1"]
    assert runs["add-only"]["retired"] == 0
    assert runs["add-only"]["reconcile_calls_per_batch_with_facts"] == 0


def test_garbage_answers_lose_no_fact(figures: dict[str, Any]) -> None:
    run = figures["runs"]["garbage"]
    assert run["garbage_answers"] > 0
    assert run["facts_extracted"] >= figures["facts_stated"]  # retried batches extract again
    assert run["facts_lost"] == 0


def test_reconcile_costs_one_model_call_per_batch_at_most(figures: dict[str, Any]) -> None:
    for label in ("reconcile", "garbage"):
        run = figures["runs"][label]
        assert run["extract_calls_per_batch_with_facts"] == 1
        assert 0 < run["reconcile_calls_per_batch_with_facts"] <= 1
        assert run["most_reconcile_calls_in_a_batch"] == 1


async def test_postgres_gives_the_same_figures_by_the_same_path(postgres_dsn: str) -> None:
    figures = await bench_changes.run_all(10, 0, "postgres", postgres_dsn, None, bench_changes.RUNS)
    runs = figures["runs"]
    assert runs["reconcile"]["p_at_1"] == runs["reconcile"]["as_of_accuracy"] == 1.0
    assert runs["add-only"]["p_at_1"] < 1.0
    assert runs["garbage"]["facts_lost"] == 0 and runs["garbage"]["garbage_answers"] > 0


def test_the_report_is_a_table_of_every_run(figures: dict[str, Any]) -> None:
    report = bench_changes.render({**figures, "date": "today", "load": "0.0"})
    assert "| current-fact P@1" in report
    assert "reconcile (truthful model)" in report and "add-only" in report
    assert "1.000 |" in report


def test_timelines_are_seeded_and_hold_every_kind_of_change() -> None:
    assert list(timelines(3, seed=5))[2] == timeline(2, seed=5)
    assert timeline(2, seed=5) != timeline(2, seed=6)
    played = list(timelines(TIMELINES))
    kinds = {"flip back": 0, "restated": 0, "retired content again": 0}
    for t in played:
        contents: list[str] = []
        for attribute in ATTRIBUTES:
            values = [c.value for c in t.changes() if c.attribute == attribute]
            kinds["flip back"] += len(values) != len(set(values))
        for session in t.sessions:
            for fact in session.facts.values():
                kinds["retired content again"] += fact.content in contents
                contents.append(fact.content)
                if fact.attribute not in session.changed:
                    kinds["restated"] += 1
    assert all(count > 0 for count in kinds.values()), kinds


def test_every_memory_text_holds_its_question_s_key_word_and_no_other() -> None:
    def keys(text: str) -> set[str]:
        # The search's terms: stop words left out, the rest stemmed.
        kept = [word for word in re.findall(r"\w+", text.lower()) if word not in STOP_WORDS]
        return set(keyword_terms(" ".join(kept)))

    questions = {a: keys(QUESTIONS[a].format(n="Ada")) - {"ada", "s", "now"} for a in ATTRIBUTES}
    for attribute, phrasings in PHRASINGS.items():
        for phrasing in phrasings:
            text = keys(phrasing.format(n="Ada", v="Oslo", r="nurse"))
            for other, words in questions.items():
                assert bool(words & text) == (other == attribute), (phrasing, other)


def test_the_oracle_reads_the_reconcile_prompt_as_rendered() -> None:
    t = timeline(0)
    fact = next(f for s in t.sessions for f in s.facts.values())
    request = render_request([(fact.content, [Candidate("m-1", "x y"), Candidate("m-2", "z")])])
    assert read_request(request) == [(1, fact.content, [("m-1", "x y"), ("m-2", "z")])]


def test_the_cost_part_runs_against_a_git_ref() -> None:
    cost = changes_latency.measure(10_000, "HEAD", rounds=1)
    for case in ("baseline", "default", "as_of"):
        assert cost[case]["median_ms"] > 0
    assert cost["default_ratio"] > 0 and cost["as_of_ratio"] > 0
    table = "\n".join(bench_changes._render_latency(cost))
    assert "| `HEAD`: default search, every memory current |" in table
    assert "10,000 memories, 10% retired" in table


def test_an_unknown_baseline_ref_is_refused_by_name() -> None:
    with pytest.raises(SystemExit, match="--baseline 'no-such-ref'"):
        changes_latency.measure(10, "no-such-ref")


def test_a_real_model_runs_the_same_table_over_http(tmp_path: Path) -> None:
    t = timeline(0)
    oracle = TimelineOracle(t)
    for session in t.sessions:
        oracle.hear(session)

    def respond(request: ReceivedRequest) -> str:
        return oracle(ModelCall(request.messages[1:], request.system))

    output = tmp_path / "changes.md"
    with ChatServer(responder=respond) as server:
        bench_changes.main(
            [
                "--timelines", "1", "--latency-size", "0", "--output", str(output),
                "--model-url", server.base_url, "--model", "oracle",
            ]
        )  # fmt: skip
    report = output.read_text(encoding="utf-8")
    assert "`oracle` at http://127.0.0.1" in report
    figures = json.loads(output.with_suffix(".json").read_text(encoding="utf-8"))
    assert set(figures["runs"]) == {"reconcile", "add-only"}
    assert figures["runs"]["reconcile"]["p_at_1"] == 1.0
    assert figures["runs"]["reconcile"]["facts_lost"] == 0


def test_model_options_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench_changes.main(["--model-url", "http://127.0.0.1:9/v1"])
    assert "--model-url and --model go together" in capsys.readouterr().err


def test_mentions_matches_whole_words_only() -> None:
    assert mentions("Ada lives in Oslo", "oslo")
    assert not mentions("Ada drinks matcha tea", "cha")
