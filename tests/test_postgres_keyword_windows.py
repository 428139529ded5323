"""PostgresStore's newest-postings windows: exactly a term's newest postings, whatever the scope."""

from __future__ import annotations

import pytest

from agentrecall import PostgresStore


def large_store_items() -> list[tuple[str, dict[str, str] | None]]:
    """20,100 memories in which "boat" (1,002 memories, 5%) is limited to its newest postings.

    "lake" (1,000 memories) takes the rare terms' budget first, so in a search for both,
    "boat" adds only its 300 newest postings. The oldest 15 "boat" memories of the default
    scope are the only ones tagged ``old``; the 15 memories of scope ``ana`` come first.
    """
    items: list[tuple[str, dict[str, str] | None]] = [
        (f"boat ride {n}", {"kind": "old"}) for n in range(15)
    ]
    for n in range(20_070):
        if n % 20 == 0 and n < 972 * 20:
            items.append((f"boat {n} harbour", None))
        elif n % 20 == 10 and n < 1_000 * 20:
            items.append((f"lake {n} shore with a long view over the water", None))
        else:
            items.append((f"filler {n} words", None))
    return items


@pytest.mark.asyncio
async def test_a_term_limited_to_its_newest_postings_still_finds_a_small_scope_and_filter(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn)
    await store.scope(user_id="ana").add_many([(f"boat trip {n}", None) for n in range(15)])
    await store.add_many(large_store_items())

    # The newest "boat" postings are found in the window of the newest memories: with room
    # for 1,100 candidates, all of "lake" and the newest 100 of "boat" are the candidates.
    found = await store.search("lake boat", {"max_search_results": 1_100})
    boats = {hit.content for hit in found if hit.content.startswith("boat")}
    assert boats == {f"boat {n} harbour" for n in range(971 * 20, 871 * 20, -20)}

    # The scope's and the filter's memories are the oldest, far outside that window.
    scoped = await store.scope(user_id="ana").search("lake boat")
    assert sorted(hit.content for hit in scoped) == sorted(f"boat trip {n}" for n in range(5, 15))
    filtered = await store.search("lake boat", filter={"kind": "old"})
    assert sorted(hit.content for hit in filtered) == sorted(f"boat ride {n}" for n in range(5, 15))
    await store.aclose()
