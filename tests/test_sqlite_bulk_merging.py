"""Bulk writes hold the full-text index's merges off only inside their own transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlite_checks import check_full_text_index

from agentrecall import InvalidArgumentError, SQLiteStore
from agentrecall.stores.sqlite.merging import AUTOMERGE, CRISIS_MERGE
from agentrecall.types import MemoryRecord

STAMP = "2025-01-31T09:30:00.000Z"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "m.db", fsync=False)
    yield store
    await store.aclose()


def _merge_settings(path: str) -> tuple[int, int]:
    """The index's effective ``automerge`` and ``crisismerge``, as another connection sees them."""
    with closing(sqlite3.connect(path)) as db:
        held = dict(
            db.execute(
                "SELECT k, v FROM memories_fts_config WHERE k IN ('automerge', 'crisismerge')"
            ).fetchall()
        )
    return int(held.get("automerge", AUTOMERGE)), int(held.get("crisismerge", CRISIS_MERGE))


def _records(count: int, start: int = 0) -> list[MemoryRecord]:
    return [
        MemoryRecord(id=f"old-{i}", content=f"imported fact number{i}", created_at=STAMP)
        for i in range(start, start + count)
    ]


async def test_a_bulk_import_leaves_the_merge_settings_and_a_whole_index(
    store: SQLiteStore,
) -> None:
    await store.count()  # creates the file
    before = _merge_settings(store.path)
    assert before == (8, 16)  # as the migrations set them
    # Several chunks in one call, then a second call on top of the first's segments.
    assert await store.import_records(_records(12_000)) == 12_000
    assert await store.import_records(_records(7_000, start=12_000)) == 7_000
    assert _merge_settings(store.path) == before
    for number in (0, 5_999, 11_999, 18_999):
        hits = await store.search(f"number{number}", {"max_search_results": 3})
        assert [h.id for h in hits] == [f"old-{number}"]
    store._db.run(check_full_text_index, write=True)


async def test_a_bulk_import_failing_late_leaves_the_merge_settings(
    store: SQLiteStore,
) -> None:
    assert await store.import_records(_records(6_000)) == 6_000
    before = _merge_settings(store.path)
    records = _records(12_000, start=6_000)
    # Built in the last chunk: the chunks before it were fed to the index with merges held.
    records[-1] = MemoryRecord(id="old-bad", content="x", created_at="yesterday")
    with pytest.raises(InvalidArgumentError, match=r"record 11999 \(old-bad\)"):
        await store.import_records(records)
    assert _merge_settings(store.path) == before
    assert await store.count() == 6_000
    store._db.run(check_full_text_index, write=True)
