"""``agentrecall export`` and ``agentrecall import``, through the command line's entry point."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from history_scenarios import PAST, SCOPES, operations, play, snapshot
from hypothesis import HealthCheck, given, settings

from agentrecall import JsonFileStore, MemoryRecord, SQLiteStore, SyncStore
from agentrecall.cli.main import main
from agentrecall.export_format import FORMAT, VERSION, encode_record
from agentrecall.transfer import DEFAULT_BATCH, TAPER_BATCH, import_stream

STRANDS_FILE = Path(__file__).parent / "fixtures" / "strands" / "strands_written.json"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


def run(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: bytes | None = None
) -> tuple[int, str, str]:
    """Run the command line in-process; ``stdin`` is what standard input holds."""
    capsys.readouterr()
    if stdin is None:
        code = main(list(argv))
    else:
        old = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
        try:
            code = main(list(argv))
        finally:
            sys.stdin = old
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], *argv: str, stdin: bytes | None = None) -> str:
    code, out, err = run(capsys, *argv, stdin=stdin)
    assert (code, err) == (0, ""), (argv, code, err)
    return out


def fail(capsys: pytest.CaptureFixture[str], *argv: str, stdin: bytes | None = None) -> str:
    code, out, err = run(capsys, *argv, stdin=stdin)
    assert (code, out) == (1, ""), (argv, code, out, err)
    assert err.startswith("agentrecall: error: ") and err.count("\n") == 1, err
    return err


async def rich_store(path: Path) -> None:
    """A store with every kind of thing an export must carry."""
    store = SQLiteStore(path)
    views = [store.scope(**ids) for ids in SCOPES]
    for view in views:  # the same text in every scope
        await view.add("Likes green tea", {"by": view.name})
    ana = views[1]
    soon = datetime.now(timezone.utc) + timedelta(days=30)
    trip = await ana.add("Flies to Lisbon", {"trip": 1, "x": [1.5, None, "é"]}, expires_at=soon)
    await ana.update(trip.id, content="Flies to Porto", reason="plans changed")
    await ana.update(trip.id, metadata={"trip": 2, "nested": {"deep": [True, {}]}})
    bike = await views[2].add("Owns a red bicycle")
    await views[2].update(bike.id, content="Owns a blue bicycle")
    await views[2].delete(bike.id, reason="sold it")
    await views[5].add("Short-lived note", expires_at=PAST)
    await store.add("Café in Zürich, 日本語\n\ttab and newline")  # purges the expired note
    await views[3].add("Packed a raincoat")
    await views[3].clear()
    await store.aclose()


def seen(path: Path) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        store = SQLiteStore(path)
        try:
            return await snapshot(store)
        finally:
            await store.aclose()

    return asyncio.run(read())


def export_lines(path: Path, *options: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-m", "agentrecall", "--db", str(path), "export", *options],
        capture_output=True,
        check=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_a_pipe_between_two_processes_copies_a_store_exactly(tmp_path: Path) -> None:
    source, copy = tmp_path / "a.db", tmp_path / "new.db"
    asyncio.run(rich_store(source))
    command = [sys.executable, "-m", "agentrecall"]
    with subprocess.Popen(
        [*command, "--db", str(source), "export"], stdout=subprocess.PIPE
    ) as exporter:
        importer = subprocess.run(
            [*command, "--db", str(copy), "import", "-"],
            stdin=exporter.stdout,
            capture_output=True,
            text=True,
        )
    assert exporter.returncode == 0
    assert (importer.returncode, importer.stderr) == (0, "")
    expected = seen(source)
    assert importer.stdout == (
        f"imported {len(expected['records'])} memories and {len(expected['versions'])} "
        f"versions of history into {copy}\n"
    )
    assert seen(copy) == expected
    assert {v.change for v in expected["versions"]} == {"update", "delete", "expire"}
    assert any(r.expires_at and r.updated_at for r in expected["records"])
    original, again = export_lines(source), export_lines(copy)
    assert original[1:] == again[1:]
    assert (
        original[0]["memories"]
        == len(expected["records"])
        == len(original) - 1 - len(expected["versions"])
    )


def test_an_empty_store_copies_into_a_new_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, copy = tmp_path / "a.db", tmp_path / "new.db"
    with SyncStore(SQLiteStore(source)) as store:
        store.setup()
    exported = ok(capsys, "--db", str(source), "export").encode()
    assert ok(capsys, "--db", str(copy), "import", "-", stdin=exported) == (
        f"imported 0 memories into {copy}\n"
    )
    assert ok(capsys, "--db", str(copy), "count") == "0\n"
    strands = tmp_path / "none.json"
    strands.write_text("[]")
    ok(capsys, "--db", str(tmp_path / "from-strands.db"), "import", str(strands))
    assert ok(capsys, "--db", str(tmp_path / "from-strands.db"), "--json", "count") == (
        '{\n  "count": 0\n}\n'
    )


def test_the_header_names_format_version_store_counts_and_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(rich_store(tmp_path / "a.db"))
    header = json.loads(ok(capsys, "--db", str(tmp_path / "a.db"), "export").splitlines()[0])
    assert header == {
        "format": FORMAT,
        "version": VERSION,
        "store": "sqlite",
        "created_at": header["created_at"],
        "memories": len(seen(tmp_path / "a.db")["records"]),
        "versions": len(seen(tmp_path / "a.db")["versions"]),
        "scope": {"user_id": None, "agent_id": None, "session_id": None},
    }
    assert header["created_at"].endswith("Z")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=operations)
def test_any_history_round_trips_through_a_file(steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        source, copy, file = (Path(directory) / name for name in ("a.db", "b.db", "x.jsonl"))

        async def fill() -> None:
            store = SQLiteStore(source, fsync=False)
            await play(store, steps)
            await store.aclose()

        asyncio.run(fill())
        assert main(["--db", str(source), "export", "--output", str(file)]) == 0
        assert main(["--db", str(copy), "import", str(file)]) == 0
        assert seen(copy) == seen(source)


def test_a_scope_exports_and_imports_only_its_memories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, file = tmp_path / "a.db", tmp_path / "ana.jsonl"
    asyncio.run(rich_store(source))
    out = ok(capsys, "--db", str(source), "export", "--user-id", "ana", "-o", str(file))
    assert out.startswith("exported 2 memories and 4 versions of history to ")
    lines = [json.loads(line) for line in file.read_bytes().splitlines()]
    assert lines[0]["scope"] == {"user_id": "ana", "agent_id": None, "session_id": None}
    assert {line["user_id"] for line in lines[1:]} == {"ana"}
    ok(capsys, "--db", str(tmp_path / "b.db"), "import", str(file))
    expected = seen(source)
    copied = seen(tmp_path / "b.db")
    assert copied["records"] == [r for r in expected["records"] if r.user_id == "ana"]
    assert copied["versions"] == [v for v in expected["versions"] if v.user_id == "ana"]


def test_importing_into_a_scope_puts_unscoped_memories_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_store = tmp_path / "s.json"
    ok(capsys, "--path", str(json_store), "import", str(STRANDS_FILE))
    file = tmp_path / "x.jsonl"
    ok(capsys, "--path", str(json_store), "export", "-o", str(file))
    ok(capsys, "--db", str(tmp_path / "b.db"), "import", str(file), "--user-id", "zoe")
    records = seen(tmp_path / "b.db")["records"]
    assert len(records) == 10 and {r.user_id for r in records} == {"zoe"}


def test_a_strands_file_imports_with_its_ids_times_and_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    strands = json.loads(STRANDS_FILE.read_text(encoding="utf-8"))
    out = ok(
        capsys,
        "--json",
        "--db",
        str(tmp_path / "b.db"),
        "import",
        "-",
        stdin=STRANDS_FILE.read_bytes(),
    )
    assert json.loads(out) == {
        "format": "strands",
        "memories": len(strands),
        "versions": 0,
        "existing": 0,
        "skipped": 0,
        "store": str(tmp_path / "b.db"),
    }
    records = seen(tmp_path / "b.db")["records"]
    assert [(r.id, r.content, r.created_at, r.metadata) for r in records] == [
        (s["id"], s["content"], s["createdAt"], s.get("metadata")) for s in strands
    ]


def test_a_json_store_exports_and_takes_an_export_in_one_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_store, file = tmp_path / "s.json", tmp_path / "x.jsonl"
    ok(capsys, "--path", str(json_store), "import", str(STRANDS_FILE))
    ok(capsys, "--path", str(json_store), "export", "-o", str(file))
    lines = file.read_bytes().splitlines()
    assert json.loads(lines[0])["store"] == "json" and len(lines) == 11
    ok(capsys, "--path", str(tmp_path / "t.json"), "import", str(file))
    assert (tmp_path / "t.json").read_bytes() == json_store.read_bytes()


def test_history_into_a_json_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(rich_store(tmp_path / "a.db"))
    file = tmp_path / "x.jsonl"
    ok(capsys, "--db", str(tmp_path / "a.db"), "export", "-o", str(file))
    err = fail(capsys, "--path", str(tmp_path / "t.json"), "import", str(file))
    assert "versions of history and the store keeps none" in err
    assert not (tmp_path / "t.json").exists()


def test_scope_options_need_a_store_with_scopes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok(capsys, "--path", str(tmp_path / "s.json"), "import", str(STRANDS_FILE))
    err = fail(capsys, "--path", str(tmp_path / "s.json"), "export", "--user-id", "ana")
    assert "--user-id" in err and "has no scopes" in err


def export_of(records: list[MemoryRecord], path: Path) -> bytes:
    async def fill() -> None:
        store = SQLiteStore(path, fsync=False)
        await store.import_records(records)
        await store.aclose()

    asyncio.run(fill())
    out = subprocess.run(
        [sys.executable, "-m", "agentrecall", "--db", str(path), "export"],
        capture_output=True,
        check=True,
    )
    return out.stdout


def numbered(count: int, start: int = 0) -> list[MemoryRecord]:
    return [
        MemoryRecord(id=f"m{i}", content=f"memory number {i}", created_at=PAST)
        for i in range(start, start + count)
    ]


@pytest.fixture
def small_export(tmp_path: Path) -> bytes:
    return export_of(numbered(3), tmp_path / "small.db")


def header(**changes: Any) -> bytes:
    value = {"format": FORMAT, "version": VERSION, "store": "sqlite", "created_at": PAST}
    value.update(memories=1, versions=0)
    value["scope"] = {"user_id": None, "agent_id": None, "session_id": None}
    value.update(changes)
    return json.dumps(value).encode() + b"\n"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "standard input is empty"),
        (b"not json at all\n", "standard input, line 1: not JSON"),
        (b'{"format": "other"}\n', "line 1: not an agentrecall export"),
        (header(version=VERSION + 1), f"format version {VERSION + 1}, newer than"),
        (header(version="1"), "the header's version must be a whole number"),
        (header(memories=-1), "the header's memories must be a whole number"),
        (header(extra=1), "line 1: unknown extra"),
        (header() + b'{"type": "memory"}\n', "line 2: missing agent_id, content"),
        (header() + b'["a list"]\n', 'line 2: expected an object with "type"'),
    ],
)
def test_a_file_that_is_no_export_is_refused_naming_the_line(
    data: bytes, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", "-", stdin=data)
    assert expected in err and "nothing was imported" in err
    assert not (tmp_path / "b.db").exists()


def test_a_bad_line_names_its_number_and_imports_nothing(
    small_export: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = small_export.splitlines(keepends=True)
    cases = {
        "unknown key": (
            lines[2].replace(b'"type"', b'"colour": 1, "type"'),
            "line 3: unknown colour",
        ),
        "wrong type": (lines[2].replace(b'"m1"', b"7"), "line 3: id must be a string, got 7"),
        "blank content": (
            lines[2].replace(b'"memory number 1"', b'"  "'),
            "line 3: memory (m1): content must be a non-blank string",
        ),
        "bad time": (
            lines[2].replace(f'"{PAST}"'.encode(), b'"yesterday"'),
            "line 3: memory (m1): created_at must look like",
        ),
    }
    for name, (line, expected) in cases.items():
        file = tmp_path / f"{name}.jsonl"
        file.write_bytes(b"".join([lines[0], lines[1], line, lines[3]]))
        err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", str(file))
        assert f"'{file}', {expected}" in err, (name, err)
        assert not (tmp_path / "b.db").exists()


def test_a_truncated_file_imports_nothing(
    small_export: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole_lines = small_export[: small_export.rindex(b"\n", 0, -1) + 1]
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", "-", stdin=whole_lines)
    assert "line 4: the file ends after 2 memories and 0 versions" in err
    assert "is it truncated?" in err
    cut = small_export[:-20]
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", "-", stdin=cut)
    assert "standard input, line 4: not JSON" in err
    assert not (tmp_path / "b.db").exists()
    extra = small_export + small_export.splitlines(keepends=True)[1]
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", "-", stdin=extra)
    assert "line 5: more lines than the header announces (3 memories, 0 versions)" in err


def test_a_taken_id_stops_the_import_unless_skipped(
    small_export: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "b.db"
    asyncio.run(_fill(target, numbered(1, start=1)))  # holds m1 only
    err = fail(capsys, "--db", str(target), "import", "-", stdin=small_export)
    assert "standard input, line 3: the store already holds a memory with id 'm1'" in err
    assert "--skip-existing" in err and "nothing was imported" in err
    assert [r.id for r in seen(target)["records"]] == ["m1"]
    out = ok(capsys, "--db", str(target), "import", "-", "--skip-existing", stdin=small_export)
    assert out == f"imported 2 memories into {target}; left out 1 whose id the store holds\n"
    assert sorted(r.id for r in seen(target)["records"]) == ["m0", "m1", "m2"]


def test_an_id_twice_in_one_file_is_a_conflict_too(
    small_export: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = small_export.splitlines(keepends=True)
    twice = lines[0] + lines[1] + lines[2] + lines[1].replace(b"memory number 0", b"other")
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", "-", stdin=twice)
    assert "line 4: the store already holds a memory with id 'm0'" in err


async def _fill(path: Path, records: list[MemoryRecord]) -> None:
    store = SQLiteStore(path, fsync=False)
    await store.import_records(records)
    await store.aclose()


def test_an_existing_store_keeps_the_whole_batches_before_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = export_of(numbered(DEFAULT_BATCH + 2), tmp_path / "big.db")
    lines = data.splitlines(keepends=True)
    bad = DEFAULT_BATCH + 2  # the first line of the second batch is line DEFAULT_BATCH + 2
    lines[bad - 1] = b"{broken\n"
    target = tmp_path / "b.db"
    asyncio.run(_fill(target, [MemoryRecord(id="own", content="mine", created_at=PAST)]))
    err = fail(capsys, "--db", str(target), "import", "-", stdin=b"".join(lines))
    assert f"line {bad}: not JSON" in err
    assert f"lines 2 to {DEFAULT_BATCH + 1} were imported before it" in err
    assert len(seen(target)["records"]) == DEFAULT_BATCH + 1
    lines[bad - 1] = data.splitlines(keepends=True)[bad - 1]
    out = ok(capsys, "--db", str(target), "import", "-", "--skip-existing", stdin=b"".join(lines))
    assert out.startswith(f"imported 2 memories into {target}; left out {DEFAULT_BATCH}")


def test_a_new_store_takes_a_file_of_many_batches_whole_or_not_at_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # More memories than the first tapered batches hold, fewer than one full batch: the
    # lines go in in batches of several sizes, which must not show.
    count = 3 * TAPER_BATCH + 1_000
    source = tmp_path / "big.db"
    data = export_of(numbered(count), source)
    target = tmp_path / "b.db"
    out = ok(capsys, "--db", str(target), "import", "-", stdin=data)
    assert out == f"imported {count} memories into {target}\n"
    assert seen(target) == seen(source)
    assert export_lines(target)[1:] == [json.loads(line) for line in data.splitlines()[1:]]
    lines = data.splitlines(keepends=True)
    # An id of the first batch again on the last line, and a bad line in the last batch.
    twice = lines[:-1] + [lines[1].replace(b"memory number 0", b"another memory")]
    err = fail(capsys, "--db", str(tmp_path / "c.db"), "import", "-", stdin=b"".join(twice))
    assert f"line {count + 1}: the store already holds a memory with id 'm0'" in err
    assert "nothing was imported" in err and not (tmp_path / "c.db").exists()
    broken = lines[:-1] + [b"{broken\n"]
    err = fail(capsys, "--db", str(tmp_path / "c.db"), "import", "-", stdin=b"".join(broken))
    assert f"line {count + 1}: not JSON" in err and "nothing was imported" in err
    assert not (tmp_path / "c.db").exists()


async def _batches(data: bytes, path: Path, **options: Any) -> list[int]:
    """The sizes of the batches :func:`import_stream` stores ``data`` in, as its progress tells."""
    done: list[int] = [0]
    store = SQLiteStore(path, fsync=False)
    try:
        await import_stream(
            io.BytesIO(data), "x", store, progress=lambda d, t: done.append(d), **options
        )
    finally:
        await store.aclose()
    return [b - a for a, b in pairwise(done)]


def test_a_tapered_import_starts_and_ends_with_small_batches(tmp_path: Path) -> None:
    records = numbered(30_000)
    data = (
        header(memories=len(records)) + "".join(encode_record(r) + "\n" for r in records).encode()
    )
    assert asyncio.run(_batches(data, tmp_path / "a.db", batch=4_000)) == [4_000] * 7 + [2_000]
    # Up to three times the one before, and at most half of what remains, from TAPER_BATCH.
    sizes = asyncio.run(_batches(data, tmp_path / "b.db", taper=True))
    assert TAPER_BATCH == 5_000 and sizes == [5_000, 12_500, 6_250, 5_000, 1_250]
    sizes = asyncio.run(_batches(data, tmp_path / "c.db", batch=4_000, taper=True))
    assert sizes == [4_000] * 7 + [2_000]  # never beyond the batch, nor below it when smaller
    assert seen(tmp_path / "b.db") == seen(tmp_path / "a.db")


def test_an_unwritable_output_fails_and_leaves_the_old_file(
    small_export: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "small.db"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    err = fail(capsys, "--db", str(source), "export", "-o", str(blocker / "x.jsonl"))
    assert f"cannot write '{blocker / 'x.jsonl'}': Not a directory" in err
    code, out, err = run(capsys, "--db", str(source), "export", "-o", str(source))
    assert (code, out) == (2, "") and "the store's own file" in err
    old = tmp_path / "old.jsonl"
    old.write_text("kept")
    err = fail(capsys, "--db", str(tmp_path / "missing.db"), "export", "-o", str(old))
    assert "no store at" in err
    assert old.read_text() == "kept"
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []


def test_an_export_replaces_its_output_whole(
    small_export: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text("old contents\n" * 1000)
    out = ok(capsys, "--json", "--db", str(tmp_path / "small.db"), "export", "-o", str(output))
    assert json.loads(out) == {"output": str(output), "memories": 3, "versions": 0}
    assert output.read_bytes().splitlines()[1:] == small_export.splitlines()[1:]


def test_a_missing_input_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", str(tmp_path / "nope.jsonl"))
    assert f"'{tmp_path / 'nope.jsonl'}': No such file or directory" in err


def test_the_default_store_round_trips(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ok(capsys, "export").encode()
    assert json.loads(data.splitlines()[0])["memories"] == 0
    assert not (home / "memory").exists()  # reading a missing store creates nothing
    ok(capsys, "import", "-", stdin=STRANDS_FILE.read_bytes())
    assert len(ok(capsys, "export").splitlines()) == 11


@pytest.mark.parametrize("command", ["export", "import"])
def test_help_shows_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(capsys, command, "--help")
    assert "example:" in out and f"agentrecall --db memory.db {command}" in out


def test_a_strands_file_is_told_apart_by_its_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = JsonFileStore(name="m", path=tmp_path / "s.json")
    asyncio.run(store.add("one fact"))
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", "-", stdin=b"  \n[{}]")
    assert "record 0: each record needs string 'id', 'content' and 'createdAt'" in err
    ok(capsys, "--db", str(tmp_path / "b.db"), "import", str(tmp_path / "s.json"))
    assert [r.content for r in seen(tmp_path / "b.db")["records"]] == ["one fact"]


def test_a_terminal_gets_a_progress_bar_and_a_pipe_does_not(
    small_export: bytes, tmp_path: Path
) -> None:
    file = tmp_path / "x.jsonl"
    file.write_bytes(small_export)
    command = [sys.executable, "-m", "agentrecall", "--db", str(tmp_path / "b.db")]
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [*command, "import", str(file)], stdout=subprocess.PIPE, stderr=terminal, check=True
        )
        drawn = os.read(controller, 65536).decode()
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.stdout.startswith(b"imported 3 memories")
    assert f"\r[{'#' * 30}] 3/3" in drawn
    piped = subprocess.run(
        [*command, "export", "-o", str(tmp_path / "y.jsonl")], capture_output=True, check=True
    )
    assert piped.stderr == b""


def test_counts_in_import_errors_are_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def one_version() -> None:
        async with SQLiteStore(tmp_path / "a.db") as store:
            [added] = await store.add_many([("The user likes tea.", None)])
            await store.update(added.id, content="The user likes green tea.")

    asyncio.run(one_version())
    file = tmp_path / "x.jsonl"
    ok(capsys, "--db", str(tmp_path / "a.db"), "export", "-o", str(file))
    err = fail(capsys, "--path", str(tmp_path / "t.json"), "import", str(file))
    assert "holds 1 version of history and the store keeps none" in err
    header, memory, _ = file.read_bytes().splitlines(keepends=True)
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", "-", stdin=header + memory)
    assert "the file ends after 1 memory and 0 versions" in err


def test_a_bad_strands_file_to_import_is_named_once_and_as_a_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "x.json"
    source.write_text('[{"id": "a", "content": "no time"}]', encoding="utf-8")
    err = fail(capsys, "--db", str(tmp_path / "b.db"), "import", str(source))
    assert f"'{source}': record 0: each record needs string 'id', 'content'" in err
    assert "''" not in err and "left unchanged" not in err
    assert not (tmp_path / "b.db").exists()


def test_a_new_store_refuses_or_counts_an_id_an_earlier_line_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In an import into a new file, only an earlier line can hold an id: within a batch
    # and across batches, the second line with an id is refused, or counted with
    # --skip-existing, as an import into an existing store does.
    count = TAPER_BATCH + 2_000
    data = export_of(numbered(count), tmp_path / "source.db")
    lines = data.splitlines(keepends=True)
    first = lines[1].replace(b"memory number 0", b"memory number 0 again")
    last = lines[1].replace(b"memory number 0", b"memory number 0 once more")
    # Line 3 repeats line 2's id in the first batch, and the last line does in another.
    twice = [lines[0], lines[1], first, *lines[3:-1], last]
    err = fail(capsys, "--db", str(tmp_path / "a.db"), "import", "-", stdin=b"".join(twice))
    assert "line 3: the store already holds a memory with id 'm0'" in err
    assert "nothing was imported" in err and not (tmp_path / "a.db").exists()
    target = tmp_path / "b.db"
    out = ok(capsys, "--db", str(target), "import", "-", "--skip-existing", stdin=b"".join(twice))
    assert (
        out == f"imported {count - 2} memories into {target}; left out 2 whose id the store holds\n"
    )
    assert len(seen(target)["records"]) == count - 2


async def changing_store(path: Path) -> tuple[str, str]:
    """A store holding a memory retired by another, with world time; their two ids."""
    async with SQLiteStore(path) as store:
        lyon = await store.add("Lives in Lyon", valid_from="2019-01-01")
        berlin = await store.supersede(
            [lyon.id], "Lives in Berlin", valid_from="2025-03-01", reason="moved"
        )
        await store.add("Likes tea")
    return lyon.id, berlin.id


def test_a_retired_memory_and_its_supersede_version_survive_export_and_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, copy, file = tmp_path / "a.db", tmp_path / "new.db", tmp_path / "x.jsonl"
    lyon, berlin = asyncio.run(changing_store(source))
    ok(capsys, "--db", str(source), "export", "-o", str(file))
    lines = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["version"] == VERSION == 2
    retired = next(line for line in lines if line.get("id") == lyon)
    assert retired["superseded_by"] == berlin and retired["invalidated_at"] is not None
    assert retired["valid_until"] == "2025-03-01T00:00:00.000Z"
    (version,) = [line for line in lines[1:] if line["type"] == "version"]
    assert (version["change"], version["superseded_by"], version["reason"]) == (
        "supersede",
        berlin,
        "moved",
    )
    assert version["created_at"] == retired["created_at"]
    assert ok(capsys, "--db", str(copy), "import", str(file)) == (
        f"imported 3 memories and 1 version of history into {copy}\n"
    )

    async def everything(path: Path) -> tuple[Any, ...]:
        async with SQLiteStore(path) as store:
            versions = [v async for page in store.versions() for v in page]
            hits = [hit.id for hit in await store.search("lives")]
            return await store.list(include_superseded=True), versions, hits

    assert asyncio.run(everything(copy)) == asyncio.run(everything(source))
    assert asyncio.run(everything(copy))[2] == [berlin]


def test_an_export_of_format_version_1_still_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = {"format": FORMAT, "version": 1, "store": "sqlite", "created_at": PAST}
    header |= {"memories": 1, "versions": 1}
    header["scope"] = {"user_id": None, "agent_id": None, "session_id": None}
    scope = {"user_id": "ana", "agent_id": None, "session_id": None}
    memory = {"type": "memory", "id": "m1", "content": "Lives in Lyon", "metadata": None}
    memory |= {"created_at": PAST, "updated_at": PAST, "expires_at": None, **scope}
    version = {"type": "version", "memory_id": "m1", "content": "Lives in Lisbon"}
    version |= {"metadata": {"n": 1}, "changed_at": PAST, "change": "update", "reason": None}
    file = tmp_path / "old.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in (header, memory, version | scope)))
    copy = tmp_path / "new.db"
    assert ok(capsys, "--db", str(copy), "import", str(file)) == (
        f"imported 1 memory and 1 version of history into {copy}\n"
    )

    async def read() -> tuple[Any, ...]:
        async with SQLiteStore(copy) as store:
            return await store.get("m1"), await store.history("m1")

    record, history = asyncio.run(read())
    assert record == MemoryRecord("m1", "Lives in Lyon", PAST, None, PAST, user_id="ana")
    assert [(v.content, v.metadata, v.created_at, v.superseded_by) for v in history] == [
        ("Lives in Lisbon", {"n": 1}, None, None)
    ]
