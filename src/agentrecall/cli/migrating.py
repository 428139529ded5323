"""``agentrecall migrate``: the command's checks and messages around :func:`migrate_files`.

:func:`~agentrecall.migrate.migrate_files` decides what a failure leaves: a new destination
appears whole or not at all, an existing SQLite destination keeps the whole batches already
copied. This module adds what a person at a terminal needs: ``--embedder`` checked as every
command checks it (a JSON destination keeps no vectors), a source that cannot be looked at
is an error (not an empty store), the destination's directory must exist, a progress bar on
a terminal only, and an interruption that says what became of the destination.
"""

from __future__ import annotations

import argparse
import asyncio

from agentrecall.cli import opening, running
from agentrecall.cli.progress import terminal_bar
from agentrecall.embeddings.base import Embedder
from agentrecall.migrate import (
    MigrationResult,
    is_postgres_url,
    migrate_files,
    open_store,
    store_kind,
)

DESTINATION_HINT = "migrate into an SQLite file (.db) or a PostgreSQL database (postgresql://...)"
"""Where ``--embedder`` can store vectors, said when the destination cannot."""


def migrate_to(args: argparse.Namespace) -> MigrationResult:
    """Copy the store ``args.source`` into ``args.destination``, created (not its directory).

    With ``args.embedder``, each memory copied gets its vector (see
    :func:`~agentrecall.migrate.migrate_files`).

    Raises:
        KeyboardInterrupt: interrupted; the message says what became of the destination.
        AgentRecallError: as :func:`agentrecall.migrate.migrate_files`, the destination's
            directory does not exist, or ``--embedder`` is unusable or names a model for a
            destination that keeps no vectors.
    """
    source, destination = args.source, args.destination
    embedder = running.embedder_of(args)
    if not is_postgres_url(source):
        opening.size_of(source)  # a source that cannot be looked at is not "missing"
    size = 1 if is_postgres_url(destination) else opening.creatable(destination)
    _check_destination(destination, embedder, args)
    if store_kind(destination) == "sqlite":
        opening.note_if_empty(destination, size)
    options = {"flatten": args.flatten, "drop_history": args.drop_history}
    options.update(drop_expiry=args.drop_expiry, drop_superseded=args.drop_superseded)
    try:
        with terminal_bar() as bar:
            return asyncio.run(
                migrate_files(source, destination, progress=bar, embedder=embedder, **options)
            )
    except KeyboardInterrupt:
        if size is None:
            raise KeyboardInterrupt(f"nothing was written to '{destination}'") from None
        raise KeyboardInterrupt(
            f"'{destination}' keeps the batches copied so far; run the same command again "
            "to copy the rest"
        ) from None


def _check_destination(
    destination: str, embedder: Embedder | None, args: argparse.Namespace
) -> None:
    """Refuse options the destination store cannot serve, as a store command's are refused."""
    if embedder is None or store_kind(destination) != "json":
        return  # an SQLite or PostgreSQL store takes an embedder: nothing to open to see it
    running.check(open_store(destination), args, hint=DESTINATION_HINT)
