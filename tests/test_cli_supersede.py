"""Facts that change on the command line: ``supersede``, the moments of reads, chains, stats.

Every command runs in-process through the CLI entry point on a real SQLite file, its moments
set by a :class:`~agentrecall.testing.ManualClock`, or on a real JSON file, which refuses.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from test_cli import Cli
from test_cli_manage import usage_error

from agentrecall.testing import ManualClock

MARCH = datetime(2025, 3, 1, tzinfo=timezone.utc)
APRIL = datetime(2025, 4, 1, tzinfo=timezone.utc)
LYON, BERLIN = "The user lives in Lyon", "The user lives in Berlin"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    monkeypatch.delenv("COLUMNS", raising=False)
    return home


@pytest.fixture
def db(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Cli:
    """A CLI on the SQLite file ``m.db``."""
    return Cli(capsys, ("--db", str(tmp_path / "m.db")))


@pytest.fixture
def js(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Cli:
    """A CLI on the JSON file ``m.json``, holding one memory."""
    cli = Cli(capsys, ("--path", str(tmp_path / "m.json")))
    cli.add("x")
    return cli


@pytest.fixture
def moved(db: Cli) -> Iterator[tuple[Cli, str, str]]:
    """Lyon added on 1 March 2025; superseded by Berlin on 1 April, true from 20 March."""
    with ManualClock(MARCH) as clock:
        lyon = db.add(LYON, "--meta", "topic=home")
        clock.advance(APRIL - MARCH)
        out = db.ok("supersede", lyon, BERLIN, "--valid-from", "2025-03-20", "--reason", "moved")
        yield db, lyon, out.strip()


def test_supersede_retires_the_old_memory_and_prints_the_new_id(
    moved: tuple[Cli, str, str],
) -> None:
    db, lyon, berlin = moved
    new = db.json("get", berlin)
    assert (new["content"], new["valid_from"], new["metadata"]) == (
        BERLIN,
        "2025-03-20T00:00:00.000Z",
        None,
    )
    assert [row["content"] for row in db.json("search", "user lives")] == [BERLIN]
    assert db.fail("get", lyon) == f"agentrecall: error: no memory with id '{lyon}'\n"
    old = db.json("get", lyon, "--include-superseded")
    assert (old["invalidated_at"], old["superseded_by"], old["valid_until"]) == (
        "2025-04-01T00:00:00.000Z",
        berlin,
        "2025-03-20T00:00:00.000Z",
    )
    text = db.ok("get", lyon, "--include-superseded")
    assert f"superseded_by   {berlin}\n" in text and "valid_until     2025-03-20" in text
    assert "valid_from" not in text  # unset: left out of the text
    # A retry changes nothing and says so.
    again = db.json("supersede", lyon, BERLIN, "--valid-from", "2025-03-20")
    assert again == {"id": berlin, "created": False, "superseded": [lyon]}
    assert db.ok("count", "--include-superseded") == "2\n"


def test_reads_as_of_a_moment_by_world_time_and_with_retired_memories(
    moved: tuple[Cli, str, str],
) -> None:
    db, lyon, berlin = moved
    assert db.ok("count") == "1\n"
    assert db.ok("count", "--as-of", "2025-03-15") == "1\n"
    assert db.ok("count", "--as-of", "2025-02-01") == "0\n"
    then = db.json("search", "user lives", "--as-of", "2025-03-15")
    assert [(row["id"], row["content"]) for row in then] == [(lyon, LYON)]
    assert "invalidated_at" not in then[0]  # asked for no retired memories: no marks
    assert db.json("get", lyon, "--as-of", "2025-03-15")["content"] == LYON
    listed = db.json("list", "--as-of", "2025-03-15T00:00:00+02:00")
    assert [row["id"] for row in listed] == [lyon]

    both = db.json("search", "user lives", "--include-superseded")
    marks = {row["id"]: (row["invalidated_at"], row["superseded_by"]) for row in both}
    assert marks == {berlin: (None, None), lyon: ("2025-04-01T00:00:00.000Z", berlin)}
    text = db.ok("search", "user lives", "--include-superseded")
    assert f"({lyon}, retired by {berlin})\n" in text and f"({berlin})\n" in text
    rows = db.ok("list", "--include-superseded", "--oldest").splitlines()
    assert rows[0].endswith(f"retired by {berlin}  {LYON}") and rows[1].endswith(BERLIN)
    # As of a moment before the retirement, Lyon was current: not marked.
    assert "retired" not in db.ok("list", "--include-superseded", "--as-of", "2025-03-15")

    # World time: Lyon was true until 20 March, Berlin from then.
    early = db.json("list", "--valid-at", "2025-03-10", "--include-superseded")
    assert [row["id"] for row in early] == [lyon]
    assert db.ok("count", "--valid-at", "2025-03-10") == "0\n"
    assert [r["id"] for r in db.json("search", "lives", "--valid-at", "2025-05-01")] == [berlin]


def test_history_shows_the_chain_with_each_memory_and_successor(
    moved: tuple[Cli, str, str],
) -> None:
    db, lyon, berlin = moved
    with ManualClock(datetime(2025, 5, 1, tzinfo=timezone.utc)):
        db.ok("update", berlin, "The user lives in Berlin-Mitte", "--reason", "more exact")
    for asked in (lyon, berlin):
        history = db.json("history", asked)
        assert [(v["memory_id"], v["change"], v["superseded_by"]) for v in history["versions"]] == [
            (lyon, "supersede", berlin),
            (berlin, "update", None),
        ]
        assert [r["id"] for r in history["chain_current"]] == [berlin]
    assert db.json("history", lyon)["current"]["superseded_by"] == berlin
    assert db.json("history", berlin)["current"]["content"] == "The user lives in Berlin-Mitte"
    lines = db.ok("history", lyon).splitlines()
    assert [line.split()[:3] for line in lines] == [
        ["2025-04-01T00:00:00.000Z", lyon, "supersede"],
        ["2025-05-01T00:00:00.000Z", berlin, "update"],
        ["2025-05-01T00:00:00.000Z", berlin, "current"],
    ]
    assert lines[0].split()[2:] == ["supersede", "by", berlin, "moved", *LYON.split()]


def test_supersede_several_with_metadata_and_content_from_stdin(
    db: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    coffee, espresso = db.add("The user drinks coffee"), db.add("The user likes espresso")
    stream = io.TextIOWrapper(io.BytesIO(b"The user drinks tea now\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stream)
    done = db.json(
        "supersede", coffee, "-", "--also", espresso, "--also", coffee, "--metadata", '{"a": 1}'
    )
    assert done["superseded"] == [coffee, espresso] and done["created"] is True
    new = db.json("get", done["id"])
    assert (new["content"], new["metadata"]) == ("The user drinks tea now", {"a": 1})
    assert [r["content"] for r in db.json("list")] == ["The user drinks tea now"]
    stats = db.json("stats")
    assert (stats["count"], stats["retired"]) == (1, 2)
    assert "retired        2\n" in db.ok("stats")


def test_supersede_bad_input(db: Cli) -> None:
    first, other = db.add("one fact"), db.add("another fact")
    assert db.fail("supersede", "nope", "x", "--also", "gone") == (
        "agentrecall: error: no memories with ids 'nope', 'gone'\n"
    )
    db.ok("supersede", other, "a third fact")
    # Retired by another memory already: the store says so, naming both.
    err = db.fail("supersede", other, "a fourth fact")
    assert other in err
    assert db.fail("supersede", first, "one fact").startswith("agentrecall: error: ")
    assert usage_error(db, "supersede", first).startswith("agentrecall: error: supersede needs")
    assert usage_error(db, "supersede", first, "x", "--valid-from", "soon").startswith(
        "agentrecall: error: argument --valid-from: expected an ISO 8601 date"
    )
    assert usage_error(db, "search", "x", "--as-of", "later").startswith(
        "agentrecall: error: argument --as-of: expected an ISO 8601 date"
    )
    assert usage_error(db, "supersede").endswith("the following arguments are required: id\n")
    assert db.ok("count", "--include-superseded") == "3\n"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["supersede", "any", "new"], "supersede: '"),
        (["search", "x", "--as-of", "2025-01-01"], "--as-of: '"),
        (["search", "x", "--valid-at", "2025-01-01"], "--valid-at: '"),
        (["list", "--include-superseded"], "--include-superseded: '"),
        (["count", "--as-of", "2025-01-01"], "--as-of: '"),
        (["get", "any", "--include-superseded"], "--include-superseded: '"),
        (["add", "y", "--valid-from", "2025-01-01"], "--valid-from: '"),
    ],
)
def test_a_json_store_refuses_naming_the_stores_that_can(
    js: Cli, argv: list[str], named: str
) -> None:
    err = js.fail(*argv)
    assert err.startswith(f"agentrecall: error: {named}")
    assert "m.json' (JsonFileStore)" in err and "SQLiteStore and PostgresStore" in err
    assert js.ok("count") == "1\n"


def test_stats_of_a_json_store_counts_no_retired(js: Cli) -> None:
    assert js.json("stats")["retired"] is None
    assert "retired        - (this kind of store keeps no retired memories)\n" in js.ok("stats")


def test_the_guide_s_example_runs(tmp_path: Path) -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    [block] = re.findall(r"^```bash\n(lyon=.*?)^```", guide, flags=re.MULTILINE | re.DOTALL)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        env={
            **os.environ,
            "AGENTRECALL_HOME": str(tmp_path / "home"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "COLUMNS": "200",
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    hits = [line for line in out.splitlines() if re.match(r"\d\. \[", line)]
    assert len(hits) == 4, out
    assert BERLIN in hits[0]  # the retired Lyon is left out
    assert sorted(LYON in hit and "retired by" in hit for hit in hits[1:3]) == [False, True]
    assert LYON in hits[3] and "retired by" in hits[3]  # true in the world in June 2024
    assert "supersede by" in out and "moved" in out and "not held back then" in out
    assert "retired        1\n" in out
    assert done.stderr.count("no memory with id") == 1
