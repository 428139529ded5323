"""SQLiteStore with an embedder: vectors beside the memories, semantic and hybrid search."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agentrecall import Capability, InvalidArgumentError, MemoryManager, ModelError
from agentrecall.migrate import migrate
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.stores.sqlite.embedding import EMBED_BATCH
from agentrecall.stores.sqlite.tables import CHUNK
from agentrecall.stores.sqlite.vector_sql import LOG_KEEP
from agentrecall.testing import HashEmbedder
from agentrecall.types import MemoryRecord

SYNONYMS = {"chair": "seat", "couch": "sofa", "automobile": "car"}
SEAT = "the user's favourite seat is by the window"
CHAIR = "which chair does the user like?"
MODES = ("keyword", "semantic", "hybrid")


def embedder(dimension: int = 1024) -> HashEmbedder:
    return HashEmbedder(dimension, synonyms=SYNONYMS)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(path: Path) -> SQLiteStore:
    return SQLiteStore(path, embedder=embedder())


def vector_count(path: Path) -> int:
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM memory_vectors").fetchone()[0])


def contents(hits: list[Any]) -> list[str]:
    return [hit.content for hit in hits]


async def test_semantic_search_finds_a_paraphrase_that_keyword_search_ranks_below(
    store: SQLiteStore,
) -> None:
    await store.add_many(
        [(SEAT, None), ("like a user, I like tea", None), ("Pixel is a cat", None)]
    )
    keyword = await store.search(CHAIR, {"mode": "keyword"})
    assert contents(keyword)[0] != SEAT  # "user" and "like" are all keyword search sees
    semantic = await store.search(CHAIR, {"mode": "semantic"})
    assert contents(semantic)[0] == SEAT
    assert "Pixel is a cat" not in contents(semantic)  # nothing in common: no hit
    hybrid = await store.search(CHAIR)  # hybrid is the default with an embedder
    assert SEAT in contents(hybrid)
    assert await store.search("which chair?", {"mode": "keyword"}) == []
    assert contents(await store.search("which chair?", {"mode": "semantic"})) == [SEAT]


async def test_hybrid_hits_carry_the_fused_score_and_both_parts(store: SQLiteStore) -> None:
    await store.add(SEAT, {"room": "study"})
    await store.add("the user likes the red couch")
    await store.add("Window cleaning is on Fridays")
    hits = await store.search("window seat")
    first = hits[0].metadata or {}
    assert hits[0].content == SEAT and first["room"] == "study"
    assert first["_relevanceScore"] == pytest.approx(1.0)
    assert first["_keywordScore"] > 0 and 0 < first["_semanticScore"] <= 1
    scores = [(hit.metadata or {})["_relevanceScore"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    semantic_only = [hit for hit in hits if (hit.metadata or {})["_keywordScore"] is None]
    assert all((hit.metadata or {})["_semanticScore"] > 0 for hit in semantic_only)
    semantic = await store.search("window seat", {"mode": "semantic"})
    assert set(semantic[0].metadata or {}) == {"room", "_relevanceScore"}


async def test_every_mode_applies_scope_filter_expiry_and_time_bounds(path: Path) -> None:
    store = SQLiteStore(path, embedder=embedder())
    ana, bob = store.scope(user_id="ana"), store.scope(user_id="bob")
    await ana.add("Ana's seat on the train is by the window", {"kind": "travel"})
    await ana.add("Ana's seat at the opera is in the balcony", {"kind": "leisure"})
    await bob.add("Bob's seat on the train is by the aisle", {"kind": "travel"})
    await store.add("A seat that expires soon", expires_at=datetime.now(timezone.utc))
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    for mode in MODES:
        options = {"mode": mode}
        assert "A seat that expires soon" not in contents(await store.search("seat", options))
        assert all("Ana" in c for c in contents(await ana.search("seat", options))), mode
        assert len(await ana.search("seat", options)) == 2, mode
        travel = await store.search("seat", options, filter={"kind": "travel"})
        assert sorted(contents(travel)) == [
            "Ana's seat on the train is by the window",
            "Bob's seat on the train is by the aisle",
        ], mode
        assert await store.search("seat", options, created_after=later) == [], mode
        assert await ana.search("seat", options, filter={"kind": "none"}) == [], mode


async def test_a_selective_filter_reads_down_the_ranking_until_enough_pass(
    store: SQLiteStore,
) -> None:
    await store.add_many([(f"seat number {i}", {"row": i}) for i in range(300)])
    hits = await store.search("seat", {"mode": "semantic"}, filter={"row": {"$gte": 290}})
    assert sorted((hit.metadata or {})["row"] for hit in hits) == list(range(290, 300))


async def test_each_memory_gets_its_vector_in_the_transaction_that_adds_it(
    store: SQLiteStore, path: Path
) -> None:
    one = await store.add("Likes green tea")
    await store.add("Likes green tea")  # a duplicate adds no vector
    await store.add_many([("Owns a red bicycle", None), ("Likes green tea", None)])
    await store.import_records(
        [MemoryRecord(id="imported", content="Plays the violin", created_at=_stamp())]
    )
    assert vector_count(path) == 3
    assert contents(await store.search("violin", {"mode": "semantic"})) == ["Plays the violin"]
    await store.delete(one.id)
    assert vector_count(path) == 2
    await store.update("imported", metadata={"x": 1})  # same content: same vector
    assert vector_count(path) == 2
    await store.update("imported", content="Plays the cello")
    assert vector_count(path) == 2
    assert contents(await store.search("violin", {"mode": "semantic"})) == []
    assert contents(await store.search("cello", {"mode": "semantic"})) == ["Plays the cello"]
    await store.clear()
    assert vector_count(path) == 0


async def test_a_large_batch_is_embedded_in_batches_before_it_is_written(path: Path) -> None:
    model = embedder()
    store = SQLiteStore(path, embedder=model)
    count = CHUNK + 1_500
    await store.add_many([(f"memory number {i}", None) for i in range(count)])
    assert vector_count(path) == count
    assert max(model.calls) == EMBED_BATCH and sum(model.calls) == count
    hits = await store.search("memory number 4321", {"mode": "semantic"})
    assert hits[0].content == "memory number 4321"


class FailingEmbedder(HashEmbedder):
    def embed(self, texts: Any) -> Any:
        raise RuntimeError("model crashed")


class WrongShape(HashEmbedder):
    def embed(self, texts: Any) -> Any:
        return super().embed(list(texts) + ["extra"])


async def test_a_failing_embedder_stores_nothing_and_is_named(path: Path) -> None:
    store = SQLiteStore(path, embedder=FailingEmbedder())
    with pytest.raises(ModelError, match=r"embedder 'agentrecall-test-hash-64' failed on 2 texts"):
        await store.add_many([("a", None), ("b", None)])
    assert await store.count() == 0
    shaped = SQLiteStore(path, embedder=WrongShape())
    with pytest.raises(ModelError, match=r"'agentrecall-test-hash-64' .* shape \(2, 64\) for 1 t"):
        await shaped.add("c")
    assert await shaped.count() == 0


class NotANumber(HashEmbedder):
    def embed(self, texts: Any) -> Any:
        vectors = super().embed(texts)
        vectors[-1, 0] = float("nan")
        return vectors


class Words(HashEmbedder):
    def embed(self, texts: Any) -> Any:
        return [["a"] * self.dimension for _ in texts]


@pytest.mark.parametrize(
    ("model", "problem"), [(NotANumber(), "NaN or infinity"), (Words(), "not vectors")]
)
async def test_unusable_vectors_store_nothing_and_are_model_errors(
    path: Path, model: HashEmbedder, problem: str
) -> None:
    # A NaN row would be stored as zeros: a memory no semantic search can ever find.
    store = SQLiteStore(path, embedder=model)
    with pytest.raises(ModelError, match=problem):
        await store.add_many([("a", None), ("b", None)])
    assert await store.count() == 0
    assert vector_count(path) == 0
    with pytest.raises(ModelError, match=problem):
        await store.search("b", {"mode": "semantic"})


async def test_another_model_is_refused_with_both_ids_and_the_reindex_command(
    store: SQLiteStore, path: Path
) -> None:
    await store.add(SEAT)
    await store.aclose()
    for other in (HashEmbedder(64), HashEmbedder(32, synonyms=SYNONYMS)):
        changed = SQLiteStore(path, embedder=other)
        for call in (changed.add("new memory"), changed.search("seat")):
            with pytest.raises(InvalidArgumentError) as raised:
                await call
            message = str(raised.value)
            assert store.capabilities and embedder().model_id in message
            assert other.model_id in message and f"agentrecall reindex --db {path}" in message
        assert await changed.count() == 1
        await changed.aclose()
    plain = SQLiteStore(path)  # without an embedder the file is a keyword store as before
    assert contents(await plain.search("seat")) == [SEAT]


async def test_another_model_is_refused_before_it_embeds_anything(
    store: SQLiteStore, path: Path
) -> None:
    await store.add(SEAT)
    await store.aclose()
    other = HashEmbedder(64)
    changed = SQLiteStore(path, embedder=other)
    records = [
        MemoryRecord(id=f"m{n}", content=f"imported memory {n}", created_at=_stamp())
        for n in range(3)
    ]
    calls = (
        lambda: changed.add("new memory"),
        lambda: changed.add_many([("one", None), ("two", None)]),
        lambda: changed.import_records(records),
    )
    for call in calls:
        with pytest.raises(InvalidArgumentError, match=other.model_id):
            await call()
    # A large import into the wrong file fails at once instead of after embedding a batch.
    assert other.calls == []
    assert await changed.count() == 1
    await changed.aclose()


async def test_a_file_without_vectors_takes_any_model(path: Path) -> None:
    first = SQLiteStore(path, embedder=HashEmbedder(16))
    memory = await first.add("Plays chess")
    await first.delete(memory.id)
    await first.aclose()
    second = SQLiteStore(path, embedder=embedder())
    await second.add(SEAT)
    assert contents(await second.search(CHAIR, {"mode": "semantic"})) == [SEAT]


async def test_reindex_backfills_and_switches_models(path: Path) -> None:
    plain = SQLiteStore(path)
    await plain.add_many([(SEAT, None), ("the couch is blue", None)])
    store = SQLiteStore(path, embedder=embedder())
    assert await store.search(CHAIR, {"mode": "semantic"}) == []  # no vectors yet
    seen: list[tuple[int, int]] = []
    assert await store.reindex(progress=lambda done, total: seen.append((done, total))) == 2
    assert seen == [(0, 2), (2, 2)]
    assert contents(await store.search(CHAIR, {"mode": "semantic"}))[0] == SEAT
    assert await store.reindex() == 0
    await plain.add("a sofa for the study")  # added without an embedder
    assert "a sofa for the study" not in contents(await store.search("sofa", {"mode": "semantic"}))
    assert await store.reindex(batch=1) == 1
    assert "a sofa for the study" in contents(await store.search("couch", {"mode": "semantic"}))
    other = SQLiteStore(path, embedder=HashEmbedder(32))
    assert await other.reindex() == 3
    assert vector_count(path) == 3
    with pytest.raises(InvalidArgumentError, match="agentrecall reindex"):
        await store.search(CHAIR)
    with pytest.raises(InvalidArgumentError, match="needs an embedder"):
        await plain.reindex()


def _stamp() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


async def test_imports_and_migrations_carry_vectors(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    await source.add_many([(SEAT, {"n": 1}), ("the couch is blue", None)])
    destination = SQLiteStore(tmp_path / "destination.db", embedder=embedder())
    result = await migrate(source, destination)
    assert result.copied == 2 and vector_count(tmp_path / "destination.db") == 2
    assert contents(await destination.search(CHAIR, {"mode": "semantic"}))[0] == SEAT


async def test_the_vectors_follow_writes_of_another_store_on_the_file(path: Path) -> None:
    reader = SQLiteStore(path, embedder=embedder())
    writer = SQLiteStore(path, embedder=embedder())
    first = await writer.add("the red chair")
    assert contents(await reader.search("seat", {"mode": "semantic"})) == ["the red chair"]
    await writer.update(first.id, content="the blue sofa")
    assert await reader.search("seat", {"mode": "semantic"}) == []
    assert contents(await reader.search("couch", {"mode": "semantic"})) == ["the blue sofa"]
    await writer.delete(first.id)
    assert await reader.search("couch", {"mode": "semantic"}) == []
    # The newest row deleted, its row number is taken again by the next memory.
    reused = await writer.add("a wooden chair")
    assert contents(await reader.search("seat", {"mode": "semantic"})) == ["a wooden chair"]
    await writer.delete(reused.id)
    await writer.add("an old automobile")
    assert contents(await reader.search("car", {"mode": "semantic"})) == ["an old automobile"]
    assert await reader.search("seat", {"mode": "semantic"}) == []


async def test_a_reader_further_behind_than_the_change_log_loads_everything_again(
    path: Path,
) -> None:
    reader = SQLiteStore(path, embedder=embedder())
    writer = SQLiteStore(path, embedder=embedder())
    added = await writer.add_many([(f"seat {i}", None) for i in range(LOG_KEEP + 20)])
    assert len(await reader.search("seat", {"mode": "semantic", "max_search_results": 5})) == 5
    await writer.delete_many([result.id for result in added[:-3]])
    hits = await reader.search("seat", {"mode": "semantic", "max_search_results": 50})
    assert sorted(contents(hits)) == [f"seat {i}" for i in range(LOG_KEEP + 17, LOG_KEEP + 20)]


WRITER = """
import asyncio, sys
from agentrecall import SQLiteStore
from agentrecall.testing import HashEmbedder

async def main():
    store = SQLiteStore(sys.argv[1], embedder=HashEmbedder(64, synonyms={"chair": "seat"}))
    hits = await store.search("seat", {"mode": "semantic"})
    await store.delete(hits[0].id)
    await store.add("a tall chair")
    await store.aclose()

asyncio.run(main())
"""


async def test_another_process_adding_and_deleting_is_seen_by_the_next_search(path: Path) -> None:
    store = SQLiteStore(path, embedder=HashEmbedder(64, synonyms={"chair": "seat"}))
    await store.add("a low seat")
    assert contents(await store.search("seat", {"mode": "semantic"})) == ["a low seat"]
    subprocess.run([sys.executable, "-c", WRITER, str(path)], check=True, timeout=60)
    assert contents(await store.search("seat", {"mode": "semantic"})) == ["a tall chair"]


DIALOGUE = [
    ("Ana: What did you do last weekend?", 1),
    ("Bo: I adopted a puppy.", 1),
    ("Bo: Her name is Pepper.", 1),
    ("Ana: Lovely! I went hiking near the lake.", 1),
    ("Ana: How is the new job going?", 2),
    ("Bo: It is busy but fun.", 2),
]


async def test_neighbours_bring_in_the_turns_around_a_hit_of_the_same_session(
    path: Path,
) -> None:
    store = SQLiteStore(path, embedder=embedder(), max_search_results=3)
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
    # Neighbours meet the search's conditions too.
    filtered = await store.search(
        question, {"neighbours": True}, filter={"session": 1, "speaker": {"$exists": False}}
    )
    assert all("filler" not in c for c in contents(filtered))
    keyword = await store.search("adopted", {"mode": "keyword", "neighbours": True})
    assert "Bo: Her name is Pepper." in contents(keyword)


async def test_in_conversation_mode_a_near_equal_keyword_hit_keeps_a_near_equal_score(
    path: Path,
) -> None:
    # Min-max scaling gave the second of two hits 0, and its neighbours nothing to gain.
    store = SQLiteStore(path)
    await store.add_many(
        [
            ("Ana: my seat was by the window", {"session": 1}),
            ("Bo: which one?", {"session": 1}),
            ("Ana: a seat near the door", {"session": 2}),
            ("Bo: nice", {"session": 2}),
        ]
    )
    hits = await store.search("seat", {"neighbours": True, "max_search_results": 4})
    scores = {hit.content: (hit.metadata or {})["_relevanceScore"] for hit in hits}
    first, second = "Ana: my seat was by the window", "Ana: a seat near the door"
    assert scores[first] == pytest.approx(scores[second], rel=0.1) and scores[second] > 0.9
    assert scores["Bo: nice"] == pytest.approx(0.3 * scores[second])
    await store.aclose()


async def test_a_store_default_for_mode_and_neighbours(path: Path) -> None:
    store = SQLiteStore(path, embedder=embedder(), search_mode="semantic", neighbours=True)
    await store.add_many([(text, {"session": session}) for text, session in DIALOGUE])
    hits = await store.search("puppy adopted", {"max_search_results": 3})
    assert contents(hits)[0] == "Bo: I adopted a puppy."
    assert set(contents(hits)[1:]) == {"Bo: Her name is Pepper.", DIALOGUE[0][0]}
    assert "_keywordScore" not in (hits[0].metadata or {})
    keyword = SQLiteStore(path, embedder=embedder(), search_mode="keyword")
    assert (await keyword.search("puppy"))[0].metadata == {
        "session": 1,
        "_relevanceScore": pytest.approx(
            (await keyword.search("puppy", {"mode": "keyword"}))[0].metadata["_relevanceScore"]
        ),
    }


async def test_search_options_and_settings_are_checked(path: Path) -> None:
    plain = SQLiteStore(path)
    with pytest.raises(InvalidArgumentError, match="semantic search needs an embedder"):
        await plain.search("x", {"mode": "semantic"})
    with pytest.raises(InvalidArgumentError, match="'mode' must be one of 'keyword'"):
        await plain.search("x", {"mode": "fuzzy"})
    with pytest.raises(InvalidArgumentError, match="'neighbours' must be True or False"):
        await plain.search("x", {"neighbours": "yes"})
    assert await plain.search("x", {"mode": None, "neighbours": None}) == []
    with pytest.raises(InvalidArgumentError, match="search_mode"):
        SQLiteStore(path, search_mode="hybrid")
    with pytest.raises(InvalidArgumentError, match="search_mode must be one of"):
        SQLiteStore(path, embedder=embedder(), search_mode="exact")
    with pytest.raises(InvalidArgumentError, match="embedder must be an Embedder"):
        SQLiteStore(path, embedder=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="session_key"):
        SQLiteStore(path, session_key="")
    store = SQLiteStore(path, embedder=embedder())
    assert await store.search("   ") == []


def test_only_a_store_with_an_embedder_declares_semantic_search(path: Path) -> None:
    assert Capability.SEMANTIC not in SQLiteStore.capabilities
    assert Capability.SEMANTIC not in SQLiteStore(path).capabilities
    with_vectors = SQLiteStore(path, embedder=embedder())
    assert Capability.SEMANTIC in with_vectors.capabilities
    assert Capability.SEMANTIC in with_vectors.scope(user_id="ana").capabilities
    assert with_vectors.capabilities - {Capability.SEMANTIC} == SQLiteStore.capabilities


async def test_a_memory_manager_searches_in_the_store_default_mode(
    store: SQLiteStore, path: Path
) -> None:
    await store.add_many([(SEAT, None), ("Pixel is a cat", None)])
    question = "comfy chair"  # no word in common with any memory
    manager = MemoryManager([store])
    assert contents(await manager.search(question)) == [SEAT]
    assert SEAT in await manager.tools[0](query=question)
    injected = await manager.inject([{"role": "user", "content": [{"text": question}]}])
    assert "favourite seat is by the window" in injected[-1]["content"][-1]["text"]
    keyword = SQLiteStore(path, name="keyword", embedder=embedder(), search_mode="keyword")
    assert await MemoryManager([keyword]).search(question) == []


NO_NUMPY = """
import asyncio, sys
sys.modules["numpy"] = None  # as if it were not installed
import agentrecall
from agentrecall import SQLiteStore
from agentrecall.testing import HashEmbedder

async def main():
    store = SQLiteStore(sys.argv[1])
    await store.add("Likes green tea")
    print([hit.content for hit in await store.search("tea")])
    for attempt in (
        lambda: SQLiteStore(sys.argv[1], embedder=HashEmbedder()),
        lambda: SQLiteStore(sys.argv[1], search_mode="hybrid"),
    ):
        try:
            attempt()
        except ImportError as error:
            print(error)
    try:
        await store.search("tea", {"mode": "semantic"})
    except ImportError as error:
        print(error)
    await store.aclose()

asyncio.run(main())
"""


def test_without_numpy_keyword_search_works_and_vectors_name_the_extra(path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", NO_NUMPY, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "['Likes green tea']"
    assert len(lines) == 4
    assert all("pip install 'agentrecall[embeddings]'" in line for line in lines[1:])


def test_importing_agentrecall_and_a_keyword_store_leaves_numpy_out() -> None:
    code = (
        "import sys, asyncio, tempfile, os, agentrecall\n"
        "store = agentrecall.SQLiteStore(os.path.join(tempfile.mkdtemp(), 'm.db'))\n"
        "asyncio.run(store.add('tea'))\n"
        "asyncio.run(store.search('tea'))\n"
        "print('numpy' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


async def test_concurrent_searches_and_writes_share_one_index(store: SQLiteStore) -> None:
    words = ["red", "blue", "green", "tall", "low", "old", "new", "soft", "hard", "wide"]
    await store.add_many([(f"a {word} seat", None) for word in words])
    view = store.scope(user_id="ana")
    await view.add("Ana's chair")
    results = await asyncio.gather(
        *(store.search("seat", {"mode": "semantic", "max_search_results": 20}) for _ in range(5)),
        view.search("seat", {"mode": "semantic"}),
    )
    assert all(len(hits) == 11 for hits in results[:5])
    assert contents(results[5]) == ["Ana's chair"]


async def test_sessions_of_another_json_type_or_key_are_not_neighbours(path: Path) -> None:
    store = SQLiteStore(path, embedder=embedder(), session_key="conversation.id")
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
