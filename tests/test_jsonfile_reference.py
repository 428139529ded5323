"""JsonFileStore against the files and results of the reference package (fixtures)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import STRANDS_FIXTURES, load_fixture

from agentrecall import InvalidFileError, JsonFileStore, StorageError
from agentrecall.errors import AgentRecallError, InvalidArgumentError
from agentrecall.retrieval import tokenize
from agentrecall.stores import jsonfile

QUERIES = load_fixture("strands_queries.json")
ERRORS = {case["case"]: case for case in load_fixture("strands_errors.json")}


@pytest.fixture
def golden(tmp_path: Path) -> JsonFileStore:
    path = tmp_path / "golden.json"
    shutil.copy(STRANDS_FIXTURES / "strands_written.json", path)
    return JsonFileStore(name="golden", path=path)


@pytest.mark.parametrize(
    "case", QUERIES["queries"], ids=[f"{q['query']!r}-{q['options']}" for q in QUERIES["queries"]]
)
async def test_every_reference_query_gives_identical_results(golden: JsonFileStore, case) -> None:
    hits = await golden.search(case["query"], case["options"])
    assert sorted(tokenize(case["query"])) == case["query_tokens_sorted"]
    assert [{"content": h.content, "metadata": h.metadata} for h in hits] == case["results"]
    assert [h.metadata["_relevanceScore"] for h in hits] == case["scores"]
    assert all(type(h.metadata["_relevanceScore"]) is int for h in hits)
    assert all(h.store_name is None for h in hits)


async def test_reference_file_is_rewritten_byte_for_byte(golden: JsonFileStore) -> None:
    original = (STRANDS_FIXTURES / "strands_written.json").read_bytes()
    # A delete of an absent id rewrites nothing; a real add then appends exactly one record.
    assert await golden.delete("no-such-id") is False
    assert Path(golden.path).read_bytes() == original
    await golden.add("one more fact")
    written = Path(golden.path).read_bytes()
    assert written.startswith(original[:-2]) and written.endswith(b'"\n  }\n]')


async def test_add_log_dedups_like_the_reference(tmp_path: Path) -> None:
    store = JsonFileStore(name="log", path=tmp_path / "log.json")
    first_ids: dict[str, str] = {}
    for call in load_fixture("strands_add_log.json"):
        result = await store.add(call["content"], call["metadata"])
        if call["deduplicated"]:
            assert result.id == first_ids[call["deduplicated_against"]]
        else:
            assert result.id not in first_ids.values()
            first_ids[call["content"]] = result.id
    assert await store.count() == 10


@pytest.mark.parametrize("batched", [False, True], ids=["adds", "add_many"])
async def test_same_millisecond_ties_keep_file_order_like_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    case = QUERIES["extra_cases"][0]
    monkeypatch.setattr(jsonfile, "utc_timestamp", lambda: "2026-01-01T00:00:00.000Z")
    store = JsonFileStore(name="ties", path=tmp_path / "ties.json")
    if batched:  # one batch usually lands within one millisecond
        await store.add_many([(content, None) for content in case["added_in_order"]])
    else:
        for content in case["added_in_order"]:
            await store.add(content)
    hits = await store.search(case["query"])
    assert [h.content for h in hits] == case["result_contents"]
    # At the limit, too, the earlier records of a tie are the ones kept.
    capped = await store.search(case["query"], {"max_search_results": 2})
    assert [h.content for h in capped] == case["result_contents"][:2]


async def test_created_at_ties_compare_as_plain_strings(tmp_path: Path) -> None:
    case = QUERIES["extra_cases"][1]
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(case["file_records"]), encoding="utf-8")
    hits = await JsonFileStore(name="hand", path=path).search(case["query"])
    assert [{"content": h.content, "metadata": h.metadata} for h in hits] == case["results"]


async def test_limit_resolution(tmp_path: Path) -> None:
    case = QUERIES["extra_cases"][2]
    path = tmp_path / "many.json"
    plain = JsonFileStore(name="many", path=path)
    await plain.add_many([(f"tea number {i}", None) for i in range(15)])
    capped = JsonFileStore(name="many", path=path, max_search_results=7)
    assert len(await plain.search("tea")) == case["store_default_result_count"]
    assert len(await capped.search("tea")) == case["store_max7_result_count"]
    assert len(await capped.search("tea", {"max_search_results": 3})) == 3
    assert len(await capped.search("tea", {"max_search_results": 50})) == 15
    assert len(await capped.search("tea", {"max_search_results": None})) == 7


async def test_returned_metadata_is_a_fresh_copy(tmp_path: Path) -> None:
    store = JsonFileStore(name="copy", path=tmp_path / "copy.json")
    await store.add("tea time", {"k": "v", "nested": {"list": [1]}})
    first = (await store.search("tea"))[0]
    assert first.metadata is not None
    first.metadata["k"] = "changed"
    first.metadata["nested"]["list"].append(2)
    again = (await store.search("tea"))[0]
    assert again.metadata == {"k": "v", "nested": {"list": [1]}, "_relevanceScore": 1}


async def test_dedup_is_strip_equal_and_case_sensitive(tmp_path: Path) -> None:
    case = QUERIES["extra_cases"][4]
    store = JsonFileStore(name="dedup", path=tmp_path / "dedup.json")
    first = await store.add("  padded content \n")
    second = await store.add("padded content", {"ignored": True})
    third = await store.add("PADDED content")
    assert (first.id == second.id) is case["ids_equal_first_second"]
    assert (first.id == third.id) is case["ids_equal_first_third"]
    hits = await store.search("padded content")
    assert sorted(h.content for h in hits) == sorted(case["search_contents"])
    assert all("ignored" not in (h.metadata or {}) for h in hits)


# --- error cases of strands_errors.json -------------------------------------------------------

CONSTRUCTOR_ERRORS = {
    "ctor: name ''": {"name": ""},
    "ctor: name '   '": {"name": "   "},
    "ctor: max_search_results=0": {"name": "n", "max_search_results": 0},
    "ctor: max_search_results=-5": {"name": "n", "max_search_results": -5},
    "ctor: path ''": {"name": "n", "path": ""},
    "ctor: path '  '": {"name": "n", "path": "  "},
    "ctor: persist=False with path '' (path validated even when ignored)": {
        "name": "n",
        "persist": False,
        "path": "",
    },
}


@pytest.mark.parametrize("case", sorted(CONSTRUCTOR_ERRORS))
def test_constructor_errors_match_the_reference_family(case: str) -> None:
    expected = ERRORS[case]
    with pytest.raises(InvalidArgumentError) as raised:
        JsonFileStore(**CONSTRUCTOR_ERRORS[case])
    assert isinstance(raised.value, ValueError) and expected["type"] == "ValueError"
    argument = "name" if "name" in case else "max_search_results" if "max" in case else "path"
    assert argument in str(raised.value)


def test_constructor_accepts_what_the_reference_accepts() -> None:
    assert ERRORS["ctor: max_search_results=1 (ok)"]["raised"] is False
    JsonFileStore(name="n", max_search_results=1)
    JsonFileStore(name="\u200b")  # str.strip keeps a zero-width space


def test_name_is_a_required_keyword() -> None:
    with pytest.raises(TypeError):
        JsonFileStore()  # type: ignore[call-arg]


async def test_add_errors(tmp_path: Path) -> None:
    read_only = JsonFileStore(name="ro", path=tmp_path / "ro.json", writable=False)
    for content in ("fact", ""):  # writable is checked before content, as the reference does
        with pytest.raises(InvalidArgumentError, match="read-only") as raised:
            await read_only.add(content)
        assert ERRORS["add: writable=False"]["type"] == "ValueError"
        assert isinstance(raised.value, ValueError)
    store = JsonFileStore(name="w", path=tmp_path / "w.json")
    for content in ("", "  \n\t"):
        with pytest.raises(ValueError, match="content"):
            await store.add(content)
    assert not (tmp_path / "w.json").exists() and not (tmp_path / "ro.json").exists()


@pytest.mark.parametrize("limit", [0, -1])
async def test_search_limit_errors_come_before_anything_else(tmp_path: Path, limit: int) -> None:
    store = JsonFileStore(name="s", path=tmp_path / "s.json")
    for query in ("hi", ""):
        with pytest.raises(ValueError, match="max_search_results"):
            await store.search(query, {"max_search_results": limit})


MALFORMED = {
    "'not json{'": (b"not json{", "invalid JSON"),
    "empty (0 bytes)": (b"", "invalid JSON"),
    "whitespace only": (b"  \n  ", "invalid JSON"),
    "'{}'": (b"{}", "JSON array"),
    "'null'": (b"null", "JSON array"),
    "'\"text\"'": (b'"text"', "JSON array"),
    "'[1]'": (b"[1]", "'createdAt'"),
    "'[null]'": (b"[null]", "'createdAt'"),
    "record missing fields": (b'[{"id": "a"}]', "'createdAt'"),
    "id is a number": (b'[{"id": 1, "content": "hi", "createdAt": "x"}]', "'createdAt'"),
    "createdAt missing": (b'[{"id": "a", "content": "hi"}]', "'createdAt'"),
    "metadata is a string": (
        b'[{"id": "a", "content": "hi", "createdAt": "x", "metadata": "s"}]',
        "'metadata'",
    ),
    "metadata is a list": (
        b'[{"id": "a", "content": "hi", "createdAt": "x", "metadata": []}]',
        "'metadata'",
    ),
    "invalid UTF-8 bytes": (b'[{"id": "a", "content": "\xff", "createdAt": "x"}]', "UTF-8"),
    "second record bad, first good": (
        b'[{"id": "a", "content": "hi", "createdAt": "x"}, {"id": "b"}]',
        "record 1",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_malformed_files_are_reported_and_left_alone(tmp_path: Path, case: str) -> None:
    data, fact = MALFORMED[case]
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    store = JsonFileStore(name="bad", path=path)
    for reference_case in (f"search 'hi' on file: {case}", f"add on file: {case}"):
        assert ERRORS[reference_case]["raised"] is True
        assert "ValueError" in ERRORS[reference_case]["mro"]
    for call in (store.search("hi"), store.add("new fact")):
        with pytest.raises(InvalidFileError) as raised:
            await call
        assert isinstance(raised.value, ValueError)
        assert str(path) in str(raised.value) and fact in str(raised.value)
        assert raised.value.path == str(path)
    assert await store.search("...") == []  # a query without words never reads the file
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    ("case", "data"),
    [
        (
            "metadata null (accepted, treated as absent)",
            b'[{"id": "a", "content": "hi there", "createdAt": "x", "metadata": null}]',
        ),  # noqa: E501
        (
            "extra unknown keys (accepted)",
            b'[{"id": "a", "content": "hi there", "createdAt": "x", "extra": [1]}]',
        ),  # noqa: E501
        (
            "UTF-8 BOM + valid array (accepted)",
            b'\xef\xbb\xbf[{"id": "a", "content": "hi there", "createdAt": "x"}]',
        ),  # noqa: E501
        ("'[]' (accepted, empty)", b"[]"),
    ],
)
async def test_files_the_reference_accepts_are_accepted(
    tmp_path: Path, case: str, data: bytes
) -> None:
    path = tmp_path / "ok.json"
    path.write_bytes(data)
    store = JsonFileStore(name="ok", path=path)
    hits = await store.search("hi")
    assert [h.content for h in hits] == ERRORS[f"search 'hi' on file: {case}"]["result"]
    await store.add("another")
    assert await store.count() == len(ERRORS[f"search 'hi' on file: {case}"]["result"]) + 1
    if b"extra" in data:
        assert b'"extra": [\n      1\n    ]' in path.read_bytes()


async def test_path_that_is_a_directory_is_a_storage_error(tmp_path: Path) -> None:
    assert ERRORS["path is an existing directory: search"]["type"] == "StorageError"
    (tmp_path / "is_a_dir.json").mkdir()
    store = JsonFileStore(name="d", path=tmp_path / "is_a_dir.json")
    for call in (store.search("hi"), store.add("fact")):
        with pytest.raises(StorageError, match="is_a_dir.json") as raised:
            await call
        assert isinstance(raised.value, AgentRecallError)
        assert isinstance(raised.value.__cause__, IsADirectoryError)


async def test_path_below_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("x")
    store = JsonFileStore(name="b", path=tmp_path / "blocker" / "notes.json")
    assert await store.search("hi") == ERRORS["path under a regular file: search"]["result"]
    with pytest.raises(StorageError, match="notes.json"):
        await store.add("fact")


@pytest.mark.parametrize(
    "path", [".", "..", "dir/", "a\\b.json", "caf\udce9.json", b"notes.json", 12, ["a.json"]]
)
def test_paths_that_name_no_usable_file_are_refused_at_construction(path: Any) -> None:
    # The reference fails later, at the first read or write, with a StorageError (or a
    # TypeError for a path that is no string).
    with pytest.raises(InvalidArgumentError, match="path"):
        JsonFileStore(name="p", path=path)


async def test_missing_parent_directories_are_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c" / "notes.json"
    await JsonFileStore(name="n", path=path).add("fact")
    assert path.is_file()
    assert not list(path.parent.glob(".__agentrecall_tmp_*"))


def test_default_file_names_follow_the_reference_and_stay_unique(agentrecall_home: Path) -> None:
    case = ERRORS["default path rule: names -> files under ~/.strands/memory"]
    theirs = {p.replace(".strands/", "") for p in case["result"]}
    ours = {
        name: str(Path(JsonFileStore(name=name).path or "").relative_to(agentrecall_home))
        for name in case["names"]
    }
    for name, file in ours.items():
        if re.fullmatch(r"[A-Za-z0-9_.-]+", name) and ".." not in name:
            # A name the reference keeps as it is: the very file the reference uses.
            assert file == f"memory/{name}.json"
            assert file in theirs
        else:
            # Any other name: the reference's file-safe stem, "+" and a digest of the name.
            match = re.fullmatch(r"(memory/.+)\+[0-9a-f]{16}\.json", file)
            assert match, file
            assert f"{match[1]}.json" in theirs
    assert len(set(ours.values())) == len(ours)


async def test_persist_false_writes_nothing_and_is_private(agentrecall_home: Path) -> None:
    first = JsonFileStore(name="eph", persist=False)
    await first.add("ephemeral fact")
    assert len(await first.search("fact")) == 1
    assert await JsonFileStore(name="eph", persist=False).search("fact") == []
    assert first.path is None
    assert list(agentrecall_home.rglob("*")) == []
