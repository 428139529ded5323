"""Shorter turns at Python's lock during bulk writes (``_internal.switching``)."""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrecall import SQLiteStore
from agentrecall._internal.switching import SWITCH_INTERVAL, short_turns
from agentrecall.stores.sqlite.tables import CHUNK
from agentrecall.transfer import export_store, import_stream
from agentrecall.types import MemoryRecord


@pytest.fixture(autouse=True)
def default_interval() -> Iterator[float]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield sys.getswitchinterval()
    sys.setswitchinterval(before)


def test_the_interval_is_short_inside_and_put_back_after(default_interval: float) -> None:
    with short_turns():
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    assert sys.getswitchinterval() == default_interval


def test_a_failing_block_puts_the_interval_back(default_interval: float) -> None:
    with pytest.raises(RuntimeError), short_turns():
        raise RuntimeError("the write failed")
    assert sys.getswitchinterval() == default_interval


def test_an_interval_already_shorter_is_kept() -> None:
    sys.setswitchinterval(SWITCH_INTERVAL / 5)
    shorter = sys.getswitchinterval()
    with short_turns():
        assert sys.getswitchinterval() == shorter
    assert sys.getswitchinterval() == shorter


def test_overlapping_writes_in_two_threads_put_it_back_when_the_last_ends(
    default_interval: float,
) -> None:
    entered, release = threading.Event(), threading.Event()

    def other_write() -> None:
        with short_turns():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other_write)
    with short_turns():
        thread.start()
        assert entered.wait(10)
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)  # the other still runs
    release.set()
    thread.join(10)
    assert sys.getswitchinterval() == default_interval


def test_an_interval_the_program_sets_meanwhile_is_left_alone() -> None:
    with short_turns():
        sys.setswitchinterval(0.002)
        chosen = sys.getswitchinterval()
    assert sys.getswitchinterval() == chosen


async def test_bulk_writes_shorten_the_interval_while_they_run_then_put_it_back(
    tmp_path: Path, default_interval: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_to: list[float] = []
    setter = sys.setswitchinterval

    def recorded(interval: float) -> None:
        set_to.append(interval)
        setter(interval)

    monkeypatch.setattr(sys, "setswitchinterval", recorded)
    records = [
        MemoryRecord(id=f"m{i}", content=f"copied {i}", created_at="2026-01-02T03:04:05.678Z")
        for i in range(CHUNK + 1)
    ]
    async with SQLiteStore(tmp_path / "m.db") as store:
        await store.add_many([(f"memory {i}", None) for i in range(CHUNK + 1)])
        assert set_to == [SWITCH_INTERVAL, default_interval]
        assert await store.import_records(records) == CHUNK + 1
        assert set_to[2:] == [SWITCH_INTERVAL, default_interval]
    assert sys.getswitchinterval() == default_interval


async def test_an_import_of_an_export_takes_short_turns_for_its_whole_run(
    tmp_path: Path, default_interval: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SQLiteStore(tmp_path / "from.db") as source:
        await source.add_many([("kept", None), ("also kept", {"k": "v"})])
        exported = io.BytesIO()
        await export_store(source, exported)
    during: list[float] = []
    async with SQLiteStore(tmp_path / "to.db") as target:
        write = target.import_records

        async def observed(records: list[MemoryRecord]) -> int:
            during.append(sys.getswitchinterval())
            return await write(records)

        monkeypatch.setattr(target, "import_records", observed)
        exported.seek(0)
        result = await import_stream(exported, "export.jsonl", target)
    assert result.memories == 2
    assert during == [pytest.approx(SWITCH_INTERVAL)]
    assert sys.getswitchinterval() == default_interval
