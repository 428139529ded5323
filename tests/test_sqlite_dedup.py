"""SQLiteStore dedup on integer keys: exact however often keys collide.

Real 64-bit keys practically never collide, so most tests here give the store a key that
collides all the time (a few values for every content) and check that dedup still goes by the
text alone: nothing is lost, nothing is stored twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_checks import check_full_text_index, old_database

from agentrecall import InvalidArgumentError
from agentrecall._internal.sqlite import Database
from agentrecall.stores.contentkeys import content_hash, content_key
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.stores.sqlite import imports as imports_module
from agentrecall.stores.sqlite import store as store_module
from agentrecall.stores.sqlite import writes as writes_module
from agentrecall.types import JsonObject, MemoryRecord


def colliding_key(content: str) -> int:
    """A dedup key with three values: most pairs of different texts collide."""
    return len(content.strip()) % 3


@pytest.fixture
def collide(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], int]]:
    # Both the store's writes and the SQL function its migrations call compute keys.
    monkeypatch.setattr(writes_module, "content_key", colliding_key)
    monkeypatch.setattr(imports_module, "content_key", colliding_key)
    monkeypatch.setattr(store_module, "content_key", colliding_key)
    yield colliding_key


def stored(path: Path) -> list[tuple[int, str, object]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute(
            "SELECT scope, content, content_hash FROM memories ORDER BY seq"
        ).fetchall()


def check_file(path: Path) -> None:
    """No two memories of a scope are strip-equal; the indexes agree with the table."""
    rows = stored(path)
    keys = [(scope, content.strip()) for scope, content, _ in rows]
    assert len(keys) == len(set(keys))
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        check_full_text_index(db)


async def test_colliding_contents_are_all_kept_and_each_still_dedups(
    tmp_path: Path, collide: Callable[[str], int]
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    texts = ["abc", "def", "ghi", "a", "bcdef"]  # lengths 3, 3, 3, 1, 5: keys 0, 0, 0, 1, 2
    ids = [(await store.add(text)).id for text in texts]
    assert len(set(ids)) == len(texts)
    assert [(await store.add(f"  {text} ")).id for text in texts] == ids
    assert [r.content for r in await store.list()] == texts
    keys = [key for _, _, key in stored(tmp_path / "m.db")]
    # The first holder of each integer keeps it; later colliding texts keep their digests.
    assert keys == [0, content_hash("def"), content_hash("ghi"), 1, 2]
    assert [h.id for h in await store.search("def")] == [ids[1]]
    await store.aclose()
    check_file(tmp_path / "m.db")


async def test_a_freed_key_does_not_let_a_collided_content_in_twice(
    tmp_path: Path, collide: Callable[[str], int]
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    first = (await store.add("abc")).id
    second = (await store.add("xyz")).id  # collides with "abc", kept under its digest
    await store.delete(first)  # the integer key is free again
    assert (await store.add("xyz")).id == second
    assert (await store.add_many([("xyz", None), ("abc", None)]))[0].id == second
    renamed = await store.add("mno")
    assert renamed.id not in (first, second)
    with pytest.raises(InvalidArgumentError, match="already has that content"):
        await store.update(renamed.id, content=" xyz")
    updated = await store.update(second, content="pqr")  # frees the digest, keeps the id
    assert updated is not None and updated.content == "pqr"
    assert (await store.add("xyz")).id not in (first, second, renamed.id)
    await store.aclose()
    check_file(tmp_path / "m.db")


async def test_an_update_to_its_own_text_or_metadata_keeps_its_key(
    tmp_path: Path, collide: Callable[[str], int]
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    await store.add("abc")
    memory = await store.add("xyz")
    before = stored(tmp_path / "m.db")
    await store.update(memory.id, content=" xyz ")
    await store.update(memory.id, metadata={"k": 1})
    after = stored(tmp_path / "m.db")
    assert [row[2] for row in after] == [row[2] for row in before]
    assert [row[1] for row in after] == ["abc", " xyz "]
    await store.aclose()


async def test_large_batches_and_imports_settle_collisions_and_duplicates(
    tmp_path: Path, collide: Callable[[str], int]
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    texts = [f"fact {i % 7_000}" for i in range(12_000)]  # 5,000 repeats, keys collide
    results = await store.add_many([(text, None) for text in texts])
    by_text: dict[str, str] = {}
    for text, result in zip(texts, results, strict=True):
        assert by_text.setdefault(text, result.id) == result.id
    assert len(by_text) == 7_000 == await store.count()
    assert [h.content for h in await store.search("6999")] == ["fact 6999"]

    view = store.scope(user_id="ana")
    records = [
        MemoryRecord(id=f"r{i}", content=f"note {i % 900}", created_at="2025-01-01T00:00:00.000Z")
        for i in range(6_000)
    ]
    records.append(
        MemoryRecord(
            id=results[0].id, content="an id already taken", created_at="2025-01-01T00:00:00.000Z"
        )
    )
    assert await view.import_records(records) == 900
    assert await view.import_records(records) == 0
    assert await view.count() == 900
    await store.aclose()
    check_file(tmp_path / "m.db")


operations = st.lists(
    st.tuples(
        st.sampled_from(["add", "add_many", "update", "delete", "import"]),
        st.sampled_from(["a", "b", "cc", "dd", "eee", " a", "b ", "ff", "ggg"]),
        st.integers(min_value=0, max_value=5),
    ),
    max_size=25,
)


Model = dict[str, str]
"""What the store should hold: stripped text -> id of the memory holding it."""


async def apply(store: SQLiteStore, model: Model, step: tuple[str, str, int], number: int) -> Model:
    """Run one write on the store, check its answer against ``model``; return the new model."""
    operation, text, pick = step
    ids = list(model.values())
    if operation == "add":
        memory_id = (await store.add(text)).id
        assert model.get(text.strip()) in (None, memory_id)
        return {**model, text.strip(): memory_id}
    if operation == "add_many":
        batch = [text, text.upper(), text]
        results = await store.add_many([(item, None) for item in batch])
        for item, result in zip(batch, results, strict=True):
            assert model.get(item.strip()) in (None, result.id)
            model = {**model, item.strip(): result.id}
        return model
    if operation == "import":
        record = MemoryRecord(id=f"i{number}", content=text, created_at="2025-01-01T00:00:00.000Z")
        assert await store.import_records([record]) == (0 if text.strip() in model else 1)
        return {text.strip(): record.id, **model}
    if not ids:
        return model
    target = ids[pick % len(ids)]
    if operation == "delete":
        assert await store.delete(target)
        return {k: v for k, v in model.items() if v != target}
    if model.get(text.strip()) not in (None, target):
        with pytest.raises(InvalidArgumentError):
            await store.update(target, content=text)
        return model
    await store.update(target, content=text)
    return {**{k: v for k, v in model.items() if v != target}, text.strip(): target}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=operations)
def test_dedup_matches_a_model_whatever_the_order_of_writes(
    steps: list[tuple[str, str, int]],
) -> None:
    # The store must behave as if it compared stripped texts directly.
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(writes_module, "content_key", colliding_key)
        patch.setattr(imports_module, "content_key", colliding_key)
        patch.setattr(store_module, "content_key", colliding_key)
        path = Path(tmp) / "m.db"

        async def scenario() -> None:
            store = SQLiteStore(path)
            await store.setup()
            model: Model = {}
            for number, step in enumerate(steps):
                model = await apply(store, model, step, number)
                assert {r.content.strip(): r.id for r in await store.list()} == model
            await store.aclose()

        asyncio.run(scenario())
        check_file(path)


async def test_upgrade_gives_integer_keys_and_digests_to_colliding_memories(
    tmp_path: Path, collide: Callable[[str], int]
) -> None:
    path = tmp_path / "m.db"
    texts = ["abc", "xyz", "hello", " abc"]  # "abc" is in two scopes

    def schema_6(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO memory_scopes (user_id) VALUES ('ana')")
        for seq, text in enumerate(texts, 1):
            db.execute(
                "INSERT INTO memories (seq, id, scope, content, content_hash, created_at) "
                "VALUES (?, ?, ?, ?, ?, '2025-01-01T00:00:00.000Z')",
                (seq, f"m{seq}", 1 if seq == 4 else 0, text, content_hash(text)),
            )
        db.execute(
            "INSERT INTO memories_fts (rowid, content, scope) SELECT seq, content, scope "
            "FROM memories"
        )

    old_database(path, 6, schema_6)

    store = SQLiteStore(path)
    assert (await store.add("xyz")).id == "m2"
    assert (await store.add("hello ")).id == "m3"
    assert (await store.scope(user_id="ana").add("abc")).id == "m4"
    assert [key for _, _, key in stored(path)] == [0, content_hash("xyz"), 2, 0]
    await store.aclose()
    check_file(path)


async def test_a_batch_retried_after_a_busy_database_returns_one_result_per_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    attempt = Database._attempt
    failures = [sqlite3.OperationalError("database is locked")]

    def busy_once(self: Database, db: sqlite3.Connection, operation: Any, **kw: Any) -> Any:
        def then_busy(db: sqlite3.Connection) -> Any:
            result = operation(db)  # the rows were built and inserted, then the lock is lost
            if failures:
                raise failures.pop()
            return result

        return attempt(self, db, then_busy, **kw)

    monkeypatch.setattr(Database, "_attempt", busy_once)
    items: list[tuple[str, JsonObject | None]] = [(f"fact {i}", None) for i in range(12_000)]
    results = await store.add_many(items)
    assert not failures
    assert len(results) == 12_000 == await store.count()
    assert [r.id for r in await store.list()] == [r.id for r in results]
    await store.aclose()


@pytest.mark.parametrize("text", ["hello", "  padded\n", "Grüße, 東京", "x" * 5_000])
def test_the_integer_key_is_the_signed_64_bit_blake2b_of_the_stripped_text(text: str) -> None:
    # Keys are stored in files: any other function would make old files' keys wrong.
    digest = hashlib.blake2b(text.strip().encode("utf-8"), digest_size=8).digest()
    assert content_key(text) == int.from_bytes(digest, "big", signed=True)


async def test_an_add_that_dedups_makes_the_copy_live_at_least_as_long_as_it_asked(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    ana = store.scope(user_id="ana")

    async def expiry(memory_id: str) -> str | None:
        record = await store.get(memory_id)
        assert record is not None
        return record.expires_at

    brief = await ana.add("Ana is vegetarian", ttl=60)
    other = await store.add("Ana is vegetarian", ttl=60)  # another scope: left alone
    assert (await ana.add(" Ana is vegetarian ")).id == brief.id
    assert await expiry(brief.id) is None and await expiry(other.id) is not None
    dated = await ana.add("Ana flies on 2100-05-03", expires_at="2100-01-01")
    assert (await ana.add("Ana flies on 2100-05-03", expires_at="2200-01-01")).id == dated.id
    assert await expiry(dated.id) == "2200-01-01T00:00:00.000Z"
    assert (await ana.add("Ana flies on 2100-05-03", ttl=60)).id == dated.id
    assert await expiry(dated.id) == "2200-01-01T00:00:00.000Z"
    kept = await ana.add("Ana lives in Lisbon")
    batch = await ana.add_many([("new one", None), ("Ana lives in Lisbon", None)], ttl=60)
    assert batch[1].id == kept.id and await expiry(kept.id) is None
    soon = await ana.add("Ana has a cat", ttl=60)
    assert [r.id for r in await ana.add_many([("Ana has a cat", None)])] == [soon.id]
    assert await expiry(soon.id) is None
    assert (await ana.get(soon.id)) == (await store.get(soon.id))
    await store.aclose()
