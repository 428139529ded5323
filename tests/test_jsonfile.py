"""JsonFileStore behaviour beyond the reference: the extra operations and guarantees."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest

from agentrecall import (
    Capability,
    InvalidArgumentError,
    JsonFileStore,
    MemoryRecord,
    MemoryStore,
    SyncStore,
)
from agentrecall import TestMemoryStore as ExportedAlias


@pytest.fixture
def store(tmp_path: Path) -> JsonFileStore:
    return JsonFileStore(name="notes", path=tmp_path / "notes.json")


def test_satisfies_the_store_contract(store: JsonFileStore) -> None:
    assert isinstance(store, MemoryStore)
    assert ExportedAlias is JsonFileStore
    assert store.capabilities == {
        Capability.GET,
        Capability.DELETE,
        Capability.LIST,
        Capability.COUNT,
        Capability.ADD_MANY,
        Capability.CLEAR,
        Capability.IMPORT,
    }
    assert (store.name, store.description, store.max_search_results) == ("notes", None, None)
    assert store.writable is True and store.extraction is None


def test_construction_does_no_io(tmp_path: Path, agentrecall_home: Path) -> None:
    JsonFileStore(name="a", path=tmp_path / "x" / "y.json")
    JsonFileStore(name="b")
    assert list(tmp_path.iterdir()) == []
    assert list(agentrecall_home.iterdir()) == []


def test_path_is_absolute_and_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert JsonFileStore(name="r", path="rel.json").path == str(tmp_path / "rel.json")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert JsonFileStore(name="h", path="~/m.json").path == str(tmp_path / "m.json")


def test_default_file_lives_under_agentrecall_home(agentrecall_home: Path) -> None:
    assert JsonFileStore(name="notes").path == str(agentrecall_home / "memory" / "notes.json")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"max_search_results": 2.5}, "max_search_results"),
        ({"max_search_results": True}, "max_search_results"),
        ({"writable": "yes"}, "writable"),
        ({"persist": 1}, "persist"),
        ({"name": 7}, "name"),
    ],
)
def test_constructor_type_checks(kwargs: dict[str, object], argument: str) -> None:
    with pytest.raises(InvalidArgumentError, match=argument):
        JsonFileStore(**{"name": "n", **kwargs})  # type: ignore[arg-type]


async def test_get_delete_list_count(store: JsonFileStore) -> None:
    first = await store.add("User likes green tea", {"source": "chat"})
    second = await store.add("User dislikes coffee")
    assert await store.count() == 2
    record = await store.get(first.id)
    assert isinstance(record, MemoryRecord)
    assert (record.id, record.content, record.metadata) == (
        first.id,
        "User likes green tea",
        {"source": "chat"},
    )
    assert record.created_at.endswith("Z") and len(record.created_at) == 24
    assert await store.get("missing") is None
    assert [r.id for r in await store.list()] == [first.id, second.id]
    assert [r.id for r in await store.list(offset=1)] == [second.id]
    assert [r.id for r in await store.list(limit=1)] == [first.id]
    assert await store.delete(first.id) is True
    assert await store.delete(first.id) is False
    assert await store.get(first.id) is None
    assert [h.content for h in await store.search("user")] == ["User dislikes coffee"]
    assert await store.count() == 1


async def test_deleted_content_can_be_added_again(store: JsonFileStore) -> None:
    first = await store.add("fact one")
    await store.delete(first.id)
    again = await store.add("fact one")
    assert again.id != first.id and await store.count() == 1


async def test_search_hits_carry_ids(store: JsonFileStore) -> None:
    added = await store.add("the sky is blue")
    assert [h.id for h in await store.search("sky")] == [added.id]


async def test_returned_records_are_copies(store: JsonFileStore) -> None:
    added = await store.add("fact", {"tags": ["a"]})
    record = await store.get(added.id)
    assert record is not None and record.metadata is not None
    record.metadata["tags"].append("b")
    assert (await store.get(added.id)).metadata == {"tags": ["a"]}  # type: ignore[union-attr]


async def test_add_keeps_a_copy_of_the_metadata(store: JsonFileStore) -> None:
    metadata = {"tags": ["a"]}
    added = await store.add("fact", metadata)
    metadata["tags"].append("b")
    assert (await store.get(added.id)).metadata == {"tags": ["a"]}  # type: ignore[union-attr]


async def test_add_many_is_one_batch_in_order(store: JsonFileStore) -> None:
    existing = await store.add("alpha")
    results = await store.add_many(
        [("beta", None), ("alpha", None), ("gamma", {"n": 1}), (" beta ", None)]
    )
    ids = [r.id for r in results]
    assert ids[1] == existing.id and ids[3] == ids[0] and len(set(ids)) == 3
    assert [r.content for r in await store.list()] == ["alpha", "beta", "gamma"]
    assert await store.add_many([]) == []


@pytest.mark.parametrize(
    ("metadata", "fact"),
    [
        ("a string", "JSON object"),
        (["a", "list"], "JSON object"),
        ({1: "int key"}, "key 1"),
        ({"s": {1, 2}}, "set"),
        ({"t": (1, 2)}, "tuple"),
        ({"nan": float("nan")}, "NaN"),
        ({"deep": [{"inf": float("inf")}]}, "infinity"),
        ({"b": b"bytes"}, "bytes"),
    ],
)
async def test_metadata_must_be_a_json_object(
    store: JsonFileStore, metadata: object, fact: str
) -> None:
    with pytest.raises(InvalidArgumentError, match="metadata") as raised:
        await store.add("fact", metadata)  # type: ignore[arg-type]
    assert fact in str(raised.value)
    assert not Path(store.path or "").exists()


async def test_a_bad_item_in_a_batch_stores_nothing(store: JsonFileStore) -> None:
    with pytest.raises(InvalidArgumentError, match=r"item 1"):
        await store.add_many([("good", None), ("", None)])
    assert await store.count() == 0


async def test_read_only_store_refuses_delete(tmp_path: Path) -> None:
    path = tmp_path / "ro.json"
    await JsonFileStore(name="w", path=path).add("fact")
    read_only = JsonFileStore(name="ro", path=path, writable=False)
    with pytest.raises(InvalidArgumentError, match="read-only"):
        await read_only.delete("anything")
    assert len(await read_only.search("fact")) == 1


@pytest.mark.parametrize("query", [None, 3, b"bytes"])
async def test_non_string_queries_are_refused(store: JsonFileStore, query: object) -> None:
    with pytest.raises(InvalidArgumentError, match="query"):
        await store.search(query)  # type: ignore[arg-type]


async def test_list_arguments_are_checked(store: JsonFileStore) -> None:
    with pytest.raises(InvalidArgumentError, match="offset"):
        await store.list(offset=-1)
    with pytest.raises(InvalidArgumentError, match="limit"):
        await store.list(limit=0)


async def test_unchanged_file_is_served_from_the_cache(store: JsonFileStore) -> None:
    await store.add("original words here")
    assert len(await store.search("original")) == 1
    path = Path(store.path or "")
    before = path.stat()
    # Same length, same inode, same mtime: the store has no reason to read it again.
    data = path.read_bytes().replace(b"original", b"replaced")
    with open(path, "r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [h.content for h in await store.search("original")] == ["original words here"]


async def test_another_writers_change_is_seen_by_the_next_call(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    mine, theirs = JsonFileStore(name="a", path=path), JsonFileStore(name="b", path=path)
    await mine.add("first fact")
    assert len(await mine.search("fact")) == 1
    await theirs.add("second fact")
    assert len(await mine.search("fact")) == 2
    path.write_text(json.dumps([{"id": "x", "content": "hand edit", "createdAt": "z"}]))
    assert [h.content for h in await mine.search("hand fact")] == ["hand edit"]
    assert (await mine.add("third fact")).id != "x"
    assert [r.content for r in await theirs.list()] == ["hand edit", "third fact"]


async def test_concurrent_adds_lose_nothing(store: JsonFileStore) -> None:
    await asyncio.gather(*(store.add(f"fact number {i}") for i in range(25)))
    assert await store.count() == 25


def test_one_store_serves_many_event_loops(store: JsonFileStore) -> None:
    # A synchronous agent runs a fresh loop per call; the store must not be tied to one.
    for batch in range(3):
        asyncio.run(asyncio.wait_for(store.add(f"loop {batch}"), 10))
    assert asyncio.run(store.count()) == 3


def test_store_instances_in_threads_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "threads.json"

    def work(worker: int) -> None:
        store = JsonFileStore(name="t", path=path)
        for i in range(20):
            asyncio.run(store.add(f"worker {worker} fact {i}"))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(json.loads(path.read_text())) == 60


async def test_persist_false_supports_every_operation() -> None:
    store = JsonFileStore(name="mem", persist=False)
    added = await store.add("in memory only", {"k": 1})
    assert (await store.get(added.id)).content == "in memory only"  # type: ignore[union-attr]
    assert await store.count() == 1
    assert await store.delete(added.id)
    assert await store.search("memory") == []


async def test_metadata_nesting_is_bounded(store: JsonFileStore) -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(150):
        node["k"] = {}
        node = node["k"]  # type: ignore[assignment]
    with pytest.raises(InvalidArgumentError, match="nests deeper"):
        await store.add("fact", deep)
    assert await store.count() == 0


async def test_a_file_holds_metadata_as_deep_as_an_add_may(tmp_path: Path) -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(99):  # the object itself is level 1: 100 levels
        node["k"] = {}
        node = node["k"]  # type: ignore[assignment]
    path = tmp_path / "deep.json"
    await JsonFileStore(name="deep", path=path).add("deep fact", deep)
    fresh = JsonFileStore(name="deep", path=path)
    hits = await fresh.search("deep")
    assert [hit.metadata for hit in hits] == [{**deep, "_relevanceScore": 1}]
    assert (await fresh.list())[0].metadata == deep


async def test_integers_too_long_for_json_text_are_refused(store: JsonFileStore) -> None:
    with pytest.raises(InvalidArgumentError, match="too long"):
        await store.add("fact", {"n": 10**5000})
    assert (await store.add("fact", {"n": 10**4000})).id


def test_clear_writes_an_empty_file_and_creates_none(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    with SyncStore(JsonFileStore(name="notes", path=path)) as missing:
        assert missing.clear() == 0
    assert not path.exists()
    with SyncStore(JsonFileStore(name="notes", path=path)) as notes:
        notes.add_many([("one fact", None), ("two facts", {"k": 1})])
        assert notes.clear() == 2
        assert notes.count() == 0
    assert json.loads(path.read_text(encoding="utf-8")) == []


async def test_search_options_that_are_not_a_mapping_are_refused(tmp_path: Path) -> None:
    store = JsonFileStore(name="notes", path=tmp_path / "notes.json")
    await store.add("dark mode")
    for options in ([1], "max_search_results=3", 3):
        with pytest.raises(InvalidArgumentError, match="search options must be a mapping"):
            await store.search("dark", options)  # type: ignore[arg-type]


async def test_facts_that_change_are_refused_naming_the_stores_that_keep_them(
    store: JsonFileStore,
) -> None:
    memory = await store.add("Lives in Lyon")
    assert store.path is not None
    before = Path(store.path).read_bytes()
    moment = "2025-03-01T00:00:00Z"
    refused = [
        ("supersede", lambda: store.supersede([memory.id], "Lives in Berlin")),
        ("as_of", lambda: store.search("Lyon", as_of=moment)),
        ("valid_at", lambda: store.search("Lyon", valid_at=moment)),
        ("include_superseded", lambda: store.search("Lyon", include_superseded=True)),
        ("as_of", lambda: store.get(memory.id, as_of=moment)),
        ("include_superseded", lambda: store.get(memory.id, include_superseded=True)),
        ("as_of, valid_at", lambda: store.list(as_of=moment, valid_at=moment)),
        ("include_superseded", lambda: store.count(include_superseded=True)),
        ("valid_from", lambda: store.add("Lives in Berlin", valid_from=moment)),
        ("valid_until", lambda: store.add("Lives in Berlin", valid_until=moment)),
    ]
    for name, call in refused:
        with pytest.raises(
            InvalidArgumentError,
            match=rf"^store 'notes' \(JsonFileStore\) does not support {name}: .*"
            r"Capability\.SUPERSEDE\); SQLiteStore and PostgresStore do$",
        ):
            await call()
    assert Path(store.path).read_bytes() == before
    # The defaults are what the file holds: every memory is current, none has a world time.
    assert [hit.id for hit in await store.search("Lyon", include_superseded=False)] == [memory.id]
    assert await store.count(as_of=None, valid_at=None, include_superseded=False) == 1


async def test_a_retired_or_dated_record_is_refused_by_import(store: JsonFileStore) -> None:
    created = "2025-01-01T00:00:00.000Z"
    retired = MemoryRecord(
        "old", "Lived in Lyon", created, invalidated_at=created, superseded_by="n"
    )
    dated = MemoryRecord("d", "Lives in Berlin", created, valid_from=created)
    for record, problem in (
        (retired, r"record 1 \(old\) was retired by memory 'n' at '2025-01-01T00:00:00.000Z'"),
        (dated, r"record 1 \(d\) says when its fact was true \(valid_from="),
    ):
        with pytest.raises(
            InvalidArgumentError, match=f"{problem}.*SQLiteStore or a PostgresStore"
        ):
            await store.import_records([MemoryRecord("fine", "Fine", created), record])
    assert await store.count() == 0
