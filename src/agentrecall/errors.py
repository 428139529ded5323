"""The exceptions agentrecall raises.

Every exception raised on purpose derives from one root::

    AgentRecallError
    ├── StorageError            a backend's I/O failed (file, directory, database)
    │   ├── ServerUnavailableError    a database server could not be reached, or the
    │   │                             connection broke during a call (retryable)
    │   └── StoreClosedError          a store was called after its ``aclose()``
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
    "ServerUnavailableError",
    "StorageError",
    "StoreClosedError",
]


class AgentRecallError(Exception):
    """Root of every exception agentrecall raises on purpose."""


class StorageError(AgentRecallError):
    """A backend could not read, write, list or delete; the message names what and where."""


class ServerUnavailableError(StorageError):
    """A database server could not be reached, or the connection to it broke during a call.

    Raised for a refused connection, a server that does not answer within the connection
    timeout, one that is starting up, shutting down or out of connection slots, a connection
    lost in the middle of a call (a restart, a failover, a network cut), and a pool whose
    connections all stayed busy for the whole timeout. The message names the host, the port
    and the database. A wrong password, an unknown user or a missing database are plain
    :class:`StorageError`: retrying cannot fix those.

    When retrying is safe: always for reads. A connection that could not be opened sent
    nothing, so no write happened. A connection that broke during a call rolled back the
    call's transaction, except when it broke while the server was committing: then the write
    may have been kept or not, and only repeating it settles which. agentrecall's writes give
    the same result when repeated (an add of identical content is deduplicated, a buffer write
    replaces the session whole), so a retried write never stores anything twice. Wait before
    retrying (a restart takes seconds, a failover up to a minute); the next call reconnects on
    its own.

    Attributes:
        host: the server's host (or socket directory) as the connection string gives it.
        port: its port.
        database: the database the call addressed.
    """

    def __init__(self, message: str, *, host: str, port: int, database: str) -> None:
        super().__init__(message)
        self.host = host
        self.port = port
        self.database = database


class StoreClosedError(StorageError):
    """A store (or a :class:`~agentrecall.SyncStore`) was called after it was closed.

    ``aclose()`` (``close()`` for a ``SyncStore``, or leaving ``async with``) ends a store
    object for good, and its scope views with it; closing again is harmless. To use the same
    file or database again, create a new store object. Raised before anything is read or
    written; the message names the store.
    """


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
