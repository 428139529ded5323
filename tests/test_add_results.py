"""Every store's ``add`` and ``add_many`` say whether each memory was new (``created``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentrecall import AddResult, JsonFileStore, PostgresStore, SQLiteStore


@pytest.fixture(params=["json", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    makers: dict[str, Callable[[], Any]] = {
        "json": lambda: JsonFileStore(name="m", path=tmp_path / "m.json"),
        "sqlite": lambda: SQLiteStore(tmp_path / "m.db"),
        "postgres": lambda: PostgresStore(request.getfixturevalue("postgres_dsn")),
    }
    made = makers[request.param]()
    yield made
    aclose = getattr(made, "aclose", None)
    if aclose is not None:
        await aclose()


async def test_add_says_whether_the_memory_is_new(store: Any) -> None:
    first = await store.add("Ana likes tea.")
    again = await store.add("  Ana likes tea. ")
    assert (first.created, again.created) == (True, False)
    assert again.id == first.id
    assert again == AddResult(id=first.id)  # created is not compared


async def test_add_many_says_it_per_item_and_within_the_batch(store: Any) -> None:
    old = await store.add("Ana has a cat.")
    items = [("Ana rides a bike.", None), ("Ana has a cat.", None), ("Ana rides a bike.", None)]
    bike, cat, bike_again = await store.add_many(items)
    assert (bike.created, cat.created, bike_again.created) == (True, False, False)
    assert (cat.id, bike_again.id) == (old.id, bike.id)
    fresh = await store.add_many([("Ana is from Porto.", None), ("Ana sings.", None)])
    assert [result.created for result in fresh] == [True, True]
