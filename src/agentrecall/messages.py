"""Chat messages in the two shapes agent loops use, read without converting them.

* OpenAI style: ``{"role", "content": str | [parts] | None, "tool_calls": [...],
  "tool_call_id": ...}``; text parts are ``{"type": "text", "text": ...}``.
* Strands style: ``{"role", "content": [blocks]}`` with ``{"text": ...}``,
  ``{"toolUse": {"toolUseId", "name", "input"}}`` and ``{"toolResult": {"toolUseId", ...}}``;
  tool results travel in ``user`` messages.

* Anthropic style: ``{"role", "content": str | [blocks]}`` with ``{"type": "text"}``,
  ``{"type": "tool_use", "id", "name", "input"}`` and
  ``{"type": "tool_result", "tool_use_id", "content"}``; tool results travel in ``user``
  messages.

The camelCase fields of AgentLIB messages (``toolCalls``, ``toolCallId``) are read too. Messages
are plain mappings; nothing here mutates or copies them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from agentrecall._internal.text import check_text, has_surrogate
from agentrecall.errors import InvalidArgumentError

Message = Mapping[str, Any]

ROLES = ("system", "developer", "user", "assistant", "tool")
"""Roles a message may have; ``developer`` is OpenAI's newer name for ``system``."""

SYSTEM_ROLES = frozenset({"system", "developer"})


def check_message(message: object, index: int, argument: str = "messages") -> None:
    """Raise ``InvalidArgumentError`` naming ``argument[index]`` unless ``message`` is usable.

    Usable: a mapping with a known ``role`` and a ``content`` that is a string, ``None``, absent,
    or a list of mappings (content parts or blocks). The content's text (a string content, the
    ``text`` of its parts or blocks) must be valid Unicode: a lone surrogate is refused.
    """
    # Exact-type checks first: every message of every write passes here, and the ABC check
    # behind isinstance(..., Mapping) costs several times more than a plain dict's type test.
    if type(message) is not dict and not isinstance(message, Mapping):
        raise InvalidArgumentError(
            f"{argument}[{index}] must be a mapping, got {type(message).__name__}"
        )
    role = message.get("role")
    if role not in ROLES:
        raise InvalidArgumentError(
            f"{argument}[{index}] has role {role!r}; expected one of {', '.join(ROLES)}"
        )
    content = message.get("content")
    if content is None:
        return
    if type(content) is str:
        if has_surrogate(content):
            check_text(content, f"{argument}[{index}] content")
        return
    if not isinstance(content, list):
        raise InvalidArgumentError(
            f"{argument}[{index}] content must be a string, a list of content blocks or None, "
            f"got {type(content).__name__}"
        )
    for position, block in enumerate(content):
        if type(block) is not dict and not isinstance(block, Mapping):
            raise InvalidArgumentError(
                f"{argument}[{index}] content[{position}] must be a mapping, "
                f"got {type(block).__name__}"
            )
        text = block.get("text")
        if isinstance(text, str) and has_surrogate(text):
            check_text(text, f"{argument}[{index}] content[{position}] text")


def role_of(message: Message) -> str:
    """Return the message's role."""
    role: str = message["role"]
    return role


def is_system(message: Message) -> bool:
    """Whether the message is a system (or developer) instruction."""
    return message.get("role") in SYSTEM_ROLES


def _blocks(message: Message) -> Iterator[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        yield from (block for block in content if isinstance(block, Mapping))


def message_text(message: Message) -> str:
    """Return the message's text: string content, or its text parts joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        block["text"] for block in _blocks(message) if isinstance(block.get("text"), str)
    )


def content_size(message: Message) -> int:
    """Return the length in UTF-16 code units of everything the model reads in ``content``.

    Text counts as written; a Strands ``toolUse`` counts its name and its input as JSON, and a
    ``toolResult`` counts the text and JSON of its own content. Images and other binary blocks
    count nothing. Tool calls outside ``content`` (OpenAI ``tool_calls``) are not counted.
    """
    content = message.get("content")
    if isinstance(content, str):
        return _utf16_length(content)
    return sum(_block_size(block) for block in _blocks(message))


def _block_size(block: Mapping[str, Any]) -> int:
    if isinstance(block.get("text"), str):
        return _utf16_length(block["text"])
    kind = block.get("type")
    if kind == "tool_use":
        payload = json_text(block.get("input"))
        return _utf16_length(str(block.get("name", ""))) + _utf16_length(payload)
    if kind == "tool_result":
        inner = block.get("content")
        if isinstance(inner, str):
            return _utf16_length(inner)
        return sum(_block_size(part) for part in inner or () if isinstance(part, Mapping))
    if isinstance(block.get("json"), (dict, list)):
        return _utf16_length(json_text(block["json"]))
    use = block.get("toolUse")
    if isinstance(use, Mapping):
        payload = json_text(use.get("input"))
        return _utf16_length(str(use.get("name", ""))) + _utf16_length(payload)
    result = block.get("toolResult")
    if isinstance(result, Mapping) and isinstance(result.get("content"), list):
        return sum(_block_size(part) for part in result["content"] if isinstance(part, Mapping))
    return 0


def json_text(value: object) -> str:
    """Return ``value`` as the JSON a model API would send, or as ``str`` when JSON cannot.

    For sizing a message: a value JSON cannot hold (a key that is a tuple, say) is counted by
    its text, and refused, naming the message, only where the message is stored.
    """
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _utf16_length(text: str) -> int:
    # Characters outside the Basic Multilingual Plane take two UTF-16 code units.
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def tool_call_ids(message: Message) -> frozenset[str]:
    """Return the ids of the tool calls the message makes (assistant messages)."""
    ids = {
        call.get("id")
        for field in ("tool_calls", "toolCalls")
        for call in message.get(field) or ()
        if isinstance(call, Mapping)
    }
    for block in _blocks(message):
        if isinstance(block.get("toolUse"), Mapping):
            ids.add(block["toolUse"].get("toolUseId"))
        elif block.get("type") == "tool_use":
            ids.add(block.get("id"))
    return frozenset(i for i in ids if isinstance(i, str))


def tool_result_ids(message: Message) -> frozenset[str]:
    """Return the ids of the tool calls the message answers (tool results)."""
    ids = {message.get("tool_call_id"), message.get("toolCallId")}
    for block in _blocks(message):
        if isinstance(block.get("toolResult"), Mapping):
            ids.add(block["toolResult"].get("toolUseId"))
        elif block.get("type") == "tool_result":
            ids.add(block.get("tool_use_id"))
    return frozenset(i for i in ids if isinstance(i, str))


def is_tool_result(message: Message) -> bool:
    """Whether the message carries tool results (a ``tool`` message, or a result turn)."""
    if message.get("role") == "tool":
        return True
    return any(
        isinstance(block.get("toolResult"), Mapping) or block.get("type") == "tool_result"
        for block in _blocks(message)
    )


def is_user_turn(message: Message) -> bool:
    """Whether the message is a person's new ask: role ``user`` and no tool results in it."""
    return message.get("role") == "user" and not is_tool_result(message)
