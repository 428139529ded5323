"""Stores with memories in several scopes and a history of every kind, and what a reader sees.

Shared by the tests that copy a store and compare the copy with the original.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from agentrecall import InvalidArgumentError, SQLiteStore

SCOPES: list[dict[str, str]] = [
    {},
    {"user_id": "ana"},
    {"user_id": "bob"},
    {"user_id": "ana", "session_id": "s1"},
    {"agent_id": "a1"},
    {"user_id": "bob", "agent_id": "a1", "session_id": "s2"},
]
PAST = "2001-01-01T00:00:00.000Z"


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
