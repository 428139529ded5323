"""Lone surrogates ("\\ud800"): refused with a message naming the field, never a bare
UnicodeEncodeError; a JSON file that already holds them as escapes stays readable and writable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentrecall import BufferMemory, InvalidArgumentError, JsonFileStore, StorageError
from agentrecall.cli.main import main
from agentrecall.storage import InMemoryStorage, LocalFileStorage
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.types import MemoryRecord

LONE = "\ud800"
CREATED_AT = "2024-01-01T00:00:00.000Z"


def _record(**changes: Any) -> MemoryRecord:
    fields: dict[str, Any] = {"id": "r1", "content": "fine", "created_at": CREATED_AT}
    fields.update(changes)
    return MemoryRecord(**fields)


# (what is bad, the call, words the message must hold)
WRITES: list[tuple[str, Callable[[Any], Awaitable[Any]], str]] = [
    ("content", lambda s: s.add(f"a {LONE} b"), "content"),
    (
        "metadata value",
        lambda s: s.add("x", {"a": {"b": [1, f"x{LONE}"]}}),
        "metadata['a']['b'][1]",
    ),
    ("metadata key", lambda s: s.add("x", {"a": [{LONE: 1}]}), "metadata['a'][0] has a key"),
    ("batch content", lambda s: s.add_many([("ok", None), (LONE, None)]), "content (item 1)"),
    (
        "batch metadata",
        lambda s: s.add_many([("a", None), ("b", {"k": LONE})]),
        "metadata (item 1)",
    ),
    (
        "import content",
        lambda s: s.import_records([_record(content=LONE)]),
        "record 0 (r1): content",
    ),
    ("import id", lambda s: s.import_records([_record(id=f"r{LONE}")]), "record 0: id"),
    (
        "import metadata",
        lambda s: s.import_records([_record(metadata={"deep": [{"k": LONE}]})]),
        "record 0 (r1): metadata['deep'][0]['k']",
    ),
]


def _stores(tmp_path: Path) -> dict[str, Any]:
    return {
        "jsonfile": JsonFileStore(name="json", path=tmp_path / "memory.json"),
        "in-memory": JsonFileStore(name="mem", persist=False),
        "sqlite": SQLiteStore(tmp_path / "memory.db"),
    }


@pytest.mark.parametrize("kind", ["jsonfile", "in-memory", "sqlite"])
@pytest.mark.parametrize(("what", "call", "named"), WRITES, ids=[w[0] for w in WRITES])
async def test_store_writes_refuse_lone_surrogates_naming_the_field(
    tmp_path: Path, kind: str, what: str, call: Callable[[Any], Awaitable[Any]], named: str
) -> None:
    store = _stores(tmp_path)[kind]
    with pytest.raises(InvalidArgumentError, match="lone surrogate") as raised:
        await call(store)
    assert named in str(raised.value)
    assert await store.count() == 0
    if kind == "jsonfile":
        assert not (tmp_path / "memory.json").exists()
    if isinstance(store, SQLiteStore):
        await store.aclose()


async def test_sqlite_update_scope_and_reason_refuse_lone_surrogates(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    memory = await store.add("original")
    for call, named in [
        (lambda: store.update(memory.id, content=LONE), "content"),
        (lambda: store.update(memory.id, metadata={"k": [LONE]}), r"metadata\['k'\]\[0\]"),
        (lambda: store.update(memory.id, content="new", reason=LONE), "reason"),
        (lambda: store.delete(memory.id, reason=LONE), "reason"),
        (lambda: store.get(f"id{LONE}"), "memory_id"),
    ]:
        with pytest.raises(InvalidArgumentError, match=f"{named}.*lone surrogate"):
            await call()
    for scope_id in ("user_id", "agent_id", "session_id"):
        with pytest.raises(InvalidArgumentError, match=f"{scope_id} holds a lone surrogate"):
            store.scope(**{scope_id: f"ana{LONE}"})
    assert (await store.get(memory.id)).content == "original"
    await store.aclose()


@pytest.mark.parametrize("persisted", [False, True], ids=["in-memory", "sqlite"])
async def test_buffer_refuses_lone_surrogates_in_ids_text_names_and_tags(
    tmp_path: Path, persisted: bool
) -> None:
    buffer = BufferMemory(path=tmp_path / "buffer.db" if persisted else None)
    hello = [{"role": "user", "content": "hello"}]
    for call, named in [
        (lambda: buffer.write(hello, f"s{LONE}"), "session_id"),
        (lambda: buffer.read(f"s{LONE}"), "session_id"),
        (lambda: buffer.clear(f"s{LONE}"), "session_id"),
        (lambda: buffer.entries(f"s{LONE}"), "session_id"),
        (lambda: buffer.write([{"role": "user", "content": f"a{LONE}"}]), r"messages\[0\] content"),
        (
            lambda: buffer.write(
                [*hello, {"role": "assistant", "content": [{"text": "ok"}, {"text": LONE}]}]
            ),
            r"messages\[1\] content\[1\] text",
        ),
        (lambda: buffer.write(hello, agent_name=LONE), "agent_name"),
        (lambda: buffer.write(hello, tags={"k": LONE}), r"tags\['k'\]"),
        (lambda: buffer.write(hello, tags={LONE: "v"}), "tags key"),
    ]:
        with pytest.raises(InvalidArgumentError, match=f"{named}.*lone surrogate"):
            await call()
    with pytest.raises(InvalidArgumentError, match=r"default_store\['s'\]\[0\] content"):
        BufferMemory(default_store={"s": [{"role": "user", "content": LONE}]})
    assert await buffer.count_sessions() == 0
    await buffer.aclose()


async def test_a_persisted_buffer_refuses_a_lone_surrogate_anywhere_in_a_message(
    tmp_path: Path,
) -> None:
    buffer = BufferMemory(path=tmp_path / "buffer.db")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": LONE}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    with pytest.raises(InvalidArgumentError, match=r"messages\[1\] cannot be stored.*surrogate"):
        await buffer.write(messages)
    assert await buffer.read() == []
    await buffer.aclose()


@pytest.mark.parametrize("make", [InMemoryStorage, LocalFileStorage], ids=["memory", "local"])
async def test_storage_keys_with_lone_surrogates_are_refused(
    tmp_path: Path, make: Callable[..., Any]
) -> None:
    storage = make() if make is InMemoryStorage else make(tmp_path)
    for call in (
        lambda: storage.write(f"k{LONE}", b"x"),
        lambda: storage.read(f"k{LONE}"),
        lambda: storage.delete(f"k{LONE}"),
    ):
        with pytest.raises(StorageError, match="valid Unicode"):
            await call()
    assert await storage.list() == []


async def test_local_storage_lists_no_key_for_an_undecodable_file_name(tmp_path: Path) -> None:
    storage = LocalFileStorage(tmp_path)
    await storage.write("ok.txt", b"fine")
    try:
        with open(os.fsencode(tmp_path) + b"/\xff.txt", "wb") as handle:
            handle.write(b"not ours")
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    assert await storage.list() == ["ok.txt"]


# What JavaScript's JSON.stringify writes for a lone surrogate (Strands' TypeScript store, say):
# the escape, in a file that is otherwise the shared format.
def _file_with_escapes() -> bytes:
    records = [
        {"id": "a", "content": "before SURROGATE after", "createdAt": CREATED_AT},
        {
            "id": "b",
            "content": "caf\u00e9 SURROGATE",
            "createdAt": CREATED_AT,
            "metadata": {"keySURROGATE": ["SURROGATE"], "plain": "\u00fc"},
        },
    ]
    text = json.dumps(records, indent=2, ensure_ascii=False)
    return text.replace("SURROGATE", "\\ud800").encode("utf-8")


async def test_a_file_holding_surrogate_escapes_reads_and_stays_writable(tmp_path: Path) -> None:
    path = tmp_path / "escapes.json"
    original = _file_with_escapes()
    path.write_bytes(original)
    store = JsonFileStore(name="escapes", path=path)

    assert [hit.id for hit in await store.search("before after")] == ["a"]
    assert (await store.get("a")).content == f"before {LONE} after"
    assert (await store.get("b")).metadata == {f"key{LONE}": [LONE], "plain": "\u00fc"}

    added = await store.add("a new memory", {"n": 1})
    written = path.read_bytes()
    # The old records are written back byte for byte: escapes stay escapes, other text raw.
    assert written.startswith(original[:-2] + b",\n")
    parsed = json.loads(written)
    assert [r["id"] for r in parsed] == ["a", "b", added.id]

    assert await store.delete("a") is True
    rewritten = path.read_bytes()
    assert b'"caf\xc3\xa9 \\ud800"' in rewritten and b'"key\\ud800"' in rewritten
    assert [r["id"] for r in json.loads(rewritten)] == ["b", added.id]


# --- ids with a lone surrogate, which only a JSON file written by another program holds -----

ODD_ID = f"a{LONE}b"


def _file_with_odd_ids(path: Path) -> None:
    """Write a memory file whose ids ``a\\ud800b`` and ``\\udfff`` are JSON escapes."""
    records = [
        {"id": "plain", "content": "a plain memory", "createdAt": CREATED_AT},
        {"id": "ODD", "content": "its id holds a lone surrogate", "createdAt": CREATED_AT},
        {"id": "LOW", "content": "another one", "createdAt": CREATED_AT},
    ]
    text = json.dumps(records, indent=2).replace("ODD", "a\\ud800b").replace("LOW", "\\udfff")
    path.write_bytes(text.encode())


async def test_a_json_file_s_odd_id_can_be_fetched_and_deleted(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    _file_with_odd_ids(path)
    store = JsonFileStore(name="odd", path=path)
    assert [r.id for r in await store.list()] == ["plain", ODD_ID, "\udfff"]
    record = await store.get(ODD_ID)
    assert record is not None and record.content == "its id holds a lone surrogate"
    # Ids no memory has, odd or not, are simply not there; nothing is written.
    before = path.read_bytes()
    assert await store.get(f"x{LONE}") is None
    assert await store.delete(f"x{LONE}") is False
    assert await store.delete_many([f"x{LONE}", "missing"]) == 0
    assert path.read_bytes() == before
    assert await store.delete(ODD_ID) is True
    assert await store.get(ODD_ID) is None
    # The memories left are written back as they were: the other odd id keeps its escape.
    assert b'"id": "\\udfff"' in path.read_bytes()
    assert await store.delete_many(["\udfff", "plain"]) == 2
    assert await store.count() == 0
    for bad in (b"id", 7, None):
        with pytest.raises(InvalidArgumentError, match="memory_id must be a string"):
            await store.get(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"memory_ids\[1\] must be a string"):
        await store.delete_many(["a", 7])  # type: ignore[list-item]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_sqlite_and_postgres_refuse_every_lookup_of_an_id_they_cannot_hold(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    # Such an id cannot be stored in SQLite nor PostgreSQL: asking either for one is refused,
    # in the same message naming the argument, by every call that takes an id.
    if kind == "sqlite":
        store: Any = SQLiteStore(tmp_path / "memory.db")
    else:
        from agentrecall import PostgresStore

        store = PostgresStore(request.getfixturevalue("postgres_dsn"))
    await store.add("a memory")
    for call, named in [
        (lambda: store.get(ODD_ID), "memory_id"),
        (lambda: store.delete(ODD_ID), "memory_id"),
        (lambda: store.delete_many(["ok", ODD_ID]), r"memory_ids\[1\]"),
        (lambda: store.update(ODD_ID, content="new"), "memory_id"),
        (lambda: store.history(ODD_ID), "memory_id"),
        (lambda: store.existing_ids([ODD_ID]), r"memory_ids\[0\]"),
    ]:
        with pytest.raises(InvalidArgumentError, match=f"{named} holds a lone surrogate"):
            await call()
    assert await store.count() == 1
    await store.aclose()


def _cli(*argv: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """Run the command line in a process of its own, its arguments passed as bytes as given."""
    return subprocess.run(
        [sys.executable, "-m", "agentrecall", *argv], capture_output=True, check=False
    )


def test_the_command_line_lists_fetches_and_deletes_an_odd_id(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    _file_with_odd_ids(path)
    where = ["--path", str(path)]
    listed = _cli(*where, "list", "--oldest")
    assert (listed.returncode, listed.stderr) == (0, b"")
    lines = listed.stdout.decode().splitlines()
    # Shown as its escape, which no other character of the line is.
    assert [line.split()[1] for line in lines] == ["plain", "a\\ud800b", "\\udfff"]
    listed = _cli(*where, "--json", "list")
    assert listed.returncode == 0 and b'"id": "a\\ud800b"' in listed.stdout
    assert {r["id"] for r in json.loads(listed.stdout)} == {"plain", ODD_ID, "\udfff"}
    # bash's $'a\ud800b' passes these bytes: the surrogate as Python's surrogatepass writes it.
    as_bash_passes_it = b"a\xed\xa0\x80b"
    got = _cli(*where, "--json", "get", as_bash_passes_it)
    assert (got.returncode, got.stderr) == (0, b"")
    assert json.loads(got.stdout)["content"] == "its id holds a lone surrogate"
    shown = _cli(*where, "get", as_bash_passes_it)
    assert shown.returncode == 0 and shown.stdout.startswith(b"id          a\\ud800b\n")
    deleted = _cli(*where, "delete", as_bash_passes_it)
    assert (deleted.returncode, deleted.stdout) == (0, b"deleted a\\ud800b\n")
    assert [r["id"] for r in json.loads(path.read_bytes())] == ["plain", "\udfff"]
    missing = _cli(*where, "get", as_bash_passes_it)
    assert (missing.returncode, missing.stdout) == (1, b"")
    assert missing.stderr == b"agentrecall: error: no memory with id 'a\\ud800b'\n"
    # A byte that is no character at all is still a usage mistake.
    bad = _cli(*where, "get", b"a\xffb")
    assert bad.returncode == 2 and b"argument id: not UTF-8 text" in bad.stderr


def test_the_command_line_refuses_an_odd_id_for_an_sqlite_store_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    assert main([*db, "add", "a memory"]) == 0
    for command in (["get", ODD_ID], ["delete", ODD_ID], ["history", ODD_ID]):
        capsys.readouterr()
        assert main([*db, *command]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert "memory_id holds a lone surrogate '\\ud800' at index 1" in err, command


def test_an_export_of_a_file_with_odd_ids_writes_them_as_json_escapes(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    _file_with_odd_ids(path)
    for output in ([], ["--output", str(tmp_path / "odd.jsonl")]):
        exported = _cli("--path", str(path), "export", *output)
        assert (exported.returncode, exported.stderr) == (0, b"")
        text = exported.stdout if not output else (tmp_path / "odd.jsonl").read_bytes()
        lines = [json.loads(line) for line in text.decode().splitlines()]
        assert lines[0]["memories"] == 3
        assert [line["id"] for line in lines[1:]] == ["plain", ODD_ID, "\udfff"]
        assert b'"id": "a\\ud800b"' in text


def test_migrating_a_file_with_an_odd_id_names_it_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    _file_with_odd_ids(path)
    destination = tmp_path / "copy.db"
    migrated = _cli("migrate", str(path), str(destination))
    assert (migrated.returncode, migrated.stdout) == (1, b"")
    assert migrated.stderr.decode() == (
        "agentrecall: error: memory 'a\\ud800b' of the source has an id holding a lone "
        "surrogate, which the destination cannot store; give it another id in the source, or "
        "delete it there (agentrecall --path FILE delete $'a\\ud800b'), and migrate again\n"
    )
    assert list(tmp_path.glob("copy.db*")) == []
    # The command it gives works as written (bash passes $'a\ud800b' as these bytes).
    assert _cli("--path", str(path), "delete", b"a\xed\xa0\x80b").returncode == 0
    migrated = _cli("migrate", str(path), str(destination))
    assert migrated.returncode == 1 and b"memory '\\udfff'" in migrated.stderr


def test_migrating_a_file_with_odd_text_names_the_memory(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    records = [{"id": "m1", "content": "TEXT", "createdAt": CREATED_AT}]
    path.write_text(json.dumps(records).replace("TEXT", "caf\\ud800"))
    migrated = _cli("migrate", str(path), str(tmp_path / "copy.db"))
    assert (migrated.returncode, migrated.stdout) == (1, b"")
    assert migrated.stderr.decode() == (
        "agentrecall: error: memory 'm1' of the source has text holding a lone surrogate, "
        "which the destination cannot store; correct its text in the source, or delete it "
        "there (agentrecall --path FILE delete $'m1'), and migrate again\n"
    )


def test_importing_an_export_with_an_odd_id_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    _file_with_odd_ids(path)
    export = tmp_path / "odd.jsonl"
    assert _cli("--path", str(path), "export", "--output", str(export)).returncode == 0
    for target in (["--db", str(tmp_path / "new.db")], ["--path", str(tmp_path / "new.json")]):
        imported = _cli(*target, "import", str(export))
        assert (imported.returncode, imported.stdout) == (1, b""), target
        err = imported.stderr.decode()
        assert err.startswith(f"agentrecall: error: '{export}', line 3: "), err
        assert "lone surrogate" in err and "memory_ids" not in err
