"""On a store small enough that no bound binds, SQLiteStore ranks by exact BM25.

The expected ranking is computed from the formula the store documents (:mod:`bm25_oracle`),
independently of the store's code, over whole stores and over scope views, with any number of
the newest memories still waiting for the full-text index.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from pathlib import Path
from unittest import mock

from bm25_oracle import ranked
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrecall import SQLiteStore
from agentrecall._internal import sqlite as sqlite_module
from agentrecall.stores.sqlite.tables import index_unindexed

WORDS = [
    "lake", "trip", "Lisbon", "café", "cafe", "naïve", "violin", "peanuts", "aisle", "seat",
    "the", "and", "of", "to", "Mia", "MIA", "über", "uber", "2024", "x1", "dance", "ship",
    "seats", "dancing", "danced", "agreed", "agree", "was", "座位", "靠过道的座位", "席",
    "通路側の席が好き", "좌석을", "좌석", "ｶﾞｲﾄﾞ", "ガイド", "iPhone手机",
]  # fmt: skip
USERS = [None, "ana", "bob"]


sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
stores = st.lists(st.tuples(sentences, st.sampled_from(USERS)), min_size=1, max_size=25)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(memories=stores, query=queries, user=st.sampled_from(USERS), waiting=st.integers(0, 25))
def test_a_small_store_ranks_by_exact_bm25(
    memories: list[tuple[str, str | None]], query: str, user: str | None, waiting: int
) -> None:
    async def run() -> tuple[list[str], list[tuple[str, float]]]:
        with tempfile.TemporaryDirectory() as tmp:
            # The newest `waiting` memories are left out of the index (no background indexing).
            with (
                mock.patch.object(sqlite_module, "TIDY_SETTLE", 3600.0),
                mock.patch.object(sqlite_module, "TIDY_LONGEST", 3600.0),
            ):
                store = SQLiteStore(Path(tmp) / "m.db")
            try:
                ids = []
                split = max(0, len(memories) - waiting)
                for position, (text, owner) in enumerate(memories):
                    if position == split:
                        store._db.run(index_unindexed, write=True)
                    view = store if owner is None else store.scope(user_id=owner)
                    ids.append((await view.add(text)).id)
                if split == len(memories):
                    store._db.run(index_unindexed, write=True)
                searched = store if user is None else store.scope(user_id=user)
                hits = await searched.search(query, {"max_search_results": 100})
                return ids, [(h.id, h.metadata["_relevanceScore"]) for h in hits]
            finally:
                await store.aclose()

    ids, hits = asyncio.run(run())
    # Duplicates within a scope collapse into the first memory: rank only what was stored.
    stored: dict[str, tuple[str, str | None]] = {}
    for memory_id, (text, owner) in zip(ids, memories, strict=True):
        stored.setdefault(memory_id, (text, owner))
    order = list(stored)
    texts = [stored[memory_id][0] for memory_id in order]
    # Statistics (N, df, average length) are the whole database's; the view only filters.
    expected = [
        (order[index], score)
        for index, score in ranked(texts, query)
        if user is None or stored[order[index]][1] == user
    ]

    def canonical(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
        # Equal scores can differ in their last bits with the order of summation; compare
        # them as the ties they are, newer memory first.
        return sorted(ranked, key=lambda hit: (-round(hit[1], 9), -order.index(hit[0])))

    assert [i for i, _ in canonical(hits)] == [i for i, _ in canonical(expected)]
    for (_, got), (_, want) in zip(canonical(hits), canonical(expected), strict=True):
        assert math.isclose(got, want, rel_tol=1e-9)
