"""Emoji and other pictographs are keyword terms in SQLiteStore and PostgresStore.

``agentrecall search 🍣`` once found nothing after ``agentrecall add "Ana loves 🍣 sushi"``: the
tokenizer read pictographs as separators. Each pictograph is now a term, its modifiers
dropped (:mod:`agentrecall.retrieval.pictographs`); stores written before are indexed again
when opened.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import unicodedata
from pathlib import Path

import psycopg
import pytest
from sqlite_checks import check_full_text_index, old_database
from test_cli_transfer import ok
from test_postgres_search import assert_counts_exact

from agentrecall import PostgresStore, SQLiteStore
from agentrecall.retrieval.bm25 import query_terms
from agentrecall.retrieval.keywords import fold, index_text, keyword_terms
from agentrecall.retrieval.pictographs import (
    FOLDED_INTO_PICTOGRAPHS,
    PICTOGRAPH,
    index_word,
)
from agentrecall.stores.base import MemoryStore
from agentrecall.stores.postgres.schema import MIGRATIONS as POSTGRES_MIGRATIONS

SUSHI = "Ana loves 🍣 sushi"
MEMORIES = [
    SUSHI,
    "I ❤️ Paris",
    "thumbs up 👍🏽 from Ben",
    "the 👩‍🚀 crew",
    "trip to 🇯🇵 in May",
    "rated ★★★ by Cleo",
    "Ελλάδα ✈ next week",
    "用户喜欢🍱便当",
    "plain words only",
]
QUERIES = {
    "🍣": SUSHI,
    "❤": "I ❤️ Paris",
    "❤️": "I ❤️ Paris",
    "👍": "thumbs up 👍🏽 from Ben",
    "👍🏻": "thumbs up 👍🏽 from Ben",
    "🚀": "the 👩‍🚀 crew",
    "🇯🇵": "trip to 🇯🇵 in May",
    "★": "rated ★★★ by Cleo",
    "✈️": "Ελλάδα ✈ next week",
    "🍱": "用户喜欢🍱便当",
}


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        (SUSHI, ["ana", "love", "🍣", "sushi"]),
        ("I ❤️ you", ["i", "❤", "you"]),  # the variation selector is dropped
        ("👍🏽👍🏿", ["👍", "👍"]),  # skin tones dropped
        ("👨‍👩‍👧", ["👨", "👩", "👧"]),  # a ZWJ sequence is its pictographs
        ("🇯🇵🇫🇷", ["🇯🇵", "🇫🇷"]),  # a flag is one term
        ("★♥✈☎", ["★", "♥", "✈", "☎"]),
        ("half ￭", ["half", "■"]),  # folded into a pictograph
        ("a-b.c, d; e! (f) → g + h = i", ["a", "b", "c", "d", "e", "f", "g", "h", "i"]),
    ],
)
def test_pictographs_are_terms_and_punctuation_is_not(text: str, terms: list[str]) -> None:
    assert keyword_terms(text) == terms


def test_a_query_asks_the_index_for_each_pictographs_word() -> None:
    assert query_terms("🍣 sushi") == {"sushi": "sushi", index_word("🍣"): "🍣"}
    assert query_terms("❤️") == query_terms("❤") == {index_word("❤"): "❤"}


def test_only_the_listed_characters_fold_into_pictographs() -> None:
    outside = [
        chr(code)
        for code in range(0x80, sys.maxunicode + 1)
        if unicodedata.decomposition(chr(code))
        and not PICTOGRAPH.match(chr(code))
        and PICTOGRAPH.search(fold(chr(code)))
    ]
    assert "".join(outside) == FOLDED_INTO_PICTOGRAPHS


def test_sqlite_reads_each_pictographs_word_as_one_word() -> None:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5 (c, tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'row')")
    for text in MEMORIES:
        db.execute("INSERT INTO t (c) VALUES (?)", [index_text(text) or text])
    vocabulary = {row[0] for row in db.execute("SELECT term FROM v")}
    pictographs = {
        term for text in MEMORIES for term in keyword_terms(text) if PICTOGRAPH.match(term)
    }
    assert {index_word(term) for term in pictographs} <= vocabulary
    assert len(pictographs) == 9
    assert all(unicodedata.category(char) == "Co" for char in index_word("🍣🇯🇵★"))


async def _found(store: MemoryStore, query: str) -> list[str]:
    return [hit.content for hit in await store.search(query)]


async def _check_found(store: MemoryStore) -> None:
    for query, memory in QUERIES.items():
        assert (await _found(store, query))[:1] == [memory], query
    assert await _found(store, "sushi 🍣") == [SUSHI]
    assert await _found(store, "🍔") == []
    assert await _found(store, "-") == []


@pytest.mark.parametrize("bulk", [False, True])
async def test_sqlite_finds_pictographs_waiting_for_the_index_and_indexed(
    tmp_path: Path, bulk: bool
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        if bulk:  # indexed in the add's own transaction
            filler = [(f"filler note {n}", None) for n in range(20)]
            await store.add_many([(text, None) for text in MEMORIES] + filler)
        else:  # waiting for the index, read directly
            for text in MEMORIES:
                await store.add(text)
        await _check_found(store)
        store._db.run(check_full_text_index, write=True)
        await _check_found(store)
        updated = (await store.list(limit=None))[-1]
        await store.update(updated.id, content="now about 🍕")
        assert await _found(store, "🍕") == ["now about 🍕"]
        copy = SQLiteStore(tmp_path / "copy.db")
        try:
            await copy.import_records(await store.list(limit=None))
            assert await _found(copy, "🍕") == ["now about 🍕"]
            assert (await _found(copy, "🍣"))[:1] == [SUSHI]
        finally:
            await copy.aclose()
    finally:
        await store.aclose()


async def test_postgres_finds_pictographs_with_exact_term_counts(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    try:
        await store.add(MEMORIES[0])
        await store.add_many([(text, None) for text in MEMORIES[1:]])
        await _check_found(store)
        updated = (await store.list(limit=None))[-1]
        await store.update(updated.id, content="now about 🍕")
        assert await _found(store, "🍕") == ["now about 🍕"]
    finally:
        await store.aclose()
    assert_counts_exact(postgres_dsn)


async def test_an_sqlite_store_indexed_before_pictographs_finds_them_once_opened(
    tmp_path: Path,
) -> None:
    # Schema 12 left a pictograph out of the index text (or gave none: FTS5 read the content,
    # where a pictograph separates words); opening the file gives them their new index text.
    path = tmp_path / "m.db"
    old_texts = {
        "用户喜欢🍱便当": "用 户 喜 欢 用户 户喜 喜欢 便 当 便当",
        "Ελλάδα ✈ next week": "ελλαδα next week",
    }

    def fill(db: sqlite3.Connection) -> None:
        for seq, content in enumerate(MEMORIES, 1):
            db.execute(
                "INSERT INTO memories (seq, id, scope, content, content_hash, created_at, "
                "index_text) VALUES (?, ?, 0, ?, ?, '2025-01-01T00:00:00.000Z', ?)",
                (seq, f"id{seq}", content, seq, old_texts.get(content)),
            )
        db.execute(
            "INSERT INTO memories_fts (rowid, content, scope) "
            "SELECT seq, coalesce(index_text, content), scope FROM memories WHERE seq > 1"
        )
        db.execute("INSERT INTO memories_unindexed (seq) VALUES (1)")

    old_database(path, 11, fill)
    store = SQLiteStore(path)
    try:
        await _check_found(store)
        store._db.run(check_full_text_index, write=True)
        await _check_found(store)
        assert await store.count() == len(MEMORIES)
    finally:
        await store.aclose()


async def test_a_postgres_store_written_before_pictographs_finds_them_once_opened(
    postgres_dsn: str,
) -> None:
    """A schema of version 6, with memories whose terms the tokenizer of then computed."""
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        with connection.transaction():
            connection.execute("CREATE SCHEMA agentrecall")
            connection.execute(
                "CREATE TABLE agentrecall.migrations (version integer PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for number, migration in enumerate(POSTGRES_MIGRATIONS[:6], 1):
                assert isinstance(migration, str)
                connection.execute(migration.replace("{schema}", '"agentrecall"').encode())
                connection.execute("INSERT INTO agentrecall.migrations VALUES (%s)", [number])
            connection.execute(
                "INSERT INTO agentrecall.stores (name) VALUES ('memory'); "
                "INSERT INTO agentrecall.scopes (store) VALUES (1)"
            )
            for n, content in enumerate(MEMORIES):
                terms = [term for term in keyword_terms(content) if not PICTOGRAPH.match(term)]
                connection.execute(
                    "INSERT INTO agentrecall.memories (store, id, scope, content, content_hash, "
                    "created_at, terms, length) VALUES (1, %s, 1, %s, %s, "
                    "'2025-01-01T00:00:00.000Z', array_to_tsvector(%s::text[]), %s)",
                    [f"old {n}", content, n.to_bytes(16, "big"), sorted(set(terms)), len(terms)],
                )
    assert_counts_exact(postgres_dsn)
    store = PostgresStore(postgres_dsn)
    try:
        await _check_found(store)
    finally:
        await store.aclose()
    assert_counts_exact(postgres_dsn)


def test_the_command_line_finds_an_emoji(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTRECALL_HOME": str(tmp_path), "PYTHONIOENCODING": "utf-8"}

    def agentrecall(*argv: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "agentrecall", *argv],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, ""), argv
        return done.stdout

    agentrecall("add", SUSHI)
    agentrecall("add", "Ben prefers ramen")
    assert [hit["content"] for hit in json.loads(agentrecall("--json", "search", "🍣"))] == [SUSHI]


def test_the_command_line_finds_an_emoji_in_postgresql(
    postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = ["--dsn", postgres_dsn]
    ok(capsys, *dsn, "add", SUSHI)
    ok(capsys, *dsn, "add", "Ben prefers ramen")
    hits = json.loads(ok(capsys, *dsn, "--json", "search", "🍣"))
    assert [hit["content"] for hit in hits] == [SUSHI]
