from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agentrecall import JsonFileStore, SQLiteStore
from agentrecall._internal.paths import default_store_path, sanitize_name, store_file_stem

SAFE = st.text(st.sampled_from("abcXYZ019_.-"), min_size=1).filter(lambda n: ".." not in n)


@given(SAFE)
def test_a_safe_name_is_its_own_stem(name: str) -> None:
    assert sanitize_name(name) == name
    assert store_file_stem(name) == name


@given(st.text(min_size=1), st.text(min_size=1))
def test_distinct_names_get_distinct_stems(first: str, second: str) -> None:
    if first != second:
        assert store_file_stem(first) != store_file_stem(second)


def test_names_the_reference_merges_are_kept_apart() -> None:
    for pair in (("日本", "中国"), ("a/b", "a_b"), ("a..b", "a_b"), ("é", "è"), ("a b", "a_b")):
        assert sanitize_name(pair[0]) == sanitize_name(pair[1])
        assert store_file_stem(pair[0]) != store_file_stem(pair[1])


def test_an_unsafe_name_keeps_its_safe_form_and_a_stable_digest() -> None:
    # Pinned: a stem that changed between versions would hide a store's file from it.
    assert store_file_stem("日本") == "__+cf2abf0c5be326cb"
    assert store_file_stem("a/b") == "a_b+c14cddc033f64b9d"
    # A command line can carry bytes that are not UTF-8; such a name still gets a file.
    assert store_file_stem("\udcff").startswith("_+")


def test_every_store_takes_its_default_file_from_one_place(agentrecall_home: Path) -> None:
    for name in ("notes", "日本", "a/b"):
        assert JsonFileStore(name=name).path == str(default_store_path(name, ".json"))
        assert SQLiteStore(name=name).path == str(default_store_path(name, ".db"))
        assert default_store_path(name, ".db").parent == agentrecall_home / "memory"
