"""agentrecall: memory for AI agents.

Long-term memory stores that keep facts and recall them for a query. ``JsonFileStore`` (also
exported as ``TestMemoryStore``) reads and writes the Strands Agents memory file format.
``BufferMemory`` keeps each session's conversation, trimmed to fit the model.
``MemoryManager`` puts stores to work in any agent loop: memory tools for the model, recalled
memories folded into its input, facts extracted from the conversation. ``LocalEmbedder``,
``OpenAICompatibleEmbedder`` and ``CallableEmbedder`` turn texts into vectors for recall by
meaning.
``import agentrecall`` needs the standard library only.
"""

from typing import Any

from agentrecall.conversation.buffer import BufferEntry, BufferMemory, BufferMetadata
from agentrecall.conversation.tokens import estimate_tokens, tiktoken_counter
from agentrecall.embeddings import (
    CallableEmbedder,
    Embedder,
    LocalEmbedder,
    OpenAICompatibleEmbedder,
)
from agentrecall.errors import (
    AgentRecallError,
    AggregateMemoryError,
    InvalidArgumentError,
    InvalidFileError,
    ModelError,
    StorageError,
)
from agentrecall.extraction import (
    ExtractionConfig,
    ExtractionResult,
    IntervalTrigger,
    InvocationTrigger,
    MessageFilter,
    ModelExtractor,
)
from agentrecall.memory.injection import InjectionConfig
from agentrecall.memory.manager import MemoryManager
from agentrecall.memory.tools import AddToolConfig, MemoryTool, ToolConfig
from agentrecall.models import ChatModel, OpenAICompatibleModel
from agentrecall.storage import InMemoryStorage, LocalFileStorage, Storage
from agentrecall.stores import Capability, JsonFileStore, MemoryStore, SQLiteStore
from agentrecall.sync import SyncStore
from agentrecall.types import AddResult, MemoryEntry, MemoryRecord, MemoryVersion, SearchOptions

TestMemoryStore = JsonFileStore
"""The name Strands Agents gives the same store, for code written against it."""

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "AddToolConfig",
    "AgentRecallError",
    "AggregateMemoryError",
    "BufferEntry",
    "BufferMemory",
    "BufferMetadata",
    "CallableEmbedder",
    "Capability",
    "ChatModel",
    "Embedder",
    "ExtractionConfig",
    "ExtractionResult",
    "InMemoryStorage",
    "InjectionConfig",
    "IntervalTrigger",
    "InvalidArgumentError",
    "InvalidFileError",
    "InvocationTrigger",
    "JsonFileStore",
    "LocalEmbedder",
    "LocalFileStorage",
    "MemoryEntry",
    "MemoryManager",
    "MemoryRecord",
    "MemoryStore",
    "MemoryTool",
    "MemoryVersion",
    "MessageFilter",
    "ModelError",
    "ModelExtractor",
    "OpenAICompatibleEmbedder",
    "OpenAICompatibleModel",
    "PostgresStore",
    "SQLiteStore",
    "SearchOptions",
    "Storage",
    "StorageError",
    "SyncStore",
    "TestMemoryStore",
    "ToolConfig",
    "estimate_tokens",
    "tiktoken_counter",
]


def __getattr__(name: str) -> Any:
    # PostgresStore needs the postgres extra; it loads on first use of the name (see
    # agentrecall.stores), so that importing agentrecall needs the standard library only.
    if name == "PostgresStore":
        from agentrecall.stores.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
