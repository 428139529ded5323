"""agentrecall on platforms without POSIX modules: importing needs no ``fcntl``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD_TIMEOUT = 60

# Runs before anything imports fcntl: ``None`` in sys.modules makes ``import fcntl`` fail, as
# it does on Windows. (``sys.platform`` stays as it is: agentrecall reads it only when it takes
# a lock, and the standard library's own imports would break without Windows' modules.)
WITHOUT_FCNTL = """
import sys
sys.modules["fcntl"] = None
import agentrecall
from agentrecall import BufferMemory, JsonFileStore, SQLiteStore, SyncStore
from agentrecall.storage import LocalFileStorage
from agentrecall.cli.main import main
print("imported", flush=True)
if sys.argv[2] == "write":
    store = SyncStore(JsonFileStore(name="locked", path=sys.argv[1]))
    try:
        store.add("needs the lock")
    except agentrecall.StorageError as error:
        print("refused:", error)
    finally:
        store.close()
"""


def _run(path: Path, then: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_FCNTL, str(path), then],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_agentrecall_imports_without_fcntl_as_on_windows(tmp_path: Path) -> None:
    assert _run(tmp_path / "memory.json", "import only").splitlines() == ["imported"]


def test_without_any_file_locking_the_first_locked_write_says_why(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    lines = _run(path, "write").splitlines()
    assert lines[0] == "imported"
    assert lines[1].startswith(f"refused: cannot write '{path}': cannot lock it")
    assert f"file locking needs fcntl, which is missing on {sys.platform}" in lines[1]
    assert not path.exists()
