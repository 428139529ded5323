"""agentrecall: memory for AI agents.

Long-term memory stores that keep facts and recall them for a query. ``JsonFileStore`` (also
exported as ``TestMemoryStore``) reads and writes the Strands Agents memory file format.
``BufferMemory`` keeps each session's conversation, trimmed to fit the model.
``MemoryManager`` puts stores to work in any agent loop: memory tools for the model, recalled
memories folded into its input, facts extracted from the conversation. ``LocalEmbedder``,
``OpenAICompatibleEmbedder`` and ``CallableEmbedder`` turn texts into vectors for recall by
meaning.
``import agentrecall`` needs the standard library only, and imports each name's module when
the name is first used, so a program (the command line, say) pays only for what it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentrecall._internal.lazy import lazy_names

if TYPE_CHECKING:
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
        StoreClosedError,
    )
    from agentrecall.extraction import (
        ExtractionConfig,
        ExtractionResult,
        IntervalTrigger,
        InvocationTrigger,
        MessageFilter,
        ModelExtractor,
        ReconcileConfig,
    )
    from agentrecall.memory.injection import InjectionConfig
    from agentrecall.memory.manager import MemoryManager
    from agentrecall.memory.tools import AddToolConfig, MemoryTool, ToolConfig
    from agentrecall.models import ChatModel, OpenAICompatibleModel
    from agentrecall.storage import InMemoryStorage, LocalFileStorage, Storage
    from agentrecall.stores import (
        Capability,
        JsonFileStore,
        MemoryStore,
        PostgresStore,
        SQLiteStore,
    )
    from agentrecall.sync import SyncStore
    from agentrecall.types import AddResult, MemoryEntry, MemoryRecord, MemoryVersion, SearchOptions

    TestMemoryStore = JsonFileStore

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
    "ReconcileConfig",
    "SQLiteStore",
    "SearchOptions",
    "Storage",
    "StorageError",
    "StoreClosedError",
    "SyncStore",
    "TestMemoryStore",
    "ToolConfig",
    "estimate_tokens",
    "tiktoken_counter",
]

_HOMES = {
    "AddResult": "agentrecall.types",
    "AddToolConfig": "agentrecall.memory.tools",
    "AgentRecallError": "agentrecall.errors",
    "AggregateMemoryError": "agentrecall.errors",
    "BufferEntry": "agentrecall.conversation.buffer",
    "BufferMemory": "agentrecall.conversation.buffer",
    "BufferMetadata": "agentrecall.conversation.buffer",
    "CallableEmbedder": "agentrecall.embeddings",
    "Capability": "agentrecall.stores",
    "ChatModel": "agentrecall.models",
    "Embedder": "agentrecall.embeddings",
    "ExtractionConfig": "agentrecall.extraction",
    "ExtractionResult": "agentrecall.extraction",
    "InMemoryStorage": "agentrecall.storage",
    "InjectionConfig": "agentrecall.memory.injection",
    "IntervalTrigger": "agentrecall.extraction",
    "InvalidArgumentError": "agentrecall.errors",
    "InvalidFileError": "agentrecall.errors",
    "InvocationTrigger": "agentrecall.extraction",
    "JsonFileStore": "agentrecall.stores",
    "LocalEmbedder": "agentrecall.embeddings",
    "LocalFileStorage": "agentrecall.storage",
    "MemoryEntry": "agentrecall.types",
    "MemoryManager": "agentrecall.memory.manager",
    "MemoryRecord": "agentrecall.types",
    "MemoryStore": "agentrecall.stores",
    "MemoryTool": "agentrecall.memory.tools",
    "MemoryVersion": "agentrecall.types",
    "MessageFilter": "agentrecall.extraction",
    "ModelError": "agentrecall.errors",
    "ModelExtractor": "agentrecall.extraction",
    "OpenAICompatibleEmbedder": "agentrecall.embeddings",
    "OpenAICompatibleModel": "agentrecall.models",
    "PostgresStore": "agentrecall.stores",
    "ReconcileConfig": "agentrecall.extraction",
    "SQLiteStore": "agentrecall.stores",
    "SearchOptions": "agentrecall.types",
    "Storage": "agentrecall.storage",
    "StorageError": "agentrecall.errors",
    "StoreClosedError": "agentrecall.errors",
    "SyncStore": "agentrecall.sync",
    "TestMemoryStore": "agentrecall.stores:JsonFileStore",
    "ToolConfig": "agentrecall.memory.tools",
    "estimate_tokens": "agentrecall.conversation.tokens",
    "tiktoken_counter": "agentrecall.conversation.tokens",
}
"""The module that defines each public name (``TestMemoryStore`` is ``JsonFileStore``)."""


__getattr__ = lazy_names(__name__, _HOMES, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
