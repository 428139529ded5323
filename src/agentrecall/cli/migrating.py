"""``agentrecall migrate``: the command's checks and messages around :func:`migrate_files`.

:func:`~agentrecall.migrate.migrate_files` decides what a failure leaves: a new destination
appears whole or not at all, an existing SQLite destination keeps the whole batches already
copied. This module adds what a person at a terminal needs: a source that cannot be looked at
is an error (not an empty store), the destination's directory must exist, a progress bar on a
terminal only, and an interruption that says what became of the destination.
"""

from __future__ import annotations

import asyncio

from agentrecall.cli import opening
from agentrecall.cli.progress import terminal_bar
from agentrecall.migrate import MigrationResult, is_postgres_url, migrate_files, store_kind


def migrate_to(
    source: str, destination: str, *, flatten: bool, drop_history: bool, drop_expiry: bool
) -> MigrationResult:
    """Copy the store file ``source`` into ``destination``, created (not its directory) if missing.

    Raises:
        KeyboardInterrupt: interrupted; the message says what became of the destination.
        AgentRecallError: as :func:`agentrecall.migrate.migrate_files`, or the destination's
            directory does not exist.
    """
    if not is_postgres_url(source):
        opening.size_of(source)  # a source that cannot be looked at is not "missing"
    size = 1 if is_postgres_url(destination) else opening.creatable(destination)
    if store_kind(destination) == "sqlite":
        opening.note_if_empty(destination, size)
    options = {"flatten": flatten, "drop_history": drop_history, "drop_expiry": drop_expiry}
    try:
        with terminal_bar() as bar:
            return asyncio.run(migrate_files(source, destination, progress=bar, **options))
    except KeyboardInterrupt:
        if size is None:
            raise KeyboardInterrupt(f"nothing was written to '{destination}'") from None
        raise KeyboardInterrupt(
            f"'{destination}' keeps the batches copied so far; run the same command again "
            "to copy the rest"
        ) from None
