"""PostgresStore's term counts: every write keeps them exact, under concurrency and upgrades."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.stores.postgres.schema import MIGRATIONS
from agentrecall.stores.postgres.schema import migrate as apply_migrations

RECOUNT = (
    "SELECT m.store, t.term, count(*) FROM agentrecall.memories AS m "
    "CROSS JOIN LATERAL unnest(tsvector_to_array(m.terms)) AS t (term) GROUP BY 1, 2"
)
KEPT = (
    "SELECT store, term, sum(memories) FROM agentrecall.term_stats GROUP BY 1, 2 "
    "HAVING sum(memories) <> 0"
)
STORE_RECOUNT = "SELECT store, count(*), sum(length) FROM agentrecall.memories GROUP BY 1"
STORE_KEPT = (
    "SELECT store, sum(memories), sum(terms) FROM agentrecall.store_stats GROUP BY 1 "
    "HAVING sum(memories) <> 0"
)


def assert_counts_exact(dsn: str) -> None:
    """The kept counts of every term and store equal a recount of the memories."""
    with psycopg.connect(dsn) as connection:
        for recount, kept in ((RECOUNT, KEPT), (STORE_RECOUNT, STORE_KEPT)):
            expected = {tuple(row[:-1]): int(row[-1]) for row in connection.execute(recount)}
            found = {tuple(row[:-1]): int(row[-1]) for row in connection.execute(kept)}
            assert found == expected


@pytest.mark.asyncio
async def test_every_kind_of_write_keeps_the_term_counts_exact(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    other = PostgresStore(postgres_dsn, name="other")
    ana = store.scope(user_id="ana")
    first = await ana.add("Ana walks her dog in the park")
    await ana.add("The dog sleeps", ttl=0.05)
    await store.add_many([(f"park bench number {n % 1_500}", None) for n in range(2_000)])
    await other.add("a dog in another store")
    assert_counts_exact(postgres_dsn)
    await ana.update(first.id, content="Ana walks her cat in the garden")
    await ana.update(first.id, metadata={"pet": "cat"})
    await store.delete_many([record.id for record in await store.list(limit=100)])
    await asyncio.sleep(0.1)
    await ana.add("after the expiry")  # purges the expired memory first
    assert "The dog sleeps" not in {record.content for record in await store.list()}
    copy = PostgresStore(postgres_dsn, name="copy")
    assert await copy.import_records(await store.list()) == await store.count()
    assert_counts_exact(postgres_dsn)
    assert await ana.clear() > 0
    assert_counts_exact(postgres_dsn)
    for each in (store, other, copy):
        await each.aclose()


@pytest.mark.asyncio
async def test_eight_concurrent_writers_keep_the_counts_exact_without_deadlock(
    postgres_dsn: str,
) -> None:
    """Writers of overlapping contents add, update and delete at once, in many statements.

    Each deletes only memories of its own: a shared content deleted between another
    client's insert and its read of the id is a separate matter of ``add``.
    """
    clients = [PostgresStore(postgres_dsn, pool_size=2) for _ in range(8)]
    await clients[0].setup()

    async def client(number: int) -> None:
        store = clients[number]
        for round_number in range(20):
            batch = [
                (f"shared word {(number + round_number + n) % 60} note", None) for n in range(8)
            ]
            await store.add_many(batch)
            mine = await store.add_many(
                [(f"client {number} round {round_number} shared word {n}", None) for n in (1, 2)]
            )
            await store.update(mine[0].id, content=f"client {number} changed round {round_number}")
            await store.delete(mine[1].id)

    await asyncio.gather(*(client(n) for n in range(8)))
    assert_counts_exact(postgres_dsn)
    for store in clients:
        await store.aclose()


async def _older_release_store(connection: psycopg.AsyncConnection[object], version: int) -> None:
    """Build the schema as the migrations up to ``version`` left it, with 40 memories written
    under that release's trigger, and commit."""
    await connection.execute(
        "CREATE SCHEMA agentrecall; CREATE TABLE agentrecall.migrations (version integer "
        "PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    for number, migration in enumerate(MIGRATIONS[:version], start=1):
        await connection.execute(migration.replace("{schema}", '"agentrecall"').encode())
        await connection.execute(
            "INSERT INTO agentrecall.migrations (version) VALUES (%s)", [number]
        )
    await connection.execute(
        "INSERT INTO agentrecall.stores (name) VALUES ('memory'); "
        "INSERT INTO agentrecall.scopes (store) VALUES (1); "
        "INSERT INTO agentrecall.memories (store, id, scope, content, content_hash, "
        "created_at, terms, length) SELECT 1, 'old ' || n, 1, 'old topic ' || n, "
        "sha256(n::text::bytea), '2025-01-01T00:00:00.000Z', "
        "('''old'' ''topic'' ''' || n || '''')::tsvector, 3 FROM generate_series(1, 40) n"
    )
    await connection.commit()


@pytest.mark.asyncio
async def test_upgrading_a_store_counts_the_terms_of_its_memories(postgres_dsn: str) -> None:
    """A database made before term counts gets them counted by the upgrade, then kept."""
    store = PostgresStore(postgres_dsn)
    await store.add_many([(f"an old memory about topic {n % 7}", None) for n in range(50)])
    await store.aclose()
    with psycopg.connect(postgres_dsn) as connection:
        # Back to the tables of version 2, memories kept, as an older release left them (its
        # trigger function is replaced by the upgrade, so no write may happen in between).
        connection.execute(
            "DROP TABLE agentrecall.term_stats, agentrecall.long_terms; "
            "DROP FUNCTION agentrecall.count_changes, agentrecall.write_shard, "
            "agentrecall.add_memory, agentrecall.forget_long_terms CASCADE; "
            "DELETE FROM agentrecall.migrations WHERE version > 2"
        )
    async with await psycopg.AsyncConnection.connect(postgres_dsn) as connection:
        assert await apply_migrations(connection, "agentrecall", "test") == len(MIGRATIONS) - 2
    assert_counts_exact(postgres_dsn)
    upgraded = PostgresStore(postgres_dsn)
    await upgraded.add("a new memory about topic 3")
    assert_counts_exact(postgres_dsn)
    hits = await upgraded.search("topic 3")
    assert hits[0].content == "a new memory about topic 3"
    await upgraded.aclose()


@pytest.mark.asyncio
async def test_scores_match_sqlite_after_updates_and_deletes(
    postgres_dsn: str, tmp_path: object
) -> None:
    """BM25 over the kept counts is SQLite's BM25 over its own, write for write."""
    postgres = PostgresStore(postgres_dsn)
    sqlite = SQLiteStore(f"{tmp_path}/m.db")
    later = datetime.now(timezone.utc) + timedelta(days=1)
    for store in (postgres, sqlite):
        results = await store.add_many([(f"garden note {n} about roses", None) for n in range(40)])
        await store.add("roses and tulips in the garden", expires_at=later)
        await store.update(results[3].id, content="tulips only")
        await store.delete_many([result.id for result in results[10:30]])
    found = [await store.search("garden roses tulips") for store in (postgres, sqlite)]
    scores = [
        [(hit.content, (hit.metadata or {})["_relevanceScore"]) for hit in hits] for hits in found
    ]
    assert scores[0] == [(content, pytest.approx(score, rel=1e-9)) for content, score in scores[1]]
    assert found[0]
    await postgres.aclose()
    await sqlite.aclose()


@pytest.mark.asyncio
async def test_bulk_writes_count_the_terms_of_only_the_memories_they_insert(
    postgres_dsn: str,
) -> None:
    """Large batches count their own terms: held contents, repeats and skipped records aside."""
    store = PostgresStore(postgres_dsn)
    held = await store.add_many([(f"held note {n} about apples", None) for n in range(300)])
    batch = [(f"held note {n} about apples", None) for n in range(300)]
    batch += [(f"fresh note {n % 1_000} about pears", None) for n in range(1_200)]
    results = await store.add_many(batch)
    assert [result.id for result in results[:300]] == [result.id for result in held]
    assert await store.count() == 1_300
    assert_counts_exact(postgres_dsn)
    past = (datetime.now(timezone.utc) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    records = await store.list()
    copies = [
        replace(record, user_id=f"user {index // 500}", expires_at=past if index % 7 else None)
        for index, record in enumerate(records)
    ]
    copy = PostgresStore(postgres_dsn, name="copy")
    assert await copy.import_records(copies[:400]) == sum(1 for n in range(400) if n % 7 == 0)
    assert await copy.import_records([replace(r, expires_at=None) for r in copies]) == 1_300 - 58
    assert_counts_exact(postgres_dsn)
    await store.add("a small add after them: counted by the trigger")
    assert_counts_exact(postgres_dsn)
    for each in (store, copy):
        await each.aclose()


@pytest.mark.asyncio
async def test_concurrent_bulk_writers_keep_the_counts_exact(postgres_dsn: str) -> None:
    """Large batches sharing half their contents, at once: each distinct one counted once."""
    clients = [PostgresStore(postgres_dsn, pool_size=1) for _ in range(4)]
    await clients[0].setup()

    async def client(number: int) -> None:
        for round_number in range(2):
            shared = [(f"shared fact {n} round {round_number}", None) for n in range(700)]
            own = [(f"client {number} fact {n} round {round_number}", None) for n in range(700)]
            await clients[number].add_many(shared + own if number % 2 else own + shared)

    await asyncio.gather(*(client(n) for n in range(4)))
    assert await clients[0].count() == 2 * (700 + 4 * 700)
    assert_counts_exact(postgres_dsn)
    for store in clients:
        await store.aclose()


@pytest.mark.asyncio
async def test_upgrading_from_trigger_counted_terms_keeps_the_counts_exact(
    postgres_dsn: str,
) -> None:
    """A database of version 3, whose trigger counted every insert's terms, upgrades in place."""
    async with await psycopg.AsyncConnection.connect(postgres_dsn) as connection:
        await _older_release_store(connection, 3)
        assert_counts_exact(postgres_dsn)
        assert await apply_migrations(connection, "agentrecall", "test") == len(MIGRATIONS) - 3
    store = PostgresStore(postgres_dsn)
    await store.add_many([(f"new topic {n % 1_100}", None) for n in range(1_500)])
    await store.add("one more topic")
    assert_counts_exact(postgres_dsn)
    assert (await store.search("topic 7"))[0].content in {"old topic 7", "new topic 7"}
    await store.aclose()


@pytest.mark.asyncio
async def test_single_adds_on_a_store_upgraded_from_version_4_keep_the_counts_exact(
    postgres_dsn: str,
) -> None:
    """Version 5 adds one memory through a server function that counts it itself.

    A database of version 4, with memories its trigger counted, upgrades in place; then
    single adds of new contents, of a held one, and after an expiry keep every count exact.
    """
    async with await psycopg.AsyncConnection.connect(postgres_dsn) as connection:
        await _older_release_store(connection, 4)
        assert await apply_migrations(connection, "agentrecall", "test") == len(MIGRATIONS) - 4
    store = PostgresStore(postgres_dsn)
    ana = store.scope(user_id="ana")
    first = await store.add("a new topic for the upgraded store")
    assert (await store.add("a new topic for the upgraded store")).id == first.id
    soon_gone = await ana.add("Ana's topic, soon gone", ttl=0.05)
    lasting = await ana.add("Ana's lasting topic")
    assert_counts_exact(postgres_dsn)
    await asyncio.sleep(0.1)
    again = await ana.add("Ana's topic, soon gone")  # the expired copy is purged, not returned
    assert again.id != soon_gone.id
    assert {record.id for record in await ana.list()} == {again.id, lasting.id}
    assert await store.count() == 40 + 3
    assert_counts_exact(postgres_dsn)
    assert (await store.search("topic 7"))[0].content == "old topic 7"
    await store.aclose()


@pytest.mark.asyncio
async def test_a_batch_of_several_chunks_keeps_its_order_dedup_and_counts(
    postgres_dsn: str,
) -> None:
    """More items than a chunk: repeats across chunks stored once, in order, counted once."""
    store = PostgresStore(postgres_dsn)
    results = await store.add_many([(f"fact {n % 10_500} of the log", None) for n in range(11_000)])
    assert await store.count() == 10_500
    assert [r.id for r in results[10_500:]] == [r.id for r in results[:500]]
    listed = await store.list()
    assert [record.content for record in listed] == [f"fact {n} of the log" for n in range(10_500)]
    assert_counts_exact(postgres_dsn)
    copy = PostgresStore(postgres_dsn, name="copy")
    records = [replace(record, user_id=f"user {n // 6_000}") for n, record in enumerate(listed)]
    assert await copy.import_records(records + records[:100]) == 10_500
    assert [r.id for r in await copy.scope(user_id="user 1").list()] == [
        r.id for r in records[6_000:]
    ]
    assert_counts_exact(postgres_dsn)
    for each in (store, copy):
        await each.aclose()


@pytest.mark.asyncio
async def test_a_content_with_more_distinct_terms_than_a_tsvector_holds_is_stored_whole(
    postgres_dsn: str,
) -> None:
    """PostgreSQL refuses a tsvector past 1 MiB of lexemes (about 100,000 distinct words): the
    memory is kept whole, found by the first of its terms that fit, and the counts stay exact."""
    words = [f"token{n}x" for n in range(150_000)]
    content = "firstword " + " ".join(words) + " lastword"
    store = PostgresStore(postgres_dsn)
    memory = await store.add(content)
    (other,) = await store.add_many([(content + " again", {"copy": True})])
    record = await store.get(memory.id)
    assert record is not None and record.content == content
    assert [hit.id for hit in await store.search("firstword")] == [memory.id, other.id]
    assert await store.search("lastword") == []  # past the index's limit
    assert_counts_exact(postgres_dsn)
    await store.update(memory.id, content=content + " changed")
    await store.delete(other.id)
    assert_counts_exact(postgres_dsn)
    await store.aclose()
