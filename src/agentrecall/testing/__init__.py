"""Test helpers for code built on agentrecall: real components and deterministic fakes.

* :class:`ChatServer`: an OpenAI-compatible chat completions server on 127.0.0.1 with
  scripted replies, for testing :class:`~agentrecall.models.OpenAICompatibleModel` and agent
  loops end to end over real HTTP.
* :class:`ScriptedChatModel`: a :class:`~agentrecall.models.ChatModel` that answers from a
  script in process, for tests that do not need HTTP.

Standard library only.
"""

from agentrecall.testing.chat_server import ChatServer, ReceivedRequest, Reply
from agentrecall.testing.scripted_model import ModelCall, ScriptedChatModel

__all__ = ["ChatServer", "ModelCall", "ReceivedRequest", "Reply", "ScriptedChatModel"]
