"""Persisted BufferMemory across real processes sharing one SQLite file or PostgreSQL table.

Children are fresh interpreters (``sys.executable -c``) that report JSON on stdout and run with
``-W error``; a child that prints anything on stderr fails the test. Also covers files the
buffer must refuse without touching them: not SQLite, another application's database, and a
database written by a newer agentrecall.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentrecall import BufferMemory, StorageError

CHILD_TIMEOUT = 60

PRELUDE = """
import asyncio, json, sys
from agentrecall import BufferMemory

def entry_json(entry):
    meta = entry.metadata
    return {
        "id": entry.id,
        "session_id": entry.session_id,
        "messages": entry.messages,
        "created_at": meta.created_at.isoformat(),
        "accessed_at": meta.accessed_at.isoformat(),
        "agent_name": meta.agent_name,
        "tags": meta.tags,
        "token_count": meta.token_count,
    }

def exchange(tag, i):
    call = f"call-{tag}-{i}"
    if i % 2:
        return [
            {"role": "user", "content": [{"text": f"{tag} asks question {i}"}]},
            {"role": "assistant", "content": [
                {"text": "let me look"},
                {"toolUse": {"toolUseId": call, "name": "lookup", "input": {"i": i}}},
            ]},
            {"role": "user", "content": [{"toolResult": {
                "toolUseId": call, "status": "success", "content": [{"json": {"answer": i}}],
            }}]},
            {"role": "assistant", "content": [{"text": f"{tag} answers question {i}"}]},
        ]
    return [
        {"role": "user", "content": f"{tag} asks question {i}"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": call, "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"i": i})},
        }]},
        {"role": "tool", "tool_call_id": call, "content": json.dumps({"answer": i})},
        {"role": "assistant", "content": f"{tag} answers question {i}"},
    ]

def grown(tag, n):
    return [message for i in range(n) for message in exchange(tag, i)]

args = json.loads(sys.stdin.readline())
"""


Place = Callable[[str], dict[str, str]]


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """Where the children keep sessions: ``name`` gives the BufferMemory arguments of a store."""

    def where(name: str) -> dict[str, str]:
        if request.param == "postgres":
            return {"dsn": request.getfixturevalue("postgres_dsn"), "table": name}
        return {"path": str(tmp_path / f"{name}.db")}

    return where


def _command(body: str) -> list[str]:
    return [sys.executable, "-W", "error", "-c", PRELUDE + body]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def _run(body: str, **args: Any) -> Any:
    done = subprocess.run(
        _command(body),
        input=json.dumps(args) + "\n",
        capture_output=True,
        text=True,
        env=_env(),
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


@contextmanager
def _children(body: str, arg_list: list[dict[str, Any]]) -> Iterator[list[subprocess.Popen[str]]]:
    children = [
        subprocess.Popen(
            _command(body),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for _ in arg_list
    ]
    try:
        for child, args in zip(children, arg_list, strict=True):
            assert child.stdin is not None
            child.stdin.write(json.dumps(args) + "\n")
            child.stdin.flush()
        yield children
    finally:  # on failure too: no orphan children, no unclosed pipes (ResourceWarning)
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=CHILD_TIMEOUT)
            for pipe in (child.stdin, child.stdout, child.stderr):
                if pipe is not None and not pipe.closed:
                    pipe.close()


def _release_together(children: list[subprocess.Popen[str]]) -> list[Any]:
    """Wait until every child is ready, let them all go at once, return each one's JSON."""
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    results = []
    for child in children:
        out, err = child.communicate(timeout=CHILD_TIMEOUT)
        assert child.returncode == 0 and err == "", err
        results.append(json.loads(out))
    return results


def _when(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


def _non_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] not in ("system", "developer")]


READ_ALL = """
async def main():
    async with BufferMemory(max_messages=None, **args["where"]) as buffer:
        entries = [entry_json(e) for e in await buffer.entries()]
        reads = {e["session_id"]: await buffer.read(e["session_id"]) for e in entries}
        print(json.dumps({"entries": entries, "reads": reads, "count": buffer.session_count}))

asyncio.run(main())
"""


# --------------------------------------------------------------------------------------------
# 1. what one process wrote, a fresh process reads back equal

WRITE_ONE = """
async def main():
    async with BufferMemory(**args["where"]) as buffer:
        await buffer.write(args["messages"], "chat", agent_name="writer", tags={"run": "1"})
        (entry,) = await buffer.entries("chat")
        print(json.dumps(entry_json(entry)))

asyncio.run(main())
"""

READ_ONE = """
async def main():
    async with BufferMemory(**args["where"]) as buffer:
        (before,) = await buffer.entries("chat")
        read = await buffer.read("chat")
        (after,) = await buffer.entries("chat")
        print(json.dumps({
            "before": entry_json(before), "read": read, "after": entry_json(after),
            "count": buffer.session_count,
        }))

asyncio.run(main())
"""

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a travel agent."},
    {"role": "user", "content": "Book me a flight to Zürich 🛫, window seat"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_flights", "arguments": '{"to": "ZRH", "n": 2}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '[{"flight": "LX 317", "ok": true}]'},
    {"role": "assistant", "content": "LX 317 has a window seat. Book it?"},
    {"role": "developer", "content": "Confirm before booking."},
    {"role": "user", "content": [{"type": "text", "text": "Yes — and a hotel, ½ board"}]},
    {
        "role": "assistant",
        "content": [
            {"text": "Booking both."},
            {
                "toolUse": {
                    "toolUseId": "tu_1",
                    "name": "book",
                    "input": {"flight": "LX 317", "hotel": {"nights": 3, "rate": 129.5}},
                }
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "tu_1",
                    "status": "success",
                    "content": [{"json": {"ref": "X9", "paid": None, "flags": [True, False]}}],
                }
            }
        ],
    },
    {"role": "assistant", "content": [{"text": "Done: reference X9. Bon voyage! 🇨🇭"}]},
    {"role": "user", "content": ""},
    {"role": "assistant", "content": "Anything else?"},
]


def test_a_session_written_by_one_process_reads_back_equal_in_a_fresh_process(
    place: Place,
) -> None:
    where = place("conversations")
    written = _run(WRITE_ONE, where=where, messages=CONVERSATION)
    seen = _run(READ_ONE, where=where)

    assert written["messages"] == _non_system(CONVERSATION)
    assert seen["read"] == _non_system(CONVERSATION)
    assert seen["before"] == written, "the entry is the same in every process"
    assert seen["after"] == {**written, "accessed_at": seen["after"]["accessed_at"]}
    assert _when(seen["after"]["accessed_at"]) >= _when(written["accessed_at"])
    assert written["agent_name"] == "writer" and written["tags"] == {"run": "1"}
    assert seen["count"] == 1


# --------------------------------------------------------------------------------------------
# 2. two processes writing different sessions of one file at the same moment

WRITE_MANY_SESSIONS = """
async def main():
    buffer = BufferMemory(max_messages=None, **args["where"])  # opens the file on first use
    print("ready", flush=True)
    sys.stdin.readline()
    written = {}
    async with buffer:
        for i in range(args["writes"]):
            session = f"{args['tag']}-{i}"
            written[session] = grown(args["tag"], i % 3 + 1)
            await buffer.write(written[session], session, agent_name=args["tag"])
            assert await buffer.read(session) == written[session]
    print(json.dumps(written))

asyncio.run(main())
"""


def test_two_processes_writing_different_sessions_at_once_lose_nothing(place: Place) -> None:
    where = place("shared")
    tags = ["p0", "p1"]
    arg_list = [{"where": where, "tag": tag, "writes": 50} for tag in tags]
    with _children(WRITE_MANY_SESSIONS, arg_list) as children:
        results = _release_together(children)

    written = {session: messages for result in results for session, messages in result.items()}
    assert len(written) == 100
    view = _run(READ_ALL, where=where)
    assert view["count"] == 100
    assert view["reads"] == written
    assert {e["session_id"] for e in view["entries"]} == set(written)
    assert len({e["id"] for e in view["entries"]}) == 100
    for entry in view["entries"]:
        assert entry["agent_name"] == entry["session_id"].split("-")[0]
    for tag in tags:  # each writer's sessions keep its order of first write
        mine = [e["session_id"] for e in view["entries"] if e["agent_name"] == tag]
        assert mine == [f"{tag}-{i}" for i in range(50)]


# --------------------------------------------------------------------------------------------
# 3. several processes writing the same session at the same moment

WRITE_ONE_SESSION = """
async def main():
    buffer = BufferMemory(max_messages=None, **args["where"])
    print("ready", flush=True)
    sys.stdin.readline()
    tag, writes, reads, ids = args["tag"], [], [], set()
    async with buffer:
        for i in range(args["writes"]):
            writes.append(grown(tag, i % 4 + 1) + [{"role": "user", "content": f"{tag} {i}"}])
            await buffer.write(writes[-1], "same")
            reads.append(await buffer.read("same"))
            ids.update((e.id, e.metadata.created_at.isoformat()) for e in await buffer.entries())
    print(json.dumps({"writes": writes, "reads": reads, "ids": sorted(ids)}))

asyncio.run(main())
"""


def test_processes_writing_one_session_at_once_leave_one_whole_write(place: Place) -> None:
    where = place("same")
    arg_list = [{"where": where, "tag": f"p{n}", "writes": 25} for n in range(4)]
    with _children(WRITE_ONE_SESSION, arg_list) as children:
        results = _release_together(children)

    candidates = [json.dumps(w) for result in results for w in result["writes"]]
    lasts = [json.dumps(result["writes"][-1]) for result in results]
    for result in results:
        for read in result["reads"]:
            assert json.dumps(read) in candidates, f"a read mixed several writes: {read}"
    view = _run(READ_ALL, where=where)
    assert list(view["reads"]) == ["same"] and view["count"] == 1
    assert json.dumps(view["reads"]["same"]) in lasts, "the last commit is some writer's last"
    (entry,) = view["entries"]
    every_id = {tuple(pair) for result in results for pair in result["ids"]}
    assert every_id == {(entry["id"], entry["created_at"])}, "one entry, one id, one creation"


# --------------------------------------------------------------------------------------------
# 4. a write that returned survives SIGKILL of its process

WRITE_UNTIL_KILLED = """
async def main():
    async with BufferMemory(max_messages=None, **args["where"]) as buffer:
        for n in range(1, 10_000):
            await buffer.write(grown("k", n), "grow")
            await buffer.write(exchange("s", n), f"s-{n}")
            print(n, flush=True)

asyncio.run(main())
"""


@pytest.mark.parametrize("acknowledged", [1, 30])
def test_a_write_that_returned_survives_sigkill(place: Place, acknowledged: int) -> None:
    where = place("killed")
    with _children(WRITE_UNTIL_KILLED, [{"where": where}]) as (child,):
        assert child.stdout is not None
        for expected in range(1, acknowledged + 1):
            assert child.stdout.readline().strip() == str(expected)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=CHILD_TIMEOUT)
        assert child.returncode == -signal.SIGKILL

    # The child goes on writing until the kill lands, which may be any number of writes after
    # the last one the parent read of: every acknowledged write must be there, and whatever
    # else is there must be whole writes, in the order they were made.
    view = _run(READ_ALL, where=where)
    done = len(view["reads"]) - 1
    assert done >= acknowledged
    assert set(view["reads"]) == {"grow", *(f"s-{n}" for n in range(1, done + 1))}
    expected = _run(EXPECTED_AFTER_KILL, n=done + 1)
    for n in range(1, done + 1):
        assert view["reads"][f"s-{n}"] == expected["sessions"][n - 1]
    assert view["reads"]["grow"] in expected["grow"][done - 1 :]
    if "path" in where:
        with closing(sqlite3.connect(where["path"])) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


EXPECTED_AFTER_KILL = """
n = args["n"]
sessions = [exchange("s", i) for i in range(1, n + 1)]
print(json.dumps({"sessions": sessions, "grow": [grown("k", i) for i in range(1, n + 1)]}))
"""


# --------------------------------------------------------------------------------------------
# 5. entries keep their order, ids and creation times across processes

FIRST = """
async def main():
    async with BufferMemory(**args["where"]) as buffer:
        for session in ("a", "b", "c"):
            await buffer.write(exchange(session, 0), session)
        print(json.dumps([entry_json(e) for e in await buffer.entries()]))

asyncio.run(main())
"""

SECOND = """
async def main():
    async with BufferMemory(**args["where"]) as buffer:
        await buffer.write(grown("b", 3), "b", agent_name="second")
        await buffer.write(grown("a", 2), "a")
        await buffer.write(exchange("d", 0), "d")
        await buffer.read("c")
        print(json.dumps([entry_json(e) for e in await buffer.entries()]))

asyncio.run(main())
"""

ENTRIES = """
async def main():
    async with BufferMemory(**args["where"]) as buffer:
        print(json.dumps([entry_json(e) for e in await buffer.entries()]))

asyncio.run(main())
"""


def test_entries_keep_order_ids_and_creation_times_across_processes(place: Place) -> None:
    where = place("order")
    first = {e["session_id"]: e for e in _run(FIRST, where=where)}
    second_list = _run(SECOND, where=where)
    third_list = _run(ENTRIES, where=where)

    assert list(first) == ["a", "b", "c"]
    assert [e["session_id"] for e in second_list] == ["a", "b", "c", "d"]
    assert third_list == second_list, "a fresh process lists exactly what the last one left"
    second = {e["session_id"]: e for e in second_list}
    for session in ("a", "b", "c"):
        assert second[session]["id"] == first[session]["id"]
        assert second[session]["created_at"] == first[session]["created_at"]
        assert _when(second[session]["accessed_at"]) >= _when(first[session]["accessed_at"])
    assert second["d"]["id"] not in {e["id"] for e in first.values()}
    assert second["b"]["agent_name"] == "second" and second["a"]["agent_name"] is None
    assert len(second["b"]["messages"]) == 12 and len(second["a"]["messages"]) == 8
    assert second["c"]["messages"] == first["c"]["messages"]


# --------------------------------------------------------------------------------------------
# 6. files the buffer refuses, and leaves as they were


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


async def _assert_refused(path: Path, *fragments: str) -> None:
    buffer = BufferMemory(path=path)
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: buffer.read("s"),
        lambda: buffer.write([{"role": "user", "content": "hi"}], "s"),
        buffer.entries,
        buffer.clear,
    ]
    try:
        for call in calls:
            with pytest.raises(StorageError) as caught:
                await call()
            message = str(caught.value)
            assert str(path) in message
            for fragment in fragments:
                assert fragment in message
    finally:
        await buffer.aclose()


def _write_random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(3).randbytes(8192))


def _write_json_memory_file(path: Path) -> None:
    record = {"id": "m1", "content": "User likes tea", "createdAt": "2024-01-01T00:00:00.000Z"}
    path.write_text(json.dumps([record], indent=2), encoding="utf-8")


@pytest.mark.parametrize("make_file", [_write_random_bytes, _write_json_memory_file])
async def test_a_file_that_is_not_sqlite_is_refused_and_left_unchanged(
    tmp_path: Path, make_file: Callable[[Path], None]
) -> None:
    path = tmp_path / "not-a-database.db"
    make_file(path)
    before = _snapshot(tmp_path)
    await _assert_refused(path, "not an SQLite database")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
async def test_another_applications_database_is_refused_and_left_unchanged(
    tmp_path: Path, journal_mode: str
) -> None:
    path = tmp_path / "notes.db"
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA journal_mode = {journal_mode}")
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        db.executemany("INSERT INTO notes (body) VALUES (?)", [("milk",), ("eggs",)])
        db.commit()
    before = _snapshot(tmp_path)
    await _assert_refused(path, "another application")
    assert _snapshot(tmp_path) == before
    with closing(sqlite3.connect(path)) as db:
        tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        assert tables == [("notes",)]


async def test_a_database_of_a_newer_buffer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    async with BufferMemory(path=path) as buffer:
        await buffer.write([{"role": "user", "content": "kept"}], "s")
    with closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE agentrecall_schema SET version = 99 WHERE component = 'buffer'")
        db.commit()
    before = _snapshot(tmp_path)
    await _assert_refused(path, "version 99", "upgrade")
    assert _snapshot(tmp_path) == before
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT component, version FROM agentrecall_schema").fetchall() == [
            ("buffer", 99)
        ]
        assert db.execute("SELECT session_id FROM buffer_sessions").fetchall() == [("s",)]
