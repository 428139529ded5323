"""Hidden files a new store is staged in, and sweeping those that a killed process left.

A copy into a new file is written to ``.NAME.<12 hex digits>.migrating`` beside ``NAME`` (with
SQLite's ``-wal``, ``-shm`` or ``-journal`` next to it) and renamed into place at the end; a
process killed before then (``SIGKILL``, a power cut) leaves those files behind. Every process
staging a copy of ``NAME`` holds a shared ``flock`` on ``.NAME.migrating.lock`` for as long as
its files exist; the operating system drops it when the process dies. A sweeper that gets the
lock exclusively therefore knows that no live process stages ``NAME``, and removes every staged
file of ``NAME``; while any process stages ``NAME`` nothing is swept, and the next copy does
it. The lock file itself is removed by whoever last holds it, checking (by inode) that the
lock it took is on the file the name still points to, so a removal never lets two processes
believe they hold locks on different files of one name.

Without ``fcntl`` (Windows), nothing is locked and nothing is swept.
"""

from __future__ import annotations

import os
import re
import uuid
from types import ModuleType

from agentrecall.errors import StorageError

STAGED_SUFFIX = ".migrating"
"""How the name of a staged file ends."""

_SIDE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def staged_path(destination: str) -> str:
    """Return a new hidden path beside ``destination`` to stage its copy in."""
    directory, name = os.path.split(destination)
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}{STAGED_SUFFIX}")


class StagingLock:
    """The shared lock a process holds while it stages a copy of ``destination``.

    Taking it first sweeps what dead processes left (see the module's description), and
    makes the destination's directory if missing, as the store would; :meth:`release` drops
    it, removing the lock file when no other process holds it.

    Raises:
        StorageError: the directory or the lock file cannot be made or opened; the message
            names it.
    """

    def __init__(self, destination: str) -> None:
        directory, name = os.path.split(destination)
        self._directory, self._name = directory, name
        self._path = os.path.join(directory, f".{name}{STAGED_SUFFIX}.lock")
        self._fd: int | None = None
        try:
            self._take()
        except OSError as error:
            raise StorageError(
                f"cannot stage a copy of '{destination}': {error.strerror or error} "
                f"('{error.filename or self._path}')"
            ) from error

    def _take(self) -> None:
        fcntl = _fcntl()
        if fcntl is None:
            return
        os.makedirs(self._directory, exist_ok=True)
        fd = self._locked(fcntl.LOCK_EX | fcntl.LOCK_NB)
        if fd is not None:
            self._sweep()
            # Not atomic: a sweeper may take the lock in between, and find nothing of ours yet.
            fcntl.flock(fd, fcntl.LOCK_SH)
            self._fd = fd
        else:
            self._fd = self._locked(fcntl.LOCK_SH)

    def release(self) -> None:
        """Drop the lock (once this process's staged files are gone); idempotent."""
        fd, self._fd = self._fd, None
        fcntl = _fcntl()
        if fd is None or fcntl is None:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another process stages a copy too: the file stays for it
        else:
            if self._current(fd):
                os.remove(self._path)
        finally:
            os.close(fd)

    def _locked(self, operation: int) -> int | None:
        """Open the lock file and lock it; ``None`` when ``LOCK_NB`` was asked and it is held."""
        fcntl = _fcntl()
        assert fcntl is not None
        while True:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, operation)
            except BlockingIOError:
                os.close(fd)
                return None
            except BaseException:
                os.close(fd)
                raise
            if self._current(fd):
                return fd
            os.close(fd)  # removed (and maybe made again) while this process waited: again

    def _current(self, fd: int) -> bool:
        """Whether ``fd`` is the file the lock's name points to now."""
        try:
            return os.path.samestat(os.fstat(fd), os.stat(self._path))
        except FileNotFoundError:
            return False

    def _sweep(self) -> None:
        """Remove every staged file of the destination: no live process holds the lock."""
        pattern = re.compile(
            rf"\.{re.escape(self._name)}\.[0-9a-f]{{12}}{re.escape(STAGED_SUFFIX)}"
            r"(-wal|-shm|-journal)?"
        )
        for entry in os.listdir(self._directory or "."):
            if pattern.fullmatch(entry):
                try:
                    os.remove(os.path.join(self._directory, entry))
                except FileNotFoundError:
                    pass


def remove_staged(path: str) -> None:
    """Remove the staged file ``path`` and what SQLite keeps beside it."""
    for suffix in _SIDE_SUFFIXES:
        if os.path.lexists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")


def _fcntl() -> ModuleType | None:
    try:
        import fcntl
    except ImportError:
        return None
    return fcntl
