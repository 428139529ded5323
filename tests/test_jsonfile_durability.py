"""JsonFileStore durability with real files and real processes.

Covers concurrent writers (processes, tasks, threads), SIGKILL in the middle of an add loop,
unusable files (never overwritten), unusable paths, unwritable directories and cross-process
visibility of acknowledged writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from agentrecall import JsonFileStore, SyncStore
from agentrecall._internal.filelock import acquire_lock_file, release_lock_file
from agentrecall.errors import InvalidFileError, StorageError

TEMP_PREFIX = ".__agentrecall_tmp_"
LOCK_PREFIX = ".__agentrecall_lock_"
CHILD_TIMEOUT = 60
CREATED_AT = "2024-01-01T00:00:00.000Z"
NOBODY = 65534


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "agentrecall-home"
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


# --------------------------------------------------------------------------------------------
# helpers


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _spawn(script: str, *args: str, stdin: int | None = None, stderr: IO[Any] | None = None):
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=_child_env(),
    )


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=_child_env(),
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _records(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    assert isinstance(data, list)
    return data


def _temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX))


def _fresh_view(path: Path) -> tuple[int, set[str], set[str]]:
    """Read the file with a brand-new store: (count, ids from list, contents from list)."""
    with SyncStore(JsonFileStore(name="fresh", path=path)) as store:
        records = store.list()
        count = store.count()
    return count, {r.id for r in records}, {r.content for r in records}


# --------------------------------------------------------------------------------------------
# 1. several processes adding to one file at the same time

WRITER = """
import sys
from agentrecall import JsonFileStore, SyncStore
path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with SyncStore(JsonFileStore(name="shared", path=path)) as store:
    print("ready", flush=True)
    sys.stdin.readline()  # the parent releases every writer at once
    for i in range(n):
        store.add(f"process {tag} entry {i}", {"tag": tag, "i": i})
print("done", flush=True)
"""


def test_four_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    tags, per_process = ["p0", "p1", "p2", "p3"], 100
    children = [
        _spawn(WRITER, str(path), tag, str(per_process), stdin=subprocess.PIPE) for tag in tags
    ]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out, _ = child.communicate(timeout=CHILD_TIMEOUT)
            assert child.returncode == 0
            assert out.strip() == "done"
    finally:  # on failure too: no orphan writers, no unclosed pipes (ResourceWarning)
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=CHILD_TIMEOUT)
            for pipe in (child.stdin, child.stdout):
                if pipe is not None and not pipe.closed:
                    pipe.close()

    records = _records(path)
    expected = {f"process {tag} entry {i}" for tag in tags for i in range(per_process)}
    assert len(records) == len(tags) * per_process
    assert {r["content"] for r in records} == expected
    assert len({r["id"] for r in records}) == len(records)
    for record in records:
        tag, _, i = record["content"].split()[1:]
        assert record["metadata"] == {"tag": tag, "i": int(i)}
    # each writer's entries keep their order in the shared file
    for tag in tags:
        mine = [int(r["content"].split()[-1]) for r in records if r["metadata"]["tag"] == tag]
        assert mine == list(range(per_process))
    count, _, contents = _fresh_view(path)
    assert count == 400 and contents == expected
    assert _temp_files(tmp_path) == []


# --------------------------------------------------------------------------------------------
# 2. concurrent adds within one process


async def test_concurrent_adds_on_one_event_loop_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "gather.json"
    store = JsonFileStore(name="gather", path=path)
    contents = [f"gathered fact number {i}" for i in range(20)]
    adds = [store.add(content, {"i": i}) for i, content in enumerate(contents)]
    searches = [store.search("gathered fact") for _ in range(5)]
    results = await asyncio.gather(*adds, *searches)
    ids = [result.id for result in results[: len(contents)]]
    assert len(set(ids)) == len(contents)
    assert await store.count() == len(contents)
    records = _records(path)
    assert sorted(r["content"] for r in records) == sorted(contents)
    assert {r["id"] for r in records} == set(ids)
    for i, memory_id in enumerate(ids):
        got = await store.get(memory_id)
        assert got is not None and got.content == contents[i] and got.metadata == {"i": i}
    assert (await asyncio.to_thread(_fresh_view, path))[0] == len(contents)


def test_two_store_instances_in_threads_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "threads.json"
    per_thread = 50
    barrier = threading.Barrier(2)
    ids: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def work(tag: str) -> None:
        try:
            with SyncStore(JsonFileStore(name=f"thread-{tag}", path=path)) as store:
                barrier.wait(timeout=CHILD_TIMEOUT)
                ids[tag] = [store.add(f"thread {tag} item {i}").id for i in range(per_thread)]
        except BaseException as error:  # reported in the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(tag,)) for tag in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=CHILD_TIMEOUT)
    assert errors == []
    assert not any(thread.is_alive() for thread in threads)

    all_ids = set(ids["a"]) | set(ids["b"])
    assert len(all_ids) == 2 * per_thread
    records = _records(path)
    assert len(records) == 2 * per_thread
    assert {r["id"] for r in records} == all_ids
    # each instance sees the other's writes (its cache must not hide them)
    for tag in ("a", "b"):
        store = JsonFileStore(name=f"again-{tag}", path=path)
        with SyncStore(store) as sync:
            assert sync.count() == 2 * per_thread


# --------------------------------------------------------------------------------------------
# 3. SIGKILL in the middle of an add loop

ADD_LOOP = """
import sys
from agentrecall import JsonFileStore, SyncStore
path, tag = sys.argv[1], sys.argv[2]
padding = " ".join(["padding"] * 1500)  # a bigger file makes a kill mid-write likelier
with SyncStore(JsonFileStore(name="crash", path=path)) as store:
    i = 0
    while True:
        result = store.add(f"round {tag} entry {i} {padding}")
        print(result.id, flush=True)  # printed only after the add returned
        i += 1
"""


def _wait_for_temp_file(directory: Path, child: subprocess.Popen[str]) -> None:
    """Return once the child has a temp file open (it is inside a write), or has died."""
    deadline = time.monotonic() + CHILD_TIMEOUT
    while not _temp_files(directory) and child.poll() is None:
        assert time.monotonic() < deadline, "the add loop never started another write"


def _kill_after(
    path: Path, tag: str, acks_before_kill: int, mid_write: bool, stderr: IO[Any]
) -> list[str]:
    """Run the add loop, SIGKILL it after ``acks_before_kill`` acks; return every ack it sent.

    With ``mid_write`` the kill waits until the next write's temp file exists, so it lands
    between creating the temp file and renaming it (or just after the rename).
    """
    child = _spawn(ADD_LOOP, str(path), tag, stderr=stderr)
    assert child.stdout is not None
    acked: list[str] = []
    try:
        while len(acked) < acks_before_kill:
            line = child.stdout.readline()
            if not line:
                stderr.seek(0)
                pytest.fail(f"add loop died early: {stderr.read()}")
            acked.append(line.strip())
        if mid_write:
            _wait_for_temp_file(path.parent, child)
        child.send_signal(signal.SIGKILL)
        rest = child.stdout.read()  # acks printed before the kill landed count too
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=CHILD_TIMEOUT)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    acked.extend(line.strip() for line in rest.splitlines() if line.strip())
    return acked


def test_sigkill_during_adds_leaves_a_readable_file_with_every_acknowledged_entry(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crash.json"
    all_acked: set[str] = set()
    with open(tmp_path / "child-stderr.txt", "w+", encoding="utf-8") as stderr:
        # between two adds; inside a write early on; inside a write of a bigger file
        rounds = [(1, False), (4, True), (15, True)]
        for round_number, (acks_before_kill, mid_write) in enumerate(rounds):
            tag = f"r{round_number}"
            for leftover in _temp_files(tmp_path):  # so a new temp file means a new write
                (tmp_path / leftover).unlink()
            acked = _kill_after(path, tag, acks_before_kill, mid_write, stderr)
            all_acked.update(acked)

            records = _records(path)  # parses: no torn file
            ids = {r["id"] for r in records}
            assert all_acked <= ids
            # this round's entries form a prefix: all acked ones, plus at most the one in flight
            mine = [r for r in records if r["content"].startswith(f"round {tag} entry ")]
            positions = [int(r["content"].split()[3]) for r in mine]
            assert positions == list(range(len(positions)))
            assert len(acked) <= len(mine) <= len(acked) + 1
            all_acked.update(r["id"] for r in mine)  # the in-flight one is on disk: keep it

            # a stray temp file (as a kill before the rename leaves) must not disturb reads
            (tmp_path / f"{TEMP_PREFIX}{'0' * 31}{round_number}").write_bytes(b'[{"id": "tor')
            count, fresh_ids, _ = _fresh_view(path)
            assert count == len(records) and fresh_ids == ids

    # the lock died with its holder: a new writer is not blocked, and nothing was lost
    with SyncStore(JsonFileStore(name="after", path=path)) as store:
        new_id = store.add("written after the crashes").id
        assert {r.id for r in store.list()} == all_acked | {new_id}
        assert store.search("padding round r2", max_search_results=1)
    assert {r["id"] for r in _records(path)} == all_acked | {new_id}


# --------------------------------------------------------------------------------------------
# 4. files that cannot be used: reported, never overwritten

GOOD = {"id": "good-1", "content": "hi there", "createdAt": CREATED_AT}


def _file(*records: object) -> bytes:
    return json.dumps(list(records)).encode("utf-8")


BAD_FILES = {
    "truncated": b'[{"id": "a", "content": "hi", "createdAt": "2024',
    "garbage": b"hi there, not json",
    "trailing-garbage": _file(GOOD) + b" ]",
    "empty": b"",
    "whitespace": b" \n\t  \r\n",
    "object": b"{}",
    "null": b"null",
    "string": b'"text"',
    "number": b"42",
    "array-of-number": b"[1]",
    "array-of-null": b"[null]",
    "array-of-string": b'["hi"]',
    "missing-id": _file({"content": "hi", "createdAt": CREATED_AT}),
    "missing-content": _file({"id": "a", "createdAt": CREATED_AT}),
    "missing-created-at": _file({"id": "a", "content": "hi"}),
    "id-number": _file({"id": 1, "content": "hi", "createdAt": CREATED_AT}),
    "content-null": _file({"id": "a", "content": None, "createdAt": CREATED_AT}),
    "metadata-string": _file({**GOOD, "metadata": "text"}),
    "metadata-list": _file({**GOOD, "metadata": ["a"]}),
    "metadata-number": _file({**GOOD, "metadata": 3}),
    "second-record-bad": _file(GOOD, {"id": "b", "content": "hi"}),
    "invalid-utf8": b'[{"id": "a", "content": "hi \xff\xfe", "createdAt": "2024"}]',
    "latin1-text": '[{"id": "a", "content": "hi caf\u00e9", "createdAt": "x"}]'.encode("latin-1"),
    # Python's json module raises RecursionError / plain ValueError for these
    "deeply-nested": b"[" * 100_000,
    "huge-integer": _file({**GOOD, "metadata": {"n": 0}}).replace(
        b'"n": 0', b'"n": 1' + b"0" * 5000
    ),
    # Python parses this, but copying the metadata for a hit would exceed the recursion limit
    "metadata-nested-600": _file({**GOOD, "metadata": {"k": []}}).replace(
        b"[]", b"[" * 600 + b"]" * 600
    ),
}


def _assert_invalid(error: pytest.ExceptionInfo[InvalidFileError], path: Path) -> None:
    assert isinstance(error.value, ValueError)
    assert path.name in str(error.value)
    assert Path(error.value.path) == path


@pytest.mark.parametrize("content", BAD_FILES.values(), ids=BAD_FILES.keys())
async def test_unusable_file_is_reported_and_never_overwritten(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    store = JsonFileStore(name="broken", path=path)

    operations = {
        "search": lambda: store.search("hi"),
        "add": lambda: store.add("x"),
        "add_many": lambda: store.add_many([("x", None), ("y", {"k": 1})]),
        "delete": lambda: store.delete("some-id"),
        "get": lambda: store.get("some-id"),
        "list": lambda: store.list(),
        "count": lambda: store.count(),
    }
    for name, operation in operations.items():
        with pytest.raises(InvalidFileError) as error:
            await operation()
        _assert_invalid(error, path)
        assert path.read_bytes() == content, f"{name} changed the file"
    # a query without words reads nothing, so it cannot fail
    assert await store.search("") == []
    assert await store.search("...") == []
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(LOCK_PREFIX)) == [
        "broken.json"
    ]

    # once the file is repaired, the same store instance works again
    path.write_bytes(_file(GOOD))
    hits = await store.search("hi")
    assert [hit.id for hit in hits] == ["good-1"]
    await store.add("x")
    assert [r["content"] for r in _records(path)] == ["hi there", "x"]


ACCEPTED_FILES = {
    "metadata-null": _file({**GOOD, "metadata": None}),
    "unknown-keys": _file({**GOOD, "extra": {"nested": [1, 2]}, "tags": ["t"], "score": 0.5}),
    "utf8-bom": b"\xef\xbb\xbf" + _file(GOOD),
    "empty-array": b"[]",
    "empty-array-whitespace": b" [ ] \n",
}


@pytest.mark.parametrize("content", ACCEPTED_FILES.values(), ids=ACCEPTED_FILES.keys())
async def test_accepted_file_variants_read_and_survive_a_rewrite(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "ok.json"
    path.write_bytes(content)
    store = JsonFileStore(name="ok", path=path)
    before = json.loads(content.decode("utf-8-sig"))

    assert await store.count() == len(before)
    hits = await store.search("hi")
    assert [hit.id for hit in hits] == [r["id"] for r in before]
    for hit in hits:
        assert hit.metadata == {"_relevanceScore": 1}
    if before:
        got = await store.get("good-1")
        assert got is not None and got.content == "hi there" and got.metadata is None

    new_id = (await store.add("a brand new memory")).id
    after = _records(path)  # rewritten: still valid UTF-8 JSON, no BOM
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert after[:-1] == before  # unknown keys and null metadata preserved as they were
    assert after[-1]["id"] == new_id and after[-1]["content"] == "a brand new memory"
    count, ids, _ = await asyncio.to_thread(_fresh_view, path)
    assert count == len(before) + 1 and new_id in ids


# --------------------------------------------------------------------------------------------
# 5. paths that cannot hold a file


async def test_directory_in_place_of_the_file_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.mkdir()
    (path / "inside.txt").write_bytes(b"keep me")
    store = JsonFileStore(name="notes", path=path)
    for operation in (lambda: store.search("hi"), lambda: store.add("x")):
        with pytest.raises(StorageError) as error:
            await operation()
        assert str(path) in str(error.value)
        assert not isinstance(error.value, ValueError)
        assert isinstance(error.value.__cause__, OSError)
    for operation in (store.list, store.count, lambda: store.get("a")):
        with pytest.raises(StorageError):
            await operation()
    assert path.is_dir() and [p.name for p in path.iterdir()] == ["inside.txt"]
    assert _temp_files(tmp_path) == []


async def test_path_below_a_regular_file(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"a regular file")
    path = blocker / "notes.json"
    store = JsonFileStore(name="notes", path=path)
    assert await store.search("hi") == []
    assert await store.count() == 0
    assert await store.list() == []
    assert await store.get("a") is None
    with pytest.raises(StorageError) as error:
        await store.add("x")
    assert str(path) in str(error.value)
    assert isinstance(error.value.__cause__, OSError)
    assert blocker.read_bytes() == b"a regular file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


# --------------------------------------------------------------------------------------------
# 6. an unwritable directory

# Runs as root only long enough to import and exercise every code path (modules are imported
# lazily; the interpreter lives under root's home), then drops to 'nobody' for the scenario.
UNWRITABLE = """
import json, os, sys
from agentrecall import JsonFileStore, SyncStore
from agentrecall.errors import StorageError

path, scratch, nobody = sys.argv[1], sys.argv[2], int(sys.argv[3])
with SyncStore(JsonFileStore(name="warm", path=scratch)) as warm:
    warm.delete(warm.add("warm up the code paths").id)
    warm.search("warm up")
if os.getuid() == 0:
    try:
        os.setgroups([])
        os.setgid(nobody)
        os.setuid(nobody)
    except OSError as error:
        print(json.dumps({"skip": f"cannot drop root privileges: {error}"}))
        sys.exit(0)
probe = os.path.join(os.path.dirname(path), "probe")
try:
    os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
except PermissionError:
    pass
else:
    os.remove(probe)
    print(json.dumps({"skip": "the directory is still writable after dropping privileges"}))
    sys.exit(0)

def attempt(call):
    try:
        call()
    except StorageError as error:
        return ["StorageError", str(error)]
    except Exception as error:
        return [type(error).__name__, str(error)]
    return None

with SyncStore(JsonFileStore(name="ro", path=path)) as store:
    result = {
        "uid": os.getuid(),
        "count": store.count(),
        "hits": [hit.content for hit in store.search("readonly")],
        "add": attempt(lambda: store.add("must never be written")),
        "delete": attempt(lambda: store.delete(store.list()[0].id)),
        "count_after": store.count(),
    }
print(json.dumps(result))
"""


@pytest.fixture
def unwritable_dir() -> Iterator[Path]:
    # Not below tmp_path: pytest makes its temp tree 0o700, which 'nobody' cannot enter.
    directory = Path(tempfile.mkdtemp(prefix="agentrecall-unwritable-"))
    try:
        yield directory
    finally:
        directory.chmod(0o755)
        shutil.rmtree(directory)


@pytest.mark.parametrize("lock_file_exists", [False, True], ids=["no-lock-file", "lock-file"])
def test_unwritable_directory_refuses_writes_and_keeps_the_file(
    unwritable_dir: Path, tmp_path: Path, lock_file_exists: bool
) -> None:
    path = unwritable_dir / "ro.json"
    with SyncStore(JsonFileStore(name="ro", path=path)) as store:
        store.add("a readonly fact")
    lock = unwritable_dir / f"{LOCK_PREFIX}ro.json"
    if lock_file_exists:
        lock.chmod(0o666)  # the lock succeeds, so the write itself must fail
    else:
        lock.unlink()  # the lock file cannot even be created
    before = path.read_bytes()
    listing = sorted(p.name for p in unwritable_dir.iterdir())
    if os.geteuid() == 0:
        unwritable_dir.chmod(0o755)  # owned by root: readable, not writable, for 'nobody'
    else:
        unwritable_dir.chmod(0o555)

    out = _run(UNWRITABLE, str(path), str(tmp_path / "scratch" / "warm.json"), str(NOBODY))
    result = json.loads(out)
    if "skip" in result:
        pytest.skip(result["skip"])

    assert result["uid"] != 0
    assert result["count"] == 1 and result["hits"] == ["a readonly fact"]
    for operation in ("add", "delete"):
        kind, message = result[operation]
        assert kind == "StorageError", message
        assert str(path) in message
    assert result["count_after"] == 1
    assert path.read_bytes() == before
    assert sorted(p.name for p in unwritable_dir.iterdir()) == listing  # no temp file left


# The start of a child script: warms up the code paths as root (with the file at argv[2]),
# then runs on as 'nobody' (uid argv[3]); the file the test is about is at argv[1].
AS_NOBODY = """
import json, os, sys
from agentrecall import JsonFileStore, SyncStore
from agentrecall.errors import StorageError

path, scratch, nobody = sys.argv[1], sys.argv[2], int(sys.argv[3])
with SyncStore(JsonFileStore(name="warm", path=scratch)) as warm:
    warm.delete(warm.add("warm up the code paths").id)
if os.getuid() == 0:
    os.setgroups([])
    os.setgid(nobody)
    os.setuid(nobody)
"""

# Warms up as root like UNWRITABLE, then, as 'nobody', tries to change a file that is
# read-only for it in a directory it may write (where a rename would replace the file).
READ_ONLY_FILE = (
    AS_NOBODY
    + """result = {"uid": os.getuid()}
with SyncStore(JsonFileStore(name="ro", path=path)) as store:
    result["hits"] = [hit.content for hit in store.search("readonly")]
    for name, call in (("add", lambda: store.add("must never be written")),
                       ("delete", lambda: store.delete(store.list()[0].id))):
        try:
            call()
            result[name] = None
        except StorageError as error:
            result[name] = str(error)
print(json.dumps(result))
"""
)


def test_a_read_only_file_is_refused_not_replaced(unwritable_dir: Path, tmp_path: Path) -> None:
    path = unwritable_dir / "ro.json"
    with SyncStore(JsonFileStore(name="ro", path=path)) as store:
        store.add("a readonly fact")
    before = path.read_bytes()
    path.chmod(0o444)
    (unwritable_dir / f"{LOCK_PREFIX}ro.json").chmod(0o666)  # the lock is not what refuses
    unwritable_dir.chmod(0o777)  # the directory allows the rename that would replace the file

    out = _run(READ_ONLY_FILE, str(path), str(tmp_path / "scratch" / "warm.json"), str(NOBODY))
    result = json.loads(out)

    assert result["uid"] != 0
    assert result["hits"] == ["a readonly fact"]
    for operation in ("add", "delete"):
        message = result[operation]
        assert message is not None, f"{operation} replaced the read-only file"
        assert str(path) in message and "read-only" in message
    assert path.read_bytes() == before
    assert path.stat().st_mode & 0o777 == 0o444
    assert not [p for p in unwritable_dir.iterdir() if p.name.endswith(".tmp")]


# Warms up as root like UNWRITABLE, then adds as 'nobody', the owner of the file.
OWNER_ADDS = (
    AS_NOBODY
    + """with SyncStore(JsonFileStore(name="theirs", path=path)) as store:
    try:
        store.add("added by the owner")
        print(json.dumps({"uid": os.getuid(), "error": None}))
    except StorageError as error:
        print(json.dumps({"uid": os.getuid(), "error": str(error)}))
"""
)


def test_a_write_by_root_leaves_the_file_and_its_lock_to_the_owner(
    unwritable_dir: Path, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can write another user's file")
    unwritable_dir.chmod(0o777)
    path = unwritable_dir / "theirs.json"
    path.write_text("[]", encoding="utf-8")
    path.chmod(0o600)
    os.chown(path, NOBODY, NOBODY)  # nobody's private file, which a job run as root adds to
    with SyncStore(JsonFileStore(name="theirs", path=path)) as store:
        store.add("added by root")
    lock = unwritable_dir / f"{LOCK_PREFIX}theirs.json"
    for written in (path, lock):
        info = written.stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (NOBODY, NOBODY, 0o600)

    out = _run(OWNER_ADDS, str(path), str(tmp_path / "scratch" / "warm.json"), str(NOBODY))
    assert json.loads(out) == {"uid": NOBODY, "error": None}
    assert [r["content"] for r in _records(path)] == ["added by root", "added by the owner"]


# --------------------------------------------------------------------------------------------
# 7. an acknowledged write is visible to a fresh process

WRITE_THEN_EXIT = """
import json, os, sys
from agentrecall import JsonFileStore, SyncStore
store = SyncStore(JsonFileStore(name="durable", path=sys.argv[1]))
result = store.add("zebras have striped skin underneath", {"source": "child", "n": [1, 2]})
print(result.id, flush=True)
os._exit(0)  # no clean shutdown: the acknowledgement alone must be enough
"""

READ_BACK = """
import json, sys
from agentrecall import JsonFileStore, SyncStore
with SyncStore(JsonFileStore(name="durable", path=sys.argv[1])) as store:
    record = store.get(sys.argv[2])
    hits = store.search("zebras skin")
    print(json.dumps({
        "content": record.content,
        "metadata": record.metadata,
        "hits": [[hit.id, hit.metadata] for hit in hits],
        "count": store.count(),
    }))
"""


def test_acknowledged_write_is_read_by_a_fresh_process(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "durable.json"
    memory_id = _run(WRITE_THEN_EXIT, str(path)).strip()
    assert memory_id
    seen = json.loads(_run(READ_BACK, str(path), memory_id))
    metadata = {"source": "child", "n": [1, 2]}
    assert seen == {
        "content": "zebras have striped skin underneath",
        "metadata": metadata,
        "hits": [[memory_id, {**metadata, "_relevanceScore": 2}]],
        "count": 1,
    }
    assert _temp_files(path.parent) == []


# --------------------------------------------------------------------------------------------
# 8. a fork in the middle of a call

# The add waits for the lock file the test holds; meanwhile the main thread forks. The
# child then adds through its copy of the store, and reports whether it could.
FORK_DURING_ADD = """
import asyncio, json, os, signal, sys, threading, time
from agentrecall import JsonFileStore

store = JsonFileStore(name="fork", path=sys.argv[1])
adder = threading.Thread(target=lambda: asyncio.run(store.add("added while forking")))
adder.start()
while not store._mutex.locked():  # the add has begun, and waits for the test's lock
    time.sleep(0.01)
print("forking", flush=True)
pid = os.fork()
if pid == 0:
    asyncio.run(store.add("added by the child"))
    os._exit(0)
adder.join()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print(json.dumps({"child": os.waitstatus_to_exitcode(status)}), flush=True)
        break
    time.sleep(0.05)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    print(json.dumps({"child": "hung"}), flush=True)
"""


def test_a_fork_during_a_write_leaves_the_child_a_working_store(tmp_path: Path) -> None:
    path = tmp_path / "fork.json"
    lock = acquire_lock_file(str(tmp_path / f"{LOCK_PREFIX}fork.json"))
    child = _spawn(FORK_DURING_ADD, str(path))
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "forking"
        time.sleep(0.5)  # lets a fork that does not wait for the add happen in its middle
    finally:
        release_lock_file(lock)
    out, _ = child.communicate(timeout=CHILD_TIMEOUT)
    assert child.returncode == 0
    assert json.loads(out) == {"child": 0}
    contents = sorted(r["content"] for r in json.loads(path.read_text(encoding="utf-8")))
    assert contents == ["added by the child", "added while forking"]
