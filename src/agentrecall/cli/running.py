"""Running a store command: open the store, check what it is asked for, narrow it, run.

An option or a command that needs something the store does not declare (a JSON file has no
scopes, filters, expiry, history or updates) fails before anything runs, in one line naming
the option and the kind of store that has it, rather than deep inside the call.
"""

from __future__ import annotations

import argparse

from agentrecall.cli import opening, upgrading
from agentrecall.cli.embedding import LOCAL, embedder_named
from agentrecall.cli.fields import SUPERSEDING_STORES
from agentrecall.cli.options import DEFAULT_STORE, Command
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.sync import SyncStore

OPTION_NEEDS = {
    "filter": (Capability.FILTER, "metadata filters"),
    "after": (Capability.FILTER, "time bounds"),
    "before": (Capability.FILTER, "time bounds"),
    "ttl": (Capability.EXPIRY, "expiry"),
    "reason": (Capability.HISTORY, "history to keep a reason in"),
    "embedder": (Capability.SEMANTIC, "vectors for search by meaning"),
    "as_of": (Capability.SUPERSEDE, f"record of its past ({SUPERSEDING_STORES} keep one)"),
    "valid_at": (Capability.SUPERSEDE, f"world time of facts ({SUPERSEDING_STORES} keep it)"),
    "include_superseded": (
        Capability.SUPERSEDE,
        f"retired memories ({SUPERSEDING_STORES} keep them)",
    ),
    "valid_from": (Capability.SUPERSEDE, f"world time of facts ({SUPERSEDING_STORES} keep it)"),
    "valid_until": (Capability.SUPERSEDE, f"world time of facts ({SUPERSEDING_STORES} keep it)"),
}
"""What each option needs of the store (by attribute name), and how to say it is missing."""

COMMAND_NEEDS = {
    Capability.UPDATE: "cannot change a memory in place",
    Capability.HISTORY: "keeps no history",
    Capability.CLEAR: "cannot be cleared",
    Capability.SEMANTIC: "keeps no vectors for search by meaning",
    Capability.SUPERSEDE: f"cannot retire a memory in favour of another ({SUPERSEDING_STORES} can)",
}
"""How to say that the store lacks what a command needs (its ``needs`` default)."""

KEYWORD = "keyword"
SQLITE_HINT = "use an SQLite store (--db FILE or --store NAME) or a PostgreSQL one (--dsn URL)"


def run(command: Command, args: argparse.Namespace) -> int:
    """Run ``command`` on the store (or scope) the options name; close it, whatever happens.

    Closing the facade closes an SQLite store's connection, which folds the WAL back into the
    database file before the command returns, also when run in-process.
    """
    store = opened(args, default=DEFAULT_STORE, embedder=embedder_of(args))
    with SyncStore(opening.scoped(store, args)) as memory:
        upgrading.prepare(memory)
        return command(memory, args)


def opened(args: argparse.Namespace, *, default: str, embedder: Embedder | None) -> MemoryStore:
    """Return the store the options name, given ``embedder``, once it can serve the command.

    Raises:
        InvalidArgumentError: as :func:`check`, or an option's value is unusable.
        StorageError: as :func:`agentrecall.cli.opening.open_store`.
    """
    store = opening.open_store(args, default=default, embedder=embedder)
    check(store, args)
    return store


def check(store: MemoryStore, args: argparse.Namespace, *, hint: str = SQLITE_HINT) -> None:
    """Refuse options and commands ``store`` has no capability for.

    ``hint`` ends the message of an option the store cannot serve: where to find one that can.

    Raises:
        InvalidArgumentError: naming the first option (or the command) the store cannot serve.
    """
    declared = frozenset(getattr(store, "capabilities", ()))
    kind = opening.named(store)
    mode = getattr(args, "mode", None)
    if mode not in (None, KEYWORD) and Capability.SEMANTIC not in declared:
        raise InvalidArgumentError(
            f"--mode {mode}: {kind} searches by keyword only; {SQLITE_HINT} and --embedder"
        )
    # What the command needs before what its options do: a default option value (reindex's
    # --embedder) is not the user's to be told about.
    needs: Capability | None = getattr(args, "needs", None)
    if needs is not None and needs not in declared:
        raise InvalidArgumentError(
            f"{args.verb}: {kind} {COMMAND_NEEDS[needs]}; {SQLITE_HINT}, or copy this one "
            "into one with 'agentrecall migrate'"
        )
    for option, (capability, what) in OPTION_NEEDS.items():
        if getattr(args, option, None) is not None and capability not in declared:
            flag = "--" + option.replace("_", "-")
            raise InvalidArgumentError(f"{flag}: {kind} has no {what}; {hint}")


def embedder_of(args: argparse.Namespace) -> Embedder | None:
    """The embedder the command needs: ``--embedder``, or the local model for a search by meaning.

    A keyword search loads no model.
    """
    name: str | None = getattr(args, "embedder", None)
    if name is None and getattr(args, "mode", None) not in (None, KEYWORD):
        name = LOCAL
    return None if name is None else embedder_named(name)
