"""The chat model contract memory behaviours call: messages in, text out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agentrecall._internal.text import has_surrogate
from agentrecall.messages import Message


def valid_text(text: str) -> str:
    r"""Return ``text`` with each lone surrogate replaced by U+FFFD.

    A model's JSON may hold ``\ud83d`` escapes that pair with nothing (a reply cut in the
    middle of an emoji, say), which ``json.loads`` turns into lone surrogates: text that no
    file, database or conversation buffer accepts. Surrogates that do pair up are joined into
    the character they encode.
    """
    if not has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


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
            The reply's text, possibly empty, valid Unicode (no lone surrogate: see
            :func:`valid_text`).

        Raises:
            AgentRecallError: implementations raise a subclass (e.g.
                :class:`~agentrecall.errors.ModelError`) when the model cannot answer.
        """
        ...
