"""An exclusive lock shared by every process on one machine, held on a sidecar file.

On POSIX the lock is ``flock`` on the whole file; on Windows, ``msvcrt.locking`` on its first
byte. Both belong to one open file (a descriptor), so two handles in one process exclude each
other too, and the operating system drops the lock when its holder dies: a crashed writer never
leaves a stale lock behind. Nothing is promised across machines: a file shared over a network
file system is locked only as well as that file system supports.

The platform's module is imported when a lock is first taken, so importing agentrecall needs
neither ``fcntl`` nor ``msvcrt``; on a platform with neither, taking a lock raises ``OSError``
saying so.
"""

from __future__ import annotations

import errno
import os
import sys
import time

# How long a Windows locker sleeps between attempts; ``msvcrt.locking`` itself gives up after
# ten tries a second apart, and a lock must wait as long as its holder takes.
_WINDOWS_RETRY_SECONDS = 0.05


def acquire_lock_file(lock_path: str) -> int:
    """Open ``lock_path`` (created if missing), lock it exclusively and return the descriptor.

    Blocks until the lock is free. :func:`release_lock_file` releases it (closing the
    descriptor does too, when the process ends at the latest). Raises ``OSError`` if the file
    cannot be opened or locked.
    """
    # Descriptors from os.open are not inherited by child processes (PEP 446).
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
    try:
        _lock(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def release_lock_file(fd: int) -> None:
    """Release a lock taken by :func:`acquire_lock_file` and close its descriptor."""
    try:
        if sys.platform == "win32":
            import msvcrt

            # Windows asks for the region to be unlocked before the handle is closed.
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    finally:
        os.close(fd)


def _lock(fd: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        # A lock covers bytes from the file position on; byte 0 may lie past the end of the
        # (empty) file, which Windows allows.
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return
            except PermissionError:
                # Held by another handle: wait, as flock does, for as long as it takes.
                time.sleep(_WINDOWS_RETRY_SECONDS)
    else:
        try:
            import fcntl
        except ImportError as error:
            raise OSError(
                errno.ENOSYS, f"file locking needs fcntl, which is missing on {sys.platform}"
            ) from error
        fcntl.flock(fd, fcntl.LOCK_EX)
