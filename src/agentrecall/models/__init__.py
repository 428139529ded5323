"""Chat models for memory behaviours: the :class:`ChatModel` contract and an HTTP client.

Importing this package needs the standard library only; ``httpx`` is imported when an
:class:`OpenAICompatibleModel` is constructed.
"""

from agentrecall.models.base import ChatModel
from agentrecall.models.openai import OpenAICompatibleModel

__all__ = ["ChatModel", "OpenAICompatibleModel"]
