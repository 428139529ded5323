"""Which embedder a command line names: ``--embedder local`` or ``--embedder MODULE:CALLABLE``.

``local`` is agentrecall's own model (``agentrecall.embeddings.LocalEmbedder``, from the
``embeddings`` extra). ``MODULE:CALLABLE`` names any callable that returns an embedder when
called with no arguments (a class such as ``agentrecall.testing:HashEmbedder``, or a function
of your own), the way other tools name an application to run.
"""

from __future__ import annotations

import argparse
import importlib

from agentrecall.cli.report import UsageMistake
from agentrecall.embeddings.adapters import embedder_from
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import InvalidArgumentError

LOCAL = "local"


def add_option(parser: argparse.ArgumentParser, *, each: str, later: str) -> None:
    """Add an optional ``--embedder`` to ``parser``: the vectors of what the command writes.

    ``each`` names whose vector is stored ("the memory's"), ``later`` what happens without
    the option ("the memory gets one").
    """
    # Without it nothing is embedded: search by meaning finds the memories after a reindex.
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help=f"also store {each} vector for search by meaning, made by this model: "
        f"'{LOCAL}' or MODULE:CALLABLE, the model the store's vectors come from (without it, "
        f"{later} at the next 'agentrecall reindex')",
    )


def embedder_named(name: str) -> Embedder:
    """Return a new embedder of the kind ``name`` gives.

    Raises:
        ImportError: the module, or the local model's extra, is not installed (the message
            names ``--embedder``).
        UsageMistake: ``name`` is neither ``local`` nor ``MODULE:CALLABLE``, or the callable
            is missing.
        InvalidArgumentError: the callable fails, or it does not return an embedder.
    """
    if name == LOCAL:
        module_name, attribute = "agentrecall.embeddings", "LocalEmbedder"
    else:
        module_name, colon, attribute = name.partition(":")
        if not colon or not module_name or not attribute:
            raise UsageMistake(
                f"--embedder must be '{LOCAL}' or MODULE:CALLABLE such as "
                f"agentrecall.testing:HashEmbedder, got {name!r}"
            )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(f"--embedder {name}: {error}") from error
    except Exception as error:  # the user's module failed as it loaded
        raise InvalidArgumentError(
            f"--embedder {name}: importing '{module_name}' failed: {type(error).__name__}: {error}"
        ) from error
    factory = getattr(module, attribute, None)
    if factory is None:
        if name == LOCAL:
            raise ImportError(
                "the local embedding model is not part of this agentrecall: install "
                "'agentrecall[embeddings]', or name another with --embedder MODULE:CALLABLE"
            )
        raise UsageMistake(f"--embedder: module '{module_name}' has no '{attribute}'")
    try:
        made = factory()
    except Exception as error:  # the user's own code: its failure is theirs to read, not ours
        raise InvalidArgumentError(
            f"--embedder {name} failed: {type(error).__name__}: {error}"
        ) from error
    try:
        # Checked without reading ``dimension``, which an embedder may learn by a request.
        return embedder_from(made)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(
            f"--embedder {name} returned no usable embedder: {error}"
        ) from error
