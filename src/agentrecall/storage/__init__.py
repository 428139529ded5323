"""Bytes under string keys: the storage layer under the file-backed stores.

``Storage`` is the async protocol (write, read, delete, list, search); ``InMemoryStorage`` and
``LocalFileStorage`` implement it with the same key rules and errors. Both also implement
``BlockingStorage``, the synchronous, versioned access that stores use from worker threads.
"""

from agentrecall.storage.base import (
    BlockingStorage,
    Storage,
    StorageSearchResult,
    Version,
    normalize_key,
    normalize_prefix,
)
from agentrecall.storage.local import LocalFileStorage
from agentrecall.storage.memory import InMemoryStorage

__all__ = [
    "BlockingStorage",
    "InMemoryStorage",
    "LocalFileStorage",
    "Storage",
    "StorageSearchResult",
    "Version",
    "normalize_key",
    "normalize_prefix",
]
