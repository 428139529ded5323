"""Arguments the stores and the buffer refuse with InvalidArgumentError naming them: numbers out
of range, times they cannot hold, batches that are not pairs, ids that are not strings."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

import pytest

from agentrecall import BufferMemory, InvalidArgumentError, JsonFileStore
from agentrecall.conversation.sqlite_sessions import SQLiteSessions
from agentrecall.stores.sqlite import SQLiteStore

INT64_MAX = 2**63 - 1
HUGE_INTEGERS = [2**63, 2**64, 10**400]


@pytest.fixture(params=["jsonfile", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "jsonfile":
        yield JsonFileStore(name="json", path=tmp_path / "memory.json")
    else:
        sqlite = SQLiteStore(tmp_path / "memory.db")
        yield sqlite
        await sqlite.aclose()


# --- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("huge", HUGE_INTEGERS, ids=["2**63", "2**64", "10**400"])
async def test_limits_and_offsets_beyond_64_bits_are_refused_by_name(store: Any, huge: int) -> None:
    await store.add("a remembered fact")
    for call, argument in [
        (lambda: store.search("fact", {"max_search_results": huge}), "max_search_results"),
        (lambda: store.list(limit=huge), "limit"),
        (lambda: store.list(offset=huge), "offset"),
    ]:
        with pytest.raises(InvalidArgumentError, match=f"{argument} must be an integer from"):
            await call()
    with pytest.raises(InvalidArgumentError, match="max_search_results"):
        type(store)(name="again", path=store.path, max_search_results=huge)


async def test_the_largest_limit_and_offset_are_accepted(store: Any) -> None:
    memory = await store.add("a remembered fact")
    assert [r.id for r in await store.list(limit=INT64_MAX)] == [memory.id]
    assert await store.list(offset=INT64_MAX) == []
    hits = await store.search("fact", {"max_search_results": INT64_MAX})
    assert [hit.id for hit in hits] == [memory.id]


@pytest.mark.parametrize(
    "ttl",
    [1e300, float("inf"), float("nan"), 2**1100, 10**400, timedelta.max, 9_000 * 365 * 86_400],
    ids=["1e300", "inf", "nan", "2**1100", "10**400", "timedelta.max", "9000 years"],
)
async def test_ttls_that_cannot_end_before_the_year_10000_are_refused(
    tmp_path: Path, ttl: Any
) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    with pytest.raises(InvalidArgumentError, match="ttl"):
        await store.add("short lived", ttl=ttl)
    with pytest.raises(InvalidArgumentError, match="ttl"):
        await store.add_many([("short lived", None)], ttl=ttl)
    assert await store.count() == 0
    await store.aclose()


@pytest.mark.parametrize("ttl", [1e300, float("inf"), 2**1100])
def test_a_default_ttl_out_of_range_is_refused_at_construction(tmp_path: Path, ttl: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="ttl"):
        SQLiteStore(tmp_path / "memory.db", ttl=ttl)


@pytest.mark.parametrize("idle_ttl", [float("inf"), 2**1100, 1e300])
def test_a_buffer_refuses_an_idle_ttl_out_of_range(idle_ttl: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="idle_ttl"):
        BufferMemory(idle_ttl=idle_ttl)


async def test_a_long_but_possible_ttl_is_kept(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    memory = await store.add("kept for centuries", ttl=500 * 365 * 86_400)
    record = await store.get(memory.id)
    assert record.expires_at is not None and record.expires_at[:4] > "2500"
    await store.aclose()


@pytest.mark.parametrize(
    "busy_timeout",
    [0, -1, float("nan"), float("inf"), True, "30", None, 10**12],
    ids=["0", "-1", "nan", "inf", "True", "str", "None", "10**12"],
)
def test_busy_timeout_must_be_a_positive_number_of_seconds(
    tmp_path: Path, busy_timeout: Any
) -> None:
    with pytest.raises(InvalidArgumentError, match="busy_timeout"):
        SQLiteStore(tmp_path / "memory.db", busy_timeout=busy_timeout)
    with pytest.raises(InvalidArgumentError, match="busy_timeout"):
        SQLiteSessions(str(tmp_path / "buffer.db"), busy_timeout=busy_timeout)


async def test_a_fractional_busy_timeout_is_fine(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db", busy_timeout=0.5)
    await store.add("works")
    assert await store.count() == 1
    await store.aclose()


# --- times -----------------------------------------------------------------------------------


async def test_time_bounds_take_dates_as_midnight_utc(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    memory = await store.add("a bounded note")
    today = datetime.now(timezone.utc).date()
    tomorrow = (today + timedelta(days=1)).isoformat()
    assert [r.id for r in await store.list(created_after=today.isoformat())] == [memory.id]
    assert [r.id for r in await store.list(created_before=tomorrow)] == [memory.id]
    assert await store.list(created_after=tomorrow) == []
    assert await store.count(created_before=f"{today.isoformat()}T00:00:00Z") == 0
    hits = await store.search("bounded", created_after="2020-01-01", created_before=tomorrow)
    assert [hit.id for hit in hits] == [memory.id]
    gone = await store.add("expired at midnight", expires_at="2020-01-01")
    assert await store.get(gone.id) is None
    await store.aclose()


class _NoOffset(tzinfo):
    def utcoffset(self, moment: datetime | None) -> None:
        return None

    def dst(self, moment: datetime | None) -> None:
        return None

    def tzname(self, moment: datetime | None) -> None:
        return None


@pytest.mark.parametrize(
    "value",
    [
        "2020-01-01T10:00",
        "2020-01-01 10:00:00",
        datetime(2020, 1, 1),
        datetime(2020, 1, 1, tzinfo=_NoOffset()),  # a tzinfo without an offset: still naive
        "yesterday",
        "2020-13-01",
    ],
)
async def test_refused_times_say_which_forms_are_accepted(tmp_path: Path, value: Any) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    for argument, call in [
        ("created_after", lambda: store.list(created_after=value)),
        ("created_before", lambda: store.count(created_before=value)),
        ("expires_at", lambda: store.add("x", expires_at=value)),
    ]:
        with pytest.raises(InvalidArgumentError) as raised:
            await call()
        message = str(raised.value)
        assert message.startswith(f"{argument} must be a timezone-aware datetime")
        assert "'2025-01-31' (midnight UTC)" in message and "'2025-01-31T09:30:00Z'" in message
    await store.aclose()


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:00:00-05:00",
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=3))),
    ],
)
async def test_times_outside_the_years_1_to_9999_in_utc_are_refused(
    tmp_path: Path, value: Any
) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    with pytest.raises(InvalidArgumentError, match="expires_at must fall within the years 1 to"):
        await store.add("x", expires_at=value)
    with pytest.raises(InvalidArgumentError, match="created_after must fall within"):
        await store.list(created_after=value)
    await store.aclose()


async def test_an_expiry_in_year_1_utc_is_a_past_one(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    gone = await store.add("long expired", expires_at=datetime(1, 1, 1, tzinfo=timezone.utc))
    assert await store.get(gone.id) is None
    kept = await store.add("still here")
    assert [r.id for r in await store.list(created_after="0001-01-01")] == [kept.id]
    await store.aclose()


# --- batches and ids -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonfile", "in-memory", "sqlite"])
@pytest.mark.parametrize(
    ("items", "index"),
    [(["text"], 0), ([("ok", None), "text"], 1), ([("ok", None), ("a", None, None)], 1)],
    ids=["lone string", "second string", "triple"],
)
async def test_add_many_names_the_item_that_is_not_a_pair(
    tmp_path: Path, kind: str, items: list[Any], index: int
) -> None:
    store: Any = {
        "jsonfile": lambda: JsonFileStore(name="json", path=tmp_path / "memory.json"),
        "in-memory": lambda: JsonFileStore(name="mem", persist=False),
        "sqlite": lambda: SQLiteStore(tmp_path / "memory.db"),
    }[kind]()
    with pytest.raises(
        InvalidArgumentError, match=rf"items\[{index}\] must be a \(content, metadata\) pair"
    ):
        await store.add_many(items)
    assert await store.count() == 0


async def test_a_large_sqlite_batch_names_the_item_that_is_not_a_pair(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    items: list[Any] = [(f"memory {i}", None) for i in range(6_000)]
    items[5_500] = "memory 5500"
    with pytest.raises(InvalidArgumentError, match=r"items\[5500\] must be a \(content, metadata"):
        await store.add_many(items)
    assert await store.count() == 0
    await store.aclose()


async def test_delete_many_refuses_a_single_string(store: Any) -> None:
    memory = await store.add("a memory")
    for single in (memory.id, "abc", b"abc"):
        with pytest.raises(InvalidArgumentError, match="memory_ids must be an iterable of ids"):
            await store.delete_many(single)
    with pytest.raises(InvalidArgumentError, match=r"memory_ids\[1\] must be a string"):
        await store.delete_many([memory.id, None])
    assert await store.count() == 1


@pytest.mark.parametrize("bad_id", [None, 5, b"id", ["id"]], ids=["None", "int", "bytes", "list"])
async def test_ids_that_are_not_strings_are_refused_by_name(store: Any, bad_id: Any) -> None:
    await store.add("a memory")
    calls = [lambda: store.get(bad_id), lambda: store.delete(bad_id)]
    if isinstance(store, SQLiteStore):
        calls += [
            lambda: store.update(bad_id, content="new"),
            lambda: store.history(bad_id),
        ]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match="memory_id must be a string"):
            await call()
    assert await store.count() == 1


@pytest.mark.parametrize("kind", ["jsonfile", "sqlite"])
@pytest.mark.parametrize("items", [5, None, 1.5], ids=["int", "None", "float"])
async def test_add_many_of_something_not_iterable_is_refused_by_name(
    tmp_path: Path, kind: str, items: Any
) -> None:
    store: Any = (
        JsonFileStore(name="json", path=tmp_path / "memory.json")
        if kind == "jsonfile"
        else SQLiteStore(tmp_path / "memory.db")
    )
    with pytest.raises(InvalidArgumentError, match="items must be an iterable of"):
        await store.add_many(items)
    assert await store.count() == 0
    if kind == "sqlite":
        await store.aclose()


@pytest.mark.parametrize("options", [[1], "max_search_results", 3], ids=["list", "str", "int"])
async def test_sqlite_search_options_that_are_not_a_mapping_are_refused(
    tmp_path: Path, options: Any
) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    await store.add("a remembered fact")
    with pytest.raises(InvalidArgumentError, match="search options must be a mapping"):
        await store.search("fact", options)
    await store.aclose()


async def test_an_sqlite_update_that_changes_nothing_keeps_no_version(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    memory = await store.add("a remembered fact", {"n": 1})
    before = await store.get(memory.id)
    for reason in (None, "no reason"):
        assert await store.update(memory.id, reason=reason) == before
    assert await store.get(memory.id) == before
    assert await store.history(memory.id) == []
    assert await store.update("no such id") is None
    await store.aclose()
