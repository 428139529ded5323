"""Conversation mode on PostgresStore: the same results as SQLiteStore on the same memories."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.migrate import migrate
from agentrecall.testing import HashEmbedder
from agentrecall.types import MemoryEntry

WORDS = (
    "puppy pepper lake hiking job busy garden tomato guitar concert paris train museum "
    "bakery bread marathon knee doctor sister wedding dress camera photo beach surf novel "
    "library chess club piano lesson recipe curry spice market bicycle repair rain tent"
).split()

QUERIES = [
    "What is the name of the puppy?",
    "Which concert did they go to in Paris?",
    "marathon knee doctor",
    "wedding dress for the sister",
    "chess club piano lesson",
    "bicycle repair in the rain",
]


def embedder() -> HashEmbedder:
    return HashEmbedder(dimension=1024)


def contents(hits: list[MemoryEntry]) -> list[str]:
    return [hit.content for hit in hits]


def shown(hits: list[MemoryEntry]) -> list[tuple[str, float]]:
    """The hits as ``(content, score)``, scores rounded past float noise."""
    return [(hit.content, round(float((hit.metadata or {})["_relevanceScore"]), 9)) for hit in hits]


def dialogue(rng: random.Random, user: str, session: int, turns: int) -> list[tuple[str, Any]]:
    """``turns`` turns of one session of ``user``, each with distinct words."""
    items = []
    for turn in range(turns):
        words = " ".join(rng.sample(WORDS, rng.randint(3, 7)))
        speaker = "Ana" if turn % 2 == 0 else "Bo"
        text = f"{speaker} to {user} in session {session} turn {turn}: {words}"
        items.append((text, {"session": session, "speaker": speaker}))
    return items


async def build(store: Any, other: PostgresStore | None, *, deletes: bool) -> None:
    """Write the same history of adds and updates (and deletes and expiry) to ``store``.

    Sessions of three users interleave (a few turns of one, then of another), with memories of
    no session between them; some adds repeat a content already held, some memories are
    updated, and with ``deletes`` some are deleted and some expire and are purged by the next
    write; without, a few expire at the end (unpurged, so still in the table). ``other``,
    another store of the same PostgreSQL schema, gets rows written between them that must
    change nothing.
    """
    rng = random.Random(16)
    users = {user: store.scope(user_id=user) for user in ("ana", "bo", "cy")}
    pending = {
        (user, session): dialogue(rng, user, session, rng.randint(4, 12))
        for user in users
        for session in range(1, 4)
    }
    written: list[str] = []
    while pending:
        key = rng.choice(sorted(pending))
        turns = pending[key]
        chunk, pending[key] = turns[:3], turns[3:]
        if not pending[key]:
            del pending[key]
        results = await users[key[0]].add_many(chunk)
        written += [result.id for result in results]
        await between(users[key[0]], rng, chunk, deletes)
        if other is not None:
            await other.add(f"another store's {key} {len(written)}")
    if deletes:
        for memory_id in rng.sample(written, 6):
            assert await store.delete(memory_id)
    for memory_id in rng.sample(written, 4):
        await store.update(memory_id, content=f"changed to {' '.join(rng.sample(WORDS, 4))}")
    if not deletes:
        for turn in dialogue(rng, "bo", 3, 3):
            await users["bo"].add(*turn, ttl=0.001)
    await asyncio.sleep(0.01)


async def between(view: Any, rng: random.Random, chunk: list[Any], expiry: bool) -> None:
    """Maybe a note of no session, a repeated content, a memory that expires and is purged."""
    if rng.random() < 0.3:
        await view.add(f"a note about {rng.choice(WORDS)} {rng.random():.6f}")
    if rng.random() < 0.2:
        await view.add(chunk[0][0], chunk[0][1])  # held already: dedup
    if rng.random() < 0.15 and expiry:
        await view.add(f"short-lived {rng.choice(WORDS)} {rng.random():.6f}", ttl=0.001)
        await asyncio.sleep(0.005)  # so that the next write purges it, in both backends


async def searches(store: Any, mode: str) -> list[list[tuple[str, float]]]:
    """Conversation-mode searches of ``store``: views, filters and limits."""
    found = []
    views = [store, store.scope(user_id="bo")]
    for query in QUERIES:
        for view in views:
            for limit in (3, 10):
                options = {"mode": mode, "neighbours": True, "max_search_results": limit}
                found.append(shown(await view.search(query, options)))
        filtered = {"speaker": "Bo"}
        found.append(shown(await store.search(query, {"mode": mode}, filter=filtered)))
    return found


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_conversation_mode_gives_the_results_of_sqlite(
    postgres_dsn: str, tmp_path: Path, mode: str
) -> None:
    sqlite = SQLiteStore(tmp_path / "memory.db", embedder=embedder(), neighbours=True)
    postgres = PostgresStore(postgres_dsn, embedder=embedder(), neighbours=True)
    other = PostgresStore(postgres_dsn, name="other")
    try:
        await build(sqlite, None, deletes=False)
        await build(postgres, other, deletes=False)
        await assert_same_searches(postgres, sqlite, mode)
    finally:
        await postgres.aclose()
        await other.aclose()
        await sqlite.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_after_deletes_conversation_mode_gives_the_results_of_sqlite_once_copied(
    postgres_dsn: str, tmp_path: Path, mode: str
) -> None:
    # Positions count memories: PostgreSQL skips deleted ones, SQLite counts the gaps they
    # leave in its row numbers until a copy (a migration, an import) closes them.
    lived = SQLiteStore(tmp_path / "lived.db", embedder=embedder())
    copied = SQLiteStore(tmp_path / "copied.db", embedder=embedder(), neighbours=True)
    postgres = PostgresStore(postgres_dsn, embedder=embedder(), neighbours=True)
    other = PostgresStore(postgres_dsn, name="other")
    try:
        await build(lived, None, deletes=True)
        await migrate(lived, copied)
        await build(postgres, other, deletes=True)
        await assert_same_searches(postgres, copied, mode)
    finally:
        for store in (postgres, other, lived, copied):
            await store.aclose()


async def assert_same_searches(postgres: PostgresStore, sqlite: SQLiteStore, mode: str) -> None:
    assert await postgres.count() == await sqlite.count()
    expected = await searches(sqlite, mode)
    assert any(len(hits) >= 10 for hits in expected)
    found = await searches(postgres, mode)
    for number, (got, want) in enumerate(zip(found, expected, strict=True)):
        if mode == "keyword":
            assert got == want, number
            continue
        # SQLite keeps vectors as int8, which moves cosine similarities in the third digit,
        # and orders memories equally similar to the query newer first, where an HNSW index
        # gives them in its own order: the same memories, the same scores.
        assert dict(got) == pytest.approx(dict(want), abs=5e-3), number
        assert [score for _, score in got] == sorted((score for _, score in got), reverse=True)
    # Neighbours matter here: plain search finds other memories.
    plain = {"mode": mode, "neighbours": False}
    changed = [
        contents(await postgres.search(query, plain))
        != contents(await postgres.search(query, {"mode": mode}))
        for query in QUERIES
    ]
    assert any(changed)


DIALOGUE = [
    ("Ana: What did you do last weekend?", 1),
    ("Bo: I adopted a puppy.", 1),
    ("Bo: Her name is Pepper.", 1),
    ("Ana: Lovely! I went hiking near the lake.", 1),
    ("Ana: How is the new job going?", 2),
    ("Bo: It is busy but fun.", 2),
]


@pytest.mark.asyncio
async def test_neighbours_bring_in_the_turns_around_a_hit_of_the_same_session(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn, embedder=embedder(), max_search_results=3)
    try:
        await store.add_many([(text, {"session": session}) for text, session in DIALOGUE])
        await store.add_many([(f"filler about the puppy park {i}", None) for i in range(3)])
        question = "What is the name of the adopted puppy?"
        plain = contents(await store.search(question))
        conversation = await store.search(question, {"neighbours": True})
        assert "Bo: I adopted a puppy." in contents(conversation)
        assert "Bo: Her name is Pepper." in contents(conversation)
        assert contents(conversation) != plain
        scores = [(hit.metadata or {})["_relevanceScore"] for hit in conversation]
        assert scores == sorted(scores, reverse=True)
        # The first turn of session 2 is next to the last of session 1 but not its neighbour.
        hiking = await store.search("hiking lake", {"neighbours": True, "max_search_results": 3})
        assert "Ana: How is the new job going?" not in contents(hiking)
        keyword = await store.search("adopted", {"mode": "keyword", "neighbours": True})
        assert "Bo: Her name is Pepper." in contents(keyword)
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_neighbours_meet_the_scope_filter_expiry_and_are_never_deleted_ones(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn, neighbours=True)
    ana, bo = store.scope(user_id="ana"), store.scope(user_id="bo")
    try:
        await ana.add("Bo: I adopted a puppy.", {"session": 1})
        await bo.add("Bo's secret from another user", {"session": 1})
        gone = await ana.add("Bo: She was deleted.", {"session": 1})
        await ana.add("Bo: She expires soon.", {"session": 1}, ttl=0.001)
        await ana.add("Bo: Her name is Pepper.", {"session": 1, "speaker": "Bo"})
        await ana.add("Bo: Filtered out.", {"session": 1, "speaker": "Ana"})
        assert await ana.delete(gone.id)
        await asyncio.sleep(0.01)
        found = contents(await ana.search("adopted", {"mode": "keyword"}))
        assert found == ["Bo: I adopted a puppy.", "Bo: Her name is Pepper.", "Bo: Filtered out."]
        filtered = await ana.search("adopted", filter={"speaker": {"$ne": "Ana"}})
        assert contents(filtered) == ["Bo: I adopted a puppy.", "Bo: Her name is Pepper."]
        # From the root, the other user's memory is a memory of another scope: not a neighbour.
        assert "Bo's secret from another user" not in contents(await store.search("adopted"))
    finally:
        await store.aclose()


@pytest.mark.asyncio
async def test_sessions_of_another_json_type_or_key_are_not_neighbours(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn, session_key="conversation.id")
    try:
        await store.add_many(
            [
                ("Bo: I adopted a puppy.", {"conversation.id": 1}),
                ("Bo: Her name is Pepper.", {"conversation.id": "1"}),
                ("Bo: She likes the park.", {"conversation.id": 1, "session": 2}),
                ("Bo: She is three months old.", {"session": 1}),
            ]
        )
        hits = await store.search("adopted", {"mode": "keyword", "neighbours": True})
        assert contents(hits) == ["Bo: I adopted a puppy.", "Bo: She likes the park."]
    finally:
        await store.aclose()
