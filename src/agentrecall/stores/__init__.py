"""Memory stores: backends that keep memories and recall them for a query."""

from typing import Any

from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.jsonfile import JsonFileStore
from agentrecall.stores.sqlite import SQLiteStore

__all__ = ["Capability", "JsonFileStore", "MemoryStore", "PostgresStore", "SQLiteStore"]


def __getattr__(name: str) -> Any:
    # PostgresStore needs psycopg, an extra: it is imported on first use of the name, so that
    # importing agentrecall needs the standard library only.
    if name == "PostgresStore":
        from agentrecall.stores.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
