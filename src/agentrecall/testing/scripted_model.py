"""``ScriptedChatModel``: a :class:`~agentrecall.models.ChatModel` that answers from a script."""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall.messages import Message

__all__ = ["ModelCall", "ScriptedChatModel"]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call a :class:`ScriptedChatModel` received.

    Attributes:
        messages: deep copies of the messages it was given.
        system: the ``system`` argument.
    """

    messages: list[dict[str, Any]]
    system: str | None


class ScriptedChatModel:
    """Answers each call with the next scripted reply and records every call.

    A reply is a string (returned), an exception (raised) or a callable taking the
    :class:`ModelCall` and returning the text. Once the script is used up, ``default`` answers;
    without one, a call raises ``AssertionError`` so a test notices the unexpected call.
    """

    def __init__(
        self,
        replies: Iterable[str | BaseException | Callable[[ModelCall], str]] = (),
        *,
        default: str | Callable[[ModelCall], str] | None = None,
    ) -> None:
        """Script the replies, in call order."""
        self._replies = deque(replies)
        self._default = default
        self.calls: list[ModelCall] = []

    async def complete(self, messages: Sequence[Message], *, system: str | None = None) -> str:
        """Record the call and answer it from the script."""
        call = ModelCall([copy.deepcopy(dict(message)) for message in messages], system)
        self.calls.append(call)
        reply = self._replies.popleft() if self._replies else self._default
        if reply is None:
            raise AssertionError(f"ScriptedChatModel: no reply scripted for call {len(self.calls)}")
        if isinstance(reply, BaseException):
            raise reply
        return reply if isinstance(reply, str) else reply(call)
