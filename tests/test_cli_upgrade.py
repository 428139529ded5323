"""A command that opens a store file written before stemmed search shows its one-time re-index.

On stderr: one note before the work starts, then a progress bar when stderr is a terminal (run
here through a pseudo-terminal); a pipe or a log gets the note alone. Nothing on stdout.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from sqlite_checks import unstemmed_database

from agentrecall.cli.main import main
from agentrecall.migrate import render_bar


def _note(path: Path) -> str:
    return (
        f"agentrecall: note: re-indexing 3 memories of '{path}' for stemmed search; "
        "this runs once\n"
    )


def test_the_reindex_is_one_note_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.db"
    unstemmed_database(path)
    assert main(["--db", str(path), "search", "seating"]) == 0
    out, err = capsys.readouterr()
    assert err == _note(path)
    assert "aisle seat" in out and "seats by the window" in out
    # Once done, it is done: the next command says nothing.
    assert main(["--db", str(path), "list"]) == 0
    assert capsys.readouterr().err == ""


def test_the_reindex_draws_a_bar_on_a_terminal(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    unstemmed_database(path)
    leader, follower = pty.openpty()
    try:
        command = [sys.executable, "-m", "agentrecall.cli", "--db", str(path), "search", "seat"]
        result = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=follower, timeout=60, check=False, text=True
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end is closed: everything was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert result.returncode == 0 and "aisle seat" in result.stdout
    text = shown.decode().replace("\r\n", "\n")
    assert text.startswith(_note(path))
    assert text.endswith(f"\r{render_bar(3, 3)}\n")
