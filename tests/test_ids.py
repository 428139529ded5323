"""Ids of new memories: UUID v7 strings that increase strictly within a process."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from agentrecall._internal import ids
from agentrecall._internal.ids import new_time_ordered_ids


def test_a_batch_is_strictly_increasing_valid_uuid7_strings() -> None:
    ids = new_time_ordered_ids(20_000)  # far more than one millisecond can tell apart
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for text in ids[:100] + ids[-100:]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # canonical lowercase, hyphenated form
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_ids_carry_the_current_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    (text,) = new_time_ordered_ids(1)
    after = time.time_ns() // 1_000_000
    assert before <= uuid.UUID(text).int >> 80 <= after


def test_later_batches_and_other_threads_only_go_up() -> None:
    seen: list[list[str]] = []

    def mint() -> None:
        for _ in range(50):
            seen.append(new_time_ordered_ids(20))

    threads = [threading.Thread(target=mint) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flat = [text for batch in seen for text in batch]
    assert len(set(flat)) == 4 * 50 * 20
    assert all(batch == sorted(batch) for batch in seen)
    first, second = new_time_ordered_ids(1), new_time_ordered_ids(1)
    assert max(flat) < first[0] < second[0]


def test_zero_ids() -> None:
    assert new_time_ordered_ids(0) == []


def test_a_batch_after_a_higher_id_of_the_same_millisecond_continues_above_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    millis = time.time_ns() // 1_000_000
    high = uuid.UUID(int=(millis << 80) | (0x7 << 76) | (0x2 << 62) | ((1 << 62) - 10))
    monkeypatch.setattr(ids, "_last", high.int)
    monkeypatch.setattr(ids.time, "time_ns", lambda: millis * 1_000_000)
    batch = new_time_ordered_ids(5)
    assert [uuid.UUID(text).int for text in batch] == [high.int + step for step in range(1, 6)]
    assert all(uuid.UUID(text).version == 7 for text in batch)


def test_repeated_random_parts_still_give_strictly_increasing_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ids.os, "urandom", lambda size: bytes([0x5A]) * size)
    batch = new_time_ordered_ids(4)
    values = [uuid.UUID(text).int for text in batch]
    assert values == sorted(set(values)) and len(values) == 4
