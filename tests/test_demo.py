"""``make demo``: its three processes run, and the facts land in the SQLite database."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo.py"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """Run a copy of the demo, so that its ``.demo`` directory lands in a temporary checkout."""
    checkout = tmp_path_factory.mktemp("checkout")
    (checkout / "examples").mkdir()
    shutil.copy(DEMO, checkout / "examples" / "demo.py")
    result = subprocess.run(
        [sys.executable, str(checkout / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=checkout,
    )
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    return result.stdout, checkout / ".demo"


def stored(path: Path) -> list[tuple[str, dict[str, str] | None]]:
    """The memories of an SQLite store file, oldest first, read with ``sqlite3`` only."""
    with closing(sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)) as db:
        rows = db.execute("SELECT content, metadata FROM memories ORDER BY seq").fetchall()
    return [
        (content, None if metadata is None else json.loads(metadata)) for content, metadata in rows
    ]


def test_the_facts_and_the_extracted_fact_are_in_the_sqlite_database(
    demo: tuple[str, Path],
) -> None:
    _, directory = demo
    assert sorted(p.name for p in directory.iterdir()) == ["conversations.db", "memory.db"]
    assert stored(directory / "memory.db") == [
        ("The user prefers aisle seats on long flights.", {"topic": "travel"}),
        ("The user is allergic to peanuts.", {"topic": "health"}),
        ("The user's daughter Mia plays the violin.", {"topic": "family"}),
        ("The team ships the mobile app release every second Thursday.", {"topic": "work"}),
        ("The user's favourite editor is Neovim with a dark theme.", {"topic": "tools"}),
        ("The user lives in Lisbon and works remotely.", {"topic": "home"}),
        ("The user is flying from Lisbon to Porto on Friday.", None),
    ]


def test_each_process_reports_what_it_did(demo: tuple[str, Path]) -> None:
    out, directory = demo
    remembered, recalled, agent = (part.strip() for part in out.split("== ")[1:])
    assert remembered.startswith("Process 1 remembers")
    assert remembered.count("  stored ...") == 6
    assert "9 messages written, 6 kept" in remembered

    assert recalled.startswith("Process 2 recalls")
    assert f"6 memories found in {directory / 'memory.db'}" in recalled
    # Each question's best hit, with its BM25 score rounded for reading.
    assert re.findall(r"^ {4}1\. score \d+\.\d\d  (.+)$", recalled, re.MULTILINE) == [
        "The user prefers aisle seats on long flights.",
        "The user is allergic to peanuts.",
        "The user's daughter Mia plays the violin.",
        "The team ships the mobile app release every second Thursday.",
    ]
    assert "assistant: Booked: Lisbon to Porto, Friday 9:40, seat 14C." in recalled

    assert agent.startswith("Process 3")
    assert '<entry source="demo">The user prefers aisle seats on long flights.</entry>' in agent
    assert "extracted and stored: The user is flying from Lisbon to Porto on Friday." in agent
    assert "7 memories in memory.db now" in agent


def test_the_command_it_prints_at_the_end_finds_the_answer(demo: tuple[str, Path]) -> None:
    out, directory = demo
    last = out.rstrip("\n").rsplit("\n", 1)[1]
    assert "--db .demo/memory.db search" in last  # relative to where `make demo` runs
    done = subprocess.run(
        shlex.split(last),
        cwd=directory.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The table cuts content to the width in COLUMNS, which a test runner may set.
    assert done.stdout.startswith("1. [") and "daughter Mia" in done.stdout.splitlines()[0]
