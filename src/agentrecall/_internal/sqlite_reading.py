"""Reading an SQLite file read-only without leaving files behind that lock its owner out.

SQLite keeps a WAL database's log and index in ``NAME-wal`` and ``NAME-shm`` beside it, and a
connection opened read-only (``mode=ro``) still creates them when they are missing, as the
user it runs as, and cannot remove them when it closes (that takes a checkpoint, a write). In
a shared directory with the sticky bit (``/tmp``), the owner of the database then can neither
remove those files nor write to them, and every write of theirs fails. So a reader that is
not the file's owner only reads through SQLite's locks when both files exist (the owner's
own, or left by a crash: SQLite uses them as they are); while neither exists, every change is
in the database file itself, and it is read with ``immutable=1``, which opens nothing else,
and the read is checked afterwards not to have overlapped a write (:class:`Unlocked`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from agentrecall.errors import StorageError

SIDE_FILES = ("-wal", "-shm")
"""The suffixes of the files SQLite keeps beside a WAL database."""


@dataclass(frozen=True)
class Unlocked:
    """The state of a database file read without SQLite's locks (``immutable=1``).

    Every write to a WAL database first creates its ``-wal`` file, and a checkpoint that
    copies pages into the database file changes the file's modification time; a read that
    began and ended with no ``-wal`` and the same file state therefore overlapped no write.
    """

    path: str
    state: tuple[int, int, int, int, int]

    @classmethod
    def of(cls, path: str) -> Unlocked | None:
        """Return the file's state now, ``None`` if a write may be under way (or it is gone)."""
        try:
            status = os.stat(path)
        except FileNotFoundError:
            return None
        if os.path.lexists(f"{path}-wal"):
            return None
        state = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
        return cls(path, (*state, status.st_ctime_ns))

    def unchanged(self) -> bool:
        """Whether no write can have happened since this state was taken."""
        return Unlocked.of(self.path) == self


def needs_unlocked_read(path: str, what: str) -> bool:
    """Whether a read-only connection to ``path`` must not use SQLite's locks (see above).

    ``False`` for the file's owner and for root (SQLite gives the files it creates as root
    to the database's owner): their ``-wal`` and ``-shm`` files never lock the owner out.

    Raises:
        StorageError: only one of the two files exists, so reading with SQLite's locks would
            create the other as this user, and reading without them would miss the log's
            changes; the message says so and what to do.
    """
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return False  # gone since it was found: SQLite reports what it then meets
    if os.geteuid() in (0, owner):
        return False
    present = [suffix for suffix in SIDE_FILES if os.path.lexists(f"{path}{suffix}")]
    if len(present) == len(SIDE_FILES):
        return False
    if not present:
        return True
    missing = next(suffix for suffix in SIDE_FILES if suffix not in present)
    raise StorageError(
        f"cannot read {what} '{path}' read-only: '{path}{present[0]}' exists without "
        f"'{path}{missing}', and SQLite would create that file as this user, which the "
        f"database's owner (uid {owner}) then could not remove or write; read it while its "
        f"owner has it open, or ask them to open and close it once"
    )
