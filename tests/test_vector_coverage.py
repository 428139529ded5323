"""Vector coverage: how many memories search by meaning can find, told by stores and the CLI."""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_cli_transfer import ok, run

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.stores import VectorCoverage
from agentrecall.testing import HashEmbedder

HASH = "agentrecall.testing:HashEmbedder"
MODEL = HashEmbedder().model_id

Opener = Callable[..., Any]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Opener, list[str]]:
    """How to open the store (``opener(embedder=...)``) and the options naming it."""
    if request.param == "sqlite":
        path = tmp_path / "m.db"
        return (lambda **kw: SQLiteStore(path, **kw)), ["--db", str(path)]
    dsn = request.getfixturevalue("postgres_dsn")
    return (lambda **kw: PostgresStore(dsn, **kw)), ["--dsn", dsn]


async def half_covered(opener: Opener) -> None:
    """Two memories written with an embedder, three without (one of them in alice's scope)."""
    async with opener(embedder=HashEmbedder()) as store:
        await store.scope(user_id="alice").add_many(
            [("Alice drinks green tea", None), ("Alice walks to work", None)]
        )
    async with opener() as store:
        await store.add_many([("Tea with lemon", None), ("Coffee at noon", None)])
        await store.scope(user_id="alice").add("Alice likes jasmine tea")


async def test_a_store_counts_the_memories_that_have_a_vector(
    place: tuple[Opener, list[str]],
) -> None:
    opener, _ = place
    async with opener() as store:
        assert await store.vector_coverage() == VectorCoverage(0, 0)
    await half_covered(opener)
    async with opener() as store:
        found = await store.vector_coverage()
        assert found == VectorCoverage(5, 2, MODEL, 64)
        assert found.missing == 3
        alice = await store.scope(user_id="alice").vector_coverage()
        assert (alice.memories, alice.with_vectors, alice.missing) == (3, 2, 1)
        assert (await store.scope(user_id="bob").vector_coverage()).memories == 0
    async with opener(embedder=HashEmbedder()) as store:
        assert await store.reindex() == 3
        assert await store.vector_coverage() == VectorCoverage(5, 5, MODEL, 64)


def test_a_search_by_meaning_says_how_many_memories_lack_a_vector(
    place: tuple[Opener, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    opener, where = place
    asyncio.run(half_covered(opener))
    search = [*where, "--json", "search", "tea", "--embedder", HASH]
    shown = shlex.join(["agentrecall", *where, "reindex", "--embedder", HASH])
    if where[0] == "--dsn":
        shown = shlex.join(["agentrecall", "--dsn", "URL", "reindex", "--embedder", HASH])
    for mode, misses in [("semantic", "cannot find"), ("hybrid", "finds only by keyword")]:
        code, out, err = run(capsys, *search, "--mode", mode)
        assert code == 0
        assert isinstance(json.loads(out), list)  # stdout is the hits alone
        assert err == (
            f"agentrecall: note: 3 memories of 5 have no vector, which a {mode} search "
            f"{misses}; compute them with: {shown}\n"
        )
    # In a scope: its own count.
    code, _, err = run(capsys, *search, "--mode", "semantic", "--user-id", "alice")
    assert code == 0 and "1 memory of 3 has no vector" in err
    ok(capsys, *search, "--mode", "keyword")  # a keyword search has nothing to say
    ok(capsys, *where, "reindex", "--embedder", HASH)
    ok(capsys, *search, "--mode", "semantic")  # every memory has its vector now


def test_stats_show_vector_coverage(
    place: tuple[Opener, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    opener, where = place
    asyncio.run(half_covered(opener))
    stats = json.loads(ok(capsys, *where, "--json", "stats"))
    assert stats["vectors"] == {
        "memories": 5,
        "with_vectors": 2,
        "missing": 3,
        "model": MODEL,
        "dimension": 64,
    }
    shown = shlex.join(["agentrecall", *where, "reindex", "--embedder", "NAME"])
    if where[0] == "--dsn":
        shown = "agentrecall --dsn URL reindex --embedder NAME"
    lines = ok(capsys, *where, "stats").splitlines()
    assert lines[-1] == (
        f"vectors        2 of 5 memories, model '{MODEL}' (dimension 64); 3 without one: "
        f"{shown} (NAME: an embedder of model '{MODEL}')"
    )
    ok(capsys, *where, "reindex", "--embedder", HASH)
    lines = ok(capsys, *where, "stats").splitlines()
    assert lines[-1] == f"vectors        5 of 5 memories, model '{MODEL}' (dimension 64)"


def test_stats_of_stores_without_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", str(tmp_path / "m.db")]
    ok(capsys, *db, "add", "no embedder here")
    assert json.loads(ok(capsys, *db, "--json", "stats"))["vectors"] == {
        "memories": 1,
        "with_vectors": 0,
        "missing": 1,
        "model": None,
        "dimension": None,
    }
    last = ok(capsys, *db, "stats").splitlines()[-1]
    assert (
        last == f"vectors        0 of 1 memory; 1 without one: agentrecall {db[0]} {db[1]} reindex"
    )
    js = ["--path", str(tmp_path / "m.json")]
    ok(capsys, *js, "add", "a JSON store keeps no vectors")
    assert json.loads(ok(capsys, *js, "--json", "stats"))["vectors"] is None
    last = ok(capsys, *js, "stats").splitlines()[-1]
    assert last == "vectors        none (this kind of store keeps no vectors)"
