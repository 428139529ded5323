"""Pure helpers on vectors and batches: pooling, normalising, ordering, checking. Need numpy."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentrecall.errors import AgentRecallError, InvalidArgumentError, ModelError

if TYPE_CHECKING:
    import numpy
    import numpy.typing

    from agentrecall.embeddings.base import Embedder, Vectors

MAX_DIMENSION = 65_536
"""The longest vector accepted; embedding models stay far below it."""


def import_numpy(user: str) -> Any:
    """Return ``numpy``, or raise an ``ImportError`` naming the extra ``user`` needs."""
    try:
        import numpy
    except ImportError as error:
        raise ImportError(f"{user} needs numpy: pip install 'agentrecall[embeddings]'") from error
    return numpy


def check_dimension(value: object, argument: str = "dimension") -> int:
    """Return ``value`` if it is an integer from 1 to :data:`MAX_DIMENSION`, else refuse it."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DIMENSION:
        raise InvalidArgumentError(
            f"{argument} must be an integer from 1 to {MAX_DIMENSION}, got {value!r}"
        )
    return value


def check_texts(texts: object) -> list[str]:
    """Return ``texts`` as a list once every item is a string.

    Raises:
        InvalidArgumentError: ``texts`` is a single string (a common slip: it would be embedded
            character by character) or not a sequence, or an item is not a string.
    """
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise InvalidArgumentError(
            f"texts must be a sequence of strings, got {type(texts).__name__}"
        )
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"texts[{index}] must be a string, got {type(text).__name__}"
            )
    return list(texts)


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int) -> list[list[int]]:
    """Split positions ``0..len(lengths)-1`` into batches of similar length, longest first.

    A batch is padded to its longest member, so texts are sorted by length (stably: equal
    lengths keep their order, and the result depends on the arguments alone) and cut into
    batches of at most ``batch_size`` positions. A batch also ends before a text of less than
    half its longest length, and before its padded size (count times longest length) would
    pass ``max_tokens``: one long text does not make short ones as slow as itself. A text
    longer than ``max_tokens`` goes alone.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for index in order:
        # Sorted longest first: the first member of a batch sets its padded width.
        batch = batches[-1] if batches else None
        if (
            batch is not None
            and len(batch) < batch_size
            and 2 * lengths[index] >= lengths[batch[0]]
            and (len(batch) + 1) * lengths[batch[0]] <= max_tokens
        ):
            batch.append(index)
        else:
            batches.append([index])
    return batches


def mean_pool(hidden: Vectors, mask: numpy.typing.NDArray[Any]) -> Vectors:
    """Average each row's token vectors over its attention mask, as sentence-transformers does.

    Args:
        hidden: token vectors, shape ``(batch, tokens, dimension)``.
        mask: 1 for a real token and 0 for padding, shape ``(batch, tokens)``.
    """
    import numpy

    weights = mask.astype(numpy.float32)[:, :, None]
    total = (hidden * weights).sum(axis=1)
    counts = numpy.maximum(weights.sum(axis=1), 1e-9)
    pooled: Vectors = (total / counts).astype(numpy.float32, copy=False)
    return pooled


def l2_normalize(vectors: Vectors) -> Vectors:
    """Scale each row to length 1; an all-zero row stays zero."""
    import numpy

    norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
    unit: Vectors = (vectors / numpy.maximum(norms, 1e-12)).astype(numpy.float32, copy=False)
    return unit


def as_vectors(value: object, count: int, dimension: int, source: str) -> Vectors:
    """Return ``value`` as a C-contiguous float32 array of shape ``(count, dimension)``.

    Accepts anything numpy turns into such an array (an array of another float dtype, a list
    of lists of numbers).

    Raises:
        ModelError: ``value`` has another shape, is not real numbers (complex ones, an
            awaitable), or holds NaN or infinity (a number too large for float32 is one); the
            message starts with ``source`` (which embedder gave it).
    """
    import numpy

    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never to be awaited: closed, so that Python does not warn
        raise ModelError(
            f"{source} returned an awaitable, not vectors: an embedder must be synchronous"
        )
    try:
        raw = numpy.asarray(value)
        if numpy.iscomplexobj(raw):
            raise ModelError(f"{source} returned complex numbers, not real vectors")
        # A number beyond float32 becomes infinity, refused below: no overflow warning.
        with numpy.errstate(over="ignore", invalid="ignore"):
            vectors = numpy.ascontiguousarray(raw, dtype=numpy.float32)
    except (TypeError, ValueError) as error:
        raise ModelError(f"{source} returned something that is not vectors: {error}") from error
    if vectors.shape != (count, dimension):
        raise ModelError(
            f"{source} returned vectors of shape {vectors.shape} for {count} text(s); "
            f"expected ({count}, {dimension})"
        )
    if not numpy.isfinite(vectors).all():
        raise ModelError(f"{source} returned vectors holding NaN or infinity")
    checked: Vectors = vectors
    return checked


def embed_checked(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Call ``embedder.embed(texts)`` and return its rows once their shape and values are sound.

    For code that takes any :class:`~agentrecall.embeddings.Embedder` (a store does) and must
    not trust it to keep the protocol: the result is a float32 array of shape
    ``(len(texts), embedder.dimension)`` with finite values, or an error.

    Raises:
        ModelError: the embedder raised something other than an agentrecall error (chained),
            or the rows are unusable; the message names the embedder's ``model_id``.
        InvalidArgumentError: the embedder's ``dimension`` is not a positive integer.
    """
    source = f"embedder {embedder.model_id!r}"
    try:
        vectors = embedder.embed(texts)
    except AgentRecallError:
        raise
    except Exception as error:  # the embedder's own failure (a server gone, a bug of its own)
        raise ModelError(f"{source} failed on {len(texts)} texts: {error}") from error
    dimension = check_dimension(embedder.dimension, f"the dimension of {source}")
    return as_vectors(vectors, len(texts), dimension, source)
