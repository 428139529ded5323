from __future__ import annotations

import ctypes
import importlib.metadata
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agentrecall
from agentrecall import SQLiteStore, SyncStore
from agentrecall.cli.main import main
from agentrecall.migrate import DEFAULT_BATCH
from agentrecall.storage.local import LOCK_PREFIX

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SQLITE_HEADER = b"SQLite format 3\x00"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


class Cli:
    """Runs ``main`` in-process; ``options`` (a store choice) go before every command line."""

    def __init__(self, capsys: pytest.CaptureFixture[str], options: tuple[str, ...] = ()) -> None:
        self.capsys = capsys
        self.options = options

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main([*self.options, *argv])
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
        code, out, err = self(*argv)
        assert (code, out) == (2, ""), (argv, code, out, err)
        assert err.startswith("usage: agentrecall")
        assert_one_error_line(err.splitlines(keepends=True)[-1])
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


def json_error(message: str, code: int) -> str:
    """What ``--json`` writes on stderr for an error."""
    return json.dumps({"error": message, "code": code}, ensure_ascii=False) + "\n"


UNSET_FIELDS = [
    "updated_at",
    "expires_at",
    "user_id",
    "agent_id",
    "session_id",
    "invalidated_at",
    "superseded_by",
    "valid_from",
    "valid_until",
]
"""The fields of a memory ``--json`` prints as ``null`` when nothing set them."""


def db_file(home: Path, name: str = "memory") -> Path:
    """Where the default store of ``name`` lives: ``$AGENTRECALL_HOME/memory/<name>.db``."""
    return home / "memory" / f"{name}.db"


def records(path: Path) -> list[dict[str, Any]]:
    """The memories of an SQLite store file, oldest first, read with ``sqlite3`` only."""
    assert path.read_bytes().startswith(SQLITE_HEADER)
    with closing(sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)) as db:
        rows = db.execute(
            "SELECT id, content, metadata, created_at FROM memories ORDER BY seq"
        ).fetchall()
    return [
        {
            "id": memory_id,
            "content": content,
            "metadata": None if metadata is None else json.loads(metadata),
            "created_at": created_at,
        }
        for memory_id, content, metadata, created_at in rows
    ]


def json_records(path: Path) -> list[dict[str, Any]]:
    """The memories of a JSON store file, in the same shape as :func:`records`."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    return [
        {
            "id": r["id"],
            "content": r["content"],
            "metadata": r.get("metadata"),
            "created_at": r["createdAt"],
        }
        for r in saved
    ]


@dataclass
class Target:
    """One way of choosing the store on the command line, and the file it must write."""

    kind: str
    cli: Cli
    file: Path

    def records(self) -> list[dict[str, Any]]:
        return json_records(self.file) if self.kind == "json" else records(self.file)

    def make_empty(self) -> None:
        """Leave an empty store: no file for a store chosen by name, an empty store file else."""
        if self.cli.options and self.cli.options[0] in ("--path", "--db"):
            memory_id = self.cli.add("placeholder")
            self.cli.ok("delete", memory_id)


TARGETS: dict[str, Callable[[Path, Path], tuple[str, tuple[str, ...], Path]]] = {
    "default": lambda home, tmp: ("sqlite", (), db_file(home)),
    "store": lambda home, tmp: ("sqlite", ("--store", "team"), db_file(home, "team")),
    "path": lambda home, tmp: ("json", ("--path", str(tmp / "m.json")), tmp / "m.json"),
    "db": lambda home, tmp: ("sqlite", ("--db", str(tmp / "m.db")), tmp / "m.db"),
}


@pytest.fixture(params=sorted(TARGETS))
def target(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> Target:
    kind, options, file = TARGETS[request.param](home, tmp_path)
    return Target(kind, Cli(capsys, options), file)


def generic(text: str) -> str:
    """Text output with its scores, ids and timestamps replaced, to compare shapes."""
    text = re.sub(r"\[\d+(\.\d{3})?\]", "[SCORE]", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "TIME", text)


# --- add ------------------------------------------------------------------------------------


def test_add_prints_the_new_id(target: Target) -> None:
    out = target.cli.ok("add", "User prefers aisle seats")
    memory_id = out.strip()
    assert out == memory_id + "\n"
    assert UUID.match(memory_id)
    (saved,) = target.records()
    assert saved["id"] == memory_id
    assert saved["content"] == "User prefers aisle seats"
    assert saved["metadata"] is None
    assert TIMESTAMP.match(saved["created_at"])


def test_add_json_output(cli: Cli) -> None:
    result = cli.json("add", "hello")
    assert list(result) == ["id"]
    assert UUID.match(result["id"])


def test_add_metadata_values_parse_as_json_or_stay_strings(target: Target) -> None:
    target.cli.add(
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
    assert target.records()[0]["metadata"] == {
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
    assert records(db_file(home))[0]["metadata"] == {"k": 2}


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_add_meta_values_that_are_not_json_stay_strings(cli: Cli, home: Path, value: str) -> None:
    # NaN and Infinity are not JSON (Python's json module accepts them anyway): like any other
    # text that is not JSON they must be kept as strings, not turned into a refused float.
    cli.add("x", "--meta", f"v={value}")
    assert records(db_file(home))[0]["metadata"] == {"v": value}


def test_add_unicode_round_trips(target: Target) -> None:
    target.cli.add("Ünïcödé café ☕", "--meta", "lang=français")
    (saved,) = target.records()
    assert (saved["content"], saved["metadata"]) == ("Ünïcödé café ☕", {"lang": "français"})
    listed = target.cli.json("list")
    assert listed[0]["content"] == "Ünïcödé café ☕"
    assert listed[0]["metadata"] == {"lang": "français"}


def test_add_dedup_returns_the_same_id(target: Target) -> None:
    first = target.cli.add("User likes tea", "--meta", "v=1")
    again = target.cli.add("User likes tea", "--meta", "v=2")
    padded = target.cli.add("   User likes tea \n")
    assert first == again == padded
    (saved,) = target.records()
    # The metadata of a deduplicated add is dropped.
    assert saved["metadata"] == {"v": 1}
    # Dedup is case-sensitive.
    assert target.cli.add("user likes tea") != first


def test_add_content_is_stored_unstripped(target: Target) -> None:
    target.cli.add("  padded  ")
    assert target.records()[0]["content"] == "  padded  "


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_add_blank_text_is_a_usage_error(target: Target, text: str) -> None:
    err = target.cli.usage_error("add", text)
    assert "argument text: expected the memory's text" in err
    assert not target.file.exists()


@pytest.mark.parametrize("pair", ["novalue", "=value", ""])
def test_add_bad_meta_is_a_usage_error(target: Target, pair: str) -> None:
    err = target.cli.usage_error("add", "x", "--meta", pair)
    assert f"argument --meta: expected KEY=VALUE such as topic=travel, got {pair!r}" in err
    assert not target.file.exists()


def test_add_without_text_is_a_usage_error(cli: Cli) -> None:
    err = cli.usage_error("add")
    assert "text" in err


# --- search ---------------------------------------------------------------------------------


def test_search_text_output_of_a_json_store(cli: Cli, tmp_path: Path) -> None:
    json_cli = Cli(cli.capsys, ("--path", str(tmp_path / "m.json")))
    tea = json_cli.add("User drinks green tea")
    coffee = json_cli.add("User drinks coffee")
    json_cli.add("Unrelated fact")
    out = json_cli.ok("search", "green tea drinks")
    assert out == f"1. [3] User drinks green tea  ({tea})\n2. [1] User drinks coffee  ({coffee})\n"


@pytest.mark.parametrize("options", [(), ("--db", "{tmp}/m.db")], ids=["default", "db"])
def test_search_text_output_of_an_sqlite_store(
    cli: Cli, tmp_path: Path, options: tuple[str, ...]
) -> None:
    sqlite_cli = Cli(cli.capsys, tuple(o.replace("{tmp}", str(tmp_path)) for o in options))
    tea = sqlite_cli.add("User drinks green tea")
    coffee = sqlite_cli.add("User drinks coffee")
    sqlite_cli.add("Unrelated fact")
    out = sqlite_cli.ok("search", "green tea drinks")
    scores = [hit["score"] for hit in sqlite_cli.json("search", "green tea drinks")]
    # BM25 scores are printed with three decimals; --json keeps the full float.
    assert out == (
        f"1. [{scores[0]:.3f}] User drinks green tea  ({tea})\n"
        f"2. [{scores[1]:.3f}] User drinks coffee  ({coffee})\n"
    )
    assert re.fullmatch(r"(\d\. \[\d+\.\d{3}\] [^\n]+\n){2}", out)


def test_search_json_output(target: Target) -> None:
    tea = target.cli.add("User drinks green tea", "--meta", "source=chat", "--meta", "n=2")
    coffee = target.cli.add("User drinks coffee")
    hits = target.cli.json("search", "green tea drinks")
    assert [{k: v for k, v in hit.items() if k != "score"} for hit in hits] == [
        {"id": tea, "content": "User drinks green tea", "metadata": {"source": "chat", "n": 2}},
        {"id": coffee, "content": "User drinks coffee", "metadata": {}},
    ]
    assert [list(hit) for hit in hits] == [["id", "score", "content", "metadata"]] * 2
    for hit in hits:
        assert "_relevanceScore" not in hit["metadata"]
    if target.kind == "json":
        assert [hit["score"] for hit in hits] == [3, 1]
    else:
        assert hits[0]["score"] > hits[1]["score"] > 0
        assert all(isinstance(hit["score"], float) for hit in hits)


def test_search_does_not_change_the_file(target: Target) -> None:
    target.cli.add("something to find", "--meta", "k=v")
    before = target.file.read_bytes()
    siblings = sorted(p.name for p in target.file.parent.iterdir())
    target.cli.ok("search", "find")
    target.cli.ok("--json", "search", "find")
    target.cli.ok("list")
    assert target.file.read_bytes() == before
    assert sorted(p.name for p in target.file.parent.iterdir()) == siblings


def test_search_limit(target: Target) -> None:
    for i in range(12):
        target.cli.add(f"fact number {i} about apples")
    assert len(target.cli.json("search", "apples")) == 10
    assert len(target.cli.json("search", "apples", "-n", "3")) == 3
    assert len(target.cli.json("search", "-n", "1", "apples")) == 1
    assert len(target.cli.json("search", "apples", "-n", "50")) == 12
    assert len(target.cli.ok("search", "apples", "-n", "2").splitlines()) == 2


def test_search_ties_rank_newest_first(target: Target) -> None:
    old = target.cli.add("apples one")
    new = target.cli.add("apples two")
    assert [hit["id"] for hit in target.cli.json("search", "apples")] == [new, old]


@pytest.mark.parametrize("n", ["0", "-1"])
def test_search_limit_below_one_is_refused(cli: Cli, n: str) -> None:
    cli.add("apples")
    err = cli.usage_error("search", "apples", "-n", n)
    assert "-n" in err and n in err


def test_search_limit_not_a_number_is_a_usage_error(cli: Cli) -> None:
    err = cli.usage_error("search", "apples", "-n", "many")
    assert "-n" in err


def test_search_no_match_messages(target: Target) -> None:
    target.make_empty()
    assert target.cli.ok("search", "anything") == "no memories match\n"
    assert target.cli.json("search", "anything") == []
    target.cli.add("bananas")
    assert target.cli.ok("search", "apples") == "no memories match\n"
    assert target.cli.ok("search", "  ?! ") == "no memories match\n"
    assert target.cli.json("search", "apples") == []


@pytest.mark.parametrize("store", [(), ("--store", "team")])
def test_reading_a_store_name_without_a_file_creates_nothing(
    capsys: pytest.CaptureFixture[str], home: Path, store: tuple[str, ...]
) -> None:
    cli = Cli(capsys, store)
    assert cli.ok("search", "x") == "no memories match\n"
    assert cli.ok("list") == "the store is empty\n"
    assert cli.fail("delete", "x") == "agentrecall: error: no memory with id 'x'\n"
    assert not home.exists()


@pytest.mark.parametrize("option", ["--path", "--db"])
@pytest.mark.parametrize("command", [["search", "x"], ["list"], ["delete", "x"]])
def test_reading_a_missing_store_file_says_there_is_no_store(
    cli: Cli, tmp_path: Path, option: str, command: list[str]
) -> None:
    path = tmp_path / ("mistyped.json" if option == "--path" else "mistyped.db")
    err = cli.fail(option, str(path), *command)
    assert err == (
        f"agentrecall: error: no store at '{path}': the file does not exist "
        "(check the path; 'add' creates it)\n"
    )
    assert list(tmp_path.iterdir()) == []


# --- list -----------------------------------------------------------------------------------


def test_list_text_output_newest_first_or_oldest_first(target: Target) -> None:
    first = target.cli.add("first memory")
    second = target.cli.add("second memory")
    third = target.cli.add("third memory")
    saved = target.records()
    assert [r["id"] for r in saved] == [first, second, third]
    out = target.cli.ok("list", "--oldest")
    assert out == "".join(f"{r['created_at']}  {r['id']}  {r['content']}\n" for r in saved)
    assert [line.split("  ")[2] for line in out.splitlines()] == [
        "first memory",
        "second memory",
        "third memory",
    ]
    newest = target.cli.ok("list")
    assert newest.splitlines() == out.splitlines()[::-1]


def test_list_json_output(target: Target) -> None:
    first = target.cli.add("first", "--meta", "k=1")
    second = target.cli.add("second")
    saved = target.records()
    unset = dict.fromkeys(UNSET_FIELDS)
    assert target.cli.json("list", "--oldest") == [
        {
            "id": first,
            "content": "first",
            "created_at": saved[0]["created_at"],
            "metadata": {"k": 1},
            **unset,
        },
        {
            "id": second,
            "content": "second",
            "created_at": saved[1]["created_at"],
            "metadata": None,
            **unset,
        },
    ]
    assert TIMESTAMP.match(saved[0]["created_at"])


def test_list_empty_messages(target: Target) -> None:
    target.make_empty()
    assert target.cli.ok("list") == "the store is empty\n"
    assert target.cli.json("list") == []


def test_multiline_content_is_listed_and_found_on_one_line(target: Target) -> None:
    memory_id = target.cli.add("line one\nline two\r")
    assert target.cli.ok("list").endswith(f"  {memory_id}  line one\\nline two\\r\n")
    assert target.cli.ok("search", "two").endswith(f"] line one\\nline two\\r  ({memory_id})\n")


# --- delete ---------------------------------------------------------------------------------


def test_delete_existing(target: Target) -> None:
    keep = target.cli.add("keep me")
    doomed = target.cli.add("forget me")
    code, out, err = target.cli("delete", doomed)
    assert (code, out, err) == (0, f"deleted {doomed}\n", "")
    assert [r["id"] for r in target.records()] == [keep]
    assert [row["id"] for row in target.cli.json("list")] == [keep]
    assert target.cli.json("search", "forget") == []


def test_delete_json_output(target: Target) -> None:
    doomed = target.cli.add("forget me")
    assert target.cli.json("delete", doomed) == {"deleted": [doomed]}
    assert target.cli.json("list") == []


def test_delete_unknown_id(target: Target) -> None:
    target.cli.add("keep me")
    before = target.file.read_bytes()
    err = target.cli.fail("delete", "no-such-id")
    assert err == "agentrecall: error: no memory with id 'no-such-id'\n"
    assert target.file.read_bytes() == before


def test_delete_twice(target: Target) -> None:
    doomed = target.cli.add("forget me")
    target.cli.ok("delete", doomed)
    err = target.cli.fail("delete", doomed)
    assert doomed in err


# --- the same output from every store -------------------------------------------------------


def test_search_and_list_output_has_one_shape_for_every_store(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    outputs: dict[str, dict[str, Any]] = {}
    for name, make in TARGETS.items():
        _, options, _ = make(home, tmp_path)
        target = Cli(capsys, options)
        ids = [
            target.add("User drinks green tea", "--meta", "source=chat"),
            target.add("User drinks coffee"),
            target.add("Unrelated fact"),
        ]
        found = target.json("search", "green tea drinks")
        listed = target.json("list", "--oldest")
        outputs[name] = {
            "score types": {type(hit["score"]).__name__ for hit in found},
            "search": [{**hit, "id": ids.index(hit["id"]), "score": None} for hit in found],
            "list": [{**row, "id": ids.index(row["id"]), "created_at": "TIME"} for row in listed],
            "search text": generic(target.ok("search", "green tea drinks")),
            "list text": generic(target.ok("list", "--oldest")),
        }
    score_types = {name: output.pop("score types") for name, output in outputs.items()}
    assert score_types == {
        "default": {"float"},
        "store": {"float"},
        "path": {"int"},
        "db": {"float"},
    }
    assert outputs["path"] == outputs["default"] == outputs["store"] == outputs["db"]
    assert [hit["id"] for hit in outputs["default"]["search"]] == [0, 1]
    assert outputs["default"]["list"][0] == {
        "id": 0,
        "content": "User drinks green tea",
        "created_at": "TIME",
        "metadata": {"source": "chat"},
        **dict.fromkeys(UNSET_FIELDS),
    }
    assert outputs["default"]["search text"] == (
        "1. [SCORE] User drinks green tea  (ID)\n2. [SCORE] User drinks coffee  (ID)\n"
    )
    assert outputs["default"]["list text"] == (
        "TIME  ID  User drinks green tea\nTIME  ID  User drinks coffee\nTIME  ID  Unrelated fact\n"
    )


# --- choosing the store ---------------------------------------------------------------------


def test_default_store_is_memory_db_under_home(cli: Cli, home: Path) -> None:
    memory_id = cli.add("x")
    path = home / "memory" / "memory.db"
    assert SQLiteStore(name="memory").path == str(path)
    assert sorted(p.name for p in (home / "memory").iterdir()) == ["memory.db"]
    assert [(r["id"], r["content"]) for r in records(path)] == [(memory_id, "x")]


def test_store_option_picks_a_named_database(cli: Cli, home: Path) -> None:
    work = cli.add("work fact", "--store", "work")
    personal = cli.add("personal fact", "--store", "personal")
    assert [r["id"] for r in records(db_file(home, "work"))] == [work]
    assert [r["id"] for r in records(db_file(home, "personal"))] == [personal]
    assert sorted(p.name for p in (home / "memory").iterdir()) == ["personal.db", "work.db"]
    assert [row["id"] for row in cli.json("list", "--store", "work")] == [work]
    assert cli.json("search", "fact", "--store", "personal")[0]["id"] == personal
    assert cli.json("list") == []
    assert not db_file(home).exists()


def test_store_option_memory_is_the_default(cli: Cli) -> None:
    memory_id = cli.add("x", "--store", "memory")
    assert [row["id"] for row in cli.json("list")] == [memory_id]


def test_store_name_is_made_file_safe(cli: Cli, home: Path) -> None:
    cli.add("x", "--store", "team/notes")
    cli.add("y", "--store", "../escape")
    (team,) = (home / "memory").glob("team_notes+*.db")
    (escape,) = (home / "memory").glob("__escape+*.db")
    assert records(team)[0]["content"] == "x"
    assert records(escape)[0]["content"] == "y"
    assert sorted(p.name for p in home.iterdir()) == ["memory"]


@pytest.mark.parametrize(("first", "second"), [("日本", "中国"), ("a/b", "a_b"), ("a b", "a?b")])
def test_store_names_that_look_alike_once_made_file_safe_keep_apart(
    cli: Cli, home: Path, first: str, second: str
) -> None:
    first_id = cli.add("a memory of the first store", "--store", first)
    second_id = cli.add("a memory of the second store", "--store", second)
    assert [row["id"] for row in cli.json("list", "--store", first)] == [first_id]
    assert [row["id"] for row in cli.json("list", "--store", second)] == [second_id]
    assert len(list((home / "memory").iterdir())) == 2


@pytest.mark.parametrize("name", ["", "   "])
def test_blank_store_name_is_a_usage_error_naming_store(cli: Cli, home: Path, name: str) -> None:
    err = cli.usage_error("--store", name, "add", "x")
    assert "argument --store: expected a store name" in err
    assert not home.exists()


def test_path_option_uses_that_json_file(cli: Cli, home: Path, tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "mine.json"
    path.parent.mkdir()
    memory_id = cli.add("path fact", "--path", str(path))
    assert [r["id"] for r in json_records(path)] == [memory_id]
    assert not home.exists()
    assert [row["id"] for row in cli.json("--path", str(path), "list")] == [memory_id]
    assert cli.json("list") == []
    cli.ok("--path", str(path), "delete", memory_id)
    assert json_records(path) == []


def test_db_option_uses_that_sqlite_file(cli: Cli, home: Path, tmp_path: Path) -> None:
    path = tmp_path / "elsewhere" / "mine.sqlite"
    path.parent.mkdir()
    memory_id = cli.add("db fact", "--db", str(path))
    assert [r["id"] for r in records(path)] == [memory_id]
    assert sorted(p.name for p in path.parent.iterdir()) == ["mine.sqlite"]
    assert not home.exists()
    assert cli.json("list") == []


@pytest.mark.parametrize(("option", "name"), [("--path", "m.json"), ("--db", "m.db")])
def test_add_creates_a_store_file_but_not_its_directory(
    cli: Cli, tmp_path: Path, option: str, name: str
) -> None:
    missing = tmp_path / "mistyped" / "deeper"
    err = cli.fail(option, str(missing / name), "add", "x")
    assert err == (
        f"agentrecall: error: cannot create the store '{missing / name}': the directory "
        f"'{missing}' does not exist (create it first, or check the path)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_default_store_directory_is_created_on_first_add(cli: Cli, home: Path) -> None:
    cli.add("x", "--store", "work")
    assert [p.name for p in (home / "memory").iterdir()] == ["work.db"]


@pytest.mark.parametrize(("option", "name"), [("--path", "rel.json"), ("--db", "rel.db")])
def test_relative_file_is_resolved_against_the_cwd(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    cli.add("relative", option, name)
    read = json_records if option == "--path" else records
    assert read(tmp_path / name)[0]["content"] == "relative"


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
    assert [r["id"] for r in records(db_file(home, "s"))] == [result["id"]]
    assert not db_file(home).exists()


def test_path_before_the_command(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    cli.ok("--path", str(path), "add", "x")
    assert json_records(path)[0]["content"] == "x"
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


def test_db_goes_with_no_other_store_option(cli: Cli, tmp_path: Path) -> None:
    err = cli.usage_error("--db", str(tmp_path / "m.db"), "list", "--store", "s")
    assert "--db" in err and "--store" in err
    err = cli.usage_error("add", "x", "--path", str(tmp_path / "m.json"), "--db", "m.db")
    assert "--db" in err and "--path" in err


def test_no_command_is_a_usage_error(cli: Cli) -> None:
    cli.usage_error()
    cli.usage_error("forget", "x")
    assert cli("--json") == (2, "", json_error("the following arguments are required: COMMAND", 2))


@pytest.mark.parametrize("argv", [["--help"], ["add", "--help"], ["list", "--help"]])
def test_help_names_the_default_and_each_store_option(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--store NAME the SQLite store $AGENTRECALL_HOME/memory/NAME.db; the default" in text
    assert "with NAME memory" in text
    assert "--path FILE a JSON store file instead" in text
    assert "--db FILE an SQLite store file instead" in text


def test_top_level_help_says_where_the_default_store_lives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Without --store, --path, --db or --dsn: $AGENTRECALL_HOME/memory/memory.db" in text


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
def test_corrupt_json_file_is_reported_and_left_unchanged(
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


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_corrupt_default_database_names_its_file(cli: Cli, home: Path, command: list[str]) -> None:
    path = db_file(home)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{oops, not a database at all}" * 200)
    before = path.read_bytes()
    err = cli.fail(*command)
    assert str(path) in err and "not an SQLite database" in err
    assert path.read_bytes() == before


def test_a_non_database_file_given_as_db_is_one_clear_line(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text("[]")
    err = cli.fail("--db", str(path), "list")
    assert "notes.json" in err and "not an SQLite database" in err
    assert path.read_text() == "[]"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("option", ["--path", "--db"])
def test_file_that_is_a_directory(
    cli: Cli, tmp_path: Path, command: list[str], option: str
) -> None:
    directory = tmp_path / "a-directory.json"
    (directory / "inside").mkdir(parents=True)
    err = cli.fail(option, str(directory), *command)
    assert str(directory) in err
    assert directory.is_dir()
    assert [p.name for p in directory.iterdir()] == ["inside"]


@pytest.mark.parametrize(("option", "name"), [("--path", "store.json"), ("--db", "store.db")])
def test_store_below_a_regular_file_cannot_be_written(
    cli: Cli, tmp_path: Path, option: str, name: str
) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"x")
    path = blocker / name
    err = cli.fail(option, str(path), "add", "x")
    assert str(path) in err
    assert blocker.read_bytes() == b"x"


@pytest.mark.parametrize("path", ["", "   ", "dir/", "."])
def test_path_that_names_no_file_is_a_usage_error(cli: Cli, path: str) -> None:
    err = cli.usage_error("--path", path, "list")
    assert "--path" in err


def test_a_store_file_that_cannot_be_looked_at_is_an_error_not_an_empty_store(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A regular file where a directory should be: ENOTDIR, which binds root too. Only a missing
    # file (ENOENT) means that there is no store yet.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    for option in (["--db", str(blocker / "m.db")], ["--path", str(blocker / "m.json")]):
        for command in (["list"], ["search", "x"], ["delete", "x"], ["add", "x"]):
            err = cli.fail(*option, *command)
            assert err == (
                f"agentrecall: error: cannot use the store file '{option[1]}': Not a directory\n"
            )
    monkeypatch.setenv("AGENTRECALL_HOME", str(blocker))
    err = cli.fail("list")
    assert err == (
        f"agentrecall: error: cannot use the store file '{blocker / 'memory' / 'memory.db'}': "
        "Not a directory\n"
    )
    assert blocker.read_text() == "x"


@pytest.mark.parametrize("option", ["--db", "default"])
def test_an_empty_database_file_is_noticed_once(
    cli: Cli, home: Path, tmp_path: Path, option: str
) -> None:
    path = tmp_path / "empty.db" if option == "--db" else db_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    options = ["--db", str(path)] if option == "--db" else []
    code, out, err = cli(*options, "list")
    assert (code, out) == (0, "the store is empty\n")
    assert (
        err
        == f"agentrecall: note: '{path}' is empty (0 bytes); it is set up as a new, empty store\n"
    )
    assert path.stat().st_size > 0
    assert cli(*options, "list") == (0, "the store is empty\n", "")


def test_a_limit_too_large_for_any_store_is_a_usage_error(cli: Cli) -> None:
    memory_id = cli.add("one memory")
    err = cli.usage_error("search", "memory", "-n", "100000000000000000000")
    assert err.endswith(
        "agentrecall: error: argument -n: expected a whole number from 1 to "
        "9223372036854775807, got '100000000000000000000'\n"
    )
    assert [hit["id"] for hit in cli.json("search", "memory", "-n", str(2**63 - 1))] == [memory_id]


def test_metadata_nested_too_deeply_is_one_error_line(cli: Cli) -> None:
    err = cli.usage_error("add", "x", "--meta", "k=" + "[" * 100_000)
    assert err.endswith(
        "agentrecall: error: argument --meta: k: the JSON value is nested too deeply\n"
    )


@pytest.mark.parametrize("debug", ["", "1"])
def test_an_unexpected_error_is_one_line_asking_for_a_report(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, debug: str
) -> None:
    def broken_connect(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated fault")

    monkeypatch.setattr(sqlite3, "connect", broken_connect)
    monkeypatch.setenv("AGENTRECALL_DEBUG", debug)
    code, out, err = cli("--db", str(tmp_path / "m.db"), "add", "x")
    assert (code, out) == (1, "")
    *traceback, line = err.splitlines(keepends=True)
    assert line == (
        "agentrecall: error: unexpected RuntimeError: simulated fault (this is a bug, please "
        "report it; set AGENTRECALL_DEBUG=1 to see the traceback)\n"
    )
    assert bool(traceback) == bool(debug)
    assert ("Traceback" in err) == bool(debug)


@pytest.mark.parametrize(("destination", "option"), [("copy.db", "--db"), ("copy.json", "--path")])
def test_migrate_creates_the_destination_file_but_not_its_directory(
    cli: Cli, tmp_path: Path, destination: str, option: str
) -> None:
    source = tmp_path / "source.json"
    memory_id = cli.add("a memory", "--path", str(source))
    missing = tmp_path / "mistyped" / destination
    assert f"the directory '{missing.parent}' does not exist" in cli.fail(
        "migrate", str(source), str(missing)
    )
    copy = tmp_path / destination
    assert cli.ok("migrate", str(source), str(copy)) == f"copied 1 memory to {copy} (0 skipped)\n"
    assert [row["id"] for row in cli.json("list", option, str(copy))] == [memory_id]
    # Built under a temporary name, which is gone with everything its store kept beside it.
    names = {p.name for p in tmp_path.iterdir() if not p.name.startswith(LOCK_PREFIX)}
    assert names == {"source.json", destination}


# --- --json, also for errors ----------------------------------------------------------------


def error_cases(tmp_path: Path) -> dict[str, tuple[list[str], int, str]]:
    """Failing command lines, each with its exit status and the start of its message."""
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    return {
        "unknown command": (["forget", "x"], 2, "argument COMMAND: invalid choice: 'forget'"),
        "missing argument": (["get"], 2, "the following arguments are required: id"),
        "no content": (["add"], 2, "add needs the content: an argument, - for standard"),
        "bad -n": (["search", "x", "-n", "0"], 2, "argument -n: expected a whole number"),
        "unknown option": (["list", "--colour"], 2, "unrecognized arguments: --colour"),
        "bad extension": (["migrate", "a.txt", "b.db"], 2, "argument source: cannot tell"),
        "no store": (["--db", str(tmp_path / "no.db"), "list"], 1, "no store at"),
        "no memory": (["delete", "nope"], 1, "no memory with id 'nope'"),
        "corrupt": (["--path", str(bad), "list"], 1, "memory file"),
        "bad meta": (["add", "x", "--meta", "novalue"], 2, "argument --meta: expected KEY=VALUE"),
        "eval": (["eval", "locomo", str(bad)], 1, "cannot read LoCoMo file"),
        "migrate": (["migrate", str(tmp_path / "no.db"), str(tmp_path / "b.db")], 1, "no store"),
    }


@pytest.mark.parametrize("where", ["first", "last"])
def test_with_json_every_error_is_one_json_object_on_stderr(
    cli: Cli, tmp_path: Path, where: str
) -> None:
    for name, (argv, code, start) in error_cases(tmp_path).items():
        line = ["--json", *argv] if where == "first" else [*argv, "--json"]
        returned, out, err = cli(*line)
        assert (returned, out) == (code, ""), name
        assert err.endswith("\n") and err.count("\n") == 1, (name, err)
        error = json.loads(err)
        assert error["code"] == code and error["error"].startswith(start), (name, error)
        assert set(error) == {"error", "code"}


def test_without_json_the_same_errors_are_one_line(cli: Cli, tmp_path: Path) -> None:
    for name, (argv, code, start) in error_cases(tmp_path).items():
        returned, out, err = cli(*argv)
        assert (returned, out) == (code, ""), name
        last = err.splitlines()[-1]
        assert last.startswith(f"agentrecall: error: {start}"), (name, err)
        assert_one_error_line(last + "\n")
        assert err.startswith("usage: ") == (code == 2), name


# --- options before or after the command ----------------------------------------------------


def command_lines(tmp_path: Path, memory_id: str) -> dict[str, list[str]]:
    (tmp_path / "locomo.json").write_text("[]")
    return {
        "add": ["add", "another memory"],
        "search": ["search", "memory"],
        "list": ["list"],
        "delete": ["delete", memory_id],
        "eval": ["eval", "locomo", str(tmp_path / "locomo.json")],
        "migrate": ["migrate", str(tmp_path / "m.db"), str(tmp_path / "copy.json")],
    }


@pytest.mark.parametrize("command", ["add", "search", "list", "delete", "eval", "migrate"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_json_goes_before_or_after_every_command(
    cli: Cli, tmp_path: Path, command: str, where: str
) -> None:
    store = ["--db", str(tmp_path / "m.db")]
    memory_id = cli.add("a memory", *store)
    argv = command_lines(tmp_path, memory_id)[command]
    if command not in ("eval", "migrate"):
        argv = [*argv, *store]
    line = ["--json", *argv] if where == "before" else [*argv, "--json"]
    # Every text output (an id, "deleted ...", "copied ...", a table) is not JSON.
    assert isinstance(json.loads(cli.ok(*line)), (dict, list))


@pytest.mark.parametrize("command", ["add", "search", "list", "delete"])
@pytest.mark.parametrize("option", ["--store", "--path", "--db"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_store_options_go_before_or_after_every_store_command(
    cli: Cli, home: Path, tmp_path: Path, command: str, option: str, where: str
) -> None:
    value = {"--store": "team", "--path": str(tmp_path / "m.json"), "--db": str(tmp_path / "m.db")}
    chosen = [option, value[option]]
    memory_id = cli.add("a memory", *chosen)
    argv = command_lines(tmp_path, memory_id)[command]
    line = [*chosen, "--json", *argv] if where == "before" else [*argv, "--json", *chosen]
    result = json.loads(cli.ok(*line))
    left = [row["id"] for row in cli.json(*chosen, "list", "--oldest")]
    assert {
        "add": lambda: left == [memory_id, result["id"]],
        "search": lambda: [hit["id"] for hit in result] == [memory_id],
        "list": lambda: [row["id"] for row in result] == [memory_id],
        "delete": lambda: result == {"deleted": [memory_id]} and left == [],
    }[command]()
    assert not db_file(home).exists()


@pytest.mark.parametrize("option", [["--store", "s"], ["--path", "p.json"], ["--db", "p.db"]])
@pytest.mark.parametrize("command", [["migrate", "a.json", "b.db"], ["eval", "locomo", "f.json"]])
def test_store_options_are_refused_by_commands_that_take_files(
    cli: Cli, option: list[str], command: list[str]
) -> None:
    err = cli.usage_error(*option, *command)
    assert f"agentrecall: error: argument {option[0]}: not used by '{command[0]}" in err


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
    assert [r["id"] for r in records(db_file(home))] == [memory_id]
    # The process closed its connection: the write-ahead log is folded back into the file.
    assert sorted(p.name for p in db_file(home).parent.iterdir()) == ["memory.db"]

    found = run([script, "--json", "search", "aisle seats", "-n", "1"], home)
    assert found.returncode == 0
    (hit,) = json.loads(found.stdout)
    assert hit["score"] > 0
    assert {**hit, "score": None} == {
        "id": memory_id,
        "score": None,
        "content": "User prefers aisle seats",
        "metadata": {"source": "cli"},
    }

    deleted = run([script, "delete", memory_id], home)
    assert (deleted.returncode, deleted.stdout) == (0, f"deleted {memory_id}\n")
    listed = run([script, "list"], home)
    assert (listed.returncode, listed.stdout) == (0, "the store is empty\n")
    assert records(db_file(home)) == []


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


# --- real processes: pipes, devices, terminals, signals -------------------------------------


def cli_command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "agentrecall.cli", *argv]


def cli_env(home: Path, *, buffered: bool = False) -> dict[str, str]:
    env = {**os.environ, "AGENTRECALL_HOME": str(home), "PYTHONIOENCODING": "utf-8"}
    # Buffered, stdout is written at the end too, when Python flushes it at exit.
    if buffered:
        env.pop("PYTHONUNBUFFERED", None)
    else:
        env["PYTHONUNBUFFERED"] = "1"
    return env


def fill_store(path: Path, count: int) -> None:
    with SyncStore(SQLiteStore(path, fsync=False)) as store:
        store.add_many((f"memory number {i} about topic {i % 97}", None) for i in range(count))


SIZE_LIMIT = 100_000
"""Bytes a file may grow to in :func:`output_limited_to_size_limit`: less than any output."""


def output_limited_to_size_limit() -> None:
    """Run in the child before the command: its files stop growing at SIZE_LIMIT.

    As on a disk that fills up mid-way: the write past it fails (EFBIG), the process goes on.
    """
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (SIZE_LIMIT, SIZE_LIMIT))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize(
    "argv",
    [["list", "--all"], ["--json", "list", "--all"], ["export"], ["export", "-o", "out.jsonl"]],
)
def test_output_that_fills_the_disk_mid_way_is_an_error_not_a_cut_short_success(
    home: Path, tmp_path: Path, argv: list[str], buffered: bool
) -> None:
    fill_store(tmp_path / "m.db", 20_000)  # a few MB of output
    with open(tmp_path / "stdout", "wb") as stdout:
        result = subprocess.run(
            cli_command("--db", str(tmp_path / "m.db"), *argv),
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=cli_env(home, buffered=buffered),
            cwd=tmp_path,
            preexec_fn=output_limited_to_size_limit,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    if "-o" in argv:
        assert line == "agentrecall: error: cannot write 'out.jsonl': File too large"
        assert not (tmp_path / "out.jsonl").exists()
    elif "--json" in argv:
        assert json.loads(line) == {
            "error": "cannot write to standard output: File too large",
            "code": 1,
        }
    else:
        assert line == "agentrecall: error: cannot write to standard output: File too large"


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("argv", [["list", "--all"], ["--json", "list", "--all"], ["export"]])
def test_a_reader_that_leaves_mid_way_ends_the_command_with_141(
    home: Path, tmp_path: Path, argv: list[str], buffered: bool
) -> None:
    fill_store(tmp_path / "m.db", 20_000)  # much more than a pipe holds
    with subprocess.Popen(
        cli_command("--db", str(tmp_path / "m.db"), *argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(home, buffered=buffered),
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        assert len(child.stdout.read(100)) == 100  # the first lines, as `| head -1` reads
        child.stdout.close()
        err = child.stderr.read()
    assert (child.returncode, err) == (141, b"")


def test_version_is_the_package_version(cli: Cli) -> None:
    assert cli.ok("--version") == f"agentrecall {agentrecall.__version__}\n"
    assert importlib.metadata.version("agentrecall") == agentrecall.__version__


def test_help_documents_the_exit_statuses(cli: Cli) -> None:
    text = " ".join(cli.ok("--help").split())
    for status in ("0 done", "1 failed", "2 usage", "130 interrupted", "141 standard output"):
        assert status in text
    assert '{"error": "...", "code": STATUS}' in text


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("argv", [["list"], ["--json", "list"]])
def test_output_closed_early_ends_quietly_with_141(
    home: Path, tmp_path: Path, argv: list[str], buffered: bool
) -> None:
    fill_store(tmp_path / "m.db", 10)
    reader, writer = os.pipe()
    os.close(reader)  # whoever reads has gone, as after `| head -1`
    try:
        result = subprocess.run(
            cli_command("--db", str(tmp_path / "m.db"), *argv),
            stdout=writer,
            stderr=subprocess.PIPE,
            env=cli_env(home, buffered=buffered),
            timeout=60,
            check=False,
        )
    finally:
        os.close(writer)
    assert (result.returncode, result.stderr) == (141, b"")


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_full_device_on_stdout_is_one_error_line(
    home: Path, tmp_path: Path, as_json: bool, buffered: bool
) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    fill_store(tmp_path / "m.db", 10)
    with open("/dev/full", "wb") as full:
        result = subprocess.run(
            cli_command("--db", str(tmp_path / "m.db"), "list", *(["--json"] if as_json else [])),
            stdout=full,
            stderr=subprocess.PIPE,
            env=cli_env(home, buffered=buffered),
            text=True,
            timeout=60,
            check=False,
        )
    message = "cannot write to standard output: No space left on device"
    assert result.returncode == 1
    if as_json:
        assert result.stderr == json_error(message, 1)
    else:
        assert result.stderr == f"agentrecall: error: {message}\n"


def read_terminal(master: int, until: Callable[[str], bool] = lambda text: False) -> str:
    """Read what a process writes on a terminal, until ``until(text)`` or its end."""
    text = ""
    while not until(text):
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every process holding the terminal has closed it
            break
        if not chunk:
            break
        text += chunk.decode("utf-8", "replace")
    return text


def ctrl_c_as_on_a_terminal() -> None:
    """In a child before it runs: SIGINT does what a terminal's Ctrl-C does.

    A test run started in the background by a shell without job control ignores SIGINT, and
    its children would inherit that.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_on_terminal(argv: list[str], home: Path) -> tuple[subprocess.Popen[str], int]:
    """Start ``argv`` with stderr on a new pseudo-terminal; return it and the terminal's end."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=cli_env(home),
        text=True,
        preexec_fn=ctrl_c_as_on_a_terminal,
    )
    os.close(slave)
    return process, master


def test_the_progress_bar_is_drawn_on_a_terminal_only(home: Path, tmp_path: Path) -> None:
    fill_store(tmp_path / "m.db", 3)
    piped = subprocess.run(
        cli_command("migrate", str(tmp_path / "m.db"), str(tmp_path / "piped.json")),
        capture_output=True,
        env=cli_env(home),
        text=True,
        timeout=60,
        check=False,
    )
    assert (piped.returncode, piped.stderr) == (0, "")
    process, master = run_on_terminal(
        cli_command("migrate", str(tmp_path / "m.db"), str(tmp_path / "shown.json")), home
    )
    try:
        drawn = read_terminal(master)
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(master)
    assert process.returncode == 0
    assert drawn.startswith("\r[") and drawn.rstrip().endswith("] 3/3")
    assert out == piped.stdout.replace("piped.json", "shown.json")
    names = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(LOCK_PREFIX))
    assert names == ["m.db", "piped.json", "shown.json"]


def interrupt_migrate(source: Path, destination: Path, home: Path) -> tuple[int, str, str]:
    """Send SIGINT to a migrate once its bar shows a batch done; return status, stdout, stderr."""
    process, master = run_on_terminal(cli_command("migrate", str(source), str(destination)), home)
    try:
        partway = re.compile(r"\] [1-9]\d*/60000")
        shown = read_terminal(master, until=partway.search)
        assert partway.search(shown), shown
        process.send_signal(signal.SIGINT)
        rest = read_terminal(master)
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(master)
    # A terminal ends lines with CR LF; the bar redraws itself after a CR.
    return process.returncode, out, (shown + rest).replace("\r\n", "\n").replace("\r", "\n")


def test_ctrl_c_during_migrate_exits_130_and_leaves_no_destination(
    home: Path, tmp_path: Path
) -> None:
    source, destination = tmp_path / "big.db", tmp_path / "copy" / "big.db"
    destination.parent.mkdir()
    fill_store(source, 60_000)  # six batches: the first one shown leaves five to interrupt
    code, out, err = interrupt_migrate(source, destination, home)
    assert (code, out) == (130, "")
    assert err.splitlines()[-1] == (
        f"agentrecall: error: interrupted: nothing was written to '{destination}'"
    )
    assert "Traceback" not in err
    assert list(destination.parent.iterdir()) == []


def test_ctrl_c_during_migrate_into_a_store_keeps_whole_batches(home: Path, tmp_path: Path) -> None:
    source, destination = tmp_path / "big.db", tmp_path / "copy" / "big.db"
    destination.parent.mkdir()
    fill_store(source, 60_000)
    with SyncStore(SQLiteStore(destination)) as store:
        store.add("a memory the destination had before")
    code, out, err = interrupt_migrate(source, destination, home)
    assert (code, out) == (130, "")
    assert err.splitlines()[-1] == (
        f"agentrecall: error: interrupted: '{destination}' keeps the batches copied so far; "
        "run the same command again to copy the rest"
    )
    assert "Traceback" not in err
    assert [p.name for p in destination.parent.iterdir()] == ["big.db"]
    kept = len(records(destination)) - 1
    assert 0 < kept < 60_000 and kept % DEFAULT_BATCH == 0
    assert run(cli_command("migrate", str(source), str(destination)), home).returncode == 0
    assert len(records(destination)) == 60_001


def drop_permission_override() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes a root child obey permission bits; ``None`` if not root."""
    if os.geteuid() != 0:
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def drop() -> None:
        for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
            if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return drop


PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


@pytest.mark.parametrize("option", ["--db", "default"])
def test_a_store_in_a_directory_that_cannot_be_searched_is_not_empty(
    home: Path, tmp_path: Path, option: str
) -> None:
    locked = home / "memory" if option == "default" else tmp_path / "locked"
    path = locked / "memory.db"
    locked.mkdir(parents=True)
    fill_store(path, 1)
    argv = cli_command(*(["--db", str(path)] if option == "--db" else []), "list")
    locked.chmod(0o000)
    try:
        result = subprocess.run(
            argv,
            capture_output=True,
            env=cli_env(home),
            text=True,
            timeout=60,
            check=False,
            preexec_fn=drop_permission_override(),
        )
    except subprocess.SubprocessError as error:
        pytest.skip(f"cannot run a process that obeys permission bits: {error}")
    finally:
        locked.chmod(0o700)
    assert (result.returncode, result.stdout) == (1, "")
    assert (
        result.stderr
        == f"agentrecall: error: cannot use the store file '{path}': Permission denied\n"
    )


def test_migrate_counts_versions_of_history_in_words(cli: Cli, tmp_path: Path) -> None:
    source, copy = tmp_path / "source.db", tmp_path / "copy.db"
    memory_id = cli.add("first words", "--db", str(source))
    cli.ok("update", memory_id, "second words", "--db", str(source))
    assert cli.ok("migrate", str(source), str(copy)) == (
        f"copied 1 memory and 1 version of history to {copy} (0 skipped)\n"
    )


def test_migrate_into_json_keeps_expiry_only_when_told_to_drop_it(cli: Cli, tmp_path: Path) -> None:
    # A JSON file keeps no expiry: a memory meant to go in an hour would stay for good.
    source, copy = tmp_path / "source.db", tmp_path / "copy.json"
    brief = cli.add("Gate 4 until boarding", "--ttl", "1h", "--db", str(source))
    err = cli.fail("migrate", str(source), str(copy))
    assert f"memory {brief} expires at" in err and "--drop-expiry" in err
    assert not copy.exists()
    out = cli.ok("migrate", str(source), str(copy), "--drop-expiry")
    assert out == f"copied 1 memory to {copy} (0 skipped)\n"
    assert [record["content"] for record in json.loads(copy.read_text())] == [
        "Gate 4 until boarding"
    ]
