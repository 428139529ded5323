"""SQLiteStore specifics: recall, scopes, history, expiry, and faults with real files and
processes. The shared contract is in test_conformance.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path

import pytest
from history_scenarios import an_hour_ago, check_unpurged_expiries
from hypothesis import given
from hypothesis import strategies as st
from sqlite_checks import check_full_text_index, old_database

from agentrecall import InvalidArgumentError, MemoryManager, StorageError, StoreClosedError
from agentrecall._internal.sqlite import Database
from agentrecall.retrieval import plan
from agentrecall.retrieval.bm25 import bm25, idf, query_terms
from agentrecall.retrieval.plan import NEWEST_POSTINGS, estimate_df, plan_terms
from agentrecall.stores.contentkeys import content_hash
from agentrecall.stores.sqlite import SQLiteStore, query
from agentrecall.stores.sqlite.query import averages, candidate_query, match_expression
from agentrecall.stores.sqlite.schema import COMPONENT, MIGRATIONS
from agentrecall.stores.sqlite.tables import CHUNK, FIRST_CHUNK, chunk_bounds, insert_statement
from agentrecall.types import MemoryRecord


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "memory.db")


def test_construction_does_no_io(tmp_path: Path, agentrecall_home: Path) -> None:
    SQLiteStore(tmp_path / "later" / "m.db")
    assert SQLiteStore(name="notes").path == str(agentrecall_home / "memory" / "notes.db")
    assert list(tmp_path.iterdir()) == [] and list(agentrecall_home.iterdir()) == []


async def test_setup_is_idempotent(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    await store.setup()
    await SQLiteStore(tmp_path / "m.db").setup()
    assert await store.count() == 0


async def test_bm25_ranks_rare_words_higher_and_folds_diacritics(store: SQLiteStore) -> None:
    await store.add_many(
        [
            ("The user prefers aisle seats on long flights.", None),
            ("The user likes the café near the station.", None),
            ("The user has a dog named Biscuit.", None),
        ]
    )
    hits = await store.search("What is the name of the user's dog?")
    assert hits[0].content == "The user has a dog named Biscuit."
    assert all(h.metadata and h.metadata["_relevanceScore"] > 0 for h in hits)
    scores = [h.metadata["_relevanceScore"] for h in hits if h.metadata]
    assert scores == sorted(scores, reverse=True)
    assert [h.content for h in await store.search("cafe")] == [
        "The user likes the café near the station."
    ]
    assert await store.search("what is the") == []  # stop words only


async def test_ties_go_to_the_newer_memory(store: SQLiteStore) -> None:
    await store.add("tea one")
    await store.add("tea two")
    assert [h.content for h in await store.search("tea")] == ["tea two", "tea one"]


def test_query_terms_fold_split_and_stem_like_the_index() -> None:
    terms = {"cafe": "cafe", "caroline": "carolin", "paint": "paint"}
    assert query_terms("What did Caroline paint, the café?") == terms
    assert query_terms("snake_case and Ünïcode") == {
        "case": "case",
        "snake": "snake",
        "unicode": "unicod",
    }
    # One word per term, the first in sort order; stop words go before stemming ("was": "wa").
    assert query_terms("Painting was painted paints") == {"painted": "paint"}
    assert match_expression(['he"llo', "x"]) == 'content : ("he""llo" OR "x")'
    assert match_expression(["x"], [3, 17]) == 'content : ("x") AND scope : ("3" OR "17")'


def test_document_frequency_is_exact_below_the_probe_and_estimated_above() -> None:
    assert estimate_df(12, 40, 1, 1_000) == 12
    assert estimate_df(1_000, 901, 1, 1_000) == 10_000  # newest 1,000 span a tenth of the ids
    assert estimate_df(1_000, 1, 1, 1_000) == 1_000
    assert idf(1, 100) > idf(50, 100) > 0


def test_plan_gives_the_budget_to_rare_terms_and_skips_common_ones() -> None:
    df = {"rare": 3, "mid": 15_000, "more": 30_000, "common": 600_000, "absent": 0}
    plans = {plan.term: plan.postings for plan in plan_terms(df, 1_000_000)}
    assert plans == {"rare": None, "mid": None, "more": NEWEST_POSTINGS, "common": 0}
    only_common = plan_terms({"a": 600_000, "b": 700_000}, 1_000_000)
    assert [(p.term, p.postings) for p in only_common] == [("a", NEWEST_POSTINGS), ("b", 0)]
    small = plan_terms({"a": 900, "b": 1_500}, 2_000)
    assert [p.postings for p in small] == [None, None]  # small stores score every posting
    sql = candidate_query(plan_terms(df, 1_000_000), "m.user_id = ?", 100)
    assert sql.count("UNION ALL") == 2 and sql.count("m.user_id = ?") == 3


@given(st.integers(min_value=0, max_value=60_000))
def test_pipeline_chunks_cover_the_batch_and_grow_from_a_small_first(total: int) -> None:
    bounds = chunk_bounds(total)
    assert [start for start, _ in bounds] == [0, *(stop for _, stop in bounds)][: len(bounds)]
    assert (bounds[-1][1] if bounds else 0) == total
    sizes = [stop - start for start, stop in bounds]
    assert all(0 < size <= CHUNK for size in sizes)
    assert not sizes or sizes[0] == (total if total <= CHUNK else FIRST_CHUNK)
    # Only the last chunk may be shorter than the rule gives: it ends the batch.
    assert all(later <= 3 * earlier for earlier, later in pairwise(sizes))
    assert all(later == min(3 * earlier, CHUNK) for earlier, later in pairwise(sizes[:-1]))


def test_a_batch_insert_takes_only_stored_timestamps_into_its_sql() -> None:
    at = "2026-01-31T09:30:00.000Z"
    sql = insert_statement(3, "ON CONFLICT DO NOTHING", (at, None, None, at, None))
    assert f"VALUES (?, 3, ?, ?, ?, '{at}', NULL, NULL, NULL, NULL, '{at}', NULL, ?)" in sql
    with pytest.raises(ValueError, match="stored shape"):
        insert_statement(0, "", ("2026-01-31'); DROP TABLE memories; --", None, None, None, None))
    with pytest.raises(ValueError, match="stored shape"):
        insert_statement(0, "", (at, None, None, None, "2026'); DROP TABLE memories; --"))


def test_bm25_and_the_averages_record() -> None:
    weights = {"dog": 2.0}
    assert bm25(weights, "a dog", 2.0) > bm25(weights, "a dog in a long sentence", 2.0) > 0
    assert bm25(weights, "a cat", 2.0) == 0
    assert averages(b"\x82,\x87\x04") == (300, 900)
    assert averages(None) == (0, 0)


async def test_a_small_scope_in_a_larger_store_finds_its_memories(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With no budget, the common words "trip" and "lake" add only their newest postings:
    # those must be the scope's own, not the newest of the whole store.
    monkeypatch.setattr(plan, "POSTINGS_BUDGET", 0)
    others = store.scope(user_id="others")
    await others.add_many([(f"the trip to the lake number {i}", None) for i in range(1_500)])
    ana = store.scope(user_id="ana")
    await ana.add("ana went on the trip to the lake")
    await others.add_many([(f"another trip to the lake {i}", None) for i in range(600)])
    hits = await ana.search("Which trip to the lake?")
    assert [h.content for h in hits] == ["ana went on the trip to the lake"]
    filtered = await store.search("trip lake", filter={"who": "ana"})
    assert filtered == []
    newest = await store.search("trip lake", {"max_search_results": 3})
    assert [h.content for h in newest] == [f"another trip to the lake {i}" for i in (599, 598, 597)]


async def test_query_words_never_match_the_indexed_scope_numbers(store: SQLiteStore) -> None:
    await store.add("kelp forests")  # scope number 0
    ana = store.scope(user_id="ana")
    await ana.add("ana likes kelp")  # scope number 1
    assert await store.search("0 1") == []
    assert [h.content for h in await ana.search("kelp 1")] == ["ana likes kelp"]
    await store.add("room 101 and room 1")
    assert [h.content for h in await store.search("1")] == ["room 101 and room 1"]


@pytest.mark.parametrize("wide", [False, True])
async def test_a_view_over_many_sessions_finds_them_all_and_no_one_else(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch, wide: bool
) -> None:
    if wide:  # more sessions than a full-text query names: each posting is checked instead
        monkeypatch.setattr(query, "SCOPE_TERMS", 3)
    ana = store.scope(user_id="ana")
    for n in range(6):
        await ana.scope(session_id=f"s{n}").add(f"ana packed item {n} for the trip")
    await store.scope(user_id="bob").add("bob packed item 9 for the trip")
    await store.add("someone packed item 8 for the trip")
    hits = await ana.search("packed trip", {"max_search_results": 10})
    assert sorted(h.content for h in hits) == [
        f"ana packed item {n} for the trip" for n in range(6)
    ]
    session = await ana.scope(session_id="s2").search("packed trip")
    assert [h.content for h in session] == ["ana packed item 2 for the trip"]
    assert await store.scope(user_id="cy").search("packed trip") == []
    assert len(await store.search("packed trip")) == 8
    await ana.update(hits[0].id, content="ana unpacked it all")
    await ana.delete(hits[1].id)
    assert len(await ana.search("packed trip")) == 4
    assert [h.content for h in await ana.search("unpacked")] == ["ana unpacked it all"]

    # Compares the index, scope numbers included, with what the memories table holds.
    store._db.run(check_full_text_index, write=True)


async def test_scopes_do_not_leak(store: SQLiteStore) -> None:
    ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
    ana_trip = ana.scope(session_id="trip")
    first = await ana_trip.add("prefers aisle seats")
    await bob.add("prefers aisle seats")
    await ana.add("allergic to peanuts")
    assert ana.name == "memory[user=ana]" and ana_trip.name == "memory[user=ana,session=trip]"
    assert await ana.count() == 2 and await bob.count() == 1 and await ana_trip.count() == 1
    assert [h.content for h in await bob.search("peanuts")] == []
    assert await bob.get(first.id) is None and await bob.delete(first.id) is False
    assert (await ana.get(first.id)) is not None
    with pytest.raises(InvalidArgumentError, match="user_id"):
        ana.scope(user_id="bob")


async def test_update_keeps_history_and_refuses_duplicates(store: SQLiteStore) -> None:
    first = await store.add("lives in Lisbon", {"v": 1})
    await store.add("works remotely")
    updated = await store.update(first.id, content="lives in Porto", reason="moved")
    assert updated is not None and updated.updated_at and updated.content == "lives in Porto"
    assert updated.metadata == {"v": 1} and updated.created_at <= updated.updated_at
    assert [h.content for h in await store.search("Lisbon")] == []
    with pytest.raises(InvalidArgumentError, match="already has that content"):
        await store.update(first.id, content=" works remotely ")
    await store.delete(first.id, reason="user asked")
    versions = await store.history(first.id)
    assert [(v.content, v.change, v.reason) for v in versions] == [
        ("lives in Lisbon", "update", "moved"),
        ("lives in Porto", "delete", "user asked"),
    ]
    assert await store.update("missing", content="x") is None


async def test_expiry(store: SQLiteStore) -> None:
    past = datetime.now(timezone.utc) - timedelta(seconds=1)
    gone = await store.add("expired already", expires_at=past)
    kept = await store.add("kept for a day", ttl=timedelta(days=1))
    assert await store.get(gone.id) is None and await store.count() == 1
    record = await store.get(kept.id)
    assert record is not None and record.expires_at is not None
    again = await store.add("expired already")  # dedup ignores the expired copy
    assert again.id != gone.id
    assert [v.change for v in await store.history(gone.id)] == ["expire"]
    with pytest.raises(InvalidArgumentError, match="ttl"):
        await store.add("x", ttl=0)
    with pytest.raises(InvalidArgumentError, match="not both"):
        await store.add("x", ttl=5, expires_at=past)


async def test_copies_of_the_history_hold_an_expiry_no_write_has_purged_yet(
    tmp_path: Path,
) -> None:
    store, copy = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "copy.db")
    await check_unpurged_expiries(store, copy)
    await copy.aclose()
    await store.aclose()


def test_the_cli_shows_an_expiry_in_the_history_dated_at_it_before_and_after_the_purge(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"

    async def fill() -> tuple[str, str]:
        async with SQLiteStore(path) as store:
            with an_hour_ago():
                memory = await store.add("Boarding at gate four", ttl=60)
                record = await store.get(memory.id)
            assert record is not None and record.expires_at is not None
            return memory.id, record.expires_at

    memory_id, expiry = asyncio.run(fill())
    command = [sys.executable, "-m", "agentrecall", "--db", str(path)]
    history = [*command, "history", memory_id]
    shown = subprocess.run(history, capture_output=True, text=True, check=True).stdout
    assert shown.split() == [expiry, "expire", "Boarding", "at", "gate", "four"]
    subprocess.run([*command, "add", "a later write, which purges it"], check=True)
    assert subprocess.run(history, capture_output=True, text=True, check=True).stdout == shown


async def test_store_default_ttl(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db", ttl=3600)
    record = await store.get((await store.add("fact")).id)
    assert record is not None and record.expires_at is not None


async def test_read_only_store_refuses_every_write(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first = await SQLiteStore(path).add("fact")
    read_only = SQLiteStore(path, writable=False)
    for call in (
        read_only.add("x"),
        read_only.add_many([("x", None)]),
        read_only.update(first.id, content="y"),
        read_only.delete(first.id),
        read_only.clear(),
    ):
        with pytest.raises(InvalidArgumentError, match="read-only"):
            await call
    assert await read_only.count() == 1


async def test_a_file_that_is_not_a_database_is_reported_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('[{"id": "a"}]')
    with pytest.raises(StorageError, match="notes.json.*not an SQLite database"):
        await SQLiteStore(path).search("anything")
    assert path.read_text() == '[{"id": "a"}]'


async def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER)")
    with pytest.raises(StorageError, match="another application"):
        await SQLiteStore(path).add("fact")


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    await SQLiteStore(path).setup()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE agentrecall_schema SET version = 99 WHERE component = 'store'")
    with pytest.raises(StorageError, match="version 99.*upgrade"):
        await SQLiteStore(path).count()


async def test_a_file_it_may_not_write_is_a_clear_storage_error(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run the check as another user")
    path = tmp_path / "m.db"
    await SQLiteStore(path).add("fact")
    before = path.read_bytes()
    os.chmod(tmp_path, 0o755)
    # The child loads everything it needs as root, then runs the store as an unprivileged user.
    scratch = tmp_path / "scratch" / "warm.db"
    code = (
        "import asyncio, os\n"
        "from agentrecall.stores.sqlite import SQLiteStore\n"
        "from agentrecall import StorageError\n"
        f"asyncio.run(SQLiteStore({str(scratch)!r}).add('warm up'))\n"
        "os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
        f"store = SQLiteStore({str(path)!r})\n"
        "try:\n"
        "    asyncio.run(store.add('new'))\n"
        "except StorageError as error:\n"
        "    print('refused', error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.startswith("refused") and "m.db" in result.stdout, result.stderr
    assert path.read_bytes() == before


def _adder(path: Path, worker: int, count: int) -> str:
    return (
        "import asyncio, sys\n"
        "from agentrecall.stores.sqlite import SQLiteStore\n"
        "async def main():\n"
        f"    store = SQLiteStore({str(path)!r})\n"
        f"    for i in range({count}):\n"
        f"        await store.add(f'worker {worker} fact {{i}}')\n"
        "        hits = await store.search('worker fact')\n"
        f"        print(i, flush=True)\n"
        "asyncio.run(main())\n"
    )


def test_eight_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _adder(path, n, 25)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0 and err == "", err
    count = asyncio.run(SQLiteStore(path).count())
    assert count == 200


def test_processes_bulk_loading_one_database_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bulk.db"
    # Batches larger than a chunk take the pipelined path, and each one leaves a checkpoint to
    # its process's background thread while the other processes write and read.
    loader = (
        "import asyncio\n"
        "from agentrecall.stores.sqlite import SQLiteStore\n"
        "async def main(worker):\n"
        f"    store = SQLiteStore({str(path)!r})\n"
        "    for batch in range(2):\n"
        "        items = [(f'loader {worker} {batch} item {i}', None) for i in range(6000)]\n"
        "        assert len(await store.add_many(items)) == 6_000\n"
        "        await store.search('loader item')\n"
        "import sys\n"
        "asyncio.run(main(sys.argv[1]))\n"
    )
    children = [
        subprocess.Popen(
            [sys.executable, "-c", loader, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    children.append(
        subprocess.Popen(
            [sys.executable, "-c", _adder(path, 9, 20)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0 and err == "", err
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        check_full_text_index(db)
        assert db.execute("SELECT count(*) FROM memories").fetchone()[0] == 3 * 12_000 + 20
    assert not [p for p in os.listdir(tmp_path) if p.endswith(("-wal", "-shm"))]


@pytest.mark.parametrize("fsync", [True, False])
def test_a_writer_killed_mid_batch_leaves_every_acknowledged_write(
    tmp_path: Path, fsync: bool
) -> None:
    path = tmp_path / "killed.db"
    code = (
        "import asyncio\n"
        "from agentrecall.stores.sqlite import SQLiteStore\n"
        "async def main():\n"
        f"    store = SQLiteStore({str(path)!r}, fsync={fsync})\n"
        "    n = 0\n"
        "    while True:\n"
        "        items = [(f'batch {n} item {k}', None) for k in range(200)]\n"
        "        results = await store.add_many(items)\n"
        "        print(json.dumps([r.id for r in results]), flush=True)\n"
        "        n += 1\n"
        "import json\n"
        "asyncio.run(main())\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = [json.loads(child.stdout.readline()) for _ in range(3)]
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in db.execute("SELECT id FROM memories")}
        fts = db.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
    assert all(i in stored for batch in acknowledged for i in batch)
    assert len(stored) % 200 == 0  # whole batches only
    assert fts == len(stored)


@pytest.mark.parametrize(("fsync", "synchronous"), [(True, 2), (False, 1)])
async def test_fsync_decides_how_writes_are_synced(
    tmp_path: Path, fsync: bool, synchronous: int
) -> None:
    store = SQLiteStore(tmp_path / "m.db", fsync=fsync)
    await store.add("a fact")
    # 2 is SQLite's FULL (fsync at each commit), 1 is NORMAL (handed to the OS at commit).
    setting = store._db.run(lambda db: db.execute("PRAGMA synchronous").fetchone()[0])
    assert setting == synchronous
    await store.aclose()


def test_fsync_must_be_a_bool() -> None:
    with pytest.raises(InvalidArgumentError, match="fsync must be True or False"):
        SQLiteStore(":memory:", fsync="no")  # type: ignore[arg-type]


async def test_works_inside_our_manager(store: SQLiteStore) -> None:
    manager = MemoryManager([store], add_tool=True)
    add_memory = next(t for t in manager.tools if t.name == "add_memory")
    assert json.loads(await add_memory(entries=["The user is vegetarian."]))["stored"] == 1
    hits = await manager.search("Is the user vegetarian?")
    assert [(h.content, h.store_name) for h in hits] == [("The user is vegetarian.", "memory")]


async def test_adds_keep_the_index_in_step_across_upgrades(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    # A database written by the first schema, whose trigger fed the index, upgrades in place.
    Database(str(path), component=COMPONENT, migrations=MIGRATIONS[:1]).run(
        lambda db: db.execute(
            "INSERT INTO memories (id, scope, content, content_key, created_at) "
            "VALUES ('old', '[null, null, null]', 'an old walrus', 'an old walrus', '2024')"
        ),
        write=True,
    )
    store = SQLiteStore(path)
    assert (await store.add("  an old walrus ")).id == "old"  # dedup survives the upgrades
    await store.add_many([("a walrus swims", None), ("a walrus swims", None), ("kelp", None)])
    first = await store.add("walrus dreams")
    await store.delete(first.id)
    assert [h.content for h in await store.search("walrus")] == ["a walrus swims", "an old walrus"]
    with sqlite3.connect(path) as db:
        check_full_text_index(db)
        assert db.execute("SELECT count(*) FROM memories").fetchone()[0] == 3
    await store.aclose()


async def test_scoped_memories_and_history_survive_the_move_to_scope_numbers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    # Schema 4 kept each memory's ids in its own columns; migration 5 moves them to numbers.
    rows = [
        ("a1", '["ana", null, null]', "ana", None, None, "ana likes tea"),
        ("a2", '["ana", null, "s1"]', "ana", None, "s1", "ana booked a tram"),
        ("b1", '["bob", null, null]', "bob", None, None, "bob likes tea"),
        ("r1", "[null, null, null]", None, None, None, "everyone likes tea"),
    ]

    def old_schema(db: sqlite3.Connection) -> None:
        for seq, (memory_id, key, user, agent, session, content) in enumerate(rows, 1):
            db.execute(
                "INSERT INTO memories (seq, id, scope, user_id, agent_id, session_id, content, "
                "content_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    seq,
                    memory_id,
                    key,
                    user,
                    agent,
                    session,
                    content,
                    content_hash(content),
                    f"2025-01-0{seq}T00:00:00.000Z",
                ),
            )
            db.execute("INSERT INTO memories_fts (rowid, content) VALUES (?, ?)", (seq, content))
        db.execute(
            "INSERT INTO memory_history (id, user_id, content, changed_at, change, reason) "
            "VALUES ('b0', 'bob', 'bob liked coffee', '2025-01-01T00:00:00.000Z', 'delete', "
            "'changed his mind')"
        )
        db.execute(
            "INSERT INTO memory_history (id, user_id, agent_id, content, changed_at, change) "
            "VALUES ('c0', 'cy', 'helper', 'cy is gone', '2025-01-01T00:00:00.000Z', 'delete')"
        )

    old_database(path, 4, old_schema)

    store = SQLiteStore(path)
    ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
    assert [m.id for m in await ana.list()] == ["a1", "a2"]
    assert [m.id for m in await ana.scope(session_id="s1").list()] == ["a2"]
    assert [h.id for h in await bob.search("tea")] == ["b1"]
    assert [h.id for h in await store.search("tea")] == ["r1", "b1", "a1"]
    assert (await bob.add("bob likes tea")).id == "b1"  # dedup per scope survives
    assert (await ana.add("bob likes tea")).id != "b1"
    assert [(v.content, v.reason) for v in await bob.history("b0")] == [
        ("bob liked coffee", "changed his mind")
    ]
    assert await ana.history("b0") == []
    cy = store.scope(user_id="cy", agent_id="helper")
    assert [v.content for v in await cy.history("c0")] == ["cy is gone"]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        check_full_text_index(db)
        columns = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
        assert "user_id" not in columns and "scope" in columns
    await store.aclose()


async def test_new_ids_are_time_ordered_uuids(store: SQLiteStore) -> None:
    import uuid

    first = (await store.add("first fact")).id
    await asyncio.sleep(0.002)
    second = (await store.add("second fact")).id
    assert uuid.UUID(first).version == 7 and first < second


async def test_a_large_batch_is_built_while_the_index_works_and_stays_one_batch(
    store: SQLiteStore,
) -> None:
    before = await store.add("walrus number 7")
    items: list[tuple[str, dict[str, object] | None]] = [
        (f"walrus number {i}", {"i": i}) for i in range(12_000)
    ]
    items[11_500] = ("walrus number 3", None)  # a duplicate of an earlier chunk's item
    results = await store.add_many(items)
    assert len(results) == 12_000
    assert results[7].id == before.id and results[11_500].id == results[3].id
    ids = [r.id for r in results]
    assert len(set(ids)) == 12_000 - 1 and ids[8:11_500] == sorted(ids[8:11_500])
    assert await store.count() == 11_999
    for i in (0, 5_000, 9_999, 11_999):
        hits = await store.search(f"number {i}", {"max_search_results": 1})
        assert [h.metadata["i"] for h in hits] == [i]

    store._db.run(check_full_text_index, write=True)


async def test_a_bad_item_late_in_a_large_batch_stores_nothing(store: SQLiteStore) -> None:
    items: list[tuple[str, dict[str, object] | None]] = [(f"fact {i}", None) for i in range(11_000)]
    items[10_500] = ("fact", {"bad": {1, 2}})  # a set is not JSON
    with pytest.raises(InvalidArgumentError, match=r"metadata \(item 10500\)"):
        await store.add_many(items)
    items[10_500] = ("   ", None)
    with pytest.raises(InvalidArgumentError, match=r"content \(item 10500\)"):
        await store.add_many(items)
    assert await store.count() == 0 and await store.search("fact") == []


async def test_a_large_import_keeps_ids_and_a_bad_record_late_in_it_stores_nothing(
    store: SQLiteStore,
) -> None:
    records = [
        MemoryRecord(id=f"old-{i}", content=f"imported fact {i}", created_at=STAMP)
        for i in range(11_000)
    ]
    records[10_600] = MemoryRecord(id="old-bad", content="x", created_at="yesterday")
    with pytest.raises(InvalidArgumentError, match=r"record 10600 \(old-bad\): created_at"):
        await store.import_records(records)
    assert await store.count() == 0
    records[10_600] = MemoryRecord(id="old-10600", content="imported fact 10600", created_at=STAMP)
    assert await store.import_records(records) == 11_000
    assert (await store.get("old-10999")) is not None
    hits = await store.search("fact 7777", {"max_search_results": 1})
    assert [h.id for h in hits] == ["old-7777"]


STAMP = "2025-01-31T09:30:00.000Z"


async def test_leaving_async_with_closes_the_connection(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with pytest.raises(LookupError):
        async with SQLiteStore(path) as store:
            await store.scope(user_id="u").add("a fact")
            assert (tmp_path / "m.db-wal").exists()
            raise LookupError
    # The last connection to close folds the WAL back into the file and removes it.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.db"]
    with pytest.raises(StoreClosedError, match="store 'memory' is closed"):
        await store.count()
    assert await SQLiteStore(path).count() == 1
