from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrecall.cli.main import main

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err

    def ok(self, *argv: str) -> str:
        code, out, err = self(*argv)
        assert (code, err) == (0, ""), (argv, code, err)
        return out

    def json(self, *argv: str) -> Any:
        return json.loads(self.ok("--json", *argv))

    def add(self, text: str, *extra: str) -> str:
        return self.json("add", text, *extra)["id"]

    def fail(self, *argv: str) -> str:
        code, out, err = self(*argv)
        assert code == 1, (argv, code, out, err)
        assert out == ""
        assert_one_error_line(err)
        return err

    def usage_error(self, *argv: str) -> str:
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(list(argv))
        assert exit_info.value.code == 2
        out, err = self.capsys.readouterr()
        assert out == ""
        assert "Traceback" not in err
        return err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


def assert_one_error_line(err: str) -> None:
    assert err.endswith("\n")
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("agentrecall: error: ")
    assert "Traceback" not in err


def store_file(home: Path, name: str = "memory") -> Path:
    return home / "memory" / f"{name}.json"


def records(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


# --- add ------------------------------------------------------------------------------------


def test_add_prints_the_new_id(cli: Cli, home: Path) -> None:
    out = cli.ok("add", "User prefers aisle seats")
    memory_id = out.strip()
    assert out == memory_id + "\n"
    assert UUID.match(memory_id)
    saved = records(store_file(home))
    assert len(saved) == 1
    assert saved[0]["id"] == memory_id
    assert saved[0]["content"] == "User prefers aisle seats"
    assert "metadata" not in saved[0]


def test_add_json_output(cli: Cli) -> None:
    result = cli.json("add", "hello")
    assert list(result) == ["id"]
    assert UUID.match(result["id"])


def test_add_metadata_values_parse_as_json_or_stay_strings(cli: Cli, home: Path) -> None:
    cli.add(
        "with metadata",
        "--meta",
        "count=3",
        "--meta",
        "ratio=0.5",
        "--meta",
        "flag=true",
        "--meta",
        "nothing=null",
        "--meta",
        'tags=["a", "b"]',
        "--meta",
        'nested={"x": {"y": 1}}',
        "--meta",
        'quoted="42"',
        "--meta",
        "word=hello",
        "--meta",
        "empty=",
        "--meta",
        "eq=a=b",
        "--meta",
        "broken={not json",
        "--meta",
        "spaced=two words",
    )
    assert records(store_file(home))[0]["metadata"] == {
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "nothing": None,
        "tags": ["a", "b"],
        "nested": {"x": {"y": 1}},
        "quoted": "42",
        "word": "hello",
        "empty": "",
        "eq": "a=b",
        "broken": "{not json",
        "spaced": "two words",
    }


def test_add_repeated_meta_key_keeps_the_last(cli: Cli, home: Path) -> None:
    cli.add("x", "--meta", "k=1", "--meta", "k=2")
    assert records(store_file(home))[0]["metadata"] == {"k": 2}


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_add_meta_values_that_are_not_json_stay_strings(cli: Cli, home: Path, value: str) -> None:
    # NaN and Infinity are not JSON (Python's json module accepts them anyway): like any other
    # text that is not JSON they must be kept as strings, not turned into a refused float.
    cli.add("x", "--meta", f"v={value}")
    assert records(store_file(home))[0]["metadata"] == {"v": value}


def test_add_unicode_round_trips(cli: Cli, home: Path) -> None:
    cli.add("Ünïcödé café ☕", "--meta", "lang=français")
    saved = store_file(home).read_text(encoding="utf-8")
    assert "Ünïcödé café ☕" in saved
    listed = cli.json("list")
    assert listed[0]["content"] == "Ünïcödé café ☕"
    assert listed[0]["metadata"] == {"lang": "français"}


def test_add_dedup_returns_the_same_id(cli: Cli, home: Path) -> None:
    first = cli.add("User likes tea", "--meta", "v=1")
    again = cli.add("User likes tea", "--meta", "v=2")
    padded = cli.add("   User likes tea \n")
    assert first == again == padded
    saved = records(store_file(home))
    assert len(saved) == 1
    # The metadata of a deduplicated add is dropped.
    assert saved[0]["metadata"] == {"v": 1}
    # Dedup is case-sensitive.
    assert cli.add("user likes tea") != first


def test_add_content_is_stored_unstripped(cli: Cli, home: Path) -> None:
    cli.add("  padded  ")
    assert records(store_file(home))[0]["content"] == "  padded  "


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_add_blank_text_is_refused(cli: Cli, home: Path, text: str) -> None:
    err = cli.fail("add", text)
    assert "content" in err
    assert not store_file(home).exists()


@pytest.mark.parametrize("pair", ["novalue", "=value", ""])
def test_add_bad_meta_is_refused(cli: Cli, home: Path, pair: str) -> None:
    err = cli.fail("add", "x", "--meta", pair)
    assert "--meta" in err
    assert "KEY=VALUE" in err
    assert not store_file(home).exists()


def test_add_without_text_is_a_usage_error(cli: Cli) -> None:
    err = cli.usage_error("add")
    assert "text" in err


# --- search ---------------------------------------------------------------------------------


def test_search_text_output(cli: Cli) -> None:
    tea = cli.add("User drinks green tea")
    coffee = cli.add("User drinks coffee")
    cli.add("Unrelated fact")
    out = cli.ok("search", "green tea drinks")
    assert out == f"1. [3] User drinks green tea  ({tea})\n2. [1] User drinks coffee  ({coffee})\n"


def test_search_json_output(cli: Cli) -> None:
    tea = cli.add("User drinks green tea", "--meta", "source=chat", "--meta", "n=2")
    coffee = cli.add("User drinks coffee")
    hits = cli.json("search", "green tea drinks")
    assert hits == [
        {
            "id": tea,
            "score": 3,
            "content": "User drinks green tea",
            "metadata": {"source": "chat", "n": 2},
        },
        {"id": coffee, "score": 1, "content": "User drinks coffee", "metadata": {}},
    ]
    for hit in hits:
        assert "_relevanceScore" not in hit["metadata"]


def test_search_does_not_change_the_file(cli: Cli, home: Path) -> None:
    cli.add("something to find", "--meta", "k=v")
    before = store_file(home).read_bytes()
    cli.ok("search", "find")
    cli.ok("--json", "search", "find")
    assert store_file(home).read_bytes() == before


def test_search_limit(cli: Cli) -> None:
    for i in range(12):
        cli.add(f"fact number {i} about apples")
    assert len(cli.json("search", "apples")) == 10
    assert len(cli.json("search", "apples", "-n", "3")) == 3
    assert len(cli.json("search", "-n", "1", "apples")) == 1
    assert len(cli.json("search", "apples", "-n", "50")) == 12
    assert len(cli.ok("search", "apples", "-n", "2").splitlines()) == 2


def test_search_ties_rank_newest_first(cli: Cli) -> None:
    old = cli.add("apples one")
    new = cli.add("apples two")
    assert [hit["id"] for hit in cli.json("search", "apples")] == [new, old]


@pytest.mark.parametrize("n", ["0", "-1"])
def test_search_limit_below_one_is_refused(cli: Cli, n: str) -> None:
    cli.add("apples")
    err = cli.usage_error("search", "apples", "-n", n)
    assert "-n" in err and n in err


def test_search_limit_not_a_number_is_a_usage_error(cli: Cli) -> None:
    err = cli.usage_error("search", "apples", "-n", "many")
    assert "-n" in err


def test_search_no_match_messages(cli: Cli) -> None:
    assert cli.ok("search", "anything") == "no memories match\n"
    assert cli.json("search", "anything") == []
    cli.add("bananas")
    assert cli.ok("search", "apples") == "no memories match\n"
    assert cli.ok("search", "  ?! ") == "no memories match\n"
    assert cli.json("search", "apples") == []


def test_search_and_list_on_a_fresh_home_create_nothing(cli: Cli, home: Path) -> None:
    cli.ok("search", "x")
    cli.ok("list")
    assert not home.exists()


# --- list -----------------------------------------------------------------------------------


def test_list_text_output_oldest_first(cli: Cli, home: Path) -> None:
    first = cli.add("first memory")
    second = cli.add("second memory")
    third = cli.add("third memory")
    saved = records(store_file(home))
    out = cli.ok("list")
    assert out == "".join(
        f"{r['createdAt']}  {i}  {r['content']}\n"
        for r, i in zip(saved, [first, second, third], strict=True)
    )
    assert [line.split("  ")[2] for line in out.splitlines()] == [
        "first memory",
        "second memory",
        "third memory",
    ]


def test_list_json_output(cli: Cli, home: Path) -> None:
    first = cli.add("first", "--meta", "k=1")
    second = cli.add("second")
    saved = records(store_file(home))
    assert cli.json("list") == [
        {
            "id": first,
            "content": "first",
            "created_at": saved[0]["createdAt"],
            "metadata": {"k": 1},
        },
        {"id": second, "content": "second", "created_at": saved[1]["createdAt"], "metadata": None},
    ]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", saved[0]["createdAt"])


def test_list_empty_messages(cli: Cli) -> None:
    assert cli.ok("list") == "the store is empty\n"
    assert cli.json("list") == []


# --- delete ---------------------------------------------------------------------------------


def test_delete_existing(cli: Cli, home: Path) -> None:
    keep = cli.add("keep me")
    doomed = cli.add("forget me")
    code, out, err = cli("delete", doomed)
    assert (code, out, err) == (0, f"deleted {doomed}\n", "")
    assert [r["id"] for r in records(store_file(home))] == [keep]
    assert [row["id"] for row in cli.json("list")] == [keep]
    assert cli.json("search", "forget") == []


def test_delete_json_output(cli: Cli) -> None:
    doomed = cli.add("forget me")
    assert cli.json("delete", doomed) == {"deleted": doomed}
    assert cli.json("list") == []


def test_delete_unknown_id(cli: Cli, home: Path) -> None:
    cli.add("keep me")
    before = store_file(home).read_bytes()
    err = cli.fail("delete", "no-such-id")
    assert err == "agentrecall: error: no memory with id 'no-such-id'\n"
    assert store_file(home).read_bytes() == before


def test_delete_twice(cli: Cli) -> None:
    doomed = cli.add("forget me")
    cli.ok("delete", doomed)
    err = cli.fail("delete", doomed)
    assert doomed in err


def test_delete_on_empty_store(cli: Cli, home: Path) -> None:
    err = cli.fail("delete", "abc")
    assert "abc" in err
    assert not store_file(home).exists()


# --- choosing the store ---------------------------------------------------------------------


def test_default_store_is_memory_json_under_home(cli: Cli, home: Path) -> None:
    cli.add("x")
    assert store_file(home).is_file()
    assert sorted(p.name for p in (home / "memory").iterdir() if not p.name.startswith(".")) == [
        "memory.json"
    ]


def test_store_option_picks_a_named_file(cli: Cli, home: Path) -> None:
    work = cli.add("work fact", "--store", "work")
    personal = cli.add("personal fact", "--store", "personal")
    assert [r["id"] for r in records(store_file(home, "work"))] == [work]
    assert [r["id"] for r in records(store_file(home, "personal"))] == [personal]
    assert not store_file(home).exists()
    assert [row["id"] for row in cli.json("list", "--store", "work")] == [work]
    assert cli.json("search", "fact", "--store", "personal")[0]["id"] == personal
    assert cli.json("list") == []


def test_store_name_is_made_file_safe(cli: Cli, home: Path) -> None:
    cli.add("x", "--store", "team/notes")
    cli.add("y", "--store", "../escape")
    assert store_file(home, "team_notes").is_file()
    assert store_file(home, "__escape").is_file()
    assert sorted(p.name for p in home.iterdir()) == ["memory"]


def test_path_option_uses_that_file(cli: Cli, home: Path, tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "deeper" / "mine.json"
    memory_id = cli.add("path fact", "--path", str(path))
    assert [r["id"] for r in records(path)] == [memory_id]
    assert not home.exists()
    assert [row["id"] for row in cli.json("--path", str(path), "list")] == [memory_id]
    assert cli.json("list") == []
    cli.ok("--path", str(path), "delete", memory_id)
    assert records(path) == []


def test_relative_path_is_resolved_against_the_cwd(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cli.add("relative", "--path", "rel.json")
    assert records(tmp_path / "rel.json")[0]["content"] == "relative"


@pytest.mark.parametrize(
    "argv",
    [
        ["--store", "s", "--json", "add", "hello"],
        ["add", "hello", "--store", "s", "--json"],
        ["--json", "add", "--store", "s", "hello"],
        ["--store", "s", "add", "--json", "hello"],
    ],
)
def test_options_before_or_after_the_command(cli: Cli, home: Path, argv: list[str]) -> None:
    result = json.loads(cli.ok(*argv))
    assert [r["id"] for r in records(store_file(home, "s"))] == [result["id"]]
    assert not store_file(home).exists()


def test_path_before_the_command(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    cli.ok("--path", str(path), "add", "x")
    assert records(path)[0]["content"] == "x"
    assert json.loads(cli.ok("list", "--path", str(path), "--json"))[0]["content"] == "x"


@pytest.mark.parametrize(
    "argv",
    [
        ["--store", "s", "--path", "{path}", "add", "x"],
        ["add", "x", "--store", "s", "--path", "{path}"],
        ["--store", "s", "add", "x", "--path", "{path}"],
        ["--path", "{path}", "list", "--store", "s"],
    ],
)
def test_store_and_path_together_are_refused(
    cli: Cli, home: Path, tmp_path: Path, argv: list[str]
) -> None:
    path = tmp_path / "p.json"
    err = cli.usage_error(*(arg.replace("{path}", str(path)) for arg in argv))
    assert "--path" in err
    assert "--store" in err
    assert not path.exists()
    assert not home.exists()


def test_no_command_is_a_usage_error(cli: Cli) -> None:
    cli.usage_error()
    cli.usage_error("--json")
    cli.usage_error("forget", "x")


# --- unusable files -------------------------------------------------------------------------


CORRUPT = {
    "truncated": b'[\n  {"id": "a", "content": "x"',
    "not-an-array": b'{"id": "a"}',
    "bad-record": b'[{"id": 1, "content": "x", "createdAt": "t"}]',
    "bad-metadata": b'[{"id": "a", "content": "x", "createdAt": "t", "metadata": [1]}]',
    "not-utf8": b'["\xff\xfe"]',
    "empty": b"",
}

COMMANDS = [["list"], ["search", "x"], ["add", "x"], ["delete", "a"]]


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_corrupt_file_is_reported_and_left_unchanged(
    cli: Cli, tmp_path: Path, content: bytes, command: list[str]
) -> None:
    path = tmp_path / "corrupt.json"
    path.write_bytes(content)
    err = cli.fail("--path", str(path), *command)
    assert str(path) in err
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".__")) == [
        "corrupt.json"
    ]


def test_corrupt_default_store_names_its_file(cli: Cli, home: Path) -> None:
    path = store_file(home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{oops")
    err = cli.fail("add", "x")
    assert str(path) in err
    assert path.read_bytes() == b"{oops"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_path_that_is_a_directory(cli: Cli, tmp_path: Path, command: list[str]) -> None:
    directory = tmp_path / "a-directory.json"
    (directory / "inside").mkdir(parents=True)
    err = cli.fail("--path", str(directory), *command)
    assert str(directory) in err
    assert directory.is_dir()
    assert [p.name for p in directory.iterdir()] == ["inside"]


def test_store_below_a_regular_file_cannot_be_written(cli: Cli, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"x")
    path = blocker / "store.json"
    err = cli.fail("--path", str(path), "add", "x")
    assert str(path) in err
    assert blocker.read_bytes() == b"x"


@pytest.mark.parametrize("path", ["", "   ", "dir/", "."])
def test_path_that_names_no_file(cli: Cli, path: str) -> None:
    err = cli.fail("--path", path, "list")
    assert "path" in err


# --- the installed command ------------------------------------------------------------------


def run(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTRECALL_HOME": str(home), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=60, check=False)


def console_script() -> Path:
    script = Path(sys.executable).with_name("agentrecall")
    if not script.exists():
        pytest.skip("the agentrecall console script is not installed next to this Python")
    return script


def test_console_script_end_to_end(home: Path) -> None:
    script = str(console_script())
    added = run([script, "add", "User prefers aisle seats", "--meta", "source=cli"], home)
    assert (added.returncode, added.stderr) == (0, "")
    memory_id = added.stdout.strip()
    assert UUID.match(memory_id)

    found = run([script, "--json", "search", "aisle seats", "-n", "1"], home)
    assert found.returncode == 0
    assert json.loads(found.stdout) == [
        {
            "id": memory_id,
            "score": 2,
            "content": "User prefers aisle seats",
            "metadata": {"source": "cli"},
        }
    ]

    deleted = run([script, "delete", memory_id], home)
    assert (deleted.returncode, deleted.stdout) == (0, f"deleted {memory_id}\n")
    listed = run([script, "list"], home)
    assert (listed.returncode, listed.stdout) == (0, "the store is empty\n")


def test_python_dash_m_reports_errors_without_traceback(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "corrupt.json"
    path.write_bytes(b"[{")
    result = run([sys.executable, "-m", "agentrecall.cli", "--path", str(path), "list"], home)
    assert result.returncode == 1
    assert result.stdout == ""
    assert_one_error_line(result.stderr)
    assert str(path) in result.stderr
    assert path.read_bytes() == b"[{"

    missing = run([sys.executable, "-m", "agentrecall.cli", "delete", "nope"], home)
    assert missing.returncode == 1
    assert missing.stderr == "agentrecall: error: no memory with id 'nope'\n"


def test_python_dash_m_usage_error_exits_2(home: Path) -> None:
    result = run([sys.executable, "-m", "agentrecall.cli", "search", "x", "-n", "lots"], home)
    assert result.returncode == 2
    assert "usage:" in result.stderr
    assert "Traceback" not in result.stderr


# --- an SQLite store --------------------------------------------------------------------------


def test_every_command_works_on_an_sqlite_file(cli: Cli, tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    first = cli.add("The user prefers aisle seats", "--db", db, "--meta", "topic=travel")
    assert cli.add("The user prefers aisle seats", "--db", db) == first
    cli.add("The user is allergic to peanuts", "--db", db)
    hits = cli.json("search", "which seats does the user prefer", "--db", db, "-n", "1")
    assert [(h["id"], h["content"], h["metadata"]) for h in hits] == [
        (first, "The user prefers aisle seats", {"topic": "travel"})
    ]
    assert hits[0]["score"] > 0
    assert [r["content"] for r in cli.json("list", "--db", db)] == [
        "The user prefers aisle seats",
        "The user is allergic to peanuts",
    ]
    assert cli.ok("delete", first, "--db", db) == f"deleted {first}\n"
    assert len(cli.json("--db", db, "list")) == 1


def test_db_goes_with_no_other_store_option(cli: Cli, tmp_path: Path) -> None:
    err = cli.usage_error("--db", str(tmp_path / "m.db"), "list", "--store", "s")
    assert "--db" in err and "--store" in err


def test_a_non_database_file_given_as_db_is_one_clear_line(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text("[]")
    err = cli.fail("--db", str(path), "list")
    assert "notes.json" in err and "not an SQLite database" in err
    assert path.read_text() == "[]"
