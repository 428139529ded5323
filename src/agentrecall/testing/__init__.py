"""Test helpers for code built on agentrecall: real components and deterministic fakes.

* :class:`ChatServer`: an OpenAI-compatible chat completions and embeddings server on
  127.0.0.1 with scripted replies, for testing
  :class:`~agentrecall.models.OpenAICompatibleModel`,
  :class:`~agentrecall.embeddings.OpenAICompatibleEmbedder` and agent loops end to end over
  real HTTP.
* :class:`ScriptedChatModel`: a :class:`~agentrecall.models.ChatModel` that answers from a
  script in process, for tests that do not need HTTP.
* :class:`HashEmbedder`: a deterministic :class:`~agentrecall.embeddings.Embedder` that
  hashes words into vectors (needs ``numpy``), for tests of semantic and hybrid search.
* :class:`ManualClock`: a clock that stands still until the test moves it; while it is in
  place every store reads it, so expiry is tested without waiting.
* :mod:`agentrecall.testing.conformance`: the store conformance suite, for checking a memory
  store (yours or ours) against the contract every agentrecall store keeps. Subclass its
  ``StoreContract`` in a pytest module and give it a ``make_store`` fixture; it needs pytest
  and pytest-asyncio, so import it from your tests: this package never imports it.

Importing it needs the standard library only.
"""

from agentrecall.testing.chat_server import ChatServer, ReceivedRequest, Reply
from agentrecall.testing.clock import ManualClock
from agentrecall.testing.embedder import HashEmbedder
from agentrecall.testing.scripted_model import ModelCall, ScriptedChatModel

__all__ = [
    "ChatServer",
    "HashEmbedder",
    "ManualClock",
    "ModelCall",
    "ReceivedRequest",
    "Reply",
    "ScriptedChatModel",
]
