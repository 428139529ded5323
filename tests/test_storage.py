from __future__ import annotations

import os
from pathlib import Path

import pytest

import agentrecall.storage
from agentrecall.errors import StorageError
from agentrecall.storage import (
    InMemoryStorage,
    LocalFileStorage,
    Storage,
    StorageSearchResult,
    normalize_key,
    normalize_prefix,
)

BACKENDS = ["memory", "local"]

ALL_BYTES = bytes(range(256))

Backend = InMemoryStorage | LocalFileStorage


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "memory":
        return InMemoryStorage()
    # The base directory does not exist yet: the storage must create it on the first write.
    return LocalFileStorage(tmp_path / "base")


@pytest.fixture
def local(tmp_path: Path) -> LocalFileStorage:
    return LocalFileStorage(tmp_path / "base")


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# --- the protocol ---------------------------------------------------------------------------


def test_backends_satisfy_the_runtime_checkable_protocol(
    storage: Backend,
) -> None:
    assert isinstance(storage, Storage)
    assert isinstance(storage, agentrecall.storage.Storage)
    assert isinstance(storage.namespace("ns"), Storage)


def test_protocol_rejects_objects_without_the_methods() -> None:
    assert not isinstance(object(), Storage)
    assert not isinstance({}, Storage)


def test_search_result_defaults_data_to_none() -> None:
    result = StorageSearchResult(key="k", score=1.0)
    assert result.data is None
    assert result == StorageSearchResult("k", 1.0, None)


# --- round trips ----------------------------------------------------------------------------


async def test_round_trip(storage: Storage) -> None:
    await storage.write("hello.txt", b"hello world")
    assert await storage.read("hello.txt") == b"hello world"


async def test_nested_keys_round_trip(storage: Storage) -> None:
    await storage.write("a/b/c/deep.bin", b"deep")
    assert await storage.read("a/b/c/deep.bin") == b"deep"
    assert await storage.list() == ["a/b/c/deep.bin"]


async def test_local_nested_keys_create_directories(local: LocalFileStorage) -> None:
    await local.write("a/b/c/deep.bin", b"deep")
    base = Path(local.base_dir)
    assert (base / "a" / "b" / "c").is_dir()
    assert (base / "a" / "b" / "c" / "deep.bin").read_bytes() == b"deep"


async def test_missing_key_reads_none(storage: Storage) -> None:
    assert await storage.read("nothing-here") is None
    assert await storage.read("no/such/nested/key") is None


async def test_overwrite_replaces_bytes(storage: Storage) -> None:
    await storage.write("k", b"a much longer first value")
    await storage.write("k", b"short")
    assert await storage.read("k") == b"short"
    assert await storage.list() == ["k"]


async def test_empty_bytes_round_trip(storage: Storage) -> None:
    await storage.write("empty", b"")
    assert await storage.read("empty") == b""
    assert await storage.list() == ["empty"]


async def test_binary_round_trip_all_byte_values(storage: Storage) -> None:
    await storage.write("bin/all.dat", ALL_BYTES)
    assert await storage.read("bin/all.dat") == ALL_BYTES


async def test_written_bytes_are_copied(storage: Storage) -> None:
    buffer = bytearray(b"original")
    await storage.write("k", buffer)
    buffer[:] = b"mutated!"
    assert await storage.read("k") == b"original"


async def test_local_writes_plain_files(local: LocalFileStorage) -> None:
    await local.write("notes/x.md", ALL_BYTES)
    assert (Path(local.base_dir) / "notes" / "x.md").read_bytes() == ALL_BYTES
    assert local.path_of("notes/x.md") == os.path.join(local.base_dir, "notes", "x.md")


# --- delete ---------------------------------------------------------------------------------


async def test_delete_existing_key(storage: Storage) -> None:
    await storage.write("a/b", b"1")
    await storage.write("a/c", b"2")
    await storage.delete("a/b")
    assert await storage.read("a/b") is None
    assert await storage.list() == ["a/c"]


async def test_delete_missing_key_is_a_no_op(storage: Storage) -> None:
    await storage.delete("never-written")
    await storage.delete("no/such/dir/key")
    assert await storage.list() == []


async def test_delete_twice_is_fine(storage: Storage) -> None:
    await storage.write("k", b"v")
    await storage.delete("k")
    await storage.delete("k")
    assert await storage.read("k") is None


# --- list -----------------------------------------------------------------------------------


async def test_list_empty_storage(storage: Storage) -> None:
    assert await storage.list() == []
    assert await storage.list("anything/") == []


async def test_list_all_sorted(storage: Storage) -> None:
    for key in ["zeta", "alpha", "m/b", "m/a", "beta.txt"]:
        await storage.write(key, key.encode())
    assert await storage.list() == ["alpha", "beta.txt", "m/a", "m/b", "zeta"]
    assert await storage.list("") == await storage.list()


async def test_list_by_prefix_returns_full_keys(storage: Storage) -> None:
    for key in ["notes/a.md", "notes/b.md", "notesX", "other/c.md", "n"]:
        await storage.write(key, b"x")
    assert await storage.list("notes/") == ["notes/a.md", "notes/b.md"]
    # A prefix is a string prefix, not a directory: "notes" also matches "notesX".
    assert await storage.list("notes") == ["notes/a.md", "notes/b.md", "notesX"]
    assert await storage.list("notes/a") == ["notes/a.md"]
    assert await storage.list("missing/") == []
    assert await storage.list("zzz") == []


async def test_list_nested_prefixes(storage: Storage) -> None:
    for key in ["a/b/c/1", "a/b/c/2", "a/b/d", "a/bc", "a/e"]:
        await storage.write(key, b"x")
    assert await storage.list("a/") == ["a/b/c/1", "a/b/c/2", "a/b/d", "a/bc", "a/e"]
    assert await storage.list("a/b/") == ["a/b/c/1", "a/b/c/2", "a/b/d"]
    assert await storage.list("a/b") == ["a/b/c/1", "a/b/c/2", "a/b/d", "a/bc"]
    assert await storage.list("a/b/c/") == ["a/b/c/1", "a/b/c/2"]
    assert await storage.list("a/b/c/1") == ["a/b/c/1"]


async def test_list_prefix_is_normalized(storage: Storage) -> None:
    for key in ["a/b/1", "a/b/2", "ab"]:
        await storage.write(key, b"x")
    assert await storage.list("//a///b//") == ["a/b/1", "a/b/2"]
    assert await storage.list("///") == ["a/b/1", "a/b/2", "ab"]


# --- key rules ------------------------------------------------------------------------------


BAD_KEYS = [
    ("../escape", "Invalid storage key '../escape': '..' path segments are not allowed"),
    ("a/../b", "Invalid storage key 'a/../b': '..' path segments are not allowed"),
    ("..", "Invalid storage key '..': '..' path segments are not allowed"),
    ("", "Storage key must not be empty"),
    ("///", "Storage key must not be empty"),
    ("a\\b", "Invalid storage key 'a\\b': backslashes are not allowed"),
    ("..\\escape", "Invalid storage key '..\\escape': backslashes are not allowed"),
]


@pytest.mark.parametrize(("key", "message"), BAD_KEYS)
async def test_bad_keys_are_refused_on_every_operation(
    storage: Storage, key: str, message: str
) -> None:
    with pytest.raises(StorageError) as write_error:
        await storage.write(key, b"x")
    assert str(write_error.value) == message
    with pytest.raises(StorageError) as read_error:
        await storage.read(key)
    assert str(read_error.value) == message
    with pytest.raises(StorageError) as delete_error:
        await storage.delete(key)
    assert str(delete_error.value) == message
    assert await storage.list() == []


async def test_bad_keys_never_escape_the_local_base(tmp_path: Path) -> None:
    storage = LocalFileStorage(tmp_path / "base")
    for key in ["../escape", "a/../../escape"]:
        with pytest.raises(StorageError):
            await storage.write(key, b"x")
    assert files_under(tmp_path) == []


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        ("../", "Invalid storage key '../': '..' path segments are not allowed"),
        ("a/../b", "Invalid storage key 'a/../b': '..' path segments are not allowed"),
        ("a\\", "Invalid storage key 'a\\': backslashes are not allowed"),
    ],
)
async def test_bad_list_prefixes_are_refused(storage: Storage, prefix: str, message: str) -> None:
    with pytest.raises(StorageError) as error:
        await storage.list(prefix)
    assert str(error.value) == message


def test_normalize_key_and_prefix() -> None:
    assert normalize_key("//foo///bar//") == "foo/bar"
    assert normalize_key("foo") == "foo"
    assert normalize_prefix("") == ""
    assert normalize_prefix("///") == ""
    assert normalize_prefix("//foo///bar//") == "foo/bar/"
    assert normalize_prefix("foo/bar") == "foo/bar"
    # ".." only counts as a whole segment.
    assert normalize_key("a..b/..c/d..") == "a..b/..c/d.."


async def test_slashes_collapse_to_the_same_key(storage: Storage) -> None:
    await storage.write("//foo///bar//", b"slashy")
    assert await storage.read("foo/bar") == b"slashy"
    assert await storage.list() == ["foo/bar"]
    await storage.write("foo/bar", b"plain")
    assert await storage.read("//foo///bar//") == b"plain"
    await storage.delete("/foo/bar/")
    assert await storage.read("foo/bar") is None
    assert await storage.list() == []


async def test_dotted_names_that_are_not_dotdot_are_fine(storage: Storage) -> None:
    await storage.write("a..b/..c", b"x")
    await storage.write(".hidden", b"y")
    assert await storage.read("a..b/..c") == b"x"
    assert await storage.list() == [".hidden", "a..b/..c"]


# --- namespaces -----------------------------------------------------------------------------


async def test_namespace_prefixes_keys(storage: Backend) -> None:
    view = storage.namespace("users/alice")
    await view.write("prefs.json", b"{}")
    assert await view.list() == ["prefs.json"]
    assert await view.read("prefs.json") == b"{}"
    assert await storage.list() == ["users/alice/prefs.json"]
    assert await storage.read("users/alice/prefs.json") == b"{}"
    # Writes through the parent are visible through the view.
    await storage.write("users/alice/notes.md", b"n")
    await storage.write("users/bob/notes.md", b"b")
    assert await view.list() == ["notes.md", "prefs.json"]
    assert await view.read("notes.md") == b"n"


async def test_namespaces_compose(storage: Backend) -> None:
    inner = storage.namespace("a").namespace("b/c")
    await inner.write("k", b"v")
    assert await storage.list() == ["a/b/c/k"]
    assert await storage.namespace("a/b").list() == ["c/k"]
    assert await storage.namespace("a").namespace("b").namespace("c").read("k") == b"v"


async def test_namespace_list_prefix_is_relative(storage: Backend) -> None:
    view = storage.namespace("ns")
    for key in ["x/1", "x/2", "y/1"]:
        await view.write(key, b"v")
    await storage.write("x/outside", b"v")
    assert await view.list("x/") == ["x/1", "x/2"]
    assert await view.list() == ["x/1", "x/2", "y/1"]


async def test_namespace_delete_and_isolation(storage: Backend) -> None:
    one = storage.namespace("one")
    two = storage.namespace("two")
    await one.write("k", b"1")
    await two.write("k", b"2")
    assert await one.read("k") == b"1"
    assert await two.read("k") == b"2"
    await one.delete("k")
    assert await one.read("k") is None
    assert await two.read("k") == b"2"
    assert await storage.list() == ["two/k"]


async def test_empty_namespace_lists_nothing(storage: Backend) -> None:
    await storage.write("elsewhere", b"x")
    assert await storage.namespace("empty").list() == []


def test_namespace_is_marked(storage: Backend) -> None:
    assert storage.namespaced is False
    assert storage.namespace("ns").namespaced is True
    assert storage.namespace("a").namespace("b").namespaced is True


@pytest.mark.parametrize("prefix", ["", "///", "../x", "a\\b"])
def test_bad_namespace_prefixes(storage: Backend, prefix: str) -> None:
    with pytest.raises(StorageError):
        storage.namespace(prefix)


async def test_namespace_keys_are_still_checked(storage: Backend) -> None:
    view = storage.namespace("ns")
    with pytest.raises(StorageError, match="'..' path segments are not allowed"):
        await view.write("../escape", b"x")
    with pytest.raises(StorageError, match="must not be empty"):
        await view.read("")
    assert await storage.list() == []


def test_local_namespace_is_a_local_storage_rooted_at_the_subdirectory(tmp_path: Path) -> None:
    storage = LocalFileStorage(tmp_path / "base")
    view = storage.namespace("users/alice")
    assert type(view) is LocalFileStorage
    assert view.base_dir == os.path.join(str(tmp_path / "base"), "users", "alice")
    # Normalized prefix, no trailing slash.
    assert storage.namespace("//users//alice//").base_dir == view.base_dir
    assert not view.base_dir.endswith(("/", os.sep))


def test_local_base_dir_is_normalized(tmp_path: Path) -> None:
    storage = LocalFileStorage(f"{tmp_path}//base/./sub/../")
    assert storage.base_dir == os.path.normpath(str(tmp_path / "base"))


async def test_local_namespace_writes_into_the_subdirectory(tmp_path: Path) -> None:
    storage = LocalFileStorage(tmp_path / "base")
    await storage.namespace("users/alice").write("prefs.json", b"{}")
    assert (tmp_path / "base" / "users" / "alice" / "prefs.json").read_bytes() == b"{}"
    # A fresh storage rooted there sees the same data.
    assert await LocalFileStorage(tmp_path / "base" / "users" / "alice").list() == ["prefs.json"]


async def test_in_memory_namespace_shares_data() -> None:
    storage = InMemoryStorage()
    view = storage.namespace("ns")
    twin = storage.namespace("ns")
    assert type(view) is InMemoryStorage
    await view.write("k", b"v")
    assert await twin.read("k") == b"v"
    await storage.delete("ns/k")
    assert await view.read("k") is None
    assert await twin.list() == []


async def test_in_memory_clear_removes_only_the_view() -> None:
    storage = InMemoryStorage()
    await storage.write("keep/1", b"x")
    await storage.write("ns/1", b"x")
    await storage.write("ns/deep/2", b"x")
    await storage.write("nsX", b"x")
    view = storage.namespace("ns")
    view.clear()
    assert await view.list() == []
    assert await storage.list() == ["keep/1", "nsX"]
    storage.clear()
    assert await storage.list() == []


async def test_in_memory_clear_of_nested_view() -> None:
    storage = InMemoryStorage()
    outer = storage.namespace("a")
    inner = outer.namespace("b")
    await outer.write("keep", b"x")
    await inner.write("gone", b"x")
    inner.clear()
    assert await storage.list() == ["a/keep"]


async def test_in_memory_reads_are_bytes_and_ephemeral_flags() -> None:
    storage = InMemoryStorage()
    await storage.write("k", b"value")
    first = await storage.read("k")
    assert first == b"value"
    assert type(first) is bytes
    assert InMemoryStorage.ephemeral is True
    assert LocalFileStorage.ephemeral is False


# --- no temp or lock files left -------------------------------------------------------------


async def test_no_temp_files_remain_after_writes(local: LocalFileStorage) -> None:
    for i in range(5):
        await local.write("top.txt", f"v{i}".encode())
        await local.write(f"nested/dir/{i}.txt", b"x" * i)
    await local.namespace("ns").write("k", b"v")
    base = Path(local.base_dir)
    leftovers = [p for p in base.rglob("*") if p.name.startswith(".__")]
    assert leftovers == []
    assert files_under(base) == [
        "nested/dir/0.txt",
        "nested/dir/1.txt",
        "nested/dir/2.txt",
        "nested/dir/3.txt",
        "nested/dir/4.txt",
        "ns/k",
        "top.txt",
    ]


@pytest.mark.parametrize("mode", [0o600, 0o664, 0o640], ids=oct)
async def test_a_rewrite_keeps_the_files_permissions(local: LocalFileStorage, mode: int) -> None:
    # A fresh temp file gets the default 0o644 (less the umask): renamed over a private
    # file, it would make the memories readable by everyone.
    await local.write("private.json", b"first")
    path = Path(local.path_of("private.json"))
    path.chmod(mode)
    await local.write("private.json", b"second")
    assert path.stat().st_mode & 0o7777 == mode
    assert path.read_bytes() == b"second"


async def test_a_rewrite_by_root_leaves_the_file_to_its_owner(local: LocalFileStorage) -> None:
    await local.write("theirs.json", b"first")
    path = Path(local.path_of("theirs.json"))
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)  # the file belongs to 'nobody'; root writes it
    owner = (path.stat().st_uid, path.stat().st_gid)
    await local.write("theirs.json", b"second")
    assert (path.stat().st_uid, path.stat().st_gid) == owner
    assert path.read_bytes() == b"second"


async def test_failed_rename_raises_and_cleans_the_temp_file(local: LocalFileStorage) -> None:
    # "k" is a non-empty directory, so renaming the temp file over it fails.
    base = Path(local.base_dir)
    (base / "k").mkdir(parents=True)
    (base / "k" / "child").write_bytes(b"keep")
    with pytest.raises(StorageError) as error:
        await local.write("k", b"new")
    assert local.path_of("k") in str(error.value)
    assert isinstance(error.value.__cause__, OSError)
    assert files_under(base) == ["k/child"]
    assert [p.name for p in base.iterdir()] == ["k"]


# --- LocalFileStorage failures --------------------------------------------------------------


async def test_unwritable_base_dir_raises_storage_error_naming_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "regular-file"
    blocker.write_bytes(b"not a directory")
    storage = LocalFileStorage(blocker / "base")
    with pytest.raises(StorageError) as error:
        await storage.write("k", b"v")
    assert storage.path_of("k") in str(error.value)
    assert isinstance(error.value.__cause__, OSError)
    assert blocker.read_bytes() == b"not a directory"


async def test_base_dir_below_a_file_reads_as_empty(tmp_path: Path) -> None:
    blocker = tmp_path / "regular-file"
    blocker.write_bytes(b"x")
    storage = LocalFileStorage(blocker / "base")
    assert await storage.read("k") is None
    assert await storage.list() == []
    await storage.delete("k")
    assert storage.version_blocking("k") is None


async def test_unwritable_nested_key_raises_storage_error(local: LocalFileStorage) -> None:
    await local.write("file", b"x")
    with pytest.raises(StorageError) as error:
        await local.write("file/below", b"y")
    assert local.path_of("file/below") in str(error.value)
    assert isinstance(error.value.__cause__, OSError)
    assert await local.read("file") == b"x"
    # A key below a regular file is absent, not an error.
    assert await local.read("file/below") is None


async def test_unreadable_key_raises_storage_error(local: LocalFileStorage) -> None:
    await local.write("dir/child", b"x")
    with pytest.raises(StorageError) as error:
        await local.read("dir")
    assert local.path_of("dir") in str(error.value)
    assert isinstance(error.value.__cause__, OSError)


async def test_deleting_a_directory_raises_storage_error(local: LocalFileStorage) -> None:
    await local.write("dir/child", b"x")
    with pytest.raises(StorageError) as error:
        await local.delete("dir")
    assert local.path_of("dir") in str(error.value)
    assert isinstance(error.value.__cause__, OSError)
    assert await local.read("dir/child") == b"x"


async def test_list_skips_private_files(local: LocalFileStorage) -> None:
    await local.write("visible.txt", b"x")
    await local.write("sub/visible.md", b"x")
    base = Path(local.base_dir)
    for directory in (base, base / "sub"):
        for name in [
            ".__agentrecall_tmp_0123abcd",
            ".__agentrecall_lock_visible.txt",
            ".__strands_tmp_deadbeef",
            ".__strands_notes-fts5.sqlite",
        ]:
            (directory / name).write_bytes(b"private")
    (base / ".dotfile").write_bytes(b"ordinary hidden file")
    assert await local.list() == [".dotfile", "sub/visible.md", "visible.txt"]
    assert await local.list("sub/") == ["sub/visible.md"]
    assert await local.list(".__") == []


async def test_list_ignores_empty_directories(local: LocalFileStorage) -> None:
    (Path(local.base_dir) / "empty" / "deeper").mkdir(parents=True)
    assert await local.list() == []
    assert await local.list("empty/") == []


async def test_list_below_a_file_is_empty(local: LocalFileStorage) -> None:
    await local.write("file", b"x")
    assert await local.list("file/") == []
    assert await local.list("file/deeper/") == []
    assert await local.list("file") == ["file"]


async def test_files_made_outside_are_keys(local: LocalFileStorage) -> None:
    base = Path(local.base_dir)
    (base / "outside" / "made").mkdir(parents=True)
    (base / "outside" / "made" / "here.txt").write_bytes(b"external")
    assert await local.list() == ["outside/made/here.txt"]
    assert await local.read("outside/made/here.txt") == b"external"


# --- versions and blocking access -----------------------------------------------------------


def test_version_is_none_when_absent(storage: Backend) -> None:
    assert storage.version_blocking("absent") is None
    assert storage.read_blocking("absent") == (None, None)


def test_version_changes_after_each_write(storage: Backend) -> None:
    seen = []
    # Same-size contents: the version must not depend on the size alone.
    for data in [b"aaaa", b"bbbb", b"cccc", b"dddd"]:
        written = storage.write_blocking("k", data)
        assert written is not None
        assert storage.version_blocking("k") == written
        if seen:
            assert written != seen[-1]
        seen.append(written)


def test_version_is_stable_without_writes(storage: Backend) -> None:
    storage.write_blocking("k", b"v")
    first = storage.version_blocking("k")
    storage.read_blocking("k")
    storage.write_blocking("other", b"v")
    assert storage.version_blocking("k") == first


def test_read_blocking_version_matches_version_blocking(
    storage: Backend,
) -> None:
    written = storage.write_blocking("a/k", b"payload")
    data, version = storage.read_blocking("a/k")
    assert data == b"payload"
    assert version == written
    assert version == storage.version_blocking("a/k")
    assert version == storage.version_blocking("//a//k//")


async def test_version_is_none_after_delete(storage: Backend) -> None:
    storage.write_blocking("k", b"v")
    await storage.delete("k")
    assert storage.version_blocking("k") is None


async def test_blocking_and_async_access_agree(
    storage: Backend,
) -> None:
    storage.write_blocking("k", ALL_BYTES)
    assert await storage.read("k") == ALL_BYTES
    await storage.write("k", b"async")
    assert storage.read_blocking("k")[0] == b"async"


def test_blocking_methods_check_keys(storage: Backend) -> None:
    for call in (
        lambda: storage.write_blocking("../x", b"v"),
        lambda: storage.read_blocking("a\\b"),
        lambda: storage.version_blocking(""),
    ):
        with pytest.raises(StorageError):
            call()


def test_in_memory_lock_blocking_checks_the_key() -> None:
    storage = InMemoryStorage()
    with storage.lock_blocking("k"):
        storage.write_blocking("k", b"v")
    with pytest.raises(StorageError):
        with storage.lock_blocking(""):
            pass


def test_local_lock_leaves_only_a_private_sidecar(local: LocalFileStorage) -> None:
    with local.lock_blocking("dir/k"):
        local.write_blocking("dir/k", b"v")
    assert local.list_blocking() == ["dir/k"]
    sidecars = [p.name for p in (Path(local.base_dir) / "dir").iterdir()]
    assert sorted(sidecars) == [".__agentrecall_lock_k", "k"]


def test_describe_names_where_a_key_lives(storage: Backend, tmp_path: Path) -> None:
    where = storage.describe("a//b")
    if isinstance(storage, LocalFileStorage):
        assert where == os.path.join(str(tmp_path / "base"), "a", "b")
    else:
        assert where == "memory:a/b"
        assert storage.namespace("ns").describe("k") == "memory:ns/k"


# --- keyword search -------------------------------------------------------------------------


async def test_search_finds_key_by_name(storage: Storage) -> None:
    await storage.write("notes/dark-mode.md", b"The user likes it.")
    await storage.write("notes/light.md", b"Nothing relevant.")
    hits = await storage.search("dark mode")
    assert hits == [
        StorageSearchResult(key="notes/dark-mode.md", score=2.0, data=b"The user likes it.")
    ]
    assert isinstance(hits[0].score, float)


async def test_search_scores_name_without_extension_plus_content(storage: Storage) -> None:
    await storage.write("prefs/theme.md", b"Prefers dark colours")
    await storage.write("other.md", b"nothing to see")
    await storage.write("theme-notes.txt", b"")
    # "md" is only an extension: it matches no key.
    assert await storage.search("md") == []
    assert await storage.search("txt") == []
    hits = await storage.search("theme dark prefs")
    assert [(h.key, h.score) for h in hits] == [("prefs/theme.md", 3.0), ("theme-notes.txt", 1.0)]


async def test_search_drops_stop_words(storage: Storage) -> None:
    await storage.write("the/what.txt", b"what is the thing it was")
    assert await storage.search("what is the") == []
    assert await storage.search("The") == []
    assert await storage.search("") == []
    assert await storage.search("  ?!  ") == []
    hits = await storage.search("what is the thing")
    assert [(h.key, h.score) for h in hits] == [("the/what.txt", 1.0)]


async def test_search_ties_keep_key_order(storage: Storage) -> None:
    for key in ["c.txt", "a.txt", "b/z.txt", "b/a.txt"]:
        await storage.write(key, b"apple")
    await storage.write("best.txt", b"apple banana")
    hits = await storage.search("apple banana")
    assert [h.key for h in hits] == ["best.txt", "a.txt", "b/a.txt", "b/z.txt", "c.txt"]
    assert [h.score for h in hits] == [2.0, 1.0, 1.0, 1.0, 1.0]


async def test_search_counts_distinct_words_case_insensitively(storage: Storage) -> None:
    await storage.write("k1", b"Coffee coffee COFFEE")
    await storage.write("k2", b"coffee and tea")
    hits = await storage.search("COFFEE coffee tea")
    assert [(h.key, h.score) for h in hits] == [("k2", 2.0), ("k1", 1.0)]


async def test_search_has_no_limit_and_crosses_batches(storage: Storage) -> None:
    keys = [f"doc{i:02d}" for i in range(20)]
    for key in keys:
        await storage.write(key, b"shared word")
    hits = await storage.search("shared")
    assert [h.key for h in hits] == keys


async def test_search_tolerates_invalid_utf8(storage: Storage) -> None:
    await storage.write("bin", b"\xff\xfe keyword \x80")
    hits = await storage.search("keyword")
    assert [(h.key, h.data) for h in hits] == [("bin", b"\xff\xfe keyword \x80")]


async def test_search_in_a_namespace_sees_only_the_view(
    storage: Backend,
) -> None:
    await storage.write("outside/dark-mode.md", b"dark")
    view = storage.namespace("inside")
    await view.write("dark-mode.md", b"dark")
    hits = await view.search("dark mode")
    assert [(h.key, h.score) for h in hits] == [("dark-mode.md", 2.0)]


async def test_local_search_skips_private_files(local: LocalFileStorage) -> None:
    await local.write("visible", b"secret word")
    (Path(local.base_dir) / ".__strands_tmp_x").write_bytes(b"secret word")
    hits = await local.search("secret")
    assert [h.key for h in hits] == ["visible"]


async def test_dot_segments_name_the_same_key_in_every_backend(storage: Storage) -> None:
    await storage.write("a/./b", b"x")
    assert await storage.list() == ["a/b"]
    assert await storage.read("a/b") == b"x"


@pytest.mark.parametrize("key", ["a\0b", "dir/\0"])
async def test_nul_characters_are_refused(storage: Storage, key: str) -> None:
    with pytest.raises(StorageError, match="NUL"):
        await storage.write(key, b"x")
    with pytest.raises(StorageError, match="NUL"):
        await storage.read(key)


def test_every_local_write_gets_a_new_identity(local: LocalFileStorage) -> None:
    # Same size each time, so only the fine modification stamp can tell the versions apart.
    versions = [local.write_blocking("k", b"same") for _ in range(50)]
    assert len(set(versions)) == 50
    mtimes = [version[2] for version in versions]  # type: ignore[index]
    assert mtimes == sorted(mtimes)


async def test_forgetting_an_unknown_id_creates_nothing(agentrecall_home: Path) -> None:
    from agentrecall import JsonFileStore

    assert await JsonFileStore(name="fresh").delete("no-such-id") is False
    assert list(agentrecall_home.rglob("*")) == []
