"""agentrecall: memory for AI agents.

Long-term memory stores that keep facts and recall them for a query. ``JsonFileStore`` (also
exported as ``TestMemoryStore``) reads and writes the Strands Agents memory file format.
``BufferMemory`` keeps each session's conversation, trimmed to fit the model.
``import agentrecall`` needs the standard library only.
"""

from agentrecall.buffer import BufferEntry, BufferMemory, BufferMetadata
from agentrecall.conversation.tokens import estimate_tokens, tiktoken_counter
from agentrecall.errors import (
    AgentRecallError,
    AggregateMemoryError,
    InvalidArgumentError,
    InvalidFileError,
    StorageError,
)
from agentrecall.storage import InMemoryStorage, LocalFileStorage, Storage
from agentrecall.stores import Capability, JsonFileStore, MemoryStore
from agentrecall.sync import SyncStore
from agentrecall.types import AddResult, MemoryEntry, MemoryRecord, SearchOptions

TestMemoryStore = JsonFileStore
"""The name Strands Agents gives the same store, for code written against it."""

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "AgentRecallError",
    "AggregateMemoryError",
    "BufferEntry",
    "BufferMemory",
    "BufferMetadata",
    "Capability",
    "InMemoryStorage",
    "InvalidArgumentError",
    "InvalidFileError",
    "JsonFileStore",
    "LocalFileStorage",
    "MemoryEntry",
    "MemoryRecord",
    "MemoryStore",
    "SearchOptions",
    "Storage",
    "StorageError",
    "SyncStore",
    "TestMemoryStore",
    "estimate_tokens",
    "tiktoken_counter",
]
