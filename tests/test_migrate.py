"""``migrate`` and the stores' ``import_records``: copies that keep ids and timestamps."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlite_checks import check_full_text_index

from agentrecall import InvalidArgumentError, InvalidFileError, JsonFileStore, SQLiteStore
from agentrecall.cli.main import main
from agentrecall.migrate import ProgressBar, migrate, migrate_files, render_bar
from agentrecall.types import MemoryRecord

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
        expected = {"source": src, "destination": dst, "copied": 0, "skipped": 3}
        assert json.loads(out) == expected

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
