"""Property tests: round trips of any content and metadata, searches that never raise."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrecall import JsonFileStore
from agentrecall.retrieval import tokenize
from agentrecall.stores.jsonformat import file_bytes, new_record, parse_records, record_bytes

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=5)
contents = st.text(min_size=1).filter(lambda text: text.strip() != "")

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(
    records=st.lists(
        st.tuples(st.text(), st.text(), st.text(), st.none() | json_objects), max_size=6
    )
)
def test_incremental_file_bytes_equal_a_whole_dump(
    records: list[tuple[str, str, str, Any]],
) -> None:
    built = [new_record(*fields) for fields in records]
    expected = json.dumps(built, indent=2, ensure_ascii=False).encode("utf-8")
    assert file_bytes([record_bytes(record) for record in built]) == expected
    assert parse_records(expected, "x") == built


@SETTINGS
@given(content=contents, metadata=st.none() | json_objects)
def test_any_content_and_metadata_round_trip(tmp_path: Path, content: str, metadata: Any) -> None:
    path = tmp_path / "round.json"
    path.unlink(missing_ok=True)

    async def scenario() -> None:
        added = await JsonFileStore(name="r", path=path).add(content, metadata)
        fresh = JsonFileStore(name="r", path=path)
        record = await fresh.get(added.id)
        assert record is not None
        assert (record.content, record.metadata) == (content, metadata)
        if tokenize(content):
            hits = await fresh.search(content)
            assert hits[0].content == content
            assert hits[0].metadata == {
                **(metadata or {}),
                "_relevanceScore": len(tokenize(content)),
            }

    asyncio.run(scenario())


@settings(max_examples=200, deadline=None)
@given(query=st.text())
def test_no_query_string_makes_search_raise(query: str) -> None:
    store = QUERY_STORE

    hits = asyncio.run(store.search(query))
    assert all(h.metadata and h.metadata["_relevanceScore"] >= 1 for h in hits)
    assert len(hits) <= 10


QUERY_STORE = JsonFileStore(name="q", persist=False)
asyncio.run(
    QUERY_STORE.add_many(
        [
            (text, None)
            for text in [
                "The café in Zürich",
                "日本語 テキスト",
                "İstanbul user's VS-Code",
                "a_b 3.11",
            ]
        ]
    )
)


words = st.sampled_from(["tea", "the", "cat", "dog", "park", "user", "mode", "dark"])


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.lists(words, max_size=5), st.sampled_from(["", "2026-01-01", "2026-01-02"])),
        max_size=30,
    ),
    query=st.lists(words, min_size=1, max_size=4),
    limit=st.integers(min_value=1, max_value=12),
)
def test_ranking_equals_a_full_sort(
    rows: list[tuple[list[str], str]], query: list[str], limit: int
) -> None:
    from agentrecall.stores.jsonrecords import RecordSet

    records = [
        new_record(str(i), " ".join(ws), created, None) for i, (ws, created) in enumerate(rows)
    ]
    tokens = frozenset(query)
    scored = [
        (len(tokens & tokenize(r["content"])), r["createdAt"], i) for i, r in enumerate(records)
    ]
    # The reference's stable sort on (score, createdAt): equal pairs keep the file's order.
    hits = [row for row in scored if row[0] > 0]
    expected = sorted(hits, key=lambda row: row[:2], reverse=True)[:limit]
    assert RecordSet(records, None).top(tokens, limit) == [(i, s) for s, _, i in expected]
