"""``agentrecall eval locomo``: loading, evidence repair, metrics, and runs through the CLI."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import LOCOMO_DEV

from agentrecall import SQLiteStore
from agentrecall.cli.main import main
from agentrecall.evaluation.locomo import (
    METRICS,
    TIME,
    evaluate,
    load,
    parse_date,
    repair_evidence,
    score,
    summarize,
)
from agentrecall.testing import HashEmbedder

DEV_FILE = LOCOMO_DEV


def _conversation(sample_id: str) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Bo",
            "session_2_date_time": "9:05 am on 3 June, 2023",
            "session_2": [
                {"speaker": "Ana", "dia_id": "D2:1", "text": "The kayak trip was on the lake."},
                {"speaker": "Bo", "dia_id": "D2:2", "text": "I adopted a puppy named Pepper."},
            ],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I started painting sunsets."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "My violin lessons begin soon."},
            ],
        },
        "qa": [
            {
                "question": "What did Ana paint?",
                "answer": "sunsets",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What is the puppy called?",
                "evidence": ["D:2:02; D9:9"],
                "adversarial_answer": "Rex",
                "category": 5,
            },
            {"question": "Where was the kayak trip?", "evidence": ["D2:1", "D1:2"], "category": 1},
            {"question": "No evidence left", "answer": "x", "evidence": ["D7:1"], "category": 2},
        ],
    }


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_conversation("a"), _conversation("b")]), encoding="utf-8")
    return path


def test_load_orders_sessions_parses_dates_and_repairs_evidence(locomo_file: Path) -> None:
    conversations = load(locomo_file)
    first = conversations[0]
    assert [t.dia_id for t in first.turns] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert first.turns[0].content() == "Ana: I started painting sunsets."
    assert first.turns[0].metadata() == {
        "dia_id": "D1:1",
        "speaker": "Ana",
        "session": 1,
        "date": "2023-05-08T13:56:00",
    }
    assert [q.evidence for q in first.questions] == [("D1:1",), ("D2:2",), ("D2:1", "D1:2")]
    assert parse_date("12:05 am on 1 January, 2024") == "2024-01-01T00:05:00"
    known = frozenset({"D8:6", "D9:17", "D30:5"})
    assert repair_evidence(["D8:6; D9:17", "D30:05", "D8:6", "D1:1"], known) == (
        "D8:6",
        "D9:17",
        "D30:5",
    )


def test_metrics_of_one_question() -> None:
    metrics = score(["x", "a", "y", "y", "b"], ["a", "b", "c"])
    assert metrics["R@5"] == metrics["R@10"] == pytest.approx(2 / 3)
    assert (metrics["hit@1"], metrics["hit@5"], metrics["MRR@10"]) == (0.0, 1.0, 0.5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    found = 1 / math.log2(3) + 1 / math.log2(5)  # the repeated "y" counts once: "b" is 4th
    assert metrics["nDCG@10"] == pytest.approx(found / ideal)
    assert score([], ["a"])["nDCG@10"] == 0.0
    rows = summarize([(1, score(["a"], ["a"])), (5, score([], ["a"]))])
    assert [(r.group, r.questions, r.means["R@10"]) for r in rows] == [
        ("overall", 2, 0.5),
        ("overall w/o adversarial", 1, 1.0),
        ("1 multi-hop", 1, 1.0),
        ("5 adversarial", 1, 0.0),
    ]


@pytest.mark.parametrize("store", ["json", "sqlite"])
def test_eval_command_runs_on_each_store(
    locomo_file: Path, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "locomo", str(locomo_file), "--store", store, "--json"]) == 0
    rows = {row["group"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["overall"]["questions"] == 6
    assert rows["4 single-hop"]["R@10"] == 1.0 and rows["5 adversarial"]["hit@10"] == 1.0
    assert main(["eval", "locomo", str(locomo_file), "--store", store]) == 0
    assert "| overall | 6 |" in capsys.readouterr().out


def test_eval_reports_a_file_that_is_not_locomo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"not": "a list"}', encoding="utf-8")
    assert main(["eval", "locomo", str(path)]) == 1
    assert "not a LoCoMo file" in capsys.readouterr().err
    assert main(["eval", "locomo", str(tmp_path / "missing.json")]) == 1


def test_the_bundled_dev_file_matches_its_checksum() -> None:
    listed = (DEV_FILE.parent / "SHA256SUMS").read_text(encoding="utf-8").split()
    assert listed[1] == DEV_FILE.name
    assert hashlib.sha256(DEV_FILE.read_bytes()).hexdigest() == listed[0]


def test_sqlite_store_recall_on_the_locomo_dev_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "locomo", str(DEV_FILE), "--store", "sqlite", "--json"]) == 0
    overall = json.loads(capsys.readouterr().out)[0]
    assert overall["group"] == "overall" and overall["questions"] == 495
    # Stemmed BM25 with the cross-validated k1 and b: 0.647 (unstemmed, k1 1.2, b 0.75: 0.591).
    assert overall["R@10"] >= 0.64


HASH = "agentrecall.testing:HashEmbedder"


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize("neighbours", [False, True])
def test_eval_command_in_each_search_mode(
    locomo_file: Path, mode: str, neighbours: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "locomo", str(locomo_file), "--mode", mode, "--embedder", HASH, "--json"]
    assert main([*argv, *(["--neighbours"] if neighbours else [])]) == 0
    rows = {row["group"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["overall"]["questions"] == 6
    assert rows["overall"]["ms/query"] > 0
    assert rows["4 single-hop"]["hit@10"] == 1.0  # four turns: every one is in the top 10
    assert main(argv[:-1]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| group | n | R@5 |") and "| nDCG@10 | ms/query |" in table


async def test_evaluate_takes_any_store_factory(locomo_file: Path) -> None:
    conversations = load(locomo_file)
    rows = await evaluate(
        conversations,
        lambda directory: SQLiteStore(
            directory / "m.db", embedder=HashEmbedder(), search_mode="semantic"
        ),
    )
    overall = rows[0]
    assert overall.group == "overall" and overall.questions == 6
    assert set(overall.means) == {*METRICS, TIME}


def test_eval_options_that_need_an_sqlite_store(
    locomo_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "locomo", str(locomo_file), "--store", "json", "--mode", "hybrid"]) == 2
    assert "--mode and --neighbours need --store sqlite" in capsys.readouterr().err
    assert main(["eval", "locomo", str(locomo_file), "--mode", "fuzzy"]) == 2


async def test_turns_of_the_same_content_are_each_found_by_their_one_memory(
    tmp_path: Path,
) -> None:
    conversation = _conversation("a")
    session = conversation["conversation"]["session_1"]
    session.append({"speaker": "Ana", "dia_id": "D1:3", "text": "I started painting sunsets."})
    conversation["qa"] = [
        {"question": "What did Ana paint?", "evidence": ["D1:3"], "category": 4},
        {"question": "What did Ana paint?", "evidence": ["D1:1", "D1:3"], "category": 4},
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation]), encoding="utf-8")
    # The store keeps one memory for the two turns; it stands for both.
    rows = await evaluate(load(path), lambda directory: SQLiteStore(directory / "m.db"))
    assert rows[0].questions == 2 and rows[0].means["R@10"] == 1.0


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"session_1_date_time": "yesterday"}, "not a LoCoMo session date: 'yesterday'"),
        ({"session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": 5}]}, "not a string"),
        ({"session_1": [{"speaker": "Ana", "text": "hi"}]}, "missing 'dia_id'"),
    ],
)
def test_a_malformed_conversation_is_named_with_the_file(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    broken = _conversation("b")
    broken["conversation"].update(change)
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_conversation("a"), broken]), encoding="utf-8")
    with pytest.raises(ValueError, match="is not a LoCoMo file: conversation 1 is malformed") as e:
        load(path)
    assert str(path) in str(e.value) and problem in str(e.value)


def test_a_question_with_an_unusable_category_is_named(tmp_path: Path) -> None:
    broken = _conversation("a")
    broken["qa"][0]["category"] = "x"
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([broken]), encoding="utf-8")
    with pytest.raises(ValueError, match="conversation 0 is malformed: invalid literal"):
        load(path)
