"""SQLiteStore finds other forms of a word, and Chinese, Japanese and Korean text.

The index stems words (FTS5's ``porter``) and reads a run of CJK characters as its characters
and neighbouring pairs; the ranking reads text the same way in Python
(:mod:`agentrecall.retrieval.keywords`), checked here against the index's own vocabulary.
A database written before this is indexed again the first time it is opened.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import LOCOMO_DEV
from sqlite_checks import CHINESE, check_full_text_index, old_database, unstemmed_database

from agentrecall import SQLiteStore
from agentrecall.evaluation.locomo import load
from agentrecall.retrieval.cjk import cjk_terms
from agentrecall.retrieval.keywords import index_text, keyword_terms
from agentrecall.retrieval.pictographs import PICTOGRAPH, index_word
from agentrecall.stores.sqlite import stemming
from agentrecall.types import MemoryRecord

JAPANESE = "ユーザーは通路側の席が好きです"
KOREAN = "사용자는 통로 좌석을 좋아합니다"


def _index_terms(db: sqlite3.Connection) -> dict[int, Counter[str]]:
    """Return, per memory, the terms the full-text index holds for its text."""
    db.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab (main, memories_fts, 'instance')")
    held: dict[int, Counter[str]] = {}
    for term, doc in db.execute("SELECT term, doc FROM temp.vocab WHERE col = 'content'"):
        held.setdefault(doc, Counter())[term] += 1
    db.execute("DROP TABLE temp.vocab")
    return held


async def _ids_found(store: SQLiteStore, query: str) -> list[str]:
    return [hit.id or "" for hit in await store.search(query)]


async def test_a_search_finds_other_forms_of_its_words(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        seat = (await store.add("The user prefers an aisle seat")).id
        dance = (await store.add("Ana danced at the wedding", None)).id
        await store.add("Nothing to see here", None)
        assert await _ids_found(store, "which seats?") == [seat]
        assert await _ids_found(store, "dancing") == [dance]
        store._db.run(check_full_text_index, write=True)  # and once they are indexed
        assert await _ids_found(store, "Seating preferences") == [seat]
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("text", "query"),
    [(CHINESE, "座位"), (JAPANESE, "席"), (KOREAN, "좌석"), (f"Ana: {CHINESE} (aisle)", "座位")],
)
@pytest.mark.parametrize("indexed", [False, True])
async def test_cjk_text_is_found_by_its_words(
    tmp_path: Path, text: str, query: str, indexed: bool
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        target = (await store.add(text)).id
        await store.add("用户喜欢咖啡", None)
        await store.add("The user likes coffee", None)
        if indexed:
            store._db.run(check_full_text_index, write=True)
        assert (await _ids_found(store, query))[0] == target
    finally:
        await store.aclose()


async def test_mixed_cjk_and_latin_text_is_found_by_either(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        items = [("我的iPhone手机坏了, seats", None), ("手を洗う", None), ("an iPad", None)]
        phone = (await store.add_many(items))[0].id  # a batch of 3: waits for the index
        store._db.run(check_full_text_index, write=True)
        for query in ["手机", "iphone", "seat", "iPhone手机"]:
            assert (await _ids_found(store, query))[0] == phone
        # Rewriting and deleting keep the index exact (the delete uses the text indexed).
        updated = await store.update(phone or "", content="新しい手机 case")
        assert updated is not None
        assert await _ids_found(store, "iphone") == []
        assert (await _ids_found(store, "手机"))[0] == phone
        store._db.run(check_full_text_index, write=True)
        assert await store.delete(phone or "")
        store._db.run(check_full_text_index, write=True)
    finally:
        await store.aclose()


async def test_imported_and_bulk_added_cjk_text_is_found(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        record = MemoryRecord(id="kept", content=JAPANESE, created_at="2025-01-01T00:00:00.000Z")
        await store.import_records([record])
        # Batches above 16 memories are indexed in their own transaction, not later.
        bulk = await store.add_many([(f"{KOREAN} {i}", None) for i in range(20)])
        assert await _ids_found(store, "席") == ["kept"]
        found = await _ids_found(store, "좌석")
        assert len(found) == 10 and set(found) <= {result.id for result in bulk}
        store._db.run(check_full_text_index, write=True)
    finally:
        await store.aclose()


def test_cjk_runs_become_characters_and_pairs() -> None:
    assert cjk_terms("座位") == ["座", "位", "座位"]
    assert cjk_terms("席") == ["席"]
    # Widened: half-width katakana and its voiced mark become one full-width character.
    assert cjk_terms("ｶﾞｲﾄﾞ") == cjk_terms("ガイド") == ["ガ", "イ", "ド", "ガイ", "イド"]
    # Hangul keeps its syllables; punctuation ends a run.
    assert cjk_terms("좌석。席") == ["좌", "석", "좌석", "席"]
    assert index_text("Ana likes 座位!") == "ana likes 座 位 座位"


def test_compatibility_characters_fold_to_lowercase_words() -> None:
    # They decompose into capitals, which are lowercased too.
    assert keyword_terms("Ⅻ 𝐀𝐁𝐂 ﬁnance Ｔｏｋｙｏ") == keyword_terms("xii abc finance tokyo")
    assert index_text("naïve café") == "naive cafe"
    assert index_text("the user’s seat") is None  # nothing to fold: read as written


def test_latin_text_is_read_as_before_the_cjk_rule() -> None:
    # No LoCoMo turn holds a CJK character, one a diacritic and four an emoji (🌟 💪 🎉 🧘):
    # the index reads the others
    # as they are, so Latin recall is what stemming alone makes it; and Latin words around
    # CJK are read as they would be on their own.
    turns = [turn.content() for conversation in load(LOCOMO_DEV) for turn in conversation.turns]
    assert sum(index_text(text) is not None for text in turns) == 5
    mixed = keyword_terms(f"Caroline's café: {CHINESE} was painted")
    assert [t for t in mixed if t.isascii()] == keyword_terms("Caroline's café: was painted")


# Texts FTS5 alone reads otherwise than the ranking: compatibility characters it does not
# widen, diacritics it does not fold, the Greek final sigma, a dotted capital I.
FOLDED = [
    "ﬁnance", "Ｔｏｋｙｏ", "x²", "①", "Ελλάδα", "σοφός", "чай", "ǅemal", "Ⅻ", "½", "İstanbul",
    "𝐀𝐁𝐂", "naïve café",
]  # fmt: skip


@pytest.mark.parametrize("indexed", [False, True])
async def test_a_word_fts5_reads_otherwise_is_found_by_itself_and_its_folded_form(
    tmp_path: Path, indexed: bool
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    try:
        results = await store.add_many([(f"memory about {text} here", None) for text in FOLDED])
        ids = {text: result.id for text, result in zip(FOLDED, results, strict=True)}
        if indexed:
            store._db.run(check_full_text_index, write=True)
        for text in FOLDED:
            assert (await _ids_found(store, text))[:1] == [ids[text]], text
        for query, text in [("ελλαδα", "Ελλάδα"), ("finance", "ﬁnance"), ("tokyo", "Ｔｏｋｙｏ")]:
            assert (await _ids_found(store, query))[:1] == [ids[text]], query
        store._db.run(check_full_text_index, write=True)
        held = store._db.run(_index_terms)
    finally:
        await store.aclose()
    for seq, text in enumerate(FOLDED, 1):
        terms = Counter(keyword_terms(f"memory about {text} here"))
        if "ς" in text:  # FTS5 also folds the final sigma, in the query as in the text
            terms = Counter({term.replace("ς", "σ"): n for term, n in terms.items()})
        assert terms == held[seq], text


async def test_the_index_and_the_ranking_read_every_locomo_turn_alike(tmp_path: Path) -> None:
    turns = [turn.content() for conversation in load(LOCOMO_DEV) for turn in conversation.turns]
    texts = [*dict.fromkeys(turns), CHINESE, JAPANESE, KOREAN, "ｶﾞｲﾄﾞ 我的iPhone手机"]
    store = SQLiteStore(tmp_path / "m.db")
    try:
        await store.add_many([(text, None) for text in texts])
        held = store._db.run(_index_terms)
    finally:
        await store.aclose()
    for seq, text in enumerate(texts, 1):
        # The index holds a pictograph (LoCoMo has a few emoji) as its private use word.
        terms = [index_word(t) if PICTOGRAPH.match(t) else t for t in keyword_terms(text)]
        assert Counter(terms) == held[seq], text


async def test_an_older_database_is_indexed_again_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    unstemmed_database(path)
    store = SQLiteStore(path)
    reports: list[tuple[int, int]] = []
    try:
        with caplog.at_level(logging.INFO, logger=stemming.__name__):
            await store.setup(progress=lambda done, total: reports.append((done, total)))
            await store.setup(progress=lambda done, total: reports.append((done, total)))
        assert reports == [(0, 3), (3, 3)]
        (record,) = caplog.records
        assert record.levelno == logging.INFO
        assert record.getMessage() == (
            f"re-indexing 3 memories of '{path}' for stemmed search; this runs once"
        )
        assert sorted(await _ids_found(store, "seating")) == ["id1", "id3"]
        assert await _ids_found(store, "座位") == ["id2"]
        waiting = store._db.run(
            lambda db: db.execute("SELECT seq FROM memories_unindexed").fetchall()
        )
        assert waiting == [(3,)]
        store._db.run(check_full_text_index, write=True)
    finally:
        await store.aclose()


async def test_without_a_progress_callback_the_reindex_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    unstemmed_database(path)
    store = SQLiteStore(path)
    try:
        with caplog.at_level(logging.INFO, logger=stemming.__name__):
            assert await store.count() == 3
        (record,) = caplog.records
        assert record.levelno == logging.WARNING and "re-indexing 3 memories" in record.message
        assert record.agentrecall_reindex == str(path)
    finally:
        await store.aclose()


async def test_a_new_database_is_not_announced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    reports: list[Any] = []
    try:
        with caplog.at_level(logging.INFO, logger=stemming.__name__):
            await store.setup(progress=lambda *report: reports.append(report))
        assert caplog.records == [] and reports == []
    finally:
        await store.aclose()


async def test_a_file_indexed_before_folding_finds_its_accented_memories_once_opened(
    tmp_path: Path,
) -> None:
    # Schema 10 gave the index an accented memory's content as written, which FTS5 reads
    # otherwise than the ranking: opening the file gives it its folded words.
    path = tmp_path / "m.db"
    texts = [
        "memory about Ελλάδα",
        "ﬁnance report",
        "用户喜欢靠过道的座位",
        "plain words",
        "Ｔｏｋｙｏ",
    ]

    def fill(db: sqlite3.Connection) -> None:
        for seq, content in enumerate(texts, 1):
            old = index_text(content) if "用" in content else None  # CJK was split already
            db.execute(
                "INSERT INTO memories (seq, id, scope, content, content_hash, created_at, "
                "index_text) VALUES (?, ?, 0, ?, ?, '2025-01-01T00:00:00.000Z', ?)",
                (seq, f"id{seq}", content, seq, old),
            )
        db.execute(
            "INSERT INTO memories_fts (rowid, content, scope) "
            "SELECT seq, coalesce(index_text, content), scope FROM memories WHERE seq < 5"
        )
        db.execute("INSERT INTO memories_unindexed (seq) VALUES (5)")

    old_database(path, 10, fill)
    store = SQLiteStore(path)
    try:
        for query, memory in [("ελλαδα", "id1"), ("finance", "id2"), ("座位", "id3")]:
            assert (await _ids_found(store, query))[:1] == [memory], query
        assert (await _ids_found(store, "tokyo"))[:1] == ["id5"]  # waiting, then indexed
        store._db.run(check_full_text_index, write=True)
        assert (await _ids_found(store, "tokyo"))[:1] == ["id5"]
        assert await store.count() == len(texts)
    finally:
        await store.aclose()
