"""``agentrecall migrate``: a copy that appears whole or not at all when its destination is new.

A missing destination is built under a temporary name in its directory and given its name
only once every memory is in it, so an interrupted or failed migration leaves no partial
store behind. An existing destination takes the memories batch by batch, each batch written
whole; after an interruption it keeps the batches already copied and running the same
command again copies the rest.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys

from agentrecall.cli import opening
from agentrecall.errors import StorageError
from agentrecall.migrate import MigrationResult, ProgressBar, migrate_files, store_kind
from agentrecall.storage.local import LOCK_PREFIX

_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
"""What SQLite may leave next to a database file."""


def migrate_to(source: str, destination: str) -> MigrationResult:
    """Copy the store file ``source`` into ``destination``, created (not its directory) if missing.

    Raises:
        KeyboardInterrupt: interrupted; the message says what became of the destination.
        AgentRecallError: as :func:`agentrecall.migrate.migrate_files`, or the destination's
            directory does not exist.
    """
    opening.size_of(source)  # a source that cannot be looked at is not "missing"
    size = opening.creatable(destination)
    if store_kind(destination) == "sqlite":
        opening.note_if_empty(destination, size)
    if size is not None:
        try:
            return _copy(source, destination)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(
                f"'{destination}' keeps the batches copied so far; run the same command again "
                "to copy the rest"
            ) from None
    partial = _partial_name(destination)
    try:
        result = _copy(source, partial)
    except BaseException as error:
        _remove(partial)
        if isinstance(error, KeyboardInterrupt):
            raise KeyboardInterrupt(f"nothing was written to '{destination}'") from None
        raise
    if os.path.lexists(partial):  # a source without memories leaves nothing to publish
        _publish(partial, destination)
    return result


def _copy(source: str, destination: str) -> MigrationResult:
    # The bar is for a person watching; a log or a pipe gets only the summary on stdout.
    bar = ProgressBar(sys.stderr) if sys.stderr.isatty() else None
    try:
        return asyncio.run(migrate_files(source, destination, progress=bar))
    finally:
        if bar is not None:
            bar.close()


def _partial_name(destination: str) -> str:
    """A new name beside ``destination`` with its extension, so it opens as the same kind."""
    directory, name = os.path.split(os.path.abspath(destination))
    extension = os.path.splitext(name)[1]
    return os.path.join(directory, f".{name}.partial-{secrets.token_hex(4)}{extension}")


def _publish(partial: str, destination: str) -> None:
    """Give ``partial`` the name ``destination``, unless a file took that name meanwhile."""
    try:
        # A link, unlike a rename, never replaces a file that appeared during the migration.
        os.link(partial, destination)
    except FileExistsError as error:
        raise StorageError(
            f"'{destination}' was created by someone else during the migration; it is left as "
            "it is: run the migration again to copy into it"
        ) from error
    except OSError:
        os.replace(partial, destination)  # a file system without hard links
    finally:
        _remove(partial)


def _remove(partial: str) -> None:
    """Remove the partial copy's name and what its store kept beside it (its lock, its log)."""
    directory, name = os.path.split(partial)
    beside = [partial + side for side in _SQLITE_SIDE_FILES]
    for path in (partial, *beside, os.path.join(directory, f"{LOCK_PREFIX}{name}")):
        try:
            os.remove(path)
        except OSError:
            pass  # not there, or not removable: a leftover is clutter, never a loss
