"""Storage in a directory of the local file system, written durably."""

from __future__ import annotations

import asyncio
import errno
import os
import re
import stat
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from agentrecall._internal.filelock import acquire_lock_file, release_lock_file
from agentrecall._internal.text import has_surrogate
from agentrecall.errors import StorageError
from agentrecall.storage.base import (
    SearchHits,
    Version,
    normalize_key,
    normalize_prefix,
)
from agentrecall.storage.keyword import keyword_search

TEMP_PREFIX = ".__agentrecall_tmp_"
"""Temp files are ``<TEMP_PREFIX><file name>.<writer's pid>.<random>.tmp``, beside the file."""
LOCK_PREFIX = ".__agentrecall_lock_"
STALE_TEMP_SECONDS = 3600.0
"""A temp file this old is a dead writer's, whatever its process id says (ids are reused)."""
# Files the storage keeps for itself, and the reference's own temp and index files.
_PRIVATE_PREFIXES = (".__agentrecall_", ".__strands_")


class LocalFileStorage:
    """Each key is a file under ``base_dir``; ``/`` in a key makes sub-directories.

    Guarantees:

    * a write is atomic and durable: the bytes go to a temp file in the target directory, which
      is fsynced, renamed over the target, and the directory is fsynced, so after ``write``
      returns the new bytes survive a crash and a reader never sees a partial file;
    * a key whose file is a symbolic link is written through it: the link's target gets the
      new bytes (and holds the lock, see :meth:`lock_blocking`), the link stays a link;
    * a rewritten file keeps its permission bits (a private ``0o600`` file stays private) and,
      where this process may set them (as root), its owner and group; a file whose
      permissions deny this process writing is refused, not replaced;
    * a failed write leaves the previous bytes and no temp file behind; a killed writer's temp
      file is removed by the next holder of the file's lock;
    * reading an absent key (or one below a regular file) gives ``None``; every other failure
      is a :class:`~agentrecall.errors.StorageError` naming the file, with the ``OSError`` chained.

    Blocking work runs in a worker thread, never on the event loop.
    """

    ephemeral = False

    def __init__(self, base_dir: str | os.PathLike[str] = "./.agentrecall/") -> None:
        self.base_dir = os.path.normpath(os.fspath(base_dir))
        self.namespaced = False

    def namespace(self, prefix: str) -> LocalFileStorage:
        """Return a storage rooted at the sub-directory ``prefix`` of this one."""
        view = LocalFileStorage(os.path.join(self.base_dir, normalize_key(prefix)))
        view.namespaced = True
        return view

    def path_of(self, key: str) -> str:
        """Return the file that holds ``key``."""
        return os.path.join(self.base_dir, *normalize_key(key).split("/"))

    def describe(self, key: str) -> str:
        """Return the file that holds ``key``."""
        return self.path_of(key)

    def version_blocking(self, key: str) -> Version:
        """Return ``(inode, size, mtime_ns)`` of the key's file, or ``None`` if absent."""
        path = self.path_of(key)
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            raise StorageError(f"cannot read '{path}': {error.strerror or error}") from error
        return (info.st_ino, info.st_size, info.st_mtime_ns)

    def read_blocking(self, key: str) -> tuple[bytes | None, Version]:
        """Return the file's bytes and the version of exactly those bytes."""
        path = self.path_of(key)
        try:
            with open(path, "rb") as handle:
                info = os.fstat(handle.fileno())
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        except OSError as error:
            raise StorageError(f"cannot read '{path}': {error.strerror or error}") from error
        return data, (info.st_ino, info.st_size, info.st_mtime_ns)

    def write_blocking(self, key: str, data: bytes) -> Version:
        """Write durably (see the class docstring) and return the new version."""
        path = self.path_of(key)
        # Renaming over a symbolic link would replace the link, not the file it points to.
        target = os.path.realpath(path)
        directory, name = os.path.split(target)
        _ensure_directory(directory, path)
        temp = os.path.join(directory, _temp_name(name))
        try:
            current = _writable_file(target, path)
            stamp = _next_mtime_ns(current)
            fd = os.open(temp, _CREATE_FLAGS, 0o644)
            try:
                if current is not None:
                    _take_over(fd, temp, current)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                # Windows sets times by path only.
                os.utime(fd if _UTIME_FD else temp, ns=(stamp, stamp))
                os.fsync(fd)
                info = os.fstat(fd)
            finally:
                os.close(fd)
            os.replace(temp, target)
            _fsync_directory(directory)
        except OSError as error:
            _remove_quietly(temp)
            raise StorageError(f"cannot write '{path}': {error.strerror or error}") from error
        # rename keeps the inode, size and mtime, so the temp file's identity is the target's.
        return (info.st_ino, info.st_size, info.st_mtime_ns)

    @contextmanager
    def lock_blocking(self, key: str) -> Iterator[None]:
        """Hold the cross-process writers' lock of ``key``.

        The lock is a sidecar file beside the key's file, or beside the file a symbolic link
        points to, so every path to one file shares one lock. It takes the file's owner (where
        this process may set it) and permissions, plus its owner's write permission, so that
        whoever may write the file may take its lock. Once it is held, the temp files
        of writers of that file that died (their process is gone, or the file is older than
        :data:`STALE_TEMP_SECONDS`) are removed.
        """
        path = self.path_of(key)
        target = os.path.realpath(path)
        directory, name = os.path.split(target)
        _ensure_directory(directory, path)
        lock = os.path.join(directory, f"{LOCK_PREFIX}{name}")
        try:
            fd = acquire_lock_file(lock)
        except OSError as error:
            raise StorageError(
                f"cannot write '{path}': cannot lock it ({error.strerror or error})"
            ) from error
        try:
            _lock_like_file(fd, lock, target)
            _remove_stale_temps(directory, name)
            yield
        finally:
            release_lock_file(fd)

    def delete_blocking(self, key: str) -> None:
        """Remove the key's file; an absent file is not an error."""
        path = self.path_of(key)
        try:
            os.remove(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as error:
            raise StorageError(f"cannot delete '{path}': {error.strerror or error}") from error

    def list_blocking(self, prefix: str = "") -> list[str]:
        """Return the keys starting with ``prefix``, sorted, leaving out private files.

        Files whose paths are not valid Unicode (bytes the file system encoding cannot
        decode) are left out too: no key names them.
        """
        wanted = normalize_prefix(prefix)
        start = self.base_dir
        # Walk only the deepest directory the prefix names, not the whole tree.
        for segment in wanted.split("/")[:-1]:
            start = os.path.join(start, segment)
        if not os.path.isdir(start):
            return []
        keys: list[str] = []
        try:
            for root, _dirs, files in os.walk(start, onerror=_raise):
                for name in files:
                    if name.startswith(_PRIVATE_PREFIXES):
                        continue
                    relative = os.path.relpath(os.path.join(root, name), self.base_dir)
                    key = relative.replace(os.sep, "/")
                    # A path that is not valid Unicode (undecodable bytes) cannot be a key.
                    if key.startswith(wanted) and not has_surrogate(key):
                        keys.append(key)
        except OSError as error:
            raise StorageError(f"Failed to list keys with prefix '{prefix}'") from error
        return sorted(keys)

    async def write(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` durably."""
        await asyncio.to_thread(self.write_blocking, key, data)

    async def read(self, key: str) -> bytes | None:
        """Return the bytes under ``key``, or ``None``."""
        return (await asyncio.to_thread(self.read_blocking, key))[0]

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        await asyncio.to_thread(self.delete_blocking, key)

    async def list(self, prefix: str = "") -> list[str]:
        """Return the keys starting with ``prefix``, sorted."""
        return await asyncio.to_thread(self.list_blocking, prefix)

    async def search(self, query: str) -> SearchHits:
        """Keyword search over every key (see :func:`keyword_search`)."""
        return await keyword_search(self, query)


def _raise(error: OSError) -> None:
    raise error


def _ensure_directory(directory: str, path: str) -> None:
    """Create ``directory`` and its parents, or say why ``path`` cannot be written."""
    try:
        os.makedirs(directory, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as error:
        raise StorageError(
            f"cannot write '{path}': '{directory}' is not a directory (a file is in the way)"
        ) from error
    except OSError as error:
        raise StorageError(
            f"cannot write '{path}': cannot create '{directory}' ({error.strerror or error})"
        ) from error


def _writable_file(target: str, path: str) -> os.stat_result | None:
    """Return the status of the file ``target`` that a write will replace, ``None`` if absent.

    Renaming over a file needs only the directory's permission, so a file whose permissions
    deny this process writing (``chmod a-w``) would be replaced all the same; it is refused
    instead, as an in-place write (SQLite's) would be.

    Raises:
        OSError: ``target`` cannot be examined, or it is read-only for this process.
    """
    try:
        current = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, "the file is read-only for this process", path)
    return current


def _take_over(fd: int, temp: str, current: os.stat_result, mode: int | None = None) -> None:
    """Give the temp file the permissions and, where allowed, the owner of the file it replaces.

    Otherwise every write would reset a private (0o600) file to the default permissions, and
    a write by another user (root) would take the file away from its owner. ``mode`` replaces
    the file's permissions when given.
    """
    if hasattr(os, "fchown") and (current.st_uid, current.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, current.st_uid, current.st_gid)
        except OSError:
            pass  # only root may give a file away; the permissions still carry over
    if mode is None:
        mode = stat.S_IMODE(current.st_mode)
    # os.fchmod is missing on Windows before Python 3.13.
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(temp, mode)


def _lock_like_file(fd: int, lock: str, target: str) -> None:
    """Give the lock file ``fd`` the owner and permissions of the file ``target`` it guards.

    A lock file root created (a job run with sudo) would otherwise keep the file's owner from
    ever writing it again, and a private file's lock would be readable by everyone. Matching
    is a courtesy: a lock this process may not change stays as it is.
    """
    try:
        wanted, held = os.stat(target), os.fstat(fd)
    except OSError:
        return  # no file yet: the lock keeps the defaults the file will get
    mode = stat.S_IMODE(wanted.st_mode) | stat.S_IWUSR  # its owner must open it for writing
    if (held.st_uid, held.st_gid, stat.S_IMODE(held.st_mode)) == (
        wanted.st_uid,
        wanted.st_gid,
        mode,
    ):
        return
    try:
        _take_over(fd, lock, wanted, mode)
    except OSError:
        pass


def _next_mtime_ns(current: os.stat_result | None) -> int:
    """Return a modification time, in ns, later than the one the file ``current`` has now.

    File systems stamp files from a coarse clock (often 4 ms ticks) and reuse inode numbers, so
    two writes of equal size could otherwise share an identity and hide a change from a reader's
    cache. A fine, strictly increasing stamp set by every writer of ours keeps identities apart.
    """
    now = time.time_ns()
    return now if current is None else max(now, current.st_mtime_ns + 1)


def _fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable; platforms that cannot open one skip it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_UTIME_FD = os.utime in os.supports_fd

# Descriptors from os.open are not inherited by child processes (PEP 446); O_BINARY keeps
# Windows from translating line ends.
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)

_TEMP_TAIL = re.compile(r"(\d+)\.[0-9a-f]{16}\.tmp")


def _temp_name(name: str) -> str:
    """Return a new temp file name for the file ``name``: it names the file and its writer."""
    return f"{TEMP_PREFIX}{_stem(name)}.{os.getpid()}.{uuid.uuid4().hex[:16]}.tmp"


def _stem(name: str) -> str:
    # Long names are cut so that the temp file's name stays within the 255 bytes a name may
    # take on common file systems.
    return name.encode("utf-8", "surrogateescape")[:150].decode("utf-8", "ignore")


def _remove_stale_temps(directory: str, name: str) -> None:
    """Remove the temp files of dead writers of the file ``name`` in ``directory``.

    Only for a holder of the file's lock: every writer of ours holds it while its temp file
    exists, so a temp file seen then belongs to a writer that was killed before it could
    remove it. A process id that is still alive might be another process's by now; such a
    file is kept until it is :data:`STALE_TEMP_SECONDS` old. Sweeping is a courtesy: a failure
    to list or remove is ignored and the write goes on.
    """
    prefix = f"{TEMP_PREFIX}{_stem(name)}."
    now = time.time()
    try:
        with os.scandir(directory) as entries:
            temps = [entry for entry in entries if entry.name.startswith(prefix)]
        for entry in temps:
            tail = _TEMP_TAIL.fullmatch(entry.name[len(prefix) :])
            if tail is None:
                continue
            old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS
            if old or _process_gone(int(tail.group(1))):
                _remove_quietly(entry.path)
    except OSError:
        return


def _process_gone(pid: int) -> bool:
    """Whether no process with ``pid`` exists; ``False`` when that cannot be told."""
    if sys.platform == "win32" or pid <= 0 or pid == os.getpid():
        # On Windows, os.kill terminates the process instead of probing it.
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists, but belongs to someone else
        return False
    return False


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
