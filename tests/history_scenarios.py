"""Stores with memories in several scopes and a history of every kind, and what a reader sees.

Shared by the tests that copy a store and compare the copy with the original.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from agentrecall import InvalidArgumentError, MemoryRecord, MemoryVersion, SQLiteStore
from agentrecall.testing import ManualClock
from agentrecall.testing._contract_base import LIFETIME, set_up, soon

SCOPES: list[dict[str, str]] = [
    {},
    {"user_id": "ana"},
    {"user_id": "bob"},
    {"user_id": "ana", "session_id": "s1"},
    {"agent_id": "a1"},
    {"user_id": "bob", "agent_id": "a1", "session_id": "s2"},
]
PAST = "2001-01-01T00:00:00.000Z"


def an_hour_ago() -> ManualClock:
    """A clock that stands an hour back: what expires by it within the hour has expired now.

    Memories written while it is in place with a lifetime under an hour have expired by the
    system's clock once it is left, for this process and any other (the CLI in a subprocess),
    however long the test takes.
    """
    return ManualClock(datetime.now(timezone.utc) - timedelta(hours=1))


async def snapshot(store: SQLiteStore) -> dict[str, Any]:
    """Everything a reader can see: the root and every view's list, count and search, every
    id's history, and every version in the order :meth:`SQLiteStore.versions` gives."""
    records = await store.list()
    versions = [version async for page in store.versions(batch=3) for version in page]
    views: dict[tuple[tuple[str, str], ...], Any] = {}
    for item in [*records, *versions]:
        ids = {"user_id": item.user_id, "agent_id": item.agent_id, "session_id": item.session_id}
        held = [(key, value) for key, value in ids.items() if value is not None]
        for size in range(1, len(held) + 1):
            for part in itertools.combinations(held, size):
                view = store.scope(**dict(part))
                hits = [(hit.id, hit.metadata) for hit in await view.search("tea walk")]
                views[part] = (await view.list(), await view.count(), hits)
    memory_ids = sorted({r.id for r in records} | {v.memory_id or "" for v in versions})
    histories = {memory_id: await store.history(memory_id) for memory_id in memory_ids}
    found = [(hit.id, hit.metadata) for hit in await store.search("tea walk")]
    return {
        "records": records,
        "versions": versions,
        "views": views,
        "histories": histories,
        "search": found,
    }


texts = st.sampled_from(["tea", " tea ", "a walk", "the sea", "tea and a walk"])
metadata = st.none() | st.dictionaries(st.sampled_from("ab"), st.integers(0, 2), max_size=2)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, len(SCOPES) - 1), texts, metadata),
        st.tuples(st.just("expired"), st.integers(0, len(SCOPES) - 1), texts, metadata),
        st.tuples(st.just("update"), st.integers(0, 99), st.none() | texts, metadata),
        st.tuples(st.just("delete"), st.integers(0, 99), st.none(), st.none()),
    ),
    max_size=30,
)


async def play(store: SQLiteStore, steps: list[tuple[Any, ...]]) -> None:
    ids: list[str] = []
    for action, target, text, meta in steps:
        if action in ("add", "expired"):
            expiry = PAST if action == "expired" else None
            ids.append((await store.scope(**SCOPES[target]).add(text, meta, expires_at=expiry)).id)
        elif ids and action == "update":
            try:
                await store.update(ids[target % len(ids)], content=text, metadata=meta)
            except InvalidArgumentError:
                pass  # the new content is another memory's of that scope
        elif ids:
            await store.delete(ids[target % len(ids)], reason=f"step {target}")
    await store.add("the last write purges what expired")


async def unpurged_expiries(store: Any) -> list[str]:
    """Fill ``store`` with memories that expired and that no write has purged yet; return ids.

    Beside them: a memory that sets the store up, an updated one, a deleted one, and one given
    an expiry already past, which a later add purged. One expiring memory was updated three
    times first, in a scope, so a page of versions can end inside its history. Returns once
    every expiry has passed, by the system's clock: they are written an hour back.
    """
    await set_up(store)
    with an_hour_ago():
        expiry = soon()
        often = await store.scope(user_id="ana").add("changed often", {"n": 0}, expires_at=expiry)
        for n in range(1, 4):
            await store.update(often.id, metadata={"n": n}, reason=f"change {n}")
        short = await store.add_many(
            [("short lived one", None), ("short lived two", {"b": 1})], ttl=LIFETIME
        )
        first = await store.add("first words")
        await store.update(first.id, content="second words")
        past = await store.add("never seen", expires_at=PAST)
        last = await store.add("last words")  # purges ``past``
        await store.delete(last.id, reason="gone")
    return [often.id, *(result.id for result in short), first.id, past.id, last.id]


class ListSink:
    """A snapshot sink that keeps what it is given."""

    def __init__(self) -> None:
        self.counted: tuple[int, int] | None = None
        self.memories: list[MemoryRecord] = []
        self.replaced: list[MemoryVersion] = []

    def counts(self, memories: int, versions: int) -> None:
        self.counted = (memories, versions)

    def records(self, batch: list[MemoryRecord]) -> None:
        self.memories += batch

    def versions(self, batch: list[MemoryVersion]) -> None:
        self.replaced += batch


async def check_unpurged_expiries(store: Any, copy: Any) -> None:
    """Check every read of ``store``'s history holds its expiries, before and after the purge.

    ``versions()`` at any page size, ``snapshot`` and its counts give each memory's versions
    as ``history`` does, an expiry last and dated at it; the purge changes none of them, and
    ``copy``, which imported them before the purge, takes none again after it.
    """
    ids = await unpurged_expiries(store)
    expected = [v for memory_id in sorted(ids) for v in await store.history(memory_id)]
    assert [v.change for v in expected].count("expire") == 4
    assert [v.change for v in await store.history(ids[0])] == ["update"] * 3 + ["expire"]
    for batch in (1, 2, 3, 100):
        assert [v async for page in store.versions(batch=batch) for v in page] == expected
    sink = ListSink()
    await store.snapshot(sink, batch=2)
    assert sink.replaced == expected and sink.counted == (2, len(expected))
    assert await copy.import_versions(expected) == len(expected)
    await store.add("a write, which purges the expired memories")
    assert [v for memory_id in sorted(ids) for v in await store.history(memory_id)] == expected
    for batch in (1, 3):
        assert [v async for page in store.versions(batch=batch) for v in page] == expected
    assert await copy.import_versions(expected) == 0
    assert [v async for page in copy.versions() for v in page] == expected
