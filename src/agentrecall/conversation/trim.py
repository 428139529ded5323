"""Trimming decisions for conversation buffers: which messages a window keeps.

The rule every trim here follows: when messages are cut from the front, the window starts at
the next fresh user message (role ``user``, no tool results), and no tool result whose call was
cut stays behind. Model APIs reject a history that opens with an assistant turn or answers a
tool call they never saw, so a window that honoured only the count could not be sent.
Windows that need no cut are returned whole, as given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from agentrecall.conversation.tokens import TokenCounter
from agentrecall.messages import (
    Message,
    is_system,
    is_tool_result,
    is_user_turn,
    tool_call_ids,
    tool_result_ids,
)

M = TypeVar("M", bound=Message)


def keep_newest(messages: Sequence[M], count: int | None) -> list[M]:
    """Return at most ``count`` of the newest messages (``None``: all), cut at a user turn."""
    if count is None or len(messages) <= count:
        return list(messages)
    return _cut(messages, len(messages) - count)


def fit_budget(messages: Sequence[M], budget: int | None, counter: TokenCounter) -> list[M]:
    """Return the messages that fit ``budget`` tokens (``None``: all).

    System messages come first and are always kept, even past the budget. Then the newest
    other messages are taken while they fit; the first that does not fit ends the window (an
    older, smaller one is not taken instead, which would leave a hole in the conversation).
    A total equal to the budget fits.
    """
    if budget is None:
        return list(messages)
    system = [m for m in messages if is_system(m)]
    rest = [m for m in messages if not is_system(m)]
    total = sum(counter(m) for m in system)
    start = len(rest)
    while start > 0:
        cost = counter(rest[start - 1])
        if total + cost > budget:
            break
        total += cost
        start -= 1
    return system + (_cut(rest, start) if start else rest)


def _cut(messages: Sequence[M], start: int) -> list[M]:
    """Drop ``messages[:start]``, then up to the next user turn, then orphaned tool results."""
    while start < len(messages) and not is_user_turn(messages[start]):
        start += 1
    kept = messages[start:]
    called_before = set().union(*(tool_call_ids(m) for m in messages[:start]))
    if not called_before:
        return list(kept)
    called_before -= set().union(*(tool_call_ids(m) for m in kept))
    return [
        m
        for m in kept
        if not (is_tool_result(m) and tool_result_ids(m) and tool_result_ids(m) <= called_before)
    ]
