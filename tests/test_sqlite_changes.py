"""SQLiteStore and facts that change: its schema, indexes, reads of the past and crashes.

The behaviour every store shares is in the conformance suite (``_contract_changes``); these
tests cover what is SQLite's own: the in-place migration of older files, the partial dedup
index, which reads touch the history, and a process killed in the middle of ``supersede``.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlite_checks import check_full_text_index, old_database

from agentrecall import InvalidArgumentError, SQLiteStore
from agentrecall.stores.contentkeys import content_key
from agentrecall.stores.sqlite import imports as imports_module
from agentrecall.stores.sqlite import writes as writes_module
from agentrecall.testing import HashEmbedder, ManualClock
from agentrecall.testing.conformance import SYNONYMS
from agentrecall.types import MemoryRecord

T0 = "2025-01-01T00:00:00.000Z"


@pytest.fixture
def clock() -> Iterator[ManualClock]:
    with ManualClock() as manual:
        yield manual


def moment(clock: ManualClock) -> str:
    """Move the clock on and return a moment after every write so far, before every later one."""
    from agentrecall.stores.times import stored_time

    clock.advance(1)
    middle = stored_time(clock.now())
    clock.advance(1)
    return middle


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


def fill_schema_13(db: sqlite3.Connection) -> None:
    """Memories and history as agentrecall wrote them before facts could change."""
    for seq, (memory_id, content) in enumerate(
        [("lyon", "The user lives in Lyon"), ("tea", "The user drinks tea")], 1
    ):
        db.execute(
            "INSERT INTO memories (seq, id, scope, content, content_hash, created_at) "
            "VALUES (?, ?, 0, ?, ?, ?)",
            (seq, memory_id, content, content_key(content), T0),
        )
        db.execute("INSERT INTO memories_unindexed (seq) VALUES (?)", (seq,))
    db.execute(
        "INSERT INTO memory_history (id, scope, content, changed_at, change) "
        "VALUES ('tea', 0, 'The user drinks coffee', '2025-02-01T00:00:00.000Z', 'update'), "
        "('gone', 0, 'The user had a cat', '2025-02-01T00:00:00.000Z', 'delete')"
    )
    db.execute("UPDATE memories SET updated_at = '2025-02-01T00:00:00.000Z' WHERE id = 'tea'")


async def test_a_file_of_the_previous_schema_migrates_in_place_and_supersedes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    old_database(path, 13, fill_schema_13)
    store = SQLiteStore(path)
    assert [m.id for m in await store.list()] == ["lyon", "tea"]
    assert [h.id for h in await store.search("Lyon")] == ["lyon"]
    versions = {v.memory_id: v for page in [p async for p in store.versions()] for v in page}
    # A version's created_at comes from its memory where the memory is still there.
    assert versions["tea"].created_at == T0
    assert versions["gone"].created_at is None
    assert (await store.get("lyon")) == MemoryRecord("lyon", "The user lives in Lyon", T0)

    berlin = await store.supersede(["lyon"], "The user lives in Berlin", valid_from="2025-03-01")
    assert [h.content for h in await store.search("lives")] == ["The user lives in Berlin"]
    retired = await store.get("lyon", include_superseded=True)
    assert retired is not None and retired.superseded_by == berlin.id
    assert retired.valid_until == "2025-03-01T00:00:00.000Z"
    # Versions without created_at count as created before any moment.
    assert [h.content for h in await store.search("coffee", as_of="2025-01-15")] == [
        "The user drinks coffee"
    ]
    assert [h.content for h in await store.search("cat", as_of="2025-01-15")] == [
        "The user had a cat"
    ]
    # The dedup index holds current memories only: the old fact may come back, as new.
    again = await store.add("The user lives in Lyon")
    assert again.created and again.id != "lyon"
    await store.aclose()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        check_full_text_index(db)


def plan(db: sqlite3.Connection, sql: str, params: list[object]) -> str:
    return " / ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params))


async def test_default_reads_of_a_scope_use_the_partial_dedup_index(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    ana = store.scope(user_id="ana")
    old = await ana.add("Ana lives in Lyon")
    await ana.supersede([old.id], "Ana lives in Berlin")
    assert [m.content for m in await ana.list()] == ["Ana lives in Berlin"]
    traced: list[str] = []
    store._db.run(lambda db: db.set_trace_callback(traced.append))
    assert await ana.count() == 1
    await ana.search("lives")
    store._db.run(lambda db: db.set_trace_callback(None))
    # The default path never reads the history: no per-memory subquery of the past.
    assert traced and not [sql for sql in traced if "memory_history" in sql]
    store._db.run(lambda db: db.set_trace_callback(traced.append))
    assert await ana.count(include_superseded=True) == 2
    store._db.run(lambda db: db.set_trace_callback(None))
    await store.aclose()
    with closing(sqlite3.connect(tmp_path / "m.db")) as db:
        current, every = [sql for sql in traced if sql.startswith("SELECT count(*) FROM memories")]
        assert "memories_dedup" in plan(db, current, [])
        # Retired memories too: the scope's parts of both partial indexes, not every memory.
        both = plan(db, every, [])
        assert "memories_dedup" in both and "memories_retired" in both


async def test_as_of_search_reads_only_the_versions_replaced_since(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    kept = await store.add("The walrus sleeps on the beach")
    moved = await store.add("The walrus swims in the bay")
    then = moment(clock)
    await store.update(moved.id, content="The seal swims in the bay")
    traced: list[str] = []
    store._db.run(lambda db: db.set_trace_callback(traced.append))
    hits = await store.search("walrus", as_of=then)
    store._db.run(lambda db: db.set_trace_callback(None))
    # The updated memory is found with its content of then, under its own id.
    assert sorted((h.id, h.content) for h in hits) == sorted(
        [(kept.id, "The walrus sleeps on the beach"), (moved.id, "The walrus swims in the bay")]
    )
    assert [h.content for h in await store.search("seal", as_of=then)] == []
    assert [h.id for h in await store.search("seal")] == [moved.id]
    past = [sql for sql in traced if "memory_history" in sql]
    assert len(past) == 1
    with closing(sqlite3.connect(tmp_path / "m.db")) as db:
        assert "memory_history_changed" in plan(db, past[0], [])
    await store.aclose()


async def test_as_of_in_conversation_mode_and_by_meaning(
    tmp_path: Path, clock: ManualClock
) -> None:
    embedder = HashEmbedder(256, synonyms=SYNONYMS)
    store = SQLiteStore(tmp_path / "m.db", embedder=embedder, search_mode="hybrid")
    seat = await store.add("The user prefers an aisle seat", {"session": "a"})
    await store.add("The user flies to Oslo", {"session": "a"})
    then = moment(clock)
    await store.update(seat.id, content="The user prefers a window seat")
    for options in ({"mode": "semantic"}, {"mode": "hybrid"}, {"neighbours": True}):
        hits = await store.search("aisle seat", options, as_of=then)
        assert hits[0].id == seat.id, options
        assert hits[0].content == "The user prefers an aisle seat", options
        assert "The user prefers a window seat" not in [h.content for h in hits], options
    await store.aclose()


async def test_retired_hits_are_marked_in_every_mode(tmp_path: Path, clock: ManualClock) -> None:
    embedder = HashEmbedder(256, synonyms=SYNONYMS)
    store = SQLiteStore(tmp_path / "m.db", embedder=embedder, search_mode="hybrid")
    old = await store.add("The user prefers an aisle seat", {"session": "a"})
    then = moment(clock)
    new = await store.supersede([old.id], "The user prefers a window seat")
    retired = await store.get(old.id, include_superseded=True)
    assert retired is not None
    marks = {"_invalidatedAt": retired.invalidated_at, "_supersededBy": new.id}
    for options in ({"mode": "semantic"}, {"mode": "hybrid"}, {"neighbours": True}):
        hits = {h.id: h for h in await store.search("aisle seat", options, include_superseded=True)}
        assert set(hits) == {old.id, new.id}, options
        assert hits[old.id].metadata is not None
        assert {k: hits[old.id].metadata.get(k) for k in marks} == marks, options
        assert "_supersededBy" not in (hits[new.id].metadata or {}), options
        # Before its retirement, it was current: found, and not marked.
        [hit] = await store.search("aisle seat", options, as_of=then)
        assert hit.id == old.id and "_supersededBy" not in (hit.metadata or {}), options
        assert old.id not in [h.id for h in await store.search("aisle seat", options)], options
    await store.aclose()


async def test_an_imported_retired_record_stays_retired_beside_a_current_twin(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    current = await store.add("The user lives in Lyon")
    retired = MemoryRecord(
        "old-lyon",
        "The user lives in Lyon",
        T0,
        invalidated_at="2025-02-01T00:00:00.000Z",
        superseded_by=current.id,
        valid_from=T0,
    )
    assert await store.import_records([retired]) == 1
    assert [m.id for m in await store.list()] == [current.id]
    assert await store.get("old-lyon", include_superseded=True) == retired
    assert (await store.add("The user lives in Lyon")).id == current.id
    assert [v.memory_id for v in await store.history(current.id)] == []
    await store.aclose()


async def test_a_retired_record_is_imported_where_every_key_collides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With one key for every content, each row is inserted on its own after a dedup check
    # (dedup.add_each): a retired one must skip it, as the partial unique index does.
    monkeypatch.setattr(writes_module, "content_key", lambda content: 7)
    monkeypatch.setattr(imports_module, "content_key", lambda content: 7)
    store = SQLiteStore(tmp_path / "m.db")
    current = await store.add("The user lives in Lyon")
    await store.add("The user drinks tea")
    retired = MemoryRecord(
        "old-lyon",
        "The user lives in Lyon",
        T0,
        invalidated_at="2025-02-01T00:00:00.000Z",
        superseded_by=current.id,
    )
    twin = MemoryRecord("twin", " The user lives in Lyon ", T0)
    assert await store.import_records([retired, twin]) == 1
    assert await store.count() == 2
    assert await store.get("old-lyon", include_superseded=True) == retired
    await store.aclose()


async def test_a_failed_supersede_writes_nothing_not_even_a_new_scope(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    old = await store.add("The user lives in Lyon")
    before = rows(tmp_path / "m.db", "SELECT count(*) FROM memory_scopes")
    with pytest.raises(InvalidArgumentError, match=old.id):
        # The memory is the root's, not this new scope's: refused, and the scope not kept.
        await store.scope(user_id="newcomer").supersede([old.id], "The user lives in Oslo")
    assert rows(tmp_path / "m.db", "SELECT count(*) FROM memory_scopes") == before
    assert [m.id for m in await store.list()] == [old.id]
    await store.aclose()


async def test_two_processes_superseding_one_memory_retire_it_once(tmp_path: Path) -> None:
    # Two stores on one file, each with its own connection and thread: their transactions
    # take the write lock in turn, so whichever comes second finds the memory retired.
    first, second = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    old = await first.add("The user lives in Lyon")
    outcomes = await asyncio.gather(
        first.supersede([old.id], "The user lives in Berlin"),
        second.supersede([old.id], "The user lives in Oslo"),
        return_exceptions=True,
    )
    [won] = [o for o in outcomes if not isinstance(o, BaseException)]
    [lost] = [o for o in outcomes if isinstance(o, BaseException)]
    assert isinstance(lost, InvalidArgumentError) and won.id in str(lost)
    retired = await first.get(old.id, include_superseded=True)
    assert retired is not None and retired.superseded_by == won.id
    assert [v.change for v in await first.history(old.id)] == ["supersede"]
    assert [m.id for m in await second.list()] == [won.id]
    await first.aclose()
    await second.aclose()


async def test_the_chain_is_followed_through_a_deleted_memory(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    first = await store.add("The user lives in Lyon")
    second = await store.supersede([first.id], "The user lives in Berlin")
    third = await store.supersede([second.id], "The user lives in Oslo")
    assert await store.delete(second.id)
    ids = {v.memory_id for v in await store.history(first.id)}
    assert ids == {first.id, second.id}  # and on to third, which has no versions
    assert {v.memory_id for v in await store.history(third.id)} == {first.id, second.id}
    await store.aclose()


def test_a_writer_killed_mid_supersede_leaves_the_state_before_or_after(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    code = (
        "import asyncio, json\n"
        "from agentrecall.stores.sqlite import SQLiteStore\n"
        "async def main():\n"
        f"    store = SQLiteStore({str(path)!r})\n"
        "    current = (await store.add('fact 0')).id\n"
        "    n = 1\n"
        "    while True:\n"
        "        current = (await store.supersede([current], f'fact {n}', reason='newer')).id\n"
        "        print(json.dumps(current), flush=True)\n"
        "        n += 1\n"
        "asyncio.run(main())\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = [json.loads(child.stdout.readline()) for _ in range(5)]
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        check_full_text_index(db)
        memories = {
            row[0]: row[1:]
            for row in db.execute("SELECT id, invalidated_at, superseded_by FROM memories")
        }
        versions = db.execute(
            "SELECT id, change, changed_at, invalidated_at, superseded_by FROM memory_history"
        ).fetchall()
    assert set(acknowledged) <= set(memories)
    # Exactly the newest fact is current; every other one is retired by the next, each with
    # one supersede version of that same retirement: no call was half applied.
    current = [memory_id for memory_id, (invalidated, _) in memories.items() if invalidated is None]
    assert len(current) == 1
    retired = {
        memory_id: (invalidated, successor)
        for memory_id, (invalidated, successor) in memories.items()
        if invalidated is not None
    }
    assert len(retired) == len(memories) - 1
    assert all(successor in memories for _, successor in retired.values())
    assert sorted(
        (memory_id, (changed_at, successor))
        for memory_id, change, changed_at, invalidated, successor in versions
        if change == "supersede" and invalidated == changed_at
    ) == sorted(retired.items())
    assert len(versions) == len(retired)
