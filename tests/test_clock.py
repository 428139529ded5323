"""ManualClock: the clock tests move by hand, which every store reads while it is in place."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agentrecall import JsonFileStore, SQLiteStore
from agentrecall._internal import clock as stores_clock
from agentrecall.testing import ManualClock

START = datetime(2030, 5, 17, 8, 30, 0, 123_456, tzinfo=timezone.utc)


def test_it_stands_still_until_moved_and_only_moves_forward() -> None:
    clock = ManualClock(START)
    assert clock.now() == START
    assert clock.advance(1.5) == START + timedelta(seconds=1.5)
    assert clock.advance(timedelta(minutes=1)) == START + timedelta(seconds=61.5)
    with pytest.raises(ValueError, match="forward"):
        clock.advance(-1)
    assert clock.now() == START + timedelta(seconds=61.5)


def test_advance_past_goes_one_millisecond_beyond_a_stored_time_and_never_back() -> None:
    clock = ManualClock(START)
    assert clock.advance_past("2030-05-17T08:31:00.000Z") == datetime(
        2030, 5, 17, 8, 31, 0, 1_000, tzinfo=timezone.utc
    )
    assert clock.advance_past("2030-05-17T08:00:00.000Z") == datetime(
        2030, 5, 17, 8, 31, 0, 1_000, tzinfo=timezone.utc
    )


def test_a_naive_start_is_refused_and_other_zones_are_read_as_utc() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        ManualClock(datetime(2030, 1, 1))
    paris = timezone(timedelta(hours=2))
    assert ManualClock(START.astimezone(paris)).now() == START
    assert ManualClock(START.astimezone(paris)).now().tzinfo == timezone.utc


def test_in_place_only_inside_its_block_and_nested_clocks_restore_in_turn() -> None:
    outer, inner = ManualClock(START), ManualClock(START + timedelta(days=1))
    assert stores_clock.now() != START
    with outer:
        assert stores_clock.now() == START
        with inner:
            assert stores_clock.now() == START + timedelta(days=1)
        assert stores_clock.now() == START
        assert stores_clock.utc_timestamp() == "2030-05-17T08:30:00.123Z"
    assert abs(stores_clock.now() - datetime.now(timezone.utc)) < timedelta(hours=1)


async def test_stores_date_memories_and_expire_them_by_it(tmp_path: Path) -> None:
    with ManualClock(START) as clock:
        store = SQLiteStore(tmp_path / "m.db")
        memory = await store.add("Gate B12 until boarding", ttl=60)
        record = await store.get(memory.id)
        assert record is not None
        assert (record.created_at, record.expires_at) == (
            "2030-05-17T08:30:00.123Z",
            "2030-05-17T08:31:00.123Z",
        )
        clock.advance(59.999)
        assert [hit.id for hit in await store.search("gate")] == [memory.id]
        clock.advance(0.001)
        assert await store.search("gate") == [] and await store.get(memory.id) is None
        await store.aclose()
        strands = JsonFileStore(name="m", path=tmp_path / "m.json")
        await strands.add("Dated by the clock in place")
        assert [r.created_at for r in await strands.list()] == ["2030-05-17T08:31:00.123Z"]
