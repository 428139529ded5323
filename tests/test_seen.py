"""SeenStrings: never takes a string it holds for new, rarely a new one for held, fixed size."""

from __future__ import annotations

from agentrecall._internal.seen import BITS_PER_STRING, MAX_BITS, SeenStrings


def test_a_string_added_before_is_always_seen() -> None:
    seen = SeenStrings(10_000)
    texts = [f"memory-{n}" for n in range(20_000)]  # twice what it was sized for
    for text in texts:
        seen.add(text)
    assert all(seen.add(text) for text in texts)


def test_new_strings_are_rarely_taken_for_held_ones() -> None:
    seen = SeenStrings(50_000)
    wrong = sum(seen.add(f"id-{n}") for n in range(50_000))
    # Filling up, a new string passes for a held one well under 0.5% of the time.
    assert wrong < 50_000 * 0.005
    assert sum(seen.add(f"other-{n}") for n in range(10_000)) < 10_000 * 0.01


def test_its_memory_is_fixed_by_what_it_expects() -> None:
    assert len(SeenStrings(0)._bits) == 1024 // 8
    assert len(SeenStrings(1_000_000)._bits) * 8 >= 1_000_000 * BITS_PER_STRING
    assert len(SeenStrings(10**12)._bits) * 8 == MAX_BITS
