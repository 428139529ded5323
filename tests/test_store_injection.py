"""SQL injection through contents, metadata keys, filter values and scope ids is inert.

The same cases run on every SQL backend: each hostile string is stored and read back verbatim,
finds exactly what it should, and leaves the tables whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hostile import HOSTILE_KEYS, HOSTILE_TEXTS

from agentrecall import PostgresStore, SQLiteStore

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "sqlite":
        made: Any = SQLiteStore(tmp_path / "memory.db")
    else:
        made = PostgresStore(request.getfixturevalue("postgres_dsn"))
    yield made
    await made.aclose()


@pytest.mark.asyncio
async def test_hostile_contents_are_stored_verbatim_and_found(store: Any) -> None:
    ids = [(await store.add(f"note {text} marker{n}")).id for n, text in enumerate(HOSTILE_TEXTS)]
    await store.add("An innocent bystander")
    assert await store.count() == len(HOSTILE_TEXTS) + 1
    for n, text in enumerate(HOSTILE_TEXTS):
        assert (await store.get(ids[n])).content == f"note {text} marker{n}"
        assert [hit.id for hit in await store.search(f"marker{n}")] == [ids[n]]
        await store.search(text)  # a hostile query is only words
    assert [record.content for record in await store.list()][-1] == "An innocent bystander"


@pytest.mark.asyncio
@pytest.mark.parametrize("key", HOSTILE_KEYS)
async def test_hostile_metadata_keys_address_their_own_key(store: Any, key: str) -> None:
    hit = await store.add("Tagged note", {key: "hit"})
    await store.add("Nested note", {"a": {"b": "hit"}})
    await store.add("Plain note", {"a": "hit"})
    await store.add("Bare note")
    assert [r.id for r in await store.list(filter={key: "hit"})] == [hit.id]
    assert await store.count(filter={key: {"$exists": False}}) == 3
    assert [h.id for h in await store.search("note", filter={key: {"$in": ["hit"]}})] == [hit.id]
    assert (await store.get(hit.id)).metadata == {key: "hit"}
    assert await store.count() == 4


@pytest.mark.asyncio
@pytest.mark.parametrize("value", HOSTILE_TEXTS)
async def test_hostile_filter_values_are_compared_not_run(store: Any, value: str) -> None:
    match = await store.add("Valued note", {"k": value})
    await store.add("Other note", {"k": "plain"})
    for filter in ({"k": value}, {"k": {"$in": [value, "x"]}}, {"k": {"$gte": value}}):
        assert match.id in [r.id for r in await store.list(filter=filter)], filter
    assert [r.id for r in await store.list(filter={"k": {"$ne": value}})] != [match.id]
    assert await store.count(filter={"k": {"$nin": [value]}}) == 1
    assert await store.count() == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("scope_id", HOSTILE_TEXTS)
async def test_hostile_scope_ids_are_their_own_scope(store: Any, scope_id: str) -> None:
    view = store.scope(user_id=scope_id, session_id=scope_id)
    memory = await view.add("Scoped hostile note")
    await store.scope(user_id="someone").add("Scoped hostile note")
    assert [hit.id for hit in await view.search("hostile")] == [memory.id]
    record = await store.get(memory.id)
    assert (record.user_id, record.session_id) == (scope_id, scope_id)
    assert await view.clear() == 1
    assert await store.count() == 1
