"""Ids of new memories: UUID v7 strings that increase strictly within a process."""

from __future__ import annotations

import threading
import time
import uuid

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
