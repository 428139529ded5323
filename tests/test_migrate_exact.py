"""``migrate`` from SQLite to SQLite is exact: every scope, every id's history, every timestamp."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from history_scenarios import PAST, SCOPES, operations, play, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_checks import check_full_text_index

from agentrecall import InvalidArgumentError, SQLiteStore
from agentrecall.migrate import migrate_files


async def _copy_and_compare(source: Path, destination: Path, batch: int) -> dict[str, Any]:
    """Migrate ``source`` into the new file ``destination``; return the snapshot of both."""
    before = SQLiteStore(source)
    expected = await snapshot(before)
    await before.aclose()
    result = await migrate_files(source, destination, batch=batch)
    assert (result.copied, result.skipped) == (len(expected["records"]), 0)
    assert result.versions == len(expected["versions"])
    copy = SQLiteStore(destination)
    assert await snapshot(copy) == expected
    await copy.aclose()
    again = await migrate_files(source, destination, batch=batch)
    assert (again.copied, again.versions) == (0, 0)
    copy = SQLiteStore(destination)
    assert await snapshot(copy) == expected
    await copy.aclose()
    with closing(sqlite3.connect(destination)) as db:
        check_full_text_index(db)
    return expected


async def test_several_scopes_with_history_copy_exactly(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    views = [store.scope(**ids) for ids in SCOPES]
    for view in views:
        await view.add("Likes green tea", {"by": view.name})
    ana, bob, ana_trip, bob_full = views[1], views[2], views[3], views[5]
    soon = datetime.now(timezone.utc) + timedelta(days=30)
    trip = await ana.add("Flies to Lisbon on a walk", {"trip": 1}, expires_at=soon)
    await ana.update(trip.id, content="Flies to Porto on a walk", reason="plans changed")
    await ana.update(trip.id, metadata={"trip": 2})
    bike = await bob.add("Owns a red bicycle")
    await bob.update(bike.id, content="Owns a blue bicycle")
    await bob.delete(bike.id, reason="sold it")
    await bob_full.add("Short-lived tea note", expires_at=PAST)
    await store.add("Plain unscoped walk")  # a write: purges the expired note into history
    await ana_trip.add("Packed a raincoat")
    await ana_trip.clear()
    await store.aclose()

    expected = await _copy_and_compare(tmp_path / "a.db", tmp_path / "b.db", batch=2)

    assert [r.content for r in expected["records"]].count("Likes green tea") == 5
    assert {v.change for v in expected["versions"]} == {"update", "delete", "expire"}
    assert expected["histories"][bike.id][-1].reason == "sold it"
    copy = SQLiteStore(tmp_path / "b.db")
    record = await copy.scope(user_id="ana").get(trip.id)
    assert record is not None and record.updated_at is not None
    assert record.expires_at == soon.strftime("%Y-%m-%dT%H:%M:%S.") + f"{soon:%f}"[:3] + "Z"
    # Dedup stays per exact scope in the copy, too.
    assert (await copy.scope(user_id="bob").add(" Likes green tea ")).id == next(
        r.id for r in expected["records"] if r.user_id == "bob" and r.agent_id is None
    )
    await copy.aclose()


async def test_a_view_imports_only_into_itself(tmp_path: Path) -> None:
    source = SQLiteStore(tmp_path / "a.db")
    for ids in SCOPES:
        await source.scope(**ids).add("Same words everywhere")
    await source.add("Words of nobody in particular")
    records = await source.list()
    await source.aclose()

    target = SQLiteStore(tmp_path / "b.db")
    ana = target.scope(user_id="ana")
    mine = [r for r in records if r.user_id == "ana"]
    bobs = next(r for r in records if r.user_id == "bob")
    with pytest.raises(InvalidArgumentError, match=r"record 2 belongs to user_id='bob', outside"):
        await ana.import_records([*mine, bobs])
    assert await target.count() == 0
    # Its own and its session's records keep their scope; an unscoped one joins the view,
    # deduplicated there: the unscoped "Same words everywhere" is ana's own already.
    unscoped = [r for r in records if r.user_id is None and r.agent_id is None]
    assert await ana.import_records([*mine, *unscoped]) == 3
    kept = {r.id: (r.user_id, r.session_id) for r in await target.list()}
    assert kept == {
        mine[0].id: ("ana", None),
        mine[1].id: ("ana", "s1"),
        records[-1].id: ("ana", None),
    }
    await target.aclose()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=operations, batch=st.integers(1, 4))
def test_any_history_round_trips_exactly(steps: list[tuple[Any, ...]], batch: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        source, destination = Path(directory) / "a.db", Path(directory) / "b.db"

        async def scenario() -> None:
            store = SQLiteStore(source, fsync=False)
            await play(store, steps)
            await store.aclose()
            await _copy_and_compare(source, destination, batch)

        asyncio.run(scenario())
