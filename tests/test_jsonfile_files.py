"""JsonFileStore's files on disk: symbolic links, temp files of killed writers, hand edits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentrecall import JsonFileStore
from agentrecall.storage.local import STALE_TEMP_SECONDS

TEMP_PREFIX = ".__agentrecall_tmp_"
LOCK_PREFIX = ".__agentrecall_lock_"
CHILD_TIMEOUT = 60


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _records(path: Path) -> list[dict[str, object]]:
    data = json.loads(path.read_bytes())
    assert isinstance(data, list)
    return data


async def test_a_store_opened_through_a_symlink_writes_the_target(tmp_path: Path) -> None:
    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    target, link = real / "memory.json", links / "memory.json"
    link.symlink_to(target)  # dangling until the first write

    through_link = JsonFileStore(name="link", path=link)
    first = await through_link.add("written through the link")
    direct = JsonFileStore(name="direct", path=target)
    second = await direct.add("written to the file itself")
    third = await through_link.add("written through the link again")

    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [r["id"] for r in _records(target)] == [first.id, second.id, third.id]
    # One lock for the one file, beside it: both paths exclude each other.
    assert _names(real) == [f"{LOCK_PREFIX}memory.json", "memory.json"]
    assert _names(links) == ["memory.json"]
    assert await through_link.count() == await direct.count() == 3


async def test_deleting_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    link.symlink_to(target)
    store = JsonFileStore(name="link", path=link)
    kept, gone = await store.add("kept"), await store.add("gone")
    assert await store.delete(gone.id) is True
    assert link.is_symlink()
    assert [r["id"] for r in _records(target)] == [kept.id]


# A writer frozen between writing its temp file and renaming it, so that the kill lands there
# every time. Only the standard library's rename is held up; the store's code runs as shipped.
FROZEN_WRITER = """
import os, sys, time
from agentrecall import JsonFileStore, SyncStore

def frozen(*args, **kwargs):
    print("frozen", flush=True)
    time.sleep(600)

with SyncStore(JsonFileStore(name="killed", path=sys.argv[1])) as store:
    store.add("written before the kill")
    os.replace = frozen
    store.add("lost with the writer")
"""


async def test_a_killed_writers_temp_file_names_its_store_and_the_next_write_removes_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.json"
    child = subprocess.Popen(
        [sys.executable, "-c", FROZEN_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "frozen"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=CHILD_TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=CHILD_TIMEOUT)
        if child.stdout is not None:
            child.stdout.close()
    leftovers = [name for name in _names(tmp_path) if name.startswith(TEMP_PREFIX)]
    assert len(leftovers) == 1
    assert leftovers[0].startswith(f"{TEMP_PREFIX}memory.json.{child.pid}.")

    store = JsonFileStore(name="next", path=path)
    added = await store.add("the next write")
    assert _names(tmp_path) == [f"{LOCK_PREFIX}memory.json", "memory.json"]
    assert [r["content"] for r in _records(path)] == ["written before the kill", "the next write"]
    assert _records(path)[1]["id"] == added.id


async def test_only_temp_files_of_dead_or_long_gone_writers_of_this_file_are_removed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.json"
    store = JsonFileStore(name="sweep", path=path)
    await store.add("first")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(dead.stdout)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        planted = {
            "dead": f"{TEMP_PREFIX}memory.json.{dead_pid}.{'a' * 16}.tmp",
            "alive": f"{TEMP_PREFIX}memory.json.{alive.pid}.{'b' * 16}.tmp",
            "alive but old": f"{TEMP_PREFIX}memory.json.{alive.pid}.{'c' * 16}.tmp",
            "another file's": f"{TEMP_PREFIX}other.json.{dead_pid}.{'d' * 16}.tmp",
            "a longer name's": f"{TEMP_PREFIX}memory.json.bak.{dead_pid}.{'e' * 16}.tmp",
        }
        for name in planted.values():
            (tmp_path / name).write_bytes(b'[{"id": "torn')
        old = time.time() - STALE_TEMP_SECONDS - 60
        os.utime(tmp_path / planted["alive but old"], (old, old))

        await store.add("second")

        remaining = {kind for kind, name in planted.items() if (tmp_path / name).exists()}
        assert remaining == {"alive", "another file's", "a longer name's"}
        assert [r["content"] for r in _records(path)] == ["first", "second"]
    finally:
        alive.kill()
        alive.wait(timeout=CHILD_TIMEOUT)


async def test_delete_removes_every_record_of_an_id_a_hand_edited_file_holds_twice(
    tmp_path: Path,
) -> None:
    path = tmp_path / "edited.json"
    twice = {"id": "twice", "content": "copied by hand", "createdAt": "2024-01-01T00:00:00.000Z"}
    other = {"id": "other", "content": "left alone", "createdAt": "2024-01-02T00:00:00.000Z"}
    path.write_text(json.dumps([twice, other, {**twice, "content": "pasted again"}], indent=2))
    store = JsonFileStore(name="edited", path=path)

    assert await store.delete("twice") is True
    assert [r["id"] for r in _records(path)] == ["other"]
    assert await store.get("twice") is None
    assert await store.delete("twice") is False
