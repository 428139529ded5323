"""Plugging any embedding function in: :class:`CallableEmbedder` and :func:`embedder_from`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from agentrecall.embeddings.base import Embedder, Vectors
from agentrecall.embeddings.vectors import as_vectors, check_dimension, check_texts, import_numpy
from agentrecall.errors import InvalidArgumentError

EmbedFunction = Callable[[list[str]], Any]
"""Takes a list of texts and returns one vector per text: a numpy array or a list of lists."""


class CallableEmbedder:
    """An :class:`~agentrecall.embeddings.Embedder` around a plain function.

    ``CallableEmbedder(my_function, model_id="mine-v1", dimension=384)`` makes any function
    that maps a list of texts to their vectors usable by a store. The store cannot tell what
    model the function runs, so it must be told: ``model_id`` is recorded with the vectors
    and must change whenever the function starts giving other vectors.

    What it guarantees on top of the function: the function gets a ``list`` of strings, never
    an empty one (an empty input gives a ``(0, dimension)`` array without a call), at most
    ``batch_size`` texts per call when that is set; its result comes back as a float32 array
    of shape ``(len(texts), dimension)`` or a :class:`~agentrecall.errors.ModelError` says
    what was wrong with it. Exceptions the function raises pass through unchanged.
    """

    def __init__(
        self,
        function: EmbedFunction,
        *,
        model_id: str,
        dimension: int,
        batch_size: int | None = None,
    ) -> None:
        """Wrap ``function``.

        Args:
            function: a plain (not ``async``) callable from a list of texts to their vectors.
            model_id: names the model and every setting that changes its vectors.
            dimension: the length of every vector.
            batch_size: the most texts per call, for functions with a limit; ``None`` passes
                every text of an :meth:`embed` call at once.

        Raises:
            ImportError: numpy is not installed; the message names the extra.
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
        """
        import_numpy("CallableEmbedder")
        if not callable(function):
            raise InvalidArgumentError(f"function must be callable, got {type(function).__name__}")
        if inspect.iscoroutinefunction(function):
            raise InvalidArgumentError(
                "function must be a plain function: embedders are called from a store's "
                "worker thread, where an async function's result cannot be awaited"
            )
        if not isinstance(model_id, str) or not model_id.strip():
            raise InvalidArgumentError(f"model_id must be a non-blank string, got {model_id!r}")
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise InvalidArgumentError(
                f"batch_size must be an integer >= 1 or None, got {batch_size!r}"
            )
        self._function = function
        self._model_id = model_id
        self._dimension = check_dimension(dimension)
        self._batch_size = batch_size

    @property
    def model_id(self) -> str:
        """The ``model_id`` given."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The ``dimension`` given."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return the function's vectors for ``texts``, checked, as one float32 array.

        Raises:
            InvalidArgumentError: ``texts`` is not a sequence of strings.
            ModelError: the function returned the wrong number of rows, rows of another
                length, something that is not numbers, NaN or infinity.
        """
        numpy = import_numpy("CallableEmbedder")
        items = check_texts(texts)
        size = self._batch_size or max(len(items), 1)
        parts = [
            as_vectors(
                self._function(items[start : start + size]),
                len(items[start : start + size]),
                self._dimension,
                f"embedding function {self._model_id!r}",
            )
            for start in range(0, len(items), size)
        ]
        if not parts:
            empty: Vectors = numpy.empty((0, self._dimension), dtype=numpy.float32)
            return empty
        joined: Vectors = parts[0] if len(parts) == 1 else numpy.concatenate(parts)
        return joined

    def __repr__(self) -> str:
        return f"CallableEmbedder({self._function!r}, model_id={self._model_id!r})"


def embedder_from(value: object) -> Embedder:
    """Return the :class:`~agentrecall.embeddings.Embedder` that ``value`` stands for.

    For code that takes an embedder argument (``SQLiteStore(embedder=...)``): an object with
    ``model_id``, ``dimension`` and ``embed`` is returned as it is, once ``model_id`` is a
    non-blank string. Nothing is loaded, called or sent: ``dimension`` is not read here, as
    an embedder may learn it from its first answer (see
    :class:`~agentrecall.embeddings.OpenAICompatibleEmbedder`); :func:`embed_checked` checks
    it with the first vectors. Pass ``None`` through yourself: it means no embedder, which
    this function does not decide.

    Raises:
        InvalidArgumentError: ``value`` is a bare function (it needs a model id and a
            dimension: the message shows how to wrap it in :class:`CallableEmbedder`), lacks
            part of the protocol, or has an unusable ``model_id``.
    """
    if isinstance(value, type):
        raise InvalidArgumentError(
            f"embedder must be an instance, got the class {value.__name__}: "
            f"pass {value.__name__}(...)"
        )
    missing = [name for name in _PROTOCOL if not _has(value, name)]
    if not missing and callable(getattr(value, "embed", None)):
        model_id = getattr(value, "model_id", None)
        if not isinstance(model_id, str) or not model_id.strip():
            raise InvalidArgumentError(
                f"embedder {value!r} has model_id {model_id!r}; it must be a non-blank string"
            )
        embedder: Embedder = value  # type: ignore[assignment]
        return embedder
    if callable(value):
        name = getattr(value, "__name__", type(value).__name__)
        raise InvalidArgumentError(
            f"embedder: the function {name!r} needs a model id and a dimension before a store "
            f"can use it; pass CallableEmbedder({name}, model_id='...', dimension=...)"
        )
    lacking = f" (it has no {', '.join(missing)})" if len(missing) < len(_PROTOCOL) else ""
    raise InvalidArgumentError(
        "embedder must be an Embedder (an object with model_id, dimension and embed(texts)), "
        f"such as LocalEmbedder() or a CallableEmbedder; got {type(value).__name__}{lacking}"
    )


_PROTOCOL = ("model_id", "dimension", "embed")


def _has(value: object, name: str) -> bool:
    # Looked up statically, so a property that does work (a dimension learnt from a server)
    # is not run.
    try:
        inspect.getattr_static(value, name)
    except AttributeError:
        return False
    return True


def store_embedder(value: object, user: str) -> Embedder:
    """Return ``value`` as a store's embedder, refusing what cannot be one.

    ``user`` names the store in the message when ``numpy`` is missing
    (``"an SQLiteStore with an embedder"``). As in :func:`embedder_from`, nothing is called or
    sent and ``dimension`` is not read: a store reads it where blocking is fine, and checks it
    with the first vectors.

    Raises:
        ImportError: ``numpy`` is not installed.
        InvalidArgumentError: ``value`` lacks ``model_id``, ``dimension`` or ``embed``, or its
            ``model_id`` is unusable.
    """
    import_numpy(user)
    return embedder_from(value)
