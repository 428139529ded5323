"""What the command line says about vector coverage: memories that search by meaning misses.

A memory written without an embedder, or left by an interrupted ``reindex``, has no vector,
and a semantic search cannot find it (a hybrid one finds it by keyword only). A search by
meaning says so on stderr, with the ``reindex`` command that computes the missing vectors;
``stats`` shows the coverage. The counts come from the store
(:meth:`~agentrecall.SQLiteStore.vector_coverage`).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from agentrecall._internal.text import plural
from agentrecall.cli import report
from agentrecall.cli.embedding import LOCAL
from agentrecall.embeddings.local import MODEL_ID
from agentrecall.stores.coverage import VectorCoverage
from agentrecall.sync import SyncStore

SEMANTIC = "semantic"


def coverage_of(memory: SyncStore) -> VectorCoverage | None:
    """Return the coverage of the store (or scope), ``None`` for a store that keeps no vectors."""
    if not hasattr(memory.store, "vector_coverage"):
        return None
    return memory.vector_coverage()


def note_missing(memory: SyncStore, args: argparse.Namespace) -> None:
    """After a search by meaning, say on stderr how many memories it could not consider."""
    found = coverage_of(memory)
    if found is None or not found.missing:
        return
    lack = plural(found.missing, "memory", "memories")
    verb = "has" if found.missing == 1 else "have"
    miss = "cannot find" if args.mode == SEMANTIC else "finds only by keyword"
    report.note(
        f"{lack} of {found.memories} {verb} no vector, which a {args.mode} search {miss}; "
        f"compute them with: {reindex_command(args)}"
    )


def reindex_command(args: argparse.Namespace, model: str | None = None) -> str:
    """The ``reindex`` command line for the store the options name, with the right embedder.

    That is the command's ``--embedder``; without one, the local model when ``model`` (the
    store's) is that or none, else ``--embedder NAME`` and which model NAME must make: a
    reindex with another model would replace every vector. A connection string is shown as
    ``URL``: it may hold a password.
    """
    words = ["agentrecall"]
    for option in ("store", "db", "dsn", "pg_name", "pg_schema"):
        if hasattr(args, option):
            value = "URL" if option == "dsn" else getattr(args, option)
            words += ["--" + option.replace("_", "-"), value]
    words.append("reindex")
    embedder = getattr(args, "embedder", None)
    if embedder is not None:
        return shlex.join(words + ([] if embedder == LOCAL else ["--embedder", embedder]))
    if model is None or model == MODEL_ID:
        return shlex.join(words)
    return shlex.join([*words, "--embedder", "NAME"]) + f" (NAME: an embedder of model '{model}')"


def coverage_json(found: VectorCoverage | None) -> dict[str, Any] | None:
    """The coverage as ``stats --json`` shows it."""
    if found is None:
        return None
    return {
        "memories": found.memories,
        "with_vectors": found.with_vectors,
        "missing": found.missing,
        "model": found.model,
        "dimension": found.dimension,
    }


def coverage_text(found: VectorCoverage | None, args: argparse.Namespace) -> str:
    """The coverage as ``stats`` shows it: how many have a vector, the model, what to run."""
    if found is None:
        return "none (this kind of store keeps no vectors)"
    text = f"{found.with_vectors} of {plural(found.memories, 'memory', 'memories')}"
    if found.model is not None:
        text += f", model '{found.model}' (dimension {found.dimension})"
    if found.missing:
        text += f"; {found.missing} without one: {reindex_command(args, found.model)}"
    return text
