"""SyncStore: blocking calls over one owned event loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrecall import (
    AgentRecallError,
    InvalidArgumentError,
    JsonFileStore,
    SQLiteStore,
    SyncStore,
)
from agentrecall.types import AddResult, MemoryEntry


def test_every_operation_blocks_and_returns(tmp_path: Path) -> None:
    with SyncStore(JsonFileStore(name="s", path=tmp_path / "s.json")) as memory:
        added = memory.add("User prefers tea", {"k": 1})
        assert memory.add_many([("User prefers green tea", None)])[0].id != added.id
        assert [h.content for h in memory.search("tea", max_search_results=1)] == [
            "User prefers green tea"
        ]
        assert memory.get(added.id).content == "User prefers tea"  # type: ignore[union-attr]
        assert memory.count() == 2 and len(memory.list(limit=1)) == 1
        assert memory.delete(added.id) is True


def test_one_loop_serves_every_call(tmp_path: Path) -> None:
    memory = SyncStore(JsonFileStore(name="s", path=tmp_path / "s.json"))
    memory.add("one")
    loop = memory._runner._loop
    memory.search("one")
    assert memory._runner._loop is loop
    memory.close()
    memory.add("two")  # a closed facade starts a new loop rather than failing
    memory.close()


async def test_refuses_to_run_inside_a_running_loop(tmp_path: Path) -> None:
    memory = SyncStore(JsonFileStore(name="s", path=tmp_path / "s.json"))
    with pytest.raises(AgentRecallError, match="running event loop"):
        memory.add("fact")
    memory.close()  # nothing ran, so there is nothing to close and no second refusal
    assert not (tmp_path / "s.json").exists()


def test_closing_closes_an_sqlite_store_and_both_stay_usable(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    with SyncStore(store) as memory:
        first = memory.add("User prefers tea")
        assert (tmp_path / "memory.db-wal").exists()
    # The last connection to close checkpoints the WAL and removes it and its index.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    with SyncStore(store) as memory:
        assert [r.id for r in memory.list()] == [first.id]
        memory.add("User lives in Lisbon")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    memory.add("User plays the violin")  # a closed facade reopens the store on the next call
    memory.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    with SyncStore(SQLiteStore(path)) as fresh:
        assert fresh.count() == 3


class SearchOnly:
    name = "search-only"
    description = None
    max_search_results = None
    writable = False
    extraction = None

    async def search(self, query: str, options: object = None) -> list[MemoryEntry]:
        return [MemoryEntry(content=query)]

    async def add(self, content: str, metadata: object = None) -> AddResult:
        raise NotImplementedError


def test_undeclared_capabilities_are_refused_clearly() -> None:
    with SyncStore(SearchOnly()) as memory:
        assert memory.search("hello")[0].content == "hello"
        with pytest.raises(InvalidArgumentError, match="search-only.*does not support get"):
            memory.get("x")


class Closable(SearchOnly):
    def __init__(self) -> None:
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_the_store_is_closed_once_per_use() -> None:
    store = Closable()
    SyncStore(store).close()
    assert store.closed == 0  # a facade that ran nothing leaves the store alone
    memory = SyncStore(store)
    memory.search("hello")
    memory.close()
    memory.close()
    assert store.closed == 1
    with memory:
        memory.search("again")
    assert store.closed == 2
