"""The storage protocols and the key rules every backend shares."""

from __future__ import annotations

from collections.abc import Hashable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentrecall._internal.text import has_surrogate
from agentrecall.errors import StorageError

Version = Hashable | None
"""An opaque token that changes whenever a key's bytes change; ``None`` when the key is absent."""


@dataclass(frozen=True, slots=True)
class StorageSearchResult:
    """One keyword-search hit over a storage: the key, its score (higher is better), its bytes."""

    key: str
    score: float
    data: bytes | None = None


SearchHits = list[StorageSearchResult]
"""What ``Storage.search`` returns (an alias, since ``list`` is also a method name there)."""


@runtime_checkable
class Storage(Protocol):
    """Opaque bytes under string keys.

    Keys use ``/`` as a separator; see :func:`normalize_key` for the rules every backend applies.
    Every backend failure is raised as :class:`~agentrecall.errors.StorageError`.
    """

    async def write(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``, replacing what was there."""
        ...

    async def read(self, key: str) -> bytes | None:
        """Return the bytes under ``key``, or ``None`` if there are none."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key``; removing an absent key does nothing."""
        ...

    async def list(self, prefix: str = "") -> list[str]:
        """Return every full key starting with ``prefix``, sorted; ``""`` lists all."""
        ...

    async def search(self, query: str) -> SearchHits:
        """Return keys whose name or content match ``query``, best first."""
        ...


class BlockingStorage(Protocol):
    """Synchronous access with change detection and a writers' lock, for use off the event loop.

    Guarantees: a write replaces a key's bytes all at once (a reader sees the old bytes or the
    new, never a mix); the version returned by a write or read is the version that
    :meth:`version_blocking` reports until the key changes again.
    """

    def describe(self, key: str) -> str:
        """Return where ``key`` lives, for error messages (a path, or a name in memory)."""
        ...

    def version_blocking(self, key: str) -> Version:
        """Return the key's current version without reading its bytes."""
        ...

    def read_blocking(self, key: str) -> tuple[bytes | None, Version]:
        """Return the key's bytes (``None`` if absent) and the version they belong to."""
        ...

    def write_blocking(self, key: str, data: bytes) -> Version:
        """Replace the key's bytes durably and return the new version."""
        ...

    def lock_blocking(self, key: str) -> AbstractContextManager[None]:
        """Return a context manager holding the writers' lock of ``key``."""
        ...


def normalize_key(key: str) -> str:
    """Return ``key`` in canonical form or raise ``StorageError``.

    Runs of ``/`` collapse, ``.`` segments and outer slashes go (``//a/.//b/`` is ``a/b``);
    backslashes, NUL characters, lone surrogates (not valid Unicode), ``..`` segments and keys
    that end up empty are refused.
    """
    normalized = _normalize(key)
    if not normalized:
        raise StorageError("Storage key must not be empty")
    return normalized


def normalize_prefix(prefix: str) -> str:
    """Like :func:`normalize_key`, but an empty prefix is allowed and a trailing ``/`` is kept."""
    normalized = _normalize(prefix)
    if normalized and prefix.endswith("/"):
        normalized += "/"
    return normalized


def _normalize(key: str) -> str:
    if "\\" in key:
        raise StorageError(f"Invalid storage key '{key}': backslashes are not allowed")
    if "\0" in key:
        raise StorageError(f"Invalid storage key {key!r}: NUL characters are not allowed")
    if has_surrogate(key):
        raise StorageError(f"Invalid storage key {key!r}: it must be valid Unicode text")
    segments = [segment for segment in key.split("/") if segment not in ("", ".")]
    if ".." in segments:
        raise StorageError(f"Invalid storage key '{key}': '..' path segments are not allowed")
    return "/".join(segments)
