"""Pages of versions merged from the history and from expired memories not purged yet."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentrecall.stores.records import EXPIRED_SEQ, Cursor, expired_from, versions_page
from agentrecall.types import MemoryVersion


def _row(seq: int, memory_id: str) -> tuple[Any, ...]:
    change = "expire" if seq == EXPIRED_SEQ else "update"
    moment = "2025-01-01T00:00:00.000Z"
    scope = (None, None, None)
    lifetime = (None, None, None, None, None)  # created_at, retirement, world time
    return (seq, f"{memory_id} {seq}", None, moment, change, None, memory_id, *scope, *lifetime)


def _read(
    kept: list[tuple[Any, ...]], expired: list[tuple[Any, ...]], after: Cursor | None, limit: int
) -> tuple[list[MemoryVersion], Cursor | None]:
    """What a backend reads for one page: as its two queries select, then the merge."""
    page = [row for row in kept if after is None or (row[6], row[0]) > after][:limit]
    if after is not None:
        compare, memory_id = expired_from(after)
        expired = [
            r for r in expired if r[6] > memory_id or (compare == ">=" and r[6] == memory_id)
        ]
    return versions_page(page, len(page) == limit, expired[:limit], limit)


@given(
    st.lists(st.tuples(st.sampled_from("abcdef"), st.booleans()), max_size=25),
    st.integers(1, 6),
)
def test_pages_give_every_version_once_in_order_whatever_their_size(
    writes: list[tuple[str, bool]], limit: int
) -> None:
    kept = sorted((_row(seq, memory_id) for seq, (memory_id, _) in enumerate(writes)), key=_key)
    expired = [_row(EXPIRED_SEQ, m) for m in sorted({m for m, gone in writes if gone})]
    everything = [MemoryVersion(*row[1:]) for row in sorted([*kept, *expired], key=_key)]
    found: list[MemoryVersion] = []
    after: Cursor | None = None
    while True:
        page, after = _read(kept, expired, after, limit)
        found += page
        if after is None:
            break
    assert found == everything


def _key(row: tuple[Any, ...]) -> tuple[str, int]:
    return row[6], row[0]
