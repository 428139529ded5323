"""``agentrecall reindex`` and ``--embedder``: vectors for search by meaning from the CLI."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agentrecall import SQLiteStore, SyncStore
from agentrecall.cli.embedding import embedder_named
from agentrecall.cli.main import main
from agentrecall.testing import HashEmbedder

HASH = "agentrecall.testing:HashEmbedder"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def vectors(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM memory_vectors").fetchone()[0])


def test_reindex_computes_the_missing_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.db"
    with SyncStore(SQLiteStore(path)) as store:
        store.add_many([("Likes green tea", None), ("Owns a red bicycle", None)])
    code, out, err = run(capsys, "reindex", "--db", str(path), "--embedder", HASH)
    assert (code, err) == (0, "")
    assert out == f"computed 2 vectors with {HASH}\n"
    assert vectors(path) == 2
    with SyncStore(SQLiteStore(path, embedder=HashEmbedder())) as store:
        hits = store.search("bicycle", {"mode": "semantic"})
        assert [hit.content for hit in hits] == ["Owns a red bicycle"]
    code, out, _ = run(capsys, "--json", "reindex", "--db", str(path), "--embedder", HASH)
    assert code == 0 and json.loads(out) == {"reindexed": 0, "path": str(path)}


def test_reindex_with_another_model_rebuilds_every_vector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.db"
    with SyncStore(SQLiteStore(path, embedder=HashEmbedder(16))) as store:
        store.add("Likes green tea")
    code, out, _ = run(capsys, "reindex", "--db", str(path), "--embedder", HASH)
    assert (code, out) == (0, f"computed 1 vector with {HASH}\n")
    with SyncStore(SQLiteStore(path, embedder=HashEmbedder())) as store:
        assert len(store.search("tea", {"mode": "semantic"})) == 1


def test_reindex_refuses_what_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "m.db")
    code, _, err = run(capsys, "reindex", "--db", path, "--embedder", HASH)
    assert code == 1 and "no store at" in err
    for name, message in [
        ("nonsense", "--embedder must be 'local' or MODULE:CALLABLE"),
        ("agentrecall.testing:NoSuchThing", "has no 'NoSuchThing'"),
        ("agentrecall.testing:ScriptedChatModel", "returned no usable embedder"),
        ("no_such_module_here:Embedder", "No module named 'no_such_module_here'"),
    ]:
        code, _, err = run(capsys, "reindex", "--embedder", name)
        assert code == 1 and message in err, (name, err)
        assert err.count("\n") == 1
    json_file = tmp_path / "m.json"
    json_file.write_text("[]")
    code, _, err = run(capsys, "reindex", "--path", str(json_file), "--embedder", HASH)
    assert code == 1 and "reindex: " in err and "(JsonFileStore) keeps no vectors for search" in err
    code, out, _ = run(capsys, "reindex", "--store", "nothing-yet", "--embedder", HASH)
    assert (code, out) == (0, "the store does not exist yet: nothing to reindex\n")


def test_an_embedder_that_cannot_be_made_is_named_and_not_called_a_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_at_import.py").write_text("raise RuntimeError('no model here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = str(tmp_path / "m.db")
    with SyncStore(SQLiteStore(path)) as store:
        store.add("Likes green tea")
    for name, message in [
        ("json:loads", "--embedder json:loads failed: TypeError: "),
        ("broken_at_import:Embedder", "importing 'broken_at_import' failed: RuntimeError"),
        ("no_such_module_here:Embedder", "--embedder no_such_module_here:Embedder: No module"),
    ]:
        for command in (["reindex"], ["search", "tea", "--mode", "semantic"]):
            code, out, err = run(capsys, "--db", path, *command, "--embedder", name)
            assert (code, out) == (1, ""), (name, command, err)
            assert err.count("\n") == 1 and message in err, (name, command, err)
            assert "this is a bug" not in err


def test_an_embedder_named_is_not_asked_its_dimension(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An embedder may learn its dimension by a request (OpenAICompatibleEmbedder without
    # dimension=): naming it must not read it.
    (tmp_path / "lazy_embedder.py").write_text(
        "class Lazy:\n"
        "    model_id = 'lazy'\n"
        "    @property\n"
        "    def dimension(self):\n"
        "        raise AssertionError('dimension read')\n"
        "    def embed(self, texts):\n"
        "        return [[1.0] for _ in texts]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert type(embedder_named("lazy_embedder:Lazy")).__name__ == "Lazy"


def test_add_and_update_store_vectors_with_the_embedder_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Without --embedder a memory added from the command line waits for the next reindex
    # to be found by meaning; with it, it has its vector at once.
    db = ["--db", str(tmp_path / "m.db")]
    meaning = ["--mode", "semantic", "--embedder", HASH]
    code, out, _ = run(capsys, *db, "add", "The user likes green tea", "--embedder", HASH)
    assert code == 0
    tea = out.strip()
    code, out, _ = run(capsys, *db, "add", "The user has a cat")
    cat = out.strip()
    code, out, _ = run(capsys, *db, "--json", "search", "cat", *meaning)
    assert [hit["id"] for hit in json.loads(out)] == []  # no vector yet
    code, out, _ = run(capsys, *db, "update", cat, "The user has a black cat", "--embedder", HASH)
    assert code == 0
    code, out, _ = run(capsys, *db, "--json", "search", "black cat", *meaning)
    assert [hit["id"] for hit in json.loads(out)][:1] == [cat]
    code, out, _ = run(capsys, *db, "--json", "search", "green tea", *meaning)
    assert [hit["id"] for hit in json.loads(out)][:1] == [tea]
    json_file = tmp_path / "m.json"
    code, _, err = run(capsys, "--path", str(json_file), "add", "x", "--embedder", HASH)
    assert code == 1 and "--embedder: " in err and "(JsonFileStore) has no vectors" in err
    assert not json_file.exists()
