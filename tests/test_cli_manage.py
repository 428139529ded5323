"""The commands that look into and manage a store: each through the CLI entry point."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli import Cli, assert_one_error_line

from agentrecall import SQLiteStore, SyncStore


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
    """A CLI on the JSON file ``m.json``."""
    return Cli(capsys, ("--path", str(tmp_path / "m.json")))


def usage_error(cli: Cli, *argv: str) -> str:
    """Run ``argv``, expect exit status 2, return the error line."""
    code, out, err = cli(*argv)
    assert (code, out) == (2, ""), (argv, code, out, err)
    last = err.splitlines()[-1] + "\n"
    assert_one_error_line(last)
    return last


def run(*argv: str, stdin: bytes | str | None = b"", env: dict[str, str] | None = None) -> Any:
    """Run the real console command in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "agentrecall", *argv],
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


# --- add: content from an argument, stdin or a file ---------------------------------------


def test_add_reads_stdin_and_files_and_takes_json_metadata(db: Cli, tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("From a file\n", encoding="utf-8")
    from_file = db.add("--file", str(note), "--metadata", '{"topic": "travel", "n": 1}')
    assert db.json("get", from_file)["content"] == "From a file"
    record = db.json("get", from_file)
    assert record["metadata"] == {"topic": "travel", "n": 1}
    merged = db.add("merged", "--metadata", '{"a": 1, "b": 2}', "--meta", "b=3")
    assert db.json("get", merged)["metadata"] == {"a": 1, "b": 3}
    done = run("--db", str(tmp_path / "m.db"), "add", "-", stdin=b"From stdin\nline two\n")
    assert done.returncode == 0, done.stderr
    memory_id = done.stdout.decode().strip()
    assert db.json("get", memory_id)["content"] == "From stdin\nline two"


def test_add_with_a_ttl_expires(db: Cli) -> None:
    memory_id = db.add("short lived", "--ttl", "2h")
    expires = db.json("get", memory_id)["expires_at"]
    assert expires is not None and expires > db.json("get", memory_id)["created_at"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["add", "x", "--metadata", "{bad"], "argument --metadata: expected a JSON object"),
        (["add", "x", "--metadata", "[1]"], "argument --metadata: expected a JSON object (in"),
        (["add", "x", "--ttl", "-5"], "argument --ttl: expected a positive lifetime"),
        (["add", "x", "--ttl", "soon"], "argument --ttl: expected a positive lifetime"),
        (["add"], "add needs the content"),
    ],
)
def test_add_bad_input_is_a_usage_error(db: Cli, argv: list[str], message: str) -> None:
    assert usage_error(db, *argv).startswith(f"agentrecall: error: {message}")


def test_add_unreadable_or_conflicting_or_undecodable_file(db: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    assert f"error: --file '{missing}': No such file or directory" in db.fail(
        "add", "--file", str(missing)
    )
    assert f"error: --file '{tmp_path}': Is a directory" in db.fail("add", "--file", str(tmp_path))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe")
    assert "is not UTF-8 text" in db.fail("add", "--file", str(binary))
    assert "not both" in usage_error(db, "add", "text", "--file", str(binary))
    assert not (tmp_path / "m.db").exists()


def test_ttl_on_a_json_store_names_what_is_missing(js: Cli) -> None:
    err = js.fail("add", "x", "--ttl", "1d")
    assert err.startswith("agentrecall: error: --ttl: '")
    assert "m.json' (JsonFileStore) has no expiry" in err
    assert "use an SQLite store" in err


# --- get --------------------------------------------------------------------------------------


def test_get_shows_every_field_and_the_whole_content(db: Cli) -> None:
    memory_id = db.add("line one\nline two", "--meta", "k=1", "--user-id", "alice")
    record = db.json("get", memory_id, "--user-id", "alice")
    assert record["user_id"] == "alice" and record["metadata"] == {"k": 1}
    text = db.ok("get", memory_id, "--user-id", "alice")
    assert f"id          {memory_id}\n" in text
    assert 'metadata    {"k": 1}\n' in text
    assert "superseded_by" not in text  # the fields of facts that change, only when set
    assert text.endswith("\n\nline one\nline two\n")


def test_get_unknown_id_and_other_scopes_are_not_found(db: Cli, js: Cli) -> None:
    memory_id = db.add("alice's", "--user-id", "alice")
    assert db.fail("get", memory_id, "--user-id", "bob") == (
        f"agentrecall: error: no memory with id '{memory_id}'\n"
    )
    js.add("x")
    assert js.fail("get", "nope") == "agentrecall: error: no memory with id 'nope'\n"
    code, _, err = db("--json", "get", "nope")
    assert (code, json.loads(err)) == (1, {"error": "no memory with id 'nope'", "code": 1})


# --- list -------------------------------------------------------------------------------------


def test_list_pages_and_says_how_many_more(db: Cli) -> None:
    ids = [db.add(f"memory number {i}") for i in range(25)]
    lines = db.ok("list").splitlines()
    assert len(lines) == 21
    assert [line.split("  ")[1] for line in lines[:20]] == ids[::-1][:20]
    assert lines[-1] == "… 5 more memories: --offset 20 shows the next page, --all every one"
    assert [r["id"] for r in db.json("list", "--offset", "20")] == ids[4::-1]
    code, out, err = db("--json", "list", "--oldest", "--limit", "3", "--offset", "1")
    assert [r["id"] for r in json.loads(out)] == ids[1:4]
    assert err.startswith("agentrecall: note: 21 more memories: --offset 4 shows")
    assert len(db.json("list", "--all")) == 25
    code, out, err = db("--json", "list", "--limit", "24")
    assert code == 0 and len(json.loads(out)) == 24
    assert (
        err
        == "agentrecall: note: 1 more memory: --offset 24 shows the next page, --all every one\n"
    )
    assert db.ok("list", "--offset", "30") == "no memories past --offset 30 (there are 25)\n"


def test_list_filters_and_time_bounds(db: Cli) -> None:
    travel = db.add("aisle seats", "--meta", "topic=travel")
    db.add("standup at nine", "--meta", "topic=work")
    assert [r["id"] for r in db.json("list", "--filter", '{"topic": "travel"}')] == [travel]
    assert db.json("list", "--before", "2000-01-01") == []
    assert len(db.json("list", "--after", "2000-01-01T00:00:00+02:00")) == 2
    assert db.ok("list", "--filter", '{"topic": "none"}') == "no memories match\n"


def test_list_shows_scopes_in_a_column_and_cuts_content_to_the_width(
    db: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    db.add("x" * 200, "--user-id", "alice", "--session-id", "s1")
    db.add("short")
    monkeypatch.setenv("COLUMNS", "100")
    lines = db.ok("list").splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert "user=alice,session=s1  " in lines[1] and lines[1].endswith("x…")
    assert lines[0].index("short") == lines[1].index("xxx")
    assert db.json("list")[1]["content"] == "x" * 200


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["list", "--limit", "-1"], "argument --limit: expected a whole number from 1"),
        (["list", "--limit", "0"], "argument --limit: expected a whole number from 1"),
        (["list", "--offset", "-1"], "argument --offset: expected a whole number from 0"),
        (["list", "--limit", "2", "--all"], "argument --all: not allowed with argument --limit"),
        (["list", "--filter", "{oops"], "argument --filter: expected a JSON object"),
        (["list", "--after", "yesterday"], "argument --after: expected an ISO 8601 date"),
        (["list", "--before", "2025-02-30"], "argument --before: expected an ISO 8601 date"),
    ],
)
def test_list_bad_input_is_a_usage_error(db: Cli, argv: list[str], message: str) -> None:
    assert usage_error(db, *argv).startswith(f"agentrecall: error: {message}")


def test_filters_on_a_json_store_are_refused_by_name(js: Cli) -> None:
    js.add("x")
    for argv in (["list", "--filter", "{}"], ["search", "x", "--after", "2025-01-01"]):
        err = js.fail(*argv)
        assert "(JsonFileStore) has no" in err and err.split(": ")[2].startswith("--")


# --- search -----------------------------------------------------------------------------------


def test_search_filter_bounds_min_score_and_mode(db: Cli) -> None:
    travel = db.add("User prefers aisle seats", "--meta", "topic=travel")
    db.add("User prefers aisle seats on trains, and window seats on planes", "--meta", "topic=x")
    hits = db.json("search", "aisle seats", "--filter", '{"topic": "travel"}')
    assert [hit["id"] for hit in hits] == [travel]
    assert db.json("search", "aisle seats", "--before", "2001-01-01") == []
    every = db.json("search", "aisle seats")
    assert len(every) == 2
    best = max(hit["score"] for hit in every)
    assert len(db.json("search", "aisle seats", "--min-score", str(best))) == 1
    embedder = ["--embedder", "agentrecall.testing:HashEmbedder"]
    db.ok("reindex", *embedder)
    hybrid = db.json("search", "aisle seats", "--mode", "hybrid", *embedder)
    assert {"score", "keyword_score", "semantic_score"} <= set(hybrid[0])
    assert db.json("search", "aisle seats", "--mode", "semantic", *embedder)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "x", "--mode", "fuzzy"], "argument --mode: invalid choice: 'fuzzy'"),
        (["search", "x", "--min-score", "high"], "argument --min-score: expected a number"),
        (["search", "x", "--filter", "3"], "argument --filter: expected a JSON object (in braces)"),
        (["search", "x", "-n", "-2"], "argument -n: expected a whole number"),
    ],
)
def test_search_bad_input_is_a_usage_error(db: Cli, argv: list[str], message: str) -> None:
    assert usage_error(db, *argv).startswith(f"agentrecall: error: {message}")


def test_search_by_meaning_in_a_json_store_is_refused(js: Cli) -> None:
    js.add("x")
    err = js.fail(
        "search", "x", "--mode", "semantic", "--embedder", "agentrecall.testing:HashEmbedder"
    )
    assert "--mode semantic: '" in err
    assert "m.json' (JsonFileStore) searches by keyword only" in err


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ('{"k": {"$regex": "a"}}', "unknown operator '$regex' for field 'k'"),
        ('{"k": {"$in": 5}}', "operator $in for field 'k' takes a list of values, got int"),
        ('{"k": [1, 2]}', "condition for field 'k' is a list"),
        ('{"": 1}', "filter field names must not be empty"),
    ],
)
def test_a_filter_that_is_no_valid_filter_is_a_usage_error_naming_it(
    db: Cli, condition: str, message: str
) -> None:
    db.add("x")
    for command in (["search", "x"], ["list"], ["count"]):
        err = usage_error(db, *command, "--filter", condition)
        assert err.startswith(f"agentrecall: error: argument --filter: {message}"), err


# --- update and history -----------------------------------------------------------------------


def test_update_content_metadata_and_history(db: Cli, tmp_path: Path) -> None:
    memory_id = db.add("User prefers aisle seats", "--meta", "topic=travel")
    assert db.ok("update", memory_id, "User prefers window seats", "--reason", "asked") == (
        f"updated {memory_id}\n"
    )
    updated = db.json("update", memory_id, "--meta", "priority=1")
    assert updated["metadata"] == {"topic": "travel", "priority": 1}
    assert updated["content"] == "User prefers window seats"
    replaced = db.json("update", memory_id, "--metadata", '{"only": true}')
    assert replaced["metadata"] == {"only": True}
    new = tmp_path / "new.txt"
    new.write_text("From a file again\n", encoding="utf-8")
    assert db.json("update", memory_id, "--file", str(new))["content"] == "From a file again"
    history = db.json("history", memory_id)
    assert [v["content"] for v in history["versions"]] == [
        "User prefers aisle seats",
        "User prefers window seats",
        "User prefers window seats",
        "User prefers window seats",
    ]
    assert history["versions"][0]["reason"] == "asked"
    assert history["current"]["content"] == "From a file again"
    lines = db.ok("history", memory_id).splitlines()
    assert len(lines) == 5
    assert lines[0].split()[1:] == ["update", "asked", "User", "prefers", "aisle", "seats"]
    assert "  current  " in lines[-1] and lines[-1].endswith("From a file again")


def test_history_of_a_deleted_memory_is_kept(db: Cli) -> None:
    memory_id = db.add("forget me soon")
    db.ok("delete", memory_id, "--reason", "outdated")
    history = db.json("history", memory_id)
    assert [(v["change"], v["reason"]) for v in history["versions"]] == [("delete", "outdated")]
    assert history["current"] is None


def test_update_and_history_bad_input(db: Cli, js: Cli) -> None:
    memory_id = db.add("a memory")
    db.add("another memory")
    assert db.fail("update", "nope", "new") == "agentrecall: error: no memory with id 'nope'\n"
    assert db.fail("history", "nope") == "agentrecall: error: no memory with id 'nope'\n"
    assert "already has that content" in db.fail("update", memory_id, "another memory")
    assert usage_error(db, "update", memory_id).startswith("agentrecall: error: update needs")
    assert usage_error(db, "update", memory_id, "--metadata", "x").startswith(
        "agentrecall: error: argument --metadata"
    )
    assert usage_error(db, "update", memory_id, "   ").endswith(
        "argument text: expected the new content, got a blank string\n"
    )
    js.add("x")
    err = js.fail("update", "any", "new")
    assert err.startswith("agentrecall: error: update: '")
    assert "m.json' (JsonFileStore) cannot change a memory in place" in err
    assert "keeps no history" in js.fail("history", "any")


# --- delete -----------------------------------------------------------------------------------


def test_delete_several_and_report_the_missing(db: Cli) -> None:
    first, second, keep = db.add("one"), db.add("two"), db.add("three")
    code, out, err = db("delete", first, "nope", second, "gone")
    assert code == 1
    assert out == f"deleted {first}\ndeleted {second}\n"
    assert err == "agentrecall: error: no memories with ids 'nope', 'gone'\n"
    assert [r["id"] for r in db.json("list")] == [keep]
    code, out, err = db("--json", "delete", keep, keep)
    assert (code, json.loads(out), err) == (0, {"deleted": [keep]}, "")
    assert usage_error(db, "delete").endswith("the following arguments are required: ID\n")


def test_delete_reason_needs_history(js: Cli) -> None:
    memory_id = js.add("x")
    assert "m.json' (JsonFileStore) has no history to keep a reason in" in js.fail(
        "delete", memory_id, "--reason", "why"
    )


# --- count and stats --------------------------------------------------------------------------


def test_count_with_scope_and_filter(db: Cli, js: Cli) -> None:
    db.add("one", "--meta", "topic=travel", "--user-id", "alice")
    db.add("two", "--user-id", "bob")
    db.add("three")
    assert db.ok("count") == "3\n"
    assert db.json("count", "--user-id", "alice") == {"count": 1}
    assert db.ok("count", "--filter", '{"topic": "travel"}') == "1\n"
    assert usage_error(db, "count", "--filter", "nope").startswith("agentrecall: error: argument")
    js.add("x")
    assert js.ok("count") == "1\n"
    assert "--user-id" in js.fail("count", "--user-id", "a")


def test_stats_counts_scopes_keys_and_times(db: Cli, tmp_path: Path) -> None:
    db.add("one", "--meta", "topic=travel", "--user-id", "alice", "--session-id", "s1")
    db.add("two", "--meta", "topic=work", "--meta", "n=1", "--user-id", "alice")
    db.add("three", "--user-id", "bob", "--agent-id", "helper")
    db.add("four")
    stats = db.json("stats")
    assert stats["count"] == 4 and stats["kind"] == "SQLiteStore"
    assert stats["file_size"] == (tmp_path / "m.db").stat().st_size
    assert stats["oldest"] <= stats["newest"]
    assert stats["scopes"]["user_id"] == {"distinct": 2, "top": {"alice": 2, "bob": 1}}
    assert stats["scopes"]["session_id"]["top"] == {"s1": 1}
    assert stats["unscoped"] == 1
    assert stats["metadata_keys"] == {"distinct": 2, "top": {"topic": 2, "n": 1}}
    assert db.json("stats", "--user-id", "alice")["count"] == 2
    text = db.ok("stats")
    assert "memories       4\n" in text and "users          2: alice (2), bob (1)\n" in text


def test_stats_of_a_json_store_and_of_no_store(js: Cli, cli: Cli) -> None:
    js.add("x", "--meta", "k=1")
    assert "scopes         none (this kind of store has no scopes)" in js.ok("stats")
    assert js.json("stats")["metadata_keys"]["top"] == {"k": 1}
    assert cli.json("stats")["count"] == 0
    assert cli.ok("stats").count("\n") > 5
    assert "--session-id" in js.fail("stats", "--session-id", "s")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


# --- clear ------------------------------------------------------------------------------------


def test_clear_with_yes_clears_only_the_scope(db: Cli, js: Cli) -> None:
    db.add("alice's", "--user-id", "alice")
    keep = db.add("bob's", "--user-id", "bob")
    assert db.ok("clear", "--user-id", "alice", "--yes") == "cleared 1 memory\n"
    assert [r["id"] for r in db.json("list")] == [keep]
    assert db.json("clear", "-y") == {"cleared": 1}
    assert db.ok("clear", "--yes") == "nothing to clear: no memories\n"
    js.add("x")
    assert js.ok("clear", "--yes") == "cleared 1 memory\n"


def test_clear_refuses_without_yes_when_stdin_is_no_terminal(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert run("--db", db, "add", "keep me").returncode == 0
    assert run("--db", db, "add", "alice's", "--user-id", "alice").returncode == 0
    done = run("--db", db, "clear")
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"agentrecall: error: clear would forget 2 memories in '{db}': add --yes to confirm "
        "(stdin is no terminal)\n"
    )
    done = run("--db", db, "clear", "--user-id", "alice")
    assert done.returncode == 2
    assert f"would forget 1 memory of user_id=alice in '{db}': add --yes" in done.stderr.decode()
    assert run("--db", db, "count").stdout == b"2\n"


@pytest.mark.parametrize(("answer", "code", "left"), [(b"y\n", 0, b"0\n"), (b"n\n", 1, b"1\n")])
def test_clear_asks_on_a_terminal(tmp_path: Path, answer: bytes, code: int, left: bytes) -> None:
    pty = pytest.importorskip("pty")
    db = str(tmp_path / "m.db")
    assert run("--db", db, "add", "keep me").returncode == 0
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "agentrecall", "--db", db, "clear"],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        os.close(follower)
        os.write(leader, answer)
        out, err = child.communicate(timeout=60)
    os.close(leader)
    assert child.returncode == code, err
    assert err.decode().startswith(f"forget 1 memory in '{db}'? [y/N] ")
    assert run("--db", db, "count").stdout == left


def test_an_argument_whose_bytes_are_not_utf8_is_a_usage_error_naming_it(
    db: Cli, tmp_path: Path
) -> None:
    store = str(tmp_path / "m.db")
    done = subprocess.run(
        [sys.executable, "-m", "agentrecall", "--db", store, "add", b"caf\xe9"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines()[-1] == (
        "agentrecall: error: argument text: not UTF-8 text (a byte that is not UTF-8 at "
        "character 3)"
    )
    assert not (tmp_path / "m.db").exists()
    latin = "caf\udce9"  # how Python reads the byte 0xE9 of an argument that is not UTF-8
    for argv, named in [
        (("search", latin), "argument query"),
        (("get", latin), "argument id"),
        (("delete", "x", latin), "argument ID"),
        (("add", "x", "--meta", f"k={latin}"), "argument --meta"),
        (("add", "x", "--metadata", f'{{"k": "{latin}"}}'), "argument --metadata"),
        (("count", "--user-id", latin), "argument --user-id"),
        (("list", "--session-id", latin), "argument --session-id"),
    ]:
        at = argv[-1].index("\udce9")
        expected = f"{named}: not UTF-8 text (a byte that is not UTF-8 at character {at})\n"
        assert usage_error(db, *argv).endswith(expected), argv
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("flag", ["--user-id", "--agent-id", "--session-id"])
def test_an_empty_scope_id_is_a_usage_error_naming_the_flag(db: Cli, flag: str) -> None:
    assert usage_error(db, "add", "x", flag, "").endswith(
        f"argument {flag}: expected an id, got an empty string\n"
    )
    assert usage_error(db, "mcp", flag, "").endswith(
        f"argument {flag}: expected an id, got an empty string\n"
    )


# --- scopes -----------------------------------------------------------------------------------


def test_every_store_command_is_scoped(db: Cli) -> None:
    alice = db.add("Alice likes tea", "--user-id", "alice")
    bob = db.add("Bob likes tea", "--user-id", "bob")
    assert [h["id"] for h in db.json("search", "tea", "--user-id", "alice")] == [alice]
    assert [r["id"] for r in db.json("list", "--user-id", "bob")] == [bob]
    assert db.fail("delete", bob, "--user-id", "alice").endswith(f"'{bob}'\n")
    assert db.fail("update", bob, "x", "--user-id", "alice").endswith(f"'{bob}'\n")
    assert db.json("list", "--user-id", "bob")[0]["content"] == "Bob likes tea"
    with SyncStore(SQLiteStore(db.options[1])) as store:
        assert store.get(alice) is not None and store.get(alice).user_id == "alice"


def test_scope_options_are_refused_by_file_commands(cli: Cli, tmp_path: Path) -> None:
    err = usage_error(cli, "--user-id", "a", "migrate", "a.json", "b.db")
    assert err == "agentrecall: error: argument --user-id: not used by 'migrate'\n"


def test_a_missing_named_store_reads_empty_and_creates_nothing(cli: Cli, home: Path) -> None:
    assert cli.ok("count", "--user-id", "alice") == "0\n"
    assert cli.ok("list", "--filter", "{}") == "no memories match\n"
    assert cli.ok("list") == "the store is empty\n"
    assert cli.fail("get", "x") == "agentrecall: error: no memory with id 'x'\n"
    assert cli.fail("update", "x", "new").endswith("'x'\n")
    assert cli.fail("history", "x").endswith("'x'\n")
    assert cli.ok("clear") == "nothing to clear: no memories\n"
    assert cli.json("stats")["file_size"] is None
    assert not home.exists()


# --- help -------------------------------------------------------------------------------------


def test_every_command_has_help_with_an_example(cli: Cli) -> None:
    from agentrecall.cli.main import parser

    commands = [a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    names = sorted(commands[0].choices)
    assert {"add", "clear", "completion", "count", "delete", "get", "history", "list"} <= set(names)
    for name in names:
        out = cli.ok(name, "--help")
        assert "\nexample:\n  agentrecall " in out, name


def test_stdin_content_in_process(db: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.TextIOWrapper(io.BytesIO("caf\u00e9 au lait\r\n".encode()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stream)
    memory_id = db.add("-")
    assert db.json("get", memory_id)["content"] == "caf\u00e9 au lait"


HOSTILE = "evil \x1b[2J\x1b]0;owned\x07 \r\u202eover\x9b"
"""Escape sequences that would clear the screen and retitle the terminal, a carriage return,
a right-to-left override and a C1 control: what a memory from a model or a file may hold."""


def test_text_output_never_sends_a_memory_s_control_characters_to_the_terminal(
    db: Cli,
) -> None:
    memory_id = db.add(HOSTILE, "--user-id", HOSTILE, "--meta", f"{HOSTILE}=1")
    db.ok("update", memory_id, "now plain", "--reason", HOSTILE, "--user-id", HOSTILE)
    db.add("plain evil words")
    outputs = [
        db.ok("list", "--user-id", HOSTILE),
        db.ok("list"),
        db.ok("search", "evil"),
        db.ok("get", memory_id),
        db.ok("history", memory_id),
        db.ok("stats"),
    ]
    shown = "evil \\x1b[2J\\x1b]0;owned\\x07 \\r\\u202eover\\x9b"
    for out in outputs:
        assert not [c for c in out if c != "\n" and (c < " " or "\x7f" <= c <= "\x9f")], out
        assert "\u202e" not in out
    assert shown in outputs[0] and shown in outputs[3] and shown in outputs[4]
    code, _, err = db("get", HOSTILE)
    assert code == 1 and err == f"agentrecall: error: no memory with id '{shown}'\n"
    assert db.json("get", memory_id)["user_id"] == HOSTILE  # --json keeps the text exact


@pytest.mark.parametrize("command", [["add", "-"], ["import", "-"]])
def test_reading_stdin_from_a_terminal_says_how_to_end_it(
    tmp_path: Path, command: list[str]
) -> None:
    pty = pytest.importorskip("pty")
    db = str(tmp_path / "m.db")
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "agentrecall", "--db", db, *command],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as child:
        os.close(follower)
        os.write(leader, b"[]\n\x04" if command[0] == "import" else b"typed at a terminal\n\x04")
        out, err = child.communicate(timeout=60)
    assert err.decode().startswith(
        "agentrecall: note: reading standard input; end it with Ctrl-D on a line of its own\n"
    )
    os.close(leader)
    assert child.returncode == 0, err
    assert run("--db", db, "count").stdout == (b"0\n" if command[0] == "import" else b"1\n")
    piped = run("--db", db, "add", "-", stdin=b"piped in\n")
    assert (piped.returncode, piped.stderr) == (0, b"")
