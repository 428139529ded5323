"""Storage kept in this process's memory."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from agentrecall.storage.base import (
    SearchHits,
    Version,
    normalize_key,
    normalize_prefix,
)
from agentrecall.storage.keyword import keyword_search


class _Shelf:
    """The dict shared by an ``InMemoryStorage`` and its namespace views."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.versions: dict[str, int] = {}
        self.counter = 0
        self.mutex = threading.Lock()
        self.writer = threading.RLock()


class InMemoryStorage:
    """Bytes under keys in a dict; gone when the process ends.

    Thread-safe. Stored and returned bytes are copies. :meth:`namespace` returns a view that
    shares this storage's contents under a key prefix; :meth:`clear` empties what the view sees.
    """

    ephemeral = True

    def __init__(self) -> None:
        self._shelf = _Shelf()
        self._prefix = ""
        self.namespaced = False

    def namespace(self, prefix: str) -> InMemoryStorage:
        """Return a view whose keys live under ``prefix/`` in this storage."""
        view = InMemoryStorage()
        view._shelf = self._shelf
        view._prefix = self._full(prefix) + "/"
        view.namespaced = True
        return view

    def _full(self, key: str) -> str:
        return self._prefix + normalize_key(key)

    def describe(self, key: str) -> str:
        """Return ``memory:<key>``, how errors name an in-memory key."""
        return f"memory:{self._full(key)}"

    def version_blocking(self, key: str) -> Version:
        """Return a counter bumped by each write of ``key``, or ``None`` if absent."""
        full = self._full(key)
        with self._shelf.mutex:
            return self._shelf.versions.get(full)

    def read_blocking(self, key: str) -> tuple[bytes | None, Version]:
        """Return a copy of the bytes under ``key`` and their version."""
        full = self._full(key)
        with self._shelf.mutex:
            data = self._shelf.data.get(full)
            return (None if data is None else bytes(data)), self._shelf.versions.get(full)

    def write_blocking(self, key: str, data: bytes) -> Version:
        """Store a copy of ``data`` under ``key`` and return its new version."""
        full = self._full(key)
        with self._shelf.mutex:
            self._shelf.counter += 1
            self._shelf.data[full] = bytes(data)
            self._shelf.versions[full] = self._shelf.counter
            return self._shelf.counter

    @contextmanager
    def lock_blocking(self, key: str) -> Iterator[None]:
        """Hold the writers' lock (one per storage, shared with its views)."""
        normalize_key(key)
        with self._shelf.writer:
            yield

    async def write(self, key: str, data: bytes) -> None:
        """Store a copy of ``data`` under ``key``."""
        self.write_blocking(key, data)

    async def read(self, key: str) -> bytes | None:
        """Return a copy of the bytes under ``key``, or ``None``."""
        return self.read_blocking(key)[0]

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        full = self._full(key)
        with self._shelf.mutex:
            self._shelf.data.pop(full, None)
            self._shelf.versions.pop(full, None)

    async def list(self, prefix: str = "") -> list[str]:
        """Return the keys under ``prefix`` (relative to this view), sorted."""
        wanted = self._prefix + normalize_prefix(prefix)
        with self._shelf.mutex:
            keys = [key for key in self._shelf.data if key.startswith(wanted)]
        return sorted(key[len(self._prefix) :] for key in keys)

    async def search(self, query: str) -> SearchHits:
        """Keyword search over this view's keys (see :func:`keyword_search`)."""
        return await keyword_search(self, query)

    def clear(self) -> None:
        """Remove every key this view sees."""
        with self._shelf.mutex:
            for key in [key for key in self._shelf.data if key.startswith(self._prefix)]:
                del self._shelf.data[key]
                del self._shelf.versions[key]
