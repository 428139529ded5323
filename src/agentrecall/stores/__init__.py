"""Memory stores: backends that keep memories and recall them for a query.

Each store's module is imported when its name is first used, so a program that opens only
an SQLite store does not load the JSON store's file storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentrecall._internal.lazy import lazy_names
from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.coverage import VectorCoverage

if TYPE_CHECKING:
    from agentrecall.stores.jsonfile import JsonFileStore
    from agentrecall.stores.postgres import PostgresStore
    from agentrecall.stores.sqlite import SQLiteStore

__all__ = [
    "Capability",
    "JsonFileStore",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "VectorCoverage",
]

# PostgresStore needs psycopg, an extra: like the others, it is imported on first use.
_LAZY = {
    "JsonFileStore": "agentrecall.stores.jsonfile",
    "PostgresStore": "agentrecall.stores.postgres",
    "SQLiteStore": "agentrecall.stores.sqlite",
}


__getattr__ = lazy_names(__name__, _LAZY, globals())
