"""Every store command on a PostgreSQL store (``--dsn``), through the command line's entry point."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from history_scenarios import SCOPES
from test_cli_transfer import fail, ok, rich_store, run
from test_mcp_server import call, connected, contents, stdio_client
from test_postgres_connection import _require_password

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.testing import HashEmbedder, ManualClock
from agentrecall.testing.postgres import TemporaryPostgres

HASH = "agentrecall.testing:HashEmbedder"
AGENTRECALL = [sys.executable, "-m", "agentrecall"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


def with_password(dsn: str, password: str) -> str:
    """``dsn`` with a password (the tests' server trusts every login, so any one works)."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["password"] = password
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items()})


def as_url(dsn: str, password: str | None = None) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    login = str(info["user"]) + ("" if password is None else f":{password}")
    return f"postgresql://{login}@{info['host']}:{info['port']}/{info['dbname']}"


def everything(store: Any) -> dict[str, Any]:
    """What a reader sees of ``store``: every memory, every version, each scope's list."""

    async def read() -> dict[str, Any]:
        try:
            views = {}
            for ids in SCOPES:
                view = store.scope(**ids) if ids else store
                views[tuple(ids.items())] = (await view.list(), await view.count())
            versions = [v async for page in store.versions(batch=3) for v in page]
            return {"records": await store.list(), "versions": versions, "views": views}
        finally:
            await store.aclose()

    return asyncio.run(read())


def test_every_store_command_works_on_postgresql(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = ["--dsn", postgres_dsn]
    added = json.loads(ok(capsys, *dsn, "--json", "add", "Likes green tea", "--meta", "k=1"))
    memory_id = added["id"]
    ok(capsys, *dsn, "add", "-", "--user-id", "ana", stdin=b"Flies to Lisbon in May")
    ok(capsys, *dsn, "add", "Short note", "--ttl", "1h")
    assert json.loads(ok(capsys, *dsn, "--json", "count")) == {"count": 3}
    assert json.loads(ok(capsys, *dsn, "--json", "count", "--user-id", "ana")) == {"count": 1}
    [hit] = json.loads(ok(capsys, *dsn, "--json", "search", "tea"))
    assert hit["id"] == memory_id
    assert json.loads(ok(capsys, *dsn, "--json", "search", "tea", "--filter", '{"k": 2}')) == []
    assert json.loads(ok(capsys, *dsn, "--json", "get", memory_id))["content"] == "Likes green tea"
    listed = json.loads(ok(capsys, *dsn, "--json", "list", "--oldest"))
    assert [r["content"] for r in listed][0] == "Likes green tea" and len(listed) == 3
    ok(capsys, *dsn, "update", memory_id, "Likes black tea", "--reason", "tastes changed")
    history = json.loads(ok(capsys, *dsn, "--json", "history", memory_id))
    [version] = history["versions"]
    assert (version["content"], version["reason"]) == ("Likes green tea", "tastes changed")
    assert history["current"]["content"] == "Likes black tea"
    stats = json.loads(ok(capsys, *dsn, "--json", "stats"))
    address = psycopg.conninfo.conninfo_to_dict(postgres_dsn)
    assert stats["kind"] == "PostgresStore" and stats["count"] == 3
    assert stats["database"] == f"database '{address['dbname']}' on 127.0.0.1:{address['port']}"
    assert (stats["schema"], stats["path"], stats["file_size"]) == ("agentrecall", None, None)
    shown = ok(capsys, *dsn, "stats")
    assert "shared by all its stores" in shown
    # The address is named once, under its own label.
    assert re.search(rf"^server +database '{address['dbname']}' on 127.0.0.1:", shown, re.M)
    assert shown.count("database '") == 1
    ok(capsys, *dsn, "delete", memory_id)
    assert json.loads(ok(capsys, *dsn, "--json", "count")) == {"count": 2}
    ok(capsys, *dsn, "clear", "--yes", "--user-id", "ana")
    assert json.loads(ok(capsys, *dsn, "--json", "count")) == {"count": 1}
    assert ok(capsys, *dsn, "reindex", "--embedder", HASH) == f"computed 1 vector with {HASH}\n"


def test_facts_that_change_on_postgresql(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = ["--dsn", postgres_dsn, "--pg-name", "changes"]
    with ManualClock(datetime(2025, 3, 1, tzinfo=timezone.utc)) as clock:
        lyon = json.loads(ok(capsys, *dsn, "--json", "add", "The user lives in Lyon"))["id"]
        clock.advance(timedelta(days=31))
        arguments = ("supersede", lyon, "The user lives in Berlin", "--reason", "moved")
        berlin = ok(capsys, *dsn, *arguments, "--valid-from", "2025-03-20").strip()
    assert [h["id"] for h in json.loads(ok(capsys, *dsn, "--json", "search", "lives"))] == [berlin]
    then = json.loads(ok(capsys, *dsn, "--json", "search", "lives", "--as-of", "2025-03-15"))
    assert [h["id"] for h in then] == [lyon]
    both = json.loads(ok(capsys, *dsn, "--json", "list", "--include-superseded", "--oldest"))
    assert [(r["id"], r["superseded_by"]) for r in both] == [(lyon, berlin), (berlin, None)]
    assert ok(capsys, *dsn, "count", "--valid-at", "2025-03-10", "--include-superseded") == "1\n"
    chain = json.loads(ok(capsys, *dsn, "--json", "history", berlin))
    assert [(v["memory_id"], v["change"]) for v in chain["versions"]] == [(lyon, "supersede")]
    stats = json.loads(ok(capsys, *dsn, "--json", "stats"))
    assert (stats["count"], stats["retired"]) == (1, 1)


def test_names_and_schemas_keep_stores_apart(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = ["--dsn", postgres_dsn]
    ok(capsys, *dsn, "add", "In the default store")
    ok(capsys, *dsn, "--pg-name", "team", "add", "In the team store")
    ok(capsys, *dsn, "add", "In another schema", "--pg-schema", "elsewhere")
    for options, expected in (
        ([], "In the default store"),
        (["--pg-name", "team"], "In the team store"),
        (["--pg-schema", "elsewhere"], "In another schema"),
    ):
        listed = json.loads(ok(capsys, *dsn, *options, "--json", "list"))
        assert [record["content"] for record in listed] == [expected]
    # Reading a store that does not exist yet finds it empty.
    assert json.loads(ok(capsys, *dsn, "--pg-name", "nobody", "--json", "count")) == {"count": 0}


def test_search_by_meaning_with_an_embedder(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def fill() -> None:
        async with PostgresStore(postgres_dsn, embedder=HashEmbedder()) as store:
            await store.add_many([("The cat sleeps on the sofa", None), ("Invoices due", None)])

    asyncio.run(fill())
    for mode in ("semantic", "hybrid"):
        found = ok(
            capsys,
            "--dsn",
            postgres_dsn,
            "--json",
            "search",
            "cat sofa",
            "--mode",
            mode,
            "--embedder",
            HASH,
        )
        hits = json.loads(found)
        assert hits[0]["content"] == "The cat sleeps on the sofa", mode


def test_an_sqlite_export_piped_into_postgresql_and_back_is_exact(
    tmp_path: Path, postgres_dsn: str
) -> None:
    source, back = tmp_path / "a.db", tmp_path / "back.db"
    asyncio.run(rich_store(source))
    _pipe(["--db", str(source)], ["--dsn", postgres_dsn])
    expected = everything(SQLiteStore(source))
    assert expected["versions"], "the store has history to carry"
    assert everything(PostgresStore(postgres_dsn)) == expected
    _pipe(["--dsn", postgres_dsn], ["--db", str(back)])
    assert everything(SQLiteStore(back)) == expected


def _pipe(source: list[str], destination: list[str]) -> None:
    """``agentrecall SOURCE export | agentrecall DESTINATION import -``, two processes."""
    with subprocess.Popen([*AGENTRECALL, *source, "export"], stdout=subprocess.PIPE) as exporter:
        importer = subprocess.run(
            [*AGENTRECALL, *destination, "import", "-"],
            stdin=exporter.stdout,
            capture_output=True,
            text=True,
        )
    assert exporter.returncode == 0
    assert importer.returncode == 0, importer.stderr


def test_a_postgresql_export_of_a_scope_and_a_rerun_import(
    tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = ["--dsn", postgres_dsn]
    ok(capsys, *dsn, "add", "Ana's note", "--user-id", "ana")
    ok(capsys, *dsn, "add", "Bo's note", "--user-id", "bo")
    out = tmp_path / "ana.jsonl"
    ok(capsys, *dsn, "export", "--user-id", "ana", "-o", str(out))
    header, *lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert (header["store"], header["memories"], len(lines)) == ("postgres", 1, 1)
    assert header["scope"]["user_id"] == "ana"
    err = fail(capsys, *dsn, "import", str(out))
    assert "already holds a memory with id" in err and "nothing was imported" in err
    text = ok(capsys, *dsn, "import", str(out), "--skip-existing")
    assert "left out 1 whose id the store holds" in text and "database '" in text


def test_output_and_errors_never_show_the_password(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "s3cret-horse"
    for dsn in (with_password(postgres_dsn, secret), as_url(postgres_dsn, secret)):
        ok(capsys, "--dsn", dsn, "add", "A memory")
        shown = ok(capsys, "--dsn", dsn, "--json", "stats")
        shown += ok(capsys, "--dsn", dsn, "stats")
        shown += fail(capsys, "--dsn", dsn, "get", "no-such-id")
        shown += fail(capsys, "--dsn", dsn.replace("dbname=", "dbname=x") + "x", "count")
        assert secret not in shown


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_server_that_refuses_or_a_missing_database_is_one_line(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()
    refused = f"postgresql://me:pw@127.0.0.1:{port}/mydb?connect_timeout=5"
    err = fail(capsys, "--dsn", refused, "count")
    assert f"127.0.0.1:{port} (database 'mydb')" in err and "pw@" not in err
    missing = as_url(postgres_dsn).rsplit("/", 1)[0] + "/no_such_db"
    err = fail(capsys, "--dsn", missing, "list")
    assert "database 'no_such_db' does not exist" in err
    code, out, err = run(capsys, "--json", "--dsn", missing, "add", "x")
    assert code == 1 and out == "" and "no_such_db" in json.loads(err)["error"]


def test_a_wrong_password_is_one_line_naming_host_and_database(
    private_postgres: TemporaryPostgres, capsys: pytest.CaptureFixture[str]
) -> None:
    _require_password(private_postgres, "alice", "right-horse")
    base = f"127.0.0.1:{private_postgres.port}/postgres"
    # Reading needs no more than the right to connect: nothing is created on the server.
    assert ok(capsys, "--dsn", f"postgresql://alice:right-horse@{base}", "count") == "0\n"
    err = fail(capsys, "--dsn", f"postgresql://alice:wrong-battery@{base}", "count")
    assert f"127.0.0.1:{private_postgres.port} refused the login of user 'alice'" in err
    assert "to database 'postgres'" in err
    assert "wrong-battery" not in err and "Traceback" not in err


def test_bad_store_options(postgres_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    def usage(*argv: str) -> str:
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), (argv, err)
        return err

    assert "--dsn: not allowed with argument --db" in usage("--db", "a", "--dsn", "x", "list")
    assert "--dsn: not allowed with argument --db" in usage("--dsn", "x", "list", "--db", "a")
    assert "--pg-name: needs --dsn" in usage("--pg-name", "team", "list")
    assert "--pg-schema: needs --dsn" in usage("--db", "a.db", "list", "--pg-schema", "s")
    assert "not used by 'migrate'" in usage("--dsn", postgres_dsn, "migrate", "a.db", "b.db")
    err = usage("--dsn", "host=h password=hunter2 oops", "list")
    assert "agentrecall: error: --dsn is not a valid" in err and "hunter2" not in err
    assert "argument --pg-name: expected a store name, got a blank string" in usage(
        "--dsn", postgres_dsn, "--pg-name", " ", "list"
    )
    assert "argument --pg-schema: expected a schema name, got an empty string" in usage(
        "--dsn", postgres_dsn, "--pg-schema", "", "list"
    )
    assert "argument --dsn: expected a PostgreSQL connection string, got an empty" in usage(
        "--dsn", "", "list"
    )


@pytest.mark.asyncio
async def test_the_mcp_server_serves_a_postgresql_store(postgres_dsn: str) -> None:
    async with connected(stdio_client("--dsn", postgres_dsn, "--user-id", "ana")) as client:
        added = await call(client, "add_memory", {"entries": ["The dog is named Biscuit."]})
        assert added["stored"] == 1
        assert await contents(client, "dog") == ["The dog is named Biscuit."]
    async with PostgresStore(postgres_dsn, writable=False) as store:
        [record] = await store.list()
    assert (record.content, record.user_id) == ("The dog is named Biscuit.", "ana")
    assert os.environ.get("AGENTRECALL_DSN") is None  # no environment variable is read
