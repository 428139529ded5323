"""Usage mistakes: exit status 2, a message naming the option and the fix, values as typed."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from test_cli import Cli, assert_one_error_line


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


@pytest.fixture
def db(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Cli:
    """A CLI on the SQLite file ``m.db``."""
    return Cli(capsys, ("--db", str(tmp_path / "m.db")))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    """A CLI on the default store."""
    return Cli(capsys)


def stdin_holds(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def usage_line(cli: Cli, *argv: str) -> str:
    """Run ``argv``; expect status 2 and the command's usage; return the error line."""
    err = cli.usage_error(*argv)
    return err.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["add", "x", "--meta", "novalue"], "argument --meta: expected KEY=VALUE"),
        (["add", "x", "--meta", "=v"], "argument --meta: expected KEY=VALUE"),
        (["add", "   "], "argument text: expected the memory's text, got a blank string"),
        (["add", ""], "argument text: expected the memory's text, got an empty string"),
        (["add", "x", "--file", "notes.txt"], "give the content as an argument or with --file"),
        (["update", "some-id", "\t"], "argument text: expected the new content"),
        (["--store", "", "list"], "argument --store: expected a store name"),
        (["--db", " ", "list"], "argument --db: expected an SQLite file's path"),
        (["--path", "", "count"], "argument --path: expected a JSON file's path"),
        (["--dsn", "", "count"], "argument --dsn: expected a PostgreSQL connection string"),
        (["--path", "dir/", "list"], "--path 'dir/': path must name a file"),
        (["add", "x", "--embedder", "nocolon"], "--embedder must be 'local' or MODULE:CALLABLE"),
        (["add", "x", "--embedder", "agentrecall:Nothing"], "--embedder: module 'agentrecall'"),
        (["add", "x", "--metadata", '{"n": 1e999}'], "argument --metadata: expected a JSON"),
    ],
)
def test_every_usage_mistake_is_status_2_naming_the_option(
    cli: Cli, home: Path, argv: list[str], message: str
) -> None:
    assert usage_line(cli, *argv).startswith(f"agentrecall: error: {message}")
    assert not home.exists()


def test_eval_options_that_do_not_go_together_are_a_usage_mistake(cli: Cli, tmp_path: Path) -> None:
    source = tmp_path / "locomo.json"
    source.write_text("[]")
    line = usage_line(cli, "eval", "locomo", str(source), "--store", "json", "--neighbours")
    assert line == "agentrecall: error: --mode and --neighbours need --store sqlite"


def test_an_export_onto_its_own_store_file_is_a_usage_mistake(db: Cli, tmp_path: Path) -> None:
    db.add("a memory")
    line = usage_line(db, "export", "--output", str(tmp_path / "m.db"))
    assert "--output" in line and "that is the store's own file" in line


def test_a_usage_mistake_with_json_is_status_2_in_one_json_object(db: Cli) -> None:
    code, out, err = db("--json", "add", "x", "--meta", "novalue")
    assert (code, out) == (2, "")
    assert err.startswith('{"error": "argument --meta: expected KEY=VALUE') and '"code": 2}' in err


@pytest.mark.parametrize("value", ["1e999", "-1e999", "1E400"])
def test_a_meta_number_no_float_can_hold_is_kept_as_typed(db: Cli, value: str) -> None:
    memory_id = db.add("x", "--meta", f"big={value}", "--meta", "small=1e3")
    assert db.json("get", memory_id)["metadata"] == {"big": value, "small": 1000.0}


@pytest.mark.parametrize("command", [["list"], ["add", "x"], ["search", "x"]])
@pytest.mark.parametrize(
    ("option", "suggested"), [("--db", "memory.db"), ("--path", "memory.json")]
)
def test_a_directory_given_as_the_store_file_is_named_with_the_fix(
    cli: Cli, tmp_path: Path, command: list[str], option: str, suggested: str
) -> None:
    directory = tmp_path / "adir"
    directory.mkdir()
    err = cli.fail(option, str(directory), *command)
    assert f"error: {option} '{directory}' is a directory; name the " in err
    assert f"such as '{directory / suggested}'" in err
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "fixed"),
    [
        (["search", "-dark"], "agentrecall search -- -dark"),
        (["search", "-night", "-n", "3"], "agentrecall search -n 3 -- -night"),
        (["add", "-dark", "--meta", "k=v"], "agentrecall add --meta k=v -- -dark"),
        (["delete", "-x"], "agentrecall delete -- -x"),
    ],
)
def test_a_text_that_starts_with_a_dash_gets_the_hint_about_double_dash(
    cli: Cli, argv: list[str], fixed: str
) -> None:
    line = usage_line(cli, *argv)
    assert line.endswith(f"put it after '--': {fixed}")


def test_the_hint_is_not_given_for_other_mistakes(cli: Cli) -> None:
    assert "'--'" not in usage_line(cli, "list", "-x")  # list takes no text
    assert "'--'" not in usage_line(cli, "search", "x", "-n", "0")


def test_a_query_after_double_dash_is_searched(cli: Cli) -> None:
    memory_id = cli.add("-dark mode everywhere")
    hits = cli.json("search", "--", "-dark")
    assert [hit["id"] for hit in hits] == [memory_id]


def test_search_dash_reads_the_query_from_stdin(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    memory_id = cli.add("The user prefers aisle seats")
    cli.add("Standup is at 9:30")
    stdin_holds(monkeypatch, b"aisle seats\n")
    hits = cli.json("search", "-")
    assert [hit["id"] for hit in hits] == [memory_id]


@pytest.mark.parametrize(("data", "said"), [(b"", "is empty"), (b"  \n\t\n", "holds only blanks")])
def test_blank_standard_input_is_refused_naming_it(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, said: str
) -> None:
    stdin_holds(monkeypatch, data)
    err = cli.fail("add", "-")
    assert err == f"agentrecall: error: standard input {said}\n"
    assert_one_error_line(err)
    assert not home.exists()
