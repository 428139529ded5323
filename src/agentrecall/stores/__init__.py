"""Memory stores: backends that keep memories and recall them for a query."""

from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.jsonfile import JsonFileStore

__all__ = ["Capability", "JsonFileStore", "MemoryStore"]
