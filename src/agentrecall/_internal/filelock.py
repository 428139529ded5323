"""An exclusive lock shared by every process on one machine, held on a sidecar file.

``flock`` locks belong to an open file description, so two handles in one process exclude each
other too, and the kernel drops the lock when its holder dies: a crashed writer never leaves a
stale lock behind.
"""

from __future__ import annotations

import fcntl
import os


def acquire_lock_file(lock_path: str) -> int:
    """Open ``lock_path`` (created if missing), lock it exclusively and return the descriptor.

    Blocks until the lock is free. Closing the descriptor releases the lock. Raises
    ``OSError`` if the file cannot be opened or locked.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        raise
    return fd
