"""The settings every store takes, checked alike by each (``StoreFront._configure``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrecall import InvalidArgumentError, JsonFileStore, SQLiteStore


@pytest.mark.parametrize("description", [5, b"bytes", ["a list"], "lone \ud800 surrogate"])
@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_description_that_is_not_text_is_refused_naming_it(
    tmp_path: Path, kind: str, description: object
) -> None:
    with pytest.raises(InvalidArgumentError, match="description"):
        if kind == "json":
            JsonFileStore(name="notes", path=str(tmp_path / "m.json"), description=description)  # type: ignore[arg-type]
        else:
            SQLiteStore(tmp_path / "m.db", description=description)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_text_description_or_none_is_kept(tmp_path: Path, kind: str) -> None:
    for description in ("Facts about the user.", None):
        store = (
            JsonFileStore(name="notes", path=str(tmp_path / "m.json"), description=description)
            if kind == "json"
            else SQLiteStore(tmp_path / "m.db", description=description)
        )
        assert store.description == description


@pytest.mark.parametrize("path", ["", b"memory.db", 5], ids=["empty", "bytes", "int"])
def test_an_sqlite_path_that_names_no_file_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: object
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentError, match="path must be a non-empty str or os.PathLike"):
        SQLiteStore(path)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_an_sqlite_path_may_be_text_or_a_path_object(tmp_path: Path) -> None:
    assert SQLiteStore(tmp_path / "a.db").path == str(tmp_path / "a.db")
    assert SQLiteStore(str(tmp_path / "b.db")).path == str(tmp_path / "b.db")


@pytest.mark.parametrize(
    "name", ["", "   ", 5, "a\ud800"], ids=["empty", "blank", "int", "surrogate"]
)
def test_a_view_name_that_is_not_text_is_refused_naming_it(tmp_path: Path, name: object) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    with pytest.raises(InvalidArgumentError, match="name"):
        store.scope(user_id="ana", name=name)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="name"):
        SQLiteStore(tmp_path / "memory.db", name=name)  # type: ignore[arg-type]
    assert store.scope(user_id="ana").name == "memory[user=ana]"
    assert store.scope(user_id="ana", name="ana's").name == "ana's"
