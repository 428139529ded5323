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
    for name, status, message in [
        ("nonsense", 2, "--embedder must be 'local' or MODULE:CALLABLE"),
        ("agentrecall.testing:NoSuchThing", 2, "has no 'NoSuchThing'"),
        ("agentrecall.testing:ScriptedChatModel", 1, "returned no usable embedder"),
        ("no_such_module_here:Embedder", 1, "No module named 'no_such_module_here'"),
    ]:
        code, _, err = run(capsys, "reindex", "--embedder", name)
        # A name that cannot be right is a usage mistake (the usage comes first); a model
        # that fails to load or to work is a failure.
        assert code == status and message in err, (name, err)
        assert err.startswith("usage: ") == (status == 2)
        assert err.splitlines()[-1].startswith("agentrecall: error: ")
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


# --- import and migrate with --embedder -------------------------------------------------------

STRANDS = [
    {"id": "tea", "content": "The user likes green tea", "createdAt": "2024-01-01T00:00:00.000Z"},
    {"id": "bike", "content": "Owns a red bicycle", "createdAt": "2024-01-02T00:00:00.000Z"},
    {"id": "cat", "content": "Has a black cat", "createdAt": "2024-01-03T00:00:00.000Z"},
]

CHECKED_EMBEDDER = '''
import asyncio

from agentrecall.testing import HashEmbedder


class Checked(HashEmbedder):
    """HashEmbedder's vectors, refusing to run on an event loop; fails on "poison"."""

    def embed(self, texts):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise AssertionError("embedded on the event loop")
        if any("poison" in text for text in texts):
            raise RuntimeError("the model fell over")
        return super().embed(texts)
'''


@pytest.fixture
def checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of an embedder as HASH, which fails on "poison" and never runs on the loop."""
    (tmp_path / "checked_embedder.py").write_text(CHECKED_EMBEDDER)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "checked_embedder:Checked"


def stored_vectors(path: Path) -> tuple[dict[str, bytes], str | None]:
    """Each memory's stored vector by id, and the model the file records."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT m.id, v.vector FROM memories AS m JOIN memory_vectors AS v USING (seq)"
        ).fetchall()
        model = db.execute("SELECT value FROM memory_settings WHERE key = 'vectors'").fetchone()
    return dict(rows), None if model is None else json.loads(model[0])["model"]


def reindexed(capsys: pytest.CaptureFixture[str], path: Path, embedder: str) -> Path:
    """``path`` with every vector computed by ``agentrecall reindex``."""
    code, _, err = run(capsys, "--db", str(path), "reindex", "--embedder", embedder)
    assert (code, err) == (0, "")
    return path


def strands_file(tmp_path: Path, records: list[dict[str, str]] = STRANDS) -> Path:
    path = tmp_path / "strands.json"
    path.write_text(json.dumps(records))
    return path


def ids_found(
    capsys: pytest.CaptureFixture[str], path: Path, query: str, embedder: str, lacking: int = 0
) -> list[str]:
    """The ids a semantic search finds; the note says ``lacking`` memories have no vector."""
    code, out, err = run(
        capsys,
        "--db",
        str(path),
        "--json",
        "search",
        query,
        "--mode",
        "semantic",
        "--embedder",
        embedder,
    )
    assert code == 0
    if lacking:
        assert err.startswith(f"agentrecall: note: {lacking} memory of ") and "reindex" in err
    else:
        assert err == ""
    return [hit["id"] for hit in json.loads(out)]


def test_import_stores_the_vectors_reindex_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], checked: str
) -> None:
    source = strands_file(tmp_path)
    with SyncStore(SQLiteStore(tmp_path / "held.db", embedder=HashEmbedder())) as store:
        store.add("Plays the violin")
    (tmp_path / "plain.db").write_bytes((tmp_path / "held.db").read_bytes())
    for target in ("new.db", "held.db"):  # a new file (staged, published whole) and one in place
        code, out, err = run(
            capsys,
            "--db",
            str(tmp_path / target),
            "--json",
            "import",
            str(source),
            "--embedder",
            checked,
        )
        assert (code, err) == (0, "")
        assert json.loads(out) == {
            "format": "strands",
            "memories": 3,
            "versions": 0,
            "existing": 0,
            "skipped": 0,
            "store": str(tmp_path / target),
        }
        assert ids_found(capsys, tmp_path / target, "bicycle", HASH)[:1] == ["bike"]
    for plain in ("plain-new.db", "plain.db"):
        code, _, _ = run(capsys, "--db", str(tmp_path / plain), "import", str(source))
        assert code == 0
    expected = stored_vectors(reindexed(capsys, tmp_path / "plain.db", HASH))
    assert stored_vectors(tmp_path / "held.db") == expected
    assert len(expected[0]) == 4 and expected[1] == "agentrecall-test-hash-64"
    new = stored_vectors(reindexed(capsys, tmp_path / "plain-new.db", HASH))
    assert stored_vectors(tmp_path / "new.db") == new and len(new[0]) == 3


def test_migrate_stores_the_vectors_reindex_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], checked: str
) -> None:
    source = strands_file(tmp_path)
    with SyncStore(SQLiteStore(tmp_path / "held.db")) as store:
        store.add("Plays the violin")
    for target in ("new.db", "held.db"):
        code, out, err = run(
            capsys, "--json", "migrate", str(source), str(tmp_path / target), "--embedder", checked
        )
        assert (code, err) == (0, "")
        assert json.loads(out) == {
            "source": str(source),
            "destination": str(tmp_path / target),
            "copied": 3,
            "skipped": 0,
            "versions": 0,
        }
        # The memory held before keeps what it had (none): a reindex gives it its vector.
        lacking = 1 if target == "held.db" else 0
        assert ids_found(capsys, tmp_path / target, "green tea", HASH, lacking)[:1] == ["tea"]
    assert set(stored_vectors(tmp_path / "held.db")[0]) == {"tea", "bike", "cat"}
    code, _, _ = run(capsys, "migrate", str(source), str(tmp_path / "plain.db"))
    assert code == 0
    expected = stored_vectors(reindexed(capsys, tmp_path / "plain.db", HASH))
    assert stored_vectors(tmp_path / "new.db") == expected


def test_import_and_migrate_with_the_local_model_find_by_meaning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = strands_file(tmp_path)
    imported, migrated = tmp_path / "imported.db", tmp_path / "migrated.db"
    code, out, err = run(
        capsys, "--db", str(imported), "import", str(source), "--embedder", "local"
    )
    assert (code, out, err) == (0, f"imported 3 memories into {imported}\n", "")
    code, _, err = run(capsys, "migrate", str(source), str(migrated), "--embedder", "local")
    assert (code, err) == (0, "")
    # No word in common with the memory: only its vector finds it.
    assert ids_found(capsys, imported, "a drink brewed from leaves", "local")[:1] == ["tea"]
    assert ids_found(capsys, migrated, "a pet that purrs", "local")[:1] == ["cat"]
    code, _, _ = run(capsys, "--db", str(tmp_path / "plain.db"), "import", str(source))
    expected = stored_vectors(reindexed(capsys, tmp_path / "plain.db", "local"))
    assert stored_vectors(imported) == expected == stored_vectors(migrated)


def test_a_json_target_refuses_embedder_before_reading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "m.json"
    missing = str(tmp_path / "no-such-file.json")
    code, _, add_err = run(capsys, "--path", str(target), "add", "x", "--embedder", HASH)
    assert code == 1
    # The input is never opened: its absence is not what is reported.
    code, out, err = run(capsys, "--path", str(target), "import", missing, "--embedder", HASH)
    assert (code, out, err) == (1, "", add_err)
    assert err.count("\n") == 1 and "(JsonFileStore) has no vectors for search by meaning" in err
    assert not target.exists()
    code, out, err = run(capsys, "migrate", missing, str(target), "--embedder", HASH)
    assert (code, out) == (1, "") and err.count("\n") == 1
    assert err == (
        f"agentrecall: error: --embedder: '{target}' (JsonFileStore) has no vectors for search "
        "by meaning; migrate into an SQLite file (.db) or a PostgreSQL database "
        "(postgresql://...)\n"
    )
    assert not target.exists()
    # An embedder that cannot be made is reported first, as add reports it.
    for command in (["--path", str(target), "import", missing], ["migrate", missing, str(target)]):
        code, _, err = run(capsys, *command, "--embedder", "nonsense")
        assert code == 2 and "--embedder must be 'local' or MODULE:CALLABLE" in err


def test_a_target_with_vectors_of_another_model_is_refused_as_add_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = strands_file(tmp_path)
    target = tmp_path / "m.db"
    with SyncStore(SQLiteStore(target, embedder=HashEmbedder(16))) as store:
        store.add("Plays the violin")
    before = stored_vectors(target)
    code, _, add_err = run(capsys, "--db", str(target), "add", "x", "--embedder", HASH)
    assert code == 1 and "holds vectors made by model 'agentrecall-test-hash-16'" in add_err
    for command in (
        ["--db", str(target), "import", str(source)],
        ["migrate", str(source), str(target)],
    ):
        code, out, err = run(capsys, *command, "--embedder", HASH)
        assert (code, out) == (1, "") and err.count("\n") == 1, err
        assert add_err.removeprefix("agentrecall: error: ").rstrip("\n") in err
        assert stored_vectors(target) == before
        with SyncStore(SQLiteStore(target)) as store:
            assert store.count() == 1
    # The command the error gives switches the file to the model named, and the import runs.
    assert f"run 'agentrecall reindex --db {target} --embedder NAME' naming it" in add_err
    reindexed(capsys, target, HASH)
    code, _, err = run(capsys, "--db", str(target), "import", str(source), "--embedder", HASH)
    assert (code, err) == (0, "")
    assert len(stored_vectors(target)[0]) == 1 + len(STRANDS)


def test_an_embedder_failure_is_an_error_and_keeps_only_whole_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], checked: str
) -> None:
    from agentrecall.migrate import DEFAULT_BATCH

    poisoned = [*STRANDS, {"id": "p", "content": "poison", "createdAt": "2024-01-04T00:00:00.000Z"}]
    source = strands_file(tmp_path, poisoned)
    new = tmp_path / "new.db"
    for command in (["--db", str(new), "import", str(source)], ["migrate", str(source), str(new)]):
        code, out, err = run(capsys, *command, "--embedder", checked)
        assert (code, out) == (1, "") and err.count("\n") == 1, err
        assert "failed on 4 texts: the model fell over" in err
        assert list(tmp_path.glob("*new.db*")) == []  # neither the file nor a staged one
    # An existing store keeps the batches stored before the failure, each with its vectors.
    many = [
        {"id": f"m{i}", "content": f"memory number {i}", "createdAt": "2024-01-01T00:00:00.000Z"}
        for i in range(DEFAULT_BATCH)
    ]
    source = strands_file(tmp_path, [*many, *poisoned])
    held = tmp_path / "held.db"
    with SyncStore(SQLiteStore(held)) as store:
        store.add("Plays the violin")
    code, out, err = run(capsys, "migrate", str(source), str(held), "--embedder", checked)
    assert (code, out) == (1, "") and "the model fell over" in err
    vectors_held, model = stored_vectors(held)
    assert set(vectors_held) == {f"m{i}" for i in range(DEFAULT_BATCH)}
    assert model == "agentrecall-test-hash-64"
    command = ["--db", str(held), "import", str(source), "--skip-existing"]
    code, out, err = run(capsys, *command, "--embedder", checked)
    assert (code, out) == (1, "") and "the model fell over" in err
    assert "nothing was imported" in err  # a Strands file is one batch
    assert len(stored_vectors(held)[0]) == DEFAULT_BATCH


def test_import_and_migrate_into_postgresql_store_the_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_dsn: str, checked: str
) -> None:
    import psycopg  # the postgres extra, as the server fixture needs it

    source = strands_file(tmp_path)
    dsn = ["--dsn", postgres_dsn]
    code, _, err = run(capsys, *dsn, "--pg-name", "a", "import", str(source), "--embedder", checked)
    assert (code, err) == (0, "")
    info = psycopg.conninfo.conninfo_to_dict(postgres_dsn)
    url = f"postgresql://{info['user']}@{info['host']}:{info['port']}/{info['dbname']}"
    code, _, err = run(capsys, "migrate", str(source), url, "--embedder", checked)
    assert (code, err) == (0, "")
    code, _, _ = run(capsys, *dsn, "--pg-name", "plain", "import", str(source))
    code, _, _ = run(capsys, *dsn, "--pg-name", "plain", "reindex", "--embedder", HASH)
    assert code == 0
    found = {}
    for name in ("a", "memory", "plain"):
        command = [*dsn, "--pg-name", name, "--json", "search", "red bicycle", "--mode"]
        code, out, err = run(capsys, *command, "semantic", "--embedder", HASH)
        assert (code, err) == (0, "")
        found[name] = [(hit["id"], hit["score"]) for hit in json.loads(out)]
    assert found["a"] == found["memory"] == found["plain"]
    assert found["plain"][0][0] == "bike"


def test_an_embedder_failure_on_postgresql_is_the_same_clear_error_as_on_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], postgres_dsn: str, checked: str
) -> None:
    poisoned = [*STRANDS, {"id": "p", "content": "poison", "createdAt": "2024-01-04T00:00:00.000Z"}]
    source = strands_file(tmp_path, poisoned)
    dsn = ["--dsn", postgres_dsn, "--pg-name", "a"]
    code, out, err = run(capsys, *dsn, "import", str(source), "--embedder", checked)
    assert (code, out) == (1, "") and err.count("\n") == 1, err
    assert "embedder 'agentrecall-test-hash-64' failed on 4 texts: the model fell over" in err
    assert "bug" not in err
    code, out, _ = run(capsys, *dsn, "count")
    assert (code, out) == (0, "0\n")
