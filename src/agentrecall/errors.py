"""The exceptions agentrecall raises.

Every exception raised on purpose derives from one root::

    AgentRecallError
    ├── StorageError            a backend's I/O failed (file, directory, database)
    ├── InvalidArgumentError    a call or a constructor got a value it cannot use (also ValueError)
    ├── InvalidFileError        a store's or a model's file cannot be used (also ValueError)
    ├── ModelError              a model (chat or embeddings) refused, failed or could not be reached
    └── AggregateMemoryError    several independent operations failed; ``errors`` holds each cause

``InvalidArgumentError`` and ``InvalidFileError`` also subclass ``ValueError`` because the
reference implementation raises ``ValueError`` in those cases, so code written against it keeps
working. Backend failures are chained (``raise ... from``) so the original ``OSError`` stays
reachable as ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "AgentRecallError",
    "AggregateMemoryError",
    "InvalidArgumentError",
    "InvalidFileError",
    "ModelError",
    "StorageError",
]


class AgentRecallError(Exception):
    """Root of every exception agentrecall raises on purpose."""


class StorageError(AgentRecallError):
    """A backend could not read, write, list or delete; the message names what and where."""


class InvalidArgumentError(AgentRecallError, ValueError):
    """An argument has a value the call cannot use; the message names the argument."""


class InvalidFileError(AgentRecallError, ValueError):
    """A store's backing file, or a model file, exists but cannot be used; it is never overwritten.

    Attributes:
        path: the file, as the store addresses it.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ModelError(AgentRecallError):
    """A model call failed: an error status, an unusable reply, or no connection.

    Raised for chat models and for embedders (a server's answer, or the vectors an embedding
    function returned).

    Attributes:
        status_code: the HTTP status the server answered with, ``None`` when no answer came.
        body: the start of the server's answer (at most a few hundred characters), or ``None``.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, body: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class AggregateMemoryError(AgentRecallError):
    """Several independent operations failed; each underlying exception is in ``errors``."""

    def __init__(self, message: str, errors: Sequence[BaseException]) -> None:
        super().__init__(message)
        self.errors: list[BaseException] = list(errors)
