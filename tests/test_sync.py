"""SyncStore: blocking calls over one owned event loop."""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from agentrecall import (
    AgentRecallError,
    InvalidArgumentError,
    JsonFileStore,
    SQLiteStore,
    StoreClosedError,
    SyncStore,
)
from agentrecall.stores.base import Capability
from agentrecall.stores.times import stored_time
from agentrecall.testing import ManualClock
from agentrecall.types import AddResult, MemoryEntry, MemoryRecord

STORES = [SQLiteStore, JsonFileStore]
FAR = "2999-01-01T00:00:00.000Z"


def _public_methods(cls: type) -> dict[str, Any]:
    """Return the public methods of ``cls``, inherited ones too (the nearest definition)."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[:-1]):
        found.update(
            (name, member)
            for name, member in vars(klass).items()
            if not name.startswith("_") and inspect.isfunction(member)
        )
    return found


def _twin_name(name: str) -> str:
    return "close" if name == "aclose" else name


def _extra_keywords(store_class: type) -> dict[str, list[str]]:
    """Check every public method of ``store_class`` against its twin; return the extras."""
    extras = {}
    for name, method in _public_methods(store_class).items():
        twin = getattr(SyncStore, _twin_name(name), None)
        assert twin is not None, f"SyncStore has no twin of {store_class.__name__}.{name}"
        assert not inspect.iscoroutinefunction(twin), name
        wanted = list(inspect.signature(method).parameters.values())[1:]
        given = list(inspect.signature(twin).parameters.values())[1:]
        names = {parameter.name for parameter in wanted}
        shared = [(p.name, p.kind, p.default) for p in given if p.name in names]
        assert shared == [(p.name, p.kind, p.default) for p in wanted], name
        added = [p for p in given if p.name not in names]
        # What the store lacks is optional and keyword-only, so its own calls all work.
        assert all(p.kind is p.KEYWORD_ONLY and p.default is None for p in added), name
        if added:
            extras[name] = [p.name for p in added]
    return extras


def test_every_public_store_method_has_a_blocking_twin_with_its_parameters() -> None:
    assert _extra_keywords(SQLiteStore) == {"search": ["max_search_results"]}
    # JsonFileStore lacks some capabilities: its twins have those keywords on top.
    assert "filter" in _extra_keywords(JsonFileStore)["search"]
    covered = {_twin_name(name) for cls in STORES for name in _public_methods(cls)}
    assert set(_public_methods(SyncStore)) == covered


def test_an_sqlite_store_is_fully_usable_synchronously(tmp_path: Path) -> None:
    with SyncStore(SQLiteStore(tmp_path / "m.db")) as memory:
        memory.setup()
        memory.initialize()
        tea = memory.add("User likes green tea", {"kind": "drink"}, ttl=3600)
        dated = memory.add("User likes black coffee", {"kind": "drink"}, expires_at=FAR)
        [walk] = memory.add_many([("User walks the dog daily", {"kind": "habit"})], ttl=60)
        assert memory.get(tea.id).expires_at is not None  # type: ignore[union-attr]
        assert memory.get(dated.id).expires_at == FAR  # type: ignore[union-attr]
        drinks = {"kind": "drink"}
        assert {h.id for h in memory.search("likes", filter=drinks)} == {tea.id, dated.id}
        assert memory.search("dog", filter=drinks) == []
        assert memory.search("dog", created_after=FAR) == []
        assert memory.search("dog", created_before=FAR)[0].id == walk.id
        assert [r.id for r in memory.list(filter={"kind": "habit"})] == [walk.id]
        assert memory.count(filter=drinks) == 2 and memory.count(created_after=FAR) == 0
        updated = memory.update(tea.id, content="User likes jasmine tea", reason="corrected")
        assert updated is not None and updated.content == "User likes jasmine tea"
        assert memory.delete(dated.id, reason="stale") is True
        assert [(v.change, v.reason) for v in memory.history(tea.id)] == [("update", "corrected")]
        assert [(v.change, v.reason) for v in memory.history(dated.id)] == [("delete", "stale")]
        assert memory.delete_many([walk.id, "missing"], reason="done") == 1
        record = MemoryRecord("kept-id", "Imported fact", "2024-05-01T12:00:00.000Z")
        assert memory.import_records([record]) == 1
        assert memory.get("kept-id") == record
        assert memory.clear() == 2 and memory.count() == 0


def test_facts_that_change_are_handled_synchronously(tmp_path: Path) -> None:
    with ManualClock() as clock, SyncStore(SQLiteStore(tmp_path / "m.db")) as memory:
        lyon = memory.add("User lives in Lyon", valid_from="2019-01-01")
        clock.advance(1)
        then = stored_time(clock.now())
        clock.advance(1)
        berlin = memory.supersede(
            [lyon.id], "User lives in Berlin", valid_from="2025-03-01", reason="moved"
        )
        assert berlin.created is True
        again = memory.supersede([lyon.id], "User lives in Berlin", valid_from="2025-03-01")
        assert (again.id, again.created) == (berlin.id, False)
        assert [h.id for h in memory.search("lives")] == [berlin.id]
        assert [h.id for h in memory.search("lives", as_of=then)] == [lyon.id]
        assert [h.id for h in memory.search("lives", valid_at="2024-01-01")] == []
        found = memory.search("lives", include_superseded=True)
        assert {h.id for h in found} == {lyon.id, berlin.id}
        assert memory.get(lyon.id) is None
        retired = memory.get(lyon.id, include_superseded=True)
        assert retired is not None and retired.superseded_by == berlin.id
        assert retired.valid_until == "2025-03-01T00:00:00.000Z"
        held = memory.get(lyon.id, as_of=then)
        assert held is not None and held.content == "User lives in Lyon"
        assert [r.id for r in memory.list(as_of=then)] == [lyon.id]
        assert [r.id for r in memory.list(include_superseded=True)] == [lyon.id, berlin.id]
        assert memory.count(valid_at="2026-01-01") == 1 and memory.count(as_of=then) == 1
        assert [(v.change, v.reason) for v in memory.history(berlin.id)] == [("supersede", "moved")]


def test_scope_views_share_the_loop_and_close_with_the_facade(tmp_path: Path) -> None:
    with SyncStore(SQLiteStore(tmp_path / "m.db")) as memory:
        alice = memory.scope(user_id="alice")
        assert isinstance(alice, SyncStore) and alice.store.name == "memory[user=alice]"
        alice.add("Alice likes tea")
        memory.scope(user_id="bob", name="bob").add("Bob likes tea")
        assert [h.content for h in alice.search("tea")] == ["Alice likes tea"]
        assert memory.count() == 2 and alice.count() == 1 and alice.clear() == 1
        assert (tmp_path / "m.db-wal").exists()
    # Only the views ran calls; closing the facade still closed the store they share.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.db"]


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
    with pytest.raises(StoreClosedError, match="store 's' is closed"):
        memory.add("two")  # a closed facade is not brought back to life behind its owner
    memory.close()


async def test_refuses_to_run_inside_a_running_loop(tmp_path: Path) -> None:
    memory = SyncStore(JsonFileStore(name="s", path=tmp_path / "s.json"))
    with pytest.raises(AgentRecallError, match="running event loop"):
        memory.add("fact")
    memory.close()  # nothing ran, so there is nothing to close and no second refusal
    assert not (tmp_path / "s.json").exists()


def test_closing_closes_an_sqlite_store_and_ends_both(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteStore(path)
    with SyncStore(store) as memory:
        first = memory.add("User prefers tea")
        view = memory.scope(user_id="ana")
        assert (tmp_path / "memory.db-wal").exists()
    # The last connection to close checkpoints the WAL and removes it and its index.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    for call in (lambda: memory.add("User plays the violin"), lambda: view.count()):
        with pytest.raises(StoreClosedError, match="store 'memory"):
            call()
    with SyncStore(store) as again, pytest.raises(StoreClosedError):
        again.list()  # the store itself was closed with its facade
    memory.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    with SyncStore(SQLiteStore(path)) as fresh:
        assert [r.id for r in fresh.list()] == [first.id]


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
    with memory, pytest.raises(StoreClosedError):
        memory.search("again")
    assert store.closed == 1


class LoopRecorder(SearchOnly):
    """A store whose scope views record the event loop each of their calls ran on."""

    capabilities = frozenset({Capability.SCOPE})

    def __init__(self, loops: list[asyncio.AbstractEventLoop]) -> None:
        self.loops = loops

    async def search(self, query: str, options: object = None) -> list[MemoryEntry]:
        self.loops.append(asyncio.get_running_loop())
        return []

    def scope(self, **ids: str | None) -> LoopRecorder:
        return LoopRecorder(self.loops)


def test_scope_views_run_on_the_facade_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    with SyncStore(LoopRecorder(loops)) as memory:
        memory.search("a")
        memory.scope(user_id="u").search("b")
        memory.scope(session_id="s").scope(agent_id="x").search("c")
    assert len(loops) == 3 and len(set(map(id, loops))) == 1


def test_unsupported_keywords_and_methods_are_refused_clearly(tmp_path: Path) -> None:
    with SyncStore(JsonFileStore(name="notes", path=tmp_path / "n.json")) as memory:
        memory.setup()
        memory.initialize()  # a store without them needs no preparation
        with pytest.raises(InvalidArgumentError, match=r"'notes'.*filter.*Capability\.FILTER"):
            memory.search("tea", filter={"kind": "drink"})
        with pytest.raises(InvalidArgumentError, match=r"ttl.*Capability\.EXPIRY"):
            memory.add("User likes tea", ttl=60)
        with pytest.raises(InvalidArgumentError, match=r"reason.*Capability\.HISTORY"):
            memory.delete("x", reason="stale")
        unsupported = (
            lambda: memory.update("x", content="y"),
            lambda: memory.history("x"),
            memory.scope,
        )
        for call in unsupported:
            with pytest.raises(InvalidArgumentError, match="'notes'.*does not support"):
                call()
        # Facts that change name the stores that keep them.
        changes: list[tuple[str, Any]] = [
            ("supersede", lambda: memory.supersede(["x"], "y")),
            ("as_of", lambda: memory.search("tea", as_of="2025-01-01")),
            ("valid_at", lambda: memory.list(valid_at="2025-01-01")),
            ("include_superseded", lambda: memory.count(include_superseded=True)),
            ("as_of", lambda: memory.get("x", as_of="2025-01-01")),
            ("valid_from", lambda: memory.add("User likes tea", valid_from="2025-01-01")),
        ]
        for name, call in changes:
            with pytest.raises(
                InvalidArgumentError,
                match=rf"'notes' \(JsonFileStore\) does not support {name} \(it does not "
                r"declare Capability\.SUPERSEDE; SQLiteStore and PostgresStore do\)$",
            ):
                call()
        assert memory.count() == 0  # nothing was written
        assert not (tmp_path / "n.json").exists()


def test_search_takes_options_or_the_keyword_but_not_both(tmp_path: Path) -> None:
    with SyncStore(JsonFileStore(name="s", path=tmp_path / "s.json")) as memory:
        memory.add_many([("tea one", None), ("tea two", None), ("tea three", None)])
        assert len(memory.search("tea", {"max_search_results": 2})) == 2
        assert len(memory.search("tea", max_search_results=1)) == 1
        with pytest.raises(InvalidArgumentError, match="both as a keyword and in options"):
            memory.search("tea", {"max_search_results": 2}, max_search_results=1)
        with pytest.raises(InvalidArgumentError, match="options must be a mapping"):
            memory.search("tea", 2)  # type: ignore[arg-type]


def test_history_is_copied_page_by_page_synchronously(tmp_path: Path) -> None:
    with SyncStore(SQLiteStore(tmp_path / "a.db")) as source:
        kept = source.add("User likes tea")
        source.update(kept.id, content="User likes green tea")
        gone = source.add("User owns a bike")
        source.delete(gone.id, reason="sold it")
        pages = list(source.versions(batch=1))
    assert [len(page) for page in pages] == [1, 1]
    with SyncStore(SQLiteStore(tmp_path / "b.db")) as copy:
        assert copy.import_versions([v for page in pages for v in page]) == 2
        assert [v.change for v in copy.history(gone.id)] == ["delete"]
        assert list(copy.versions()) == [[v for page in pages for v in page]]


def test_a_forked_child_gets_a_loop_of_its_own(tmp_path: Path) -> None:
    with SyncStore(JsonFileStore(name="fork", path=tmp_path / "m.json")) as memory:
        memory.add("User likes tea")
        busy, release = threading.Event(), threading.Event()

        async def hold() -> None:
            busy.set()
            while not release.is_set():
                await asyncio.sleep(0.01)

        # Another thread is inside the facade's loop when the process forks.
        holder = threading.Thread(target=memory._runner.run, args=(hold(),))
        holder.start()
        assert busy.wait(60)
        pid = os.fork()
        if pid == 0:  # the child
            try:
                code = 0 if memory.search("tea")[0].content == "User likes tea" else 1
            except BaseException:
                code = 2
            os._exit(code)
        release.set()
        holder.join(5)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


def test_threads_sharing_a_facade_and_its_views_take_turns(tmp_path: Path) -> None:
    sync = SyncStore(SQLiteStore(tmp_path / "memory.db"))
    ana = sync.scope(user_id="ana")
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(worker: int) -> None:
        try:
            start.wait()
            for i in range(15):
                (ana if i % 2 else sync).add(f"thread {worker} memory {i}")
                sync.count()
                ana.search("memory")
        except BaseException as error:  # handed to the main thread's assertion
            errors.append(error)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (sync.count(), ana.count()) == (60, 28)
    sync.close()
