"""The chat model contract memory behaviours call: messages in, text out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agentrecall.messages import Message


@runtime_checkable
class ChatModel(Protocol):
    """A language model that answers a conversation with text.

    Memory behaviours (fact extraction, for one) need nothing more from a model, so any client
    can be adapted in a few lines: OpenAI-compatible servers through
    :class:`~agentrecall.models.OpenAICompatibleModel`, anything else by writing ``complete``.
    """

    async def complete(self, messages: Sequence[Message], *, system: str | None = None) -> str:
        """Return the model's reply to ``messages``.

        Args:
            messages: the conversation, oldest first, in OpenAI style (``{"role", "content"}``
                with string or part-list content) or Strands style (``{"role", "content":
                [blocks]}``); see :mod:`agentrecall.messages`. Never mutated.
            system: instructions that frame the whole conversation, sent the way the model's
                API expects them (an OpenAI system message, an Anthropic ``system`` field).

        Returns:
            The reply's text, possibly empty.

        Raises:
            AgentRecallError: implementations raise a subclass (e.g.
                :class:`~agentrecall.errors.ModelError`) when the model cannot answer.
        """
        ...
