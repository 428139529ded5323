"""Memory injection: recall memories for the current ask and fold them into the model's input.

Before a model call, :func:`inject_memories` decides whether to inject (the trigger), derives a
search query from the conversation, searches, renders the hits as a ``<memory>`` block and
appends that block to the most recent user message of a *copy* of the conversation. The pieces
are plain functions so each can be tested and reused on its own.

The rendered block looks like this (no trailing newline)::

    <memory>
    <entry source="personal">User prefers dark mode &amp; large fonts</entry>
    <entry>an entry without a store name</entry>
    </memory>

Memories are data, not instructions: entry text escapes ``&``, ``<`` and ``>``, and the
``source`` attribute also escapes both quote characters, so no stored content or store name can
close an entry, close the block or open a forged one. This holds after NFKC normalisation too,
and the block is well-formed XML for any content (see :mod:`agentrecall.memory.escaping`).

Messages may be OpenAI style (``content`` a string or a list of ``{"type": ...}`` parts) or
Strands style (``content`` a list of blocks such as ``{"text": ...}`` or ``{"toolResult": ...}``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from agentrecall._internal.options import coerce_config
from agentrecall.errors import InvalidArgumentError
from agentrecall.memory.escaping import escape_attribute, escape_text
from agentrecall.messages import Message, is_user_turn, message_text
from agentrecall.types import MemoryEntry

__all__ = [
    "InjectionConfig",
    "default_query",
    "escape_attribute",
    "escape_text",
    "fold_into_latest_user",
    "inject_memories",
    "is_user_ask",
    "render_memory",
    "resolve_injection",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

TriggerPredicate = Callable[[Sequence[Message]], bool | Awaitable[bool]]
Trigger = Literal["userTurn", "everyTurn"] | TriggerPredicate
QueryFunction = Callable[[Sequence[Message]], str | None | Awaitable[str | None]]
FormatFunction = Callable[[Sequence[MemoryEntry]], str | Awaitable[str]]
SearchFunction = Callable[[str, int], Awaitable[Sequence[MemoryEntry]]]

DEFAULT_MAX_ENTRIES = 5


@dataclass(frozen=True, slots=True)
class InjectionConfig:
    """How and when memories are injected before a model call.

    Each callable may be a plain function or a coroutine function.

    Attributes:
        trigger: ``"userTurn"`` injects only when the last message is a person's new ask (a
            ``user`` message carrying no tool results); ``"everyTurn"`` injects before every
            model call; a predicate receives the messages and returns whether to inject.
        max_entries: the most memories injected; also the per-store search limit.
        query: receives the messages and returns the search query; ``None`` or blank skips
            injection. The default is :func:`default_query`.
        format: receives the hits and returns the text to inject; blank skips injection. It
            must escape what it renders (see :func:`escape_text`). The default is
            :func:`render_memory`.

    Raises:
        InvalidArgumentError: a field has an unusable value (also a ``ValueError``).
    """

    trigger: Trigger = "userTurn"
    max_entries: int = DEFAULT_MAX_ENTRIES
    query: QueryFunction | None = None
    format: FormatFunction | None = None

    def __post_init__(self) -> None:
        if self.trigger not in ("userTurn", "everyTurn") and not callable(self.trigger):
            raise InvalidArgumentError(
                "injection trigger must be 'userTurn', 'everyTurn' or a callable, "
                f"got {self.trigger!r}"
            )
        entries = self.max_entries
        if isinstance(entries, bool) or not isinstance(entries, int) or entries < 1:
            raise InvalidArgumentError(
                f"injection max_entries must be an integer of at least 1, got {entries!r}"
            )
        for name in ("query", "format"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise InvalidArgumentError(f"injection {name} must be callable, got {value!r}")


def resolve_injection(value: object) -> InjectionConfig | None:
    """Turn a manager's ``injection`` argument into a config, or ``None`` when injection is off.

    Args:
        value: ``True`` (the defaults), ``False`` or ``None`` (off), an :class:`InjectionConfig`,
            or a mapping with its field names (the reference's dict form).

    Raises:
        InvalidArgumentError: ``value`` is none of those, or the mapping has an unknown key or a
            bad value.
    """
    return coerce_config(value, InjectionConfig, "injection")


def is_user_ask(messages: Sequence[Message]) -> bool:
    """Whether the conversation ends with a person's new ask (not a tool result)."""
    return bool(messages) and is_user_turn(messages[-1])


def default_query(messages: Sequence[Message]) -> str | None:
    """Return the text to search memory with, or ``None`` when there is none.

    On a user ask it is the text of that last user message; otherwise (the model is mid-task,
    e.g. after a tool result) it is the text of the latest assistant message. Text is the string
    content or the message's text blocks joined by newlines, stripped. An older message is
    never used when the chosen one has no text.
    """
    if is_user_ask(messages):
        chosen: Message | None = messages[-1]
    else:
        chosen = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if chosen is None:
        return None
    return message_text(chosen).strip() or None


def render_memory(entries: Sequence[MemoryEntry]) -> str:
    """Render hits as a ``<memory>`` block, one ``<entry>`` line per hit, in the given order.

    An entry carries ``source="<store name>"`` when it has a store name. Metadata (including
    ``_relevanceScore``) is not rendered. The result has no trailing newline.
    """
    lines = [
        f'<entry source="{escape_attribute(entry.store_name)}">{escape_text(entry.content)}</entry>'
        if entry.store_name
        else f"<entry>{escape_text(entry.content)}</entry>"
        for entry in entries
    ]
    return "<memory>\n" + "\n".join(lines) + "\n</memory>"


def fold_into_latest_user(messages: Sequence[Message], text: str) -> list[Message]:
    r"""Return a new list whose most recent ``user`` message ends with ``text``.

    Nothing given is mutated: the changed message is a new mapping with a new content list;
    every other message is the same object as in the input. The message keeps its other keys.

    * String content becomes ``content + "\n\n" + text``.
    * List content gains one trailing text block: ``{"type": "text", "text": ...}`` when the
      list holds OpenAI-style parts (any part with a ``"type"`` key), otherwise a Strands-style
      ``{"text": ...}``. Earlier blocks, such as a tool result, keep their places.
    * ``None`` or missing content becomes ``text``.

    ``text`` is prefixed with ``"\n\n"`` when the message already has text (string content or
    a block with a ``"text"`` key) and ``text`` does not start with a newline, so a tool-result
    or image-only message gets no blank lines before the block. Without a user message the
    result is a plain copy of the list.
    """
    result = list(messages)
    for index in range(len(result) - 1, -1, -1):
        if result[index].get("role") == "user":
            result[index] = _with_trailing_text(result[index], text)
            break
    return result


def _with_trailing_text(message: Message, text: str) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": content + _separator(True, text) + text}
    if not isinstance(content, list):
        return {**message, "content": text}
    has_text = any(isinstance(block, Mapping) and "text" in block for block in content)
    openai_parts = any(isinstance(block, Mapping) and "type" in block for block in content)
    body = _separator(has_text, text) + text
    block = {"type": "text", "text": body} if openai_parts else {"text": body}
    return {**message, "content": [*content, block]}


def _separator(has_text: bool, text: str) -> str:
    return "\n\n" if has_text and not text.startswith("\n") else ""


async def inject_memories(
    messages: Sequence[Message], config: InjectionConfig, search: SearchFunction
) -> list[Message]:
    """Return the messages for one model call, with recalled memories folded in when due.

    Steps: the trigger decides; the query is derived (``config.query`` or
    :func:`default_query`); ``search(query, config.max_entries)`` runs and its hits are cut to
    ``config.max_entries``; they are rendered (``config.format`` or :func:`render_memory`) and
    folded into the latest user message by :func:`fold_into_latest_user`.

    Fails open: when the trigger does not fire, the query is missing or blank, nothing is found,
    the rendering is blank, or any step raises, the result is a plain copy of ``messages``; a
    raising step is logged as a warning. The input list and its messages are never mutated and
    the result is always a new list.
    """
    step = "trigger"
    try:
        if not await _fires(config.trigger, messages):
            return list(messages)
        step = "query"
        query = await _settle(config.query(messages)) if config.query else default_query(messages)
        if query is None:
            return list(messages)
        if not isinstance(query, str):
            raise TypeError(f"the query callable returned {type(query).__name__}, not a string")
        if not query.strip():
            return list(messages)
        step = "search"
        entries = list(await search(query, config.max_entries))[: config.max_entries]
        if not entries:
            return list(messages)
        step = "format"
        text = await _settle(config.format(entries)) if config.format else render_memory(entries)
        if not isinstance(text, str):
            raise TypeError(f"the format callable returned {type(text).__name__}, not a string")
        if not text.strip():
            return list(messages)
        step = "fold"
        return fold_into_latest_user(messages, text)
    except Exception:
        # Memory is an aid, never a reason for the model call to fail.
        logger.warning("memory injection skipped: the %s step raised", step, exc_info=True)
        return list(messages)


async def _fires(trigger: Trigger, messages: Sequence[Message]) -> bool:
    if isinstance(trigger, str):
        return trigger == "everyTurn" or is_user_ask(messages)
    return bool(await _settle(trigger(messages)))


async def _settle(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value
