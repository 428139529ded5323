"""Memory stores: backends that keep memories and recall them for a query."""

from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.jsonfile import JsonFileStore
from agentrecall.stores.sqlite import SQLiteStore

__all__ = ["Capability", "JsonFileStore", "MemoryStore", "SQLiteStore"]
