"""``migrate`` and the stores' ``import_records``: copies that keep ids and timestamps."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlite_checks import check_full_text_index

from agentrecall import (
    InvalidArgumentError,
    InvalidFileError,
    JsonFileStore,
    SQLiteStore,
    StorageError,
)
from agentrecall.cli.main import main
from agentrecall.migrate import ProgressBar, migrate, migrate_files, render_bar
from agentrecall.types import MemoryRecord, MemoryVersion

CREATED = "2024-05-01T10:00:00.000Z"


def _records(count: int) -> list[MemoryRecord]:
    return [
        MemoryRecord(
            id=f"id-{i}",
            content=f"memory {i} about walrus number{i}",
            created_at=f"2024-05-01T10:00:{i % 60:02d}.{i % 1000:03d}Z",
            metadata=None if i % 2 else {"n": i, "tags": ["a", "ü"]},
        )
        for i in range(count)
    ]


def _snapshot(records: list[MemoryRecord]) -> list[tuple[Any, ...]]:
    return [(r.id, r.content, r.metadata, r.created_at) for r in records]


def _check_index(path: Path) -> None:
    with closing(sqlite3.connect(path)) as db:
        check_full_text_index(db)


async def test_json_to_sqlite_to_json_keeps_everything(tmp_path: Path) -> None:
    source = JsonFileStore(name="memory", path=tmp_path / "a.json")
    assert await source.import_records(_records(25)) == 25
    original = _snapshot(await source.list())

    database = SQLiteStore(tmp_path / "b.db")
    calls: list[tuple[int, int]] = []
    result = await migrate(source, database, batch=10, progress=lambda d, t: calls.append((d, t)))
    assert (result.copied, result.skipped) == (25, 0)
    assert calls == [(0, 25), (10, 25), (20, 25), (25, 25)]
    assert _snapshot(await database.list()) == original
    hits = await database.search("walrus number7")
    assert hits[0].id == "id-7"
    _check_index(tmp_path / "b.db")

    back = JsonFileStore(name="memory", path=tmp_path / "c.json")
    assert (await migrate(database, back)).copied == 25
    assert _snapshot(await back.list()) == original
    assert (await back.search("number3"))[0].id == "id-3"
    await database.aclose()


async def test_running_again_copies_nothing(tmp_path: Path) -> None:
    source = JsonFileStore(name="memory", path=tmp_path / "a.json")
    await source.import_records(_records(5))
    first = await migrate_files(tmp_path / "a.json", tmp_path / "b.db", batch=2)
    again = await migrate_files(tmp_path / "a.json", tmp_path / "b.db", batch=2)
    assert (first.copied, first.skipped) == (5, 0)
    assert (again.copied, again.skipped) == (0, 5)
    _check_index(tmp_path / "b.db")


@pytest.mark.parametrize("kind", ["json", "sqlite"])
async def test_import_skips_taken_ids_and_duplicate_content(tmp_path: Path, kind: str) -> None:
    store: JsonFileStore | SQLiteStore
    if kind == "json":
        store = JsonFileStore(name="memory", path=tmp_path / "m.json")
    else:
        store = SQLiteStore(tmp_path / "m.db")
    existing = await store.add("already here")
    batch = [
        MemoryRecord(id=existing.id, content="other text", created_at=CREATED),
        MemoryRecord(id="new-1", content="  already here ", created_at=CREATED),
        MemoryRecord(id="new-2", content="fresh", created_at=CREATED, metadata={"k": 1}),
        MemoryRecord(id="new-2", content="fresh again", created_at=CREATED),
        MemoryRecord(id="new-3", content="fresh ", created_at=CREATED),
    ]
    assert await store.import_records(batch) == 1
    assert await store.get("new-2") == MemoryRecord("new-2", "fresh", CREATED, {"k": 1})
    assert await store.count() == 2
    assert await store.import_records([]) == 0
    if isinstance(store, SQLiteStore):
        _check_index(tmp_path / "m.db")
        await store.aclose()


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (MemoryRecord(id="", content="x", created_at=CREATED), "id"),
        (MemoryRecord(id="a", content="  ", created_at=CREATED), "content"),
        (MemoryRecord(id="a", content="x", created_at=CREATED, metadata=[1]), "metadata"),  # type: ignore[arg-type]
        (MemoryRecord(id="a", content="x", created_at="yesterday"), "created_at"),
    ],
)
async def test_sqlite_import_checks_every_record_first(
    tmp_path: Path, record: MemoryRecord, problem: str
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    good = MemoryRecord(id="good", content="fine", created_at=CREATED)
    with pytest.raises(InvalidArgumentError, match=f"record 1.*{problem}"):
        await store.import_records([good, record])
    assert await store.count() == 0
    await store.aclose()


async def test_sqlite_import_keeps_update_and_expiry_times(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    kept = MemoryRecord(
        "a", "lasting", CREATED, None, "2024-06-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z"
    )
    gone = MemoryRecord("b", "gone", CREATED, None, None, "2001-01-01T00:00:00.000Z")
    assert await store.import_records([kept, gone]) == 1
    assert await store.list() == [kept]
    await store.aclose()


async def test_json_import_takes_any_created_at_string(tmp_path: Path) -> None:
    store = JsonFileStore(name="memory", path=tmp_path / "m.json")
    assert await store.import_records([MemoryRecord("a", "x", "whenever")]) == 1
    assert json.loads((tmp_path / "m.json").read_text()) == [
        {"id": "a", "content": "x", "createdAt": "whenever"}
    ]
    with pytest.raises(InvalidArgumentError, match="record 0"):
        await store.import_records([MemoryRecord("b", "y", None)])  # type: ignore[arg-type]


async def test_a_corrupt_source_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("[{", encoding="utf-8")
    with pytest.raises(InvalidFileError, match="bad.json"):
        await migrate_files(tmp_path / "bad.json", tmp_path / "out.db")
    assert not (tmp_path / "out.db").exists()


async def _scoped_with_history(path: Path) -> None:
    """Fill ``path`` with equal texts of two users and one unscoped, and some history."""
    store = SQLiteStore(path)
    await store.scope(user_id="ana").add("Likes green tea")
    await store.scope(user_id="bob").add("Likes green tea")
    memory = await store.add("Lives in Lisbon")
    await store.update(memory.id, content="Lives in Porto")
    await store.delete((await store.add("Forget me")).id)
    await store.aclose()


async def test_a_json_destination_refuses_to_lose_scopes_or_history(tmp_path: Path) -> None:
    await _scoped_with_history(tmp_path / "a.db")
    out = tmp_path / "b.json"
    with pytest.raises(InvalidArgumentError, match=r"belongs to user_id='ana'.*flatten=True"):
        await migrate_files(tmp_path / "a.db", out)
    with pytest.raises(InvalidArgumentError, match="history.*drop_history=True"):
        await migrate_files(tmp_path / "a.db", out, flatten=True)
    assert not out.exists()
    result = await migrate_files(tmp_path / "a.db", out, flatten=True, drop_history=True)
    assert (result.copied, result.skipped, result.versions) == (2, 1, 0)
    assert sorted(r.content for r in await JsonFileStore(name="m", path=out).list()) == [
        "Likes green tea",
        "Lives in Porto",
    ]
    # A JSON store refuses a scoped record outright, too.
    scoped = MemoryRecord("x", "y", CREATED, user_id="ana")
    with pytest.raises(InvalidArgumentError, match="record 0 \\(x\\) belongs to a scope"):
        await JsonFileStore(name="m", path=out).import_records([scoped])


@pytest.mark.parametrize("kind", ["db", "json"])
async def test_memories_deleted_from_the_source_meanwhile_make_no_others_go_missing(
    tmp_path: Path, kind: str
) -> None:
    # Another client deletes the first memory after the first page: read by offset alone,
    # every later memory moves a place back and the first of the next page is never read.
    path = tmp_path / f"live.{kind}"
    source = SQLiteStore(path) if kind == "db" else JsonFileStore(name="live", path=path)
    ids = [(await source.add(f"memory number {i}")).id for i in range(10)]
    where = "--db" if kind == "db" else "--path"
    delete = [sys.executable, "-m", "agentrecall", where, str(path), "delete", ids[0]]

    def delete_after_the_first_page(done: int, total: int) -> None:
        if done == 4:
            subprocess.run(delete, capture_output=True, check=True, timeout=60)

    copy = SQLiteStore(tmp_path / "copy.db")
    result = await migrate(source, copy, batch=4, progress=delete_after_the_first_page)
    kept = {memory.id for memory in await source.list()}
    copied = {memory.id for memory in await copy.list()}
    assert kept == set(ids[1:])
    assert kept <= copied
    assert (result.copied, result.skipped) == (10, 0)  # the first was copied before it went
    for store in (source, copy):
        if isinstance(store, SQLiteStore):
            await store.aclose()


async def test_a_json_destination_refuses_to_lose_expiry(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    brief = await source.add("Gate 4 until boarding", ttl=3600)
    await source.add("Prefers aisle seats")
    expires_at = (await source.get(brief.id)).expires_at  # type: ignore[union-attr]
    await source.aclose()
    out = tmp_path / "b.json"
    # Copied without its expiry, the memory meant to go in an hour would stay for good.
    with pytest.raises(InvalidArgumentError, match=f"{brief.id} expires at.*drop_expiry=True"):
        await migrate_files(tmp_path / "a.db", out)
    assert not out.exists()
    result = await migrate_files(tmp_path / "a.db", out, drop_expiry=True)
    assert (result.copied, result.skipped) == (2, 0)
    assert [r.content for r in await JsonFileStore(name="m", path=out).list()] == [
        "Gate 4 until boarding",
        "Prefers aisle seats",
    ]
    # Into a store that keeps expiry it is copied, unless dropped on purpose.
    for drop, expected in ((False, expires_at), (True, None)):
        copy = tmp_path / f"copy-{drop}.db"
        await migrate_files(tmp_path / "a.db", copy, drop_expiry=drop)
        async with SQLiteStore(copy) as copied:
            assert (await copied.get(brief.id)).expires_at == expected  # type: ignore[union-attr]
    # A JSON store refuses an expiring record outright, too.
    expiring = MemoryRecord("x", "y", CREATED, expires_at="2999-01-01T00:00:00.000Z")
    with pytest.raises(InvalidArgumentError, match=r"record 0 \(x\) expires at"):
        await JsonFileStore(name="m", path=out).import_records([expiring])
    assert len(await JsonFileStore(name="m", path=out).list()) == 2


async def test_identical_versions_are_copied_all_and_once(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    same = MemoryVersion("Old", None, CREATED, "update", None, "m1")
    other = MemoryVersion("Other", None, CREATED, "delete", None, "m0")
    assert await source.import_versions([other, same, same, same]) == 4
    pages = [page async for page in source.versions(batch=2)]
    assert pages == [[other, same, same, same]]  # a page never splits identical versions
    await source.aclose()
    for _ in range(2):
        await migrate_files(tmp_path / "a.db", tmp_path / "b.db", batch=2)
    copy = SQLiteStore(tmp_path / "b.db")
    assert await copy.history("m1") == [same, same, same]
    await copy.aclose()


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        (MemoryVersion("x", None, CREATED, "update"), "memory_id"),
        (MemoryVersion(" ", None, CREATED, "update", None, "m"), "content"),
        (MemoryVersion("x", None, "today", "update", None, "m"), "changed_at"),
        (MemoryVersion("x", None, CREATED, "edit", None, "m"), "change"),
        (MemoryVersion("x", None, CREATED, "delete", 5, "m"), "reason"),  # type: ignore[arg-type]
        (MemoryVersion("x", None, CREATED, "delete", None, "m", ""), "user_id"),
    ],
)
async def test_import_versions_checks_every_version_first(
    tmp_path: Path, version: MemoryVersion, problem: str
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    good = MemoryVersion("fine", None, CREATED, "update", None, "m")
    with pytest.raises(InvalidArgumentError, match=f"version 1.*{problem}"):
        await store.import_versions([good, version])
    assert [page async for page in store.versions()] == []
    await store.aclose()


@pytest.mark.parametrize(
    "options", [{"batch": None}, {"batch": 0}, {"flatten": "yes"}, {"drop_expiry": 1}]
)
async def test_migrate_refuses_bad_options(tmp_path: Path, options: dict[str, Any]) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    await store.add("one memory")
    name = next(iter(options))
    with pytest.raises(InvalidArgumentError, match=name):
        await migrate(store, JsonFileStore(name="m", persist=False), **options)
    if name == "batch":
        with pytest.raises(InvalidArgumentError, match="batch"):
            await anext(store.versions(**options))
    await store.aclose()


def _files(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


async def test_a_failed_migrate_leaves_no_new_destination(tmp_path: Path) -> None:
    records = _records(6)
    records[4] = MemoryRecord("bad", "not a stored time", "yesterday")
    await JsonFileStore(name="memory", path=tmp_path / "a.json").import_records(records)
    before = _files(tmp_path)
    with pytest.raises(InvalidArgumentError, match="record 0 \\(bad\\).*created_at"):
        await migrate_files(tmp_path / "a.json", tmp_path / "b.db", batch=2)
    assert _files(tmp_path) == before


async def test_an_interrupted_migrate_leaves_an_existing_json_file_as_it_was(
    tmp_path: Path,
) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    await source.import_records(_records(6))
    await source.aclose()
    out = tmp_path / "b.json"
    await JsonFileStore(name="memory", path=out).add("kept as it is")
    before = out.read_bytes()

    def interrupt(done: int, total: int) -> None:
        if done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await migrate_files(tmp_path / "a.db", out, batch=2, progress=interrupt)
    assert out.read_bytes() == before


async def test_a_destination_created_meanwhile_is_left_alone(tmp_path: Path) -> None:
    await JsonFileStore(name="memory", path=tmp_path / "a.json").import_records(_records(4))
    before = _files(tmp_path)
    out = tmp_path / "b.db"

    def someone_else(done: int, total: int) -> None:
        if done == total:
            out.write_bytes(b"theirs")

    with pytest.raises(StorageError, match="created by something else"):
        await migrate_files(tmp_path / "a.json", out, batch=2, progress=someone_else)
    assert out.read_bytes() == b"theirs"
    assert _files(tmp_path) == sorted([*before, "b.db"])


def test_ctrl_c_mid_migrate_leaves_no_destination(tmp_path: Path) -> None:
    asyncio.run(JsonFileStore(name="memory", path=tmp_path / "a.json").import_records(_records(9)))
    before = _files(tmp_path)
    script = (
        "import asyncio, os, signal, sys\n"
        # As a terminal's Ctrl-C, even in a test run a shell started with SIGINT ignored.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from agentrecall.migrate import migrate_files\n"
        "def progress(done, total):\n"
        "    if done:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "asyncio.run(migrate_files(sys.argv[1], sys.argv[2], batch=3, progress=progress))\n"
    )
    command = [sys.executable, "-c", script, str(tmp_path / "a.json"), str(tmp_path / "b.db")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode in (1, -signal.SIGINT), result.stderr
    assert "KeyboardInterrupt" in result.stderr
    assert _files(tmp_path) == before


def test_progress_bar_draws_in_place_on_a_terminal_and_once_elsewhere() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert render_bar(5, 10, width=10) == "[#####.....] 5/10"
    assert render_bar(0, 0, width=4) == "[####] 0/0"
    screen, log = Terminal(), io.StringIO()
    for stream in (screen, log):
        bar = ProgressBar(stream)
        bar(0, 4)
        bar(4, 4)
        bar.close()
    assert screen.getvalue().count("\r") == 2
    assert screen.getvalue().endswith("] 4/4\n")
    assert log.getvalue() == render_bar(4, 4) + "\n"


class TestCli:
    def run(self, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    def _seed(self, path: Path) -> None:
        asyncio.run(JsonFileStore(name="memory", path=path).import_records(_records(3)))

    def test_migrate_prints_a_summary_and_json(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self._seed(tmp_path / "a.json")
        src, dst = str(tmp_path / "a.json"), str(tmp_path / "b.sqlite3")
        code, out, err = self.run(capsys, "migrate", src, dst)
        assert (code, out, err) == (0, f"copied 3 memories to {dst} (0 skipped)\n", "")
        code, out, err = self.run(capsys, "migrate", src, dst, "--json")
        assert code == 0
        expected = {"source": src, "destination": dst, "copied": 0, "skipped": 3, "versions": 0}
        assert json.loads(out) == expected

    def test_migrate_into_json_needs_flatten_and_drop_history(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        src, dst = str(tmp_path / "a.db"), str(tmp_path / "b.json")
        asyncio.run(_scoped_with_history(tmp_path / "a.db"))
        code, out, err = self.run(capsys, "migrate", src, dst)
        assert (code, out) == (1, "")
        assert "--flatten" in err and not os.path.exists(dst)
        code, out, err = self.run(capsys, "migrate", src, dst, "--flatten")
        assert (code, out) == (1, "")
        assert "--drop-history" in err and not os.path.exists(dst)
        code, out, _ = self.run(capsys, "migrate", src, dst, "--flatten", "--drop-history")
        assert (code, out) == (0, f"copied 2 memories to {dst} (1 skipped)\n")
        code, out, _ = self.run(capsys, "migrate", src, str(tmp_path / "c.db"))
        assert "copied 3 memories and 2 versions of history to" in out

    def test_errors_are_one_line(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        (tmp_path / "bad.json").write_text("not json", encoding="utf-8")
        bad, out_db = str(tmp_path / "bad.json"), str(tmp_path / "out.db")
        code, out, err = self.run(capsys, "migrate", bad, out_db)
        assert (code, out) == (1, "")
        assert err.startswith("agentrecall: error: memory file") and err.count("\n") == 1
        assert not (tmp_path / "out.db").exists()
        missing = str(tmp_path / "missing.db")
        code, _, err = self.run(capsys, "migrate", missing, out_db)
        assert (code, err) == (1, f"agentrecall: error: no store file at '{missing}'\n")

    def test_an_unknown_extension_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["migrate", str(tmp_path / "a.json"), str(tmp_path / "b.txt")]) == 2
        assert "use a file ending in .json, .db, .sqlite, .sqlite3" in capsys.readouterr().err


async def test_migrate_files_with_an_embedder_stores_each_copied_memory_s_vector(
    tmp_path: Path,
) -> None:
    from agentrecall.migrate import open_store
    from agentrecall.testing import HashEmbedder

    source = JsonFileStore(name="memory", path=tmp_path / "a.json")
    await source.import_records(_records(25))
    held = SQLiteStore(tmp_path / "held.db")
    await held.add("walrus colony on the ice")
    await held.aclose()
    for target in ("new.db", "held.db"):
        result = await migrate_files(
            tmp_path / "a.json", tmp_path / target, embedder=HashEmbedder()
        )
        assert (result.copied, result.skipped) == (25, 0)
        store = SQLiteStore(tmp_path / target, embedder=HashEmbedder())
        query = "memory 7 about walrus number7"  # its own content: the nearest vector
        hits = await store.search(query, {"mode": "semantic", "max_search_results": 1})
        assert [hit.id for hit in hits] == ["id-7"]
        with closing(sqlite3.connect(tmp_path / target)) as db:
            assert db.execute("SELECT count(*) FROM memory_vectors").fetchone()[0] == 25
        assert await store.reindex() == (1 if target == "held.db" else 0)  # only the one held
        await store.aclose()
    # A JSON file keeps no vectors: refused before the source is even looked for.
    for call in (
        lambda: migrate_files(tmp_path / "none.json", tmp_path / "b.json", embedder=HashEmbedder()),
        lambda: asyncio.sleep(0, open_store(tmp_path / "b.json", embedder=HashEmbedder())),
    ):
        with pytest.raises(InvalidArgumentError, match=r"embedder: the JSON memory file .*b\.json"):
            await call()
    assert not (tmp_path / "b.json").exists()


async def test_a_json_destination_refuses_to_lose_the_history_of_an_expiry(
    tmp_path: Path,
) -> None:
    # The only history is an expired memory's last version: copied without it, it is lost.
    async with SQLiteStore(tmp_path / "a.db") as store:
        await store.add("Boards at gate 4", expires_at="2001-01-01T00:00:00Z")
        await store.add("Stays")
        assert [v.change async for page in store.versions() for v in page] == ["expire"]
    out = tmp_path / "b.json"
    with pytest.raises(InvalidArgumentError, match="expired memories.*drop_history=True"):
        await migrate_files(tmp_path / "a.db", out)
    assert not out.exists()
    result = await migrate_files(tmp_path / "a.db", out, drop_history=True)
    assert (result.copied, result.versions) == (1, 0)


async def _with_changes(path: Path) -> tuple[str, str]:
    """Fill ``path`` with a memory retired by another (with world time), and one unchanged.

    Returns the retired memory's id and its successor's.
    """
    async with SQLiteStore(path) as store:
        ana = store.scope(user_id="ana")
        lyon = await ana.add("Lives in Lyon", {"n": 1}, valid_from="2019-01-01")
        berlin = await ana.supersede(
            [lyon.id], "Lives in Berlin", valid_from="2025-03-01", reason="moved"
        )
        await store.add("Likes tea")
    return lyon.id, berlin.id


async def _everything(store: Any) -> tuple[list[MemoryRecord], list[MemoryVersion]]:
    """Every memory, retired ones too, and every version: what a copy must hold alike."""
    versions = [version async for page in store.versions() for version in page]
    return await store.list(include_superseded=True), versions


async def test_migrate_keeps_retired_memories_and_their_versions(tmp_path: Path) -> None:
    lyon, berlin = await _with_changes(tmp_path / "a.db")
    totals: list[int] = []
    result = await migrate_files(
        tmp_path / "a.db", tmp_path / "b.db", progress=lambda done, total: totals.append(total)
    )
    assert (result.copied, result.skipped, result.versions) == (3, 0, 1)
    assert set(totals) == {3}  # the retired memory is counted among those to copy
    async with SQLiteStore(tmp_path / "a.db") as source, SQLiteStore(tmp_path / "b.db") as copy:
        memories, versions = await _everything(copy)
        assert (memories, versions) == await _everything(source)
        retired = await copy.get(lyon, include_superseded=True)
        assert retired is not None and retired.superseded_by == berlin
        assert retired.valid_until == "2025-03-01T00:00:00.000Z"
        assert await copy.get(lyon) is None
        assert [(v.change, v.superseded_by, v.reason) for v in versions] == [
            ("supersede", berlin, "moved")
        ]
        assert await copy.history(berlin) == await source.history(berlin)
        assert [hit.id for hit in await copy.search("lives")] == [berlin]
    again = await migrate_files(tmp_path / "a.db", tmp_path / "b.db")
    assert (again.copied, again.versions) == (0, 0)


async def test_a_json_destination_refuses_to_lose_retired_memories_or_world_time(
    tmp_path: Path,
) -> None:
    lyon, berlin = await _with_changes(tmp_path / "a.db")
    out = tmp_path / "b.json"
    with pytest.raises(
        InvalidArgumentError,
        match=rf"memory {lyon} was retired by memory {berlin} at .*would be current again; "
        r"migrate into an SQLite or PostgreSQL store, or pass drop_superseded=True \(agentrecall "
        r"migrate --drop-superseded\) to copy the current memories only, without world time$",
    ):
        await migrate_files(tmp_path / "a.db", out, flatten=True, drop_history=True)
    async with SQLiteStore(tmp_path / "dated.db") as dated:
        memory = await dated.add("Lives in Berlin", valid_from="2025-03-01")
    with pytest.raises(InvalidArgumentError, match=f"memory {memory.id} says when its fact"):
        await migrate_files(tmp_path / "dated.db", out)
    assert not out.exists()


async def test_drop_superseded_copies_the_current_memories_without_world_time(
    tmp_path: Path,
) -> None:
    lyon, berlin = await _with_changes(tmp_path / "a.db")
    out = tmp_path / "b.json"
    totals: list[int] = []
    result = await migrate_files(
        tmp_path / "a.db",
        out,
        flatten=True,
        drop_history=True,
        drop_superseded=True,
        progress=lambda done, total: totals.append(total),
    )
    assert (result.copied, result.skipped) == (2, 0)
    assert set(totals) == {2}  # the retired memory is not among those to copy
    records = await JsonFileStore(name="copy", path=out).list()
    assert sorted(record.content for record in records) == ["Likes tea", "Lives in Berlin"]
    assert berlin in {record.id for record in records}
    assert lyon not in {record.id for record in records}


async def test_drop_superseded_into_sqlite_keeps_the_history_of_retired_memories(
    tmp_path: Path,
) -> None:
    lyon, berlin = await _with_changes(tmp_path / "a.db")
    result = await migrate_files(tmp_path / "a.db", tmp_path / "b.db", drop_superseded=True)
    assert (result.copied, result.versions) == (2, 1)
    async with SQLiteStore(tmp_path / "b.db") as copy:
        assert await copy.count(include_superseded=True) == 2
        assert await copy.get(lyon, include_superseded=True) is None
        current = await copy.get(berlin)
        assert current is not None and current.valid_from is None
        assert [v.memory_id for v in await copy.history(lyon)] == [lyon]
