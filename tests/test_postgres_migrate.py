"""migrate() into and out of PostgreSQL keeps ids, timestamps, scopes and history."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from agentrecall import PostgresStore, SQLiteStore, SyncStore
from agentrecall.migrate import migrate
from agentrecall.transfer import export_store, import_stream


async def _history(store: SQLiteStore | PostgresStore) -> list[object]:
    return [version async for page in store.versions() for version in page]


@pytest.mark.asyncio
async def test_sqlite_to_postgres_and_back_is_exact(tmp_path: Path, postgres_dsn: str) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    ana = source.scope(user_id="ana", session_id="trip")
    kept = await ana.add("Packed a raincoat", {"n": 1}, ttl=3600)
    await ana.update(kept.id, content="Packed two raincoats", reason="counted again")
    gone = await source.add("Forgotten words")
    await source.delete(gone.id, reason="asked")
    await source.scope(agent_id="helper").add_many([(f"Helper note {n}", None) for n in range(30)])
    middle = PostgresStore(postgres_dsn)
    result = await migrate(source, middle, batch=7)
    assert (result.copied, result.versions) == (31, 2)
    back = SQLiteStore(tmp_path / "back.db")
    await migrate(middle, back, batch=5)
    for copy in (middle, back):
        assert await copy.list() == await source.list()
        assert await _history(copy) == await _history(source)
        assert await copy.scope(user_id="ana").history(kept.id) == await ana.history(kept.id)
    for store in (source, middle, back):
        await store.aclose()


def test_the_cli_migrates_into_and_out_of_postgresql(tmp_path: Path, postgres_dsn: str) -> None:
    source = tmp_path / "memory.db"
    sync = SyncStore(SQLiteStore(source))
    kept = sync.scope(user_id="ana").add("Prefers aisle seats")
    sync.close()
    url = postgres_dsn if postgres_dsn.startswith("postgres") else _url(postgres_dsn)
    into = _cli("migrate", str(source), url)
    assert into.returncode == 0, into.stderr
    assert "copied 1 memory to database" in into.stdout and "password" not in into.stdout
    back = tmp_path / "back.json"
    out = _cli("migrate", url, str(back), "--flatten")
    assert out.returncode == 0, out.stderr
    assert kept.id in back.read_text(encoding="utf-8")


def _url(dsn: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return f"postgresql://{info['user']}@{info['host']}:{info['port']}/{info['dbname']}"


def _cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentrecall", *arguments], capture_output=True, text=True
    )


FLOATS = {"at": 1e16, "max": 1.7976931348623157e308, "neg": -2.5e20, "list": [3e17, {"in": 4e30}]}
"""Floats Python writes with a positive exponent, which ``jsonb`` writes without one."""


def _exact(metadata: object) -> str:
    """The metadata as JSON with sorted keys: a float and an equal integer differ here."""
    return json.dumps(metadata, sort_keys=True)


@pytest.mark.asyncio
async def test_large_floats_in_metadata_come_back_as_the_same_floats(
    tmp_path: Path, postgres_dsn: str
) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    kept = await source.scope(user_id="ana").add("Large numbers", {**FLOATS, "v": 1})
    await source.update(kept.id, metadata={**FLOATS, "v": 2}, reason="again")
    middle = PostgresStore(postgres_dsn)
    await migrate(source, middle)
    bulk = await middle.add_many([(f"Bulk note {n}", FLOATS) for n in range(1_200)])
    back = SQLiteStore(tmp_path / "back.db")
    await migrate(middle, back)
    for store in (middle, back):
        record = await store.get(kept.id)
        assert record is not None and _exact(record.metadata) == _exact({**FLOATS, "v": 2})
        (version,) = await store.history(kept.id)
        assert _exact(version.metadata) == _exact({**FLOATS, "v": 1})
        copy = await store.get(bulk[-1].id)
        assert copy is not None and _exact(copy.metadata) == _exact(FLOATS)
    found = await middle.list(filter={"at": 1e16, "max": {"$gte": 1.7976931348623157e308}})
    assert len(found) == 1 + len(bulk)
    for store in (source, middle, back):
        await store.aclose()


@pytest.mark.asyncio
async def test_retired_memories_and_their_versions_go_to_postgres_and_back(
    tmp_path: Path, postgres_dsn: str
) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    ana = source.scope(user_id="ana")
    lyon = await ana.add("Lives in Lyon", {"n": 1}, valid_from="2019-01-01")
    berlin = await ana.supersede(
        [lyon.id], "Lives in Berlin", valid_from="2025-03-01", reason="moved"
    )
    await source.add("Likes tea")
    middle = PostgresStore(postgres_dsn)
    result = await migrate(source, middle)
    assert (result.copied, result.versions) == (3, 1)
    back = SQLiteStore(tmp_path / "back.db")
    assert (await migrate(middle, back)).copied == 3
    everything = await source.list(include_superseded=True)
    for copy in (middle, back):
        assert await copy.list(include_superseded=True) == everything
        assert await _history(copy) == await _history(source)
        assert await copy.get(lyon.id) is None
        assert [hit.id for hit in await copy.search("lives")] == [berlin.id]
    (version,) = await _history(middle)
    assert (version.change, version.superseded_by) == ("supersede", berlin.id)
    # An export of the PostgreSQL store carries them too.
    out = io.BytesIO()
    header = await export_store(middle, out)
    assert (header.memories, header.versions) == (3, 1)
    out.seek(0)
    imported = SQLiteStore(tmp_path / "imported.db")
    await import_stream(out, "export", imported)
    assert await imported.list(include_superseded=True) == everything
    assert await _history(imported) == await _history(source)
    for store in (source, middle, back, imported):
        await store.aclose()
