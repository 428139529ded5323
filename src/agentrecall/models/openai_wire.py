"""The OpenAI chat completions wire format: request bodies out, reply text in. No I/O here.

Messages go out in the shape OpenAI-compatible servers accept:

* OpenAI-style messages keep the fields of the chat completions API (``role``, ``content``,
  ``name``, ``tool_calls``, ``tool_call_id``, ``refusal``); AgentLIB's camelCase ``toolCalls``
  and ``toolCallId`` are renamed to ``tool_calls`` and ``tool_call_id``. Other fields (an
  agent loop's ``metadata`` or ids) are left out, since strict servers refuse unknown fields.
* Strands-style messages (content blocks keyed by kind) become one message with string
  content: text blocks as written; a ``toolUse`` as the line ``[tool call <name> (<id>):
  <input as JSON>]``; a ``toolResult`` as ``[tool result (<id>): <its text and JSON>]``. Other
  blocks (images, documents, reasoning, cache points) are left out. Tool traffic is rendered
  as text rather than as OpenAI tool messages because a :class:`~agentrecall.models.ChatModel`
  is called without tools, and several OpenAI-compatible servers reject tool messages in a
  request that declares none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentrecall.messages import Message
from agentrecall.models.base import valid_text

_CAMEL_FIELDS = {"toolCalls": "tool_calls", "toolCallId": "tool_call_id"}
_API_FIELDS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "refusal"})


def request_body(
    model: str,
    messages: Sequence[Message],
    system: str | None,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the JSON body of a non-streaming chat completions request.

    ``extra`` fields (``temperature``, ``max_tokens``, ...) are merged in first, so they can
    never replace ``model``, ``messages`` or ``stream``.
    """
    wire = [to_openai_message(message) for message in messages]
    if system is not None:
        wire.insert(0, {"role": "system", "content": system})
    return {**extra, "model": model, "messages": wire, "stream": False}


def to_openai_message(message: Message) -> dict[str, Any]:
    """Return ``message`` in OpenAI shape (a new dict; the input is not mutated)."""
    content = message.get("content")
    if isinstance(content, list) and any(_is_strands_block(block) for block in content):
        return {"role": message.get("role"), "content": _render_blocks(content)}
    renamed = ((_CAMEL_FIELDS.get(key, key), value) for key, value in message.items())
    return {key: value for key, value in renamed if key in _API_FIELDS}


def _is_strands_block(block: object) -> bool:
    # OpenAI content parts always carry a "type"; Strands blocks are keyed by their kind.
    return isinstance(block, Mapping) and "type" not in block


def _render_blocks(blocks: Sequence[Any]) -> str:
    lines = [line for block in blocks if (line := _render_block(block)) is not None]
    return "\n".join(lines)


def _render_block(block: Any) -> str | None:
    if not isinstance(block, Mapping):
        return None
    if isinstance(block.get("text"), str):
        text: str = block["text"]
        return text
    use = block.get("toolUse")
    if isinstance(use, Mapping):
        arguments = json.dumps(use.get("input"), ensure_ascii=False, default=str)
        return f"[tool call {use.get('name')} ({use.get('toolUseId')}): {arguments}]"
    result = block.get("toolResult")
    if isinstance(result, Mapping):
        parts = result.get("content")
        output = _render_result_parts(parts) if isinstance(parts, list) else ""
        return f"[tool result ({result.get('toolUseId')}): {output}]"
    return None


def _render_result_parts(parts: list[Any]) -> str:
    rendered = []
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        if isinstance(part.get("text"), str):
            rendered.append(part["text"])
        elif "json" in part:
            rendered.append(json.dumps(part["json"], ensure_ascii=False, default=str))
    return "\n".join(rendered)


def completion_text(payload: object) -> str:
    r"""Return the assistant text of a chat completions reply.

    Content given as a list of parts has its text parts joined. A lone surrogate the JSON
    held (an escape such as ``\ud83d`` pairing with nothing) becomes U+FFFD.

    Raises:
        ValueError: the payload has no ``choices[0].message`` or that message has no text
            (a refusal or tool calls only); the message says which.
    """
    try:
        message = payload["choices"][0]["message"]  # type: ignore[index]
    except (TypeError, KeyError, IndexError):
        raise ValueError("the reply has no choices[0].message") from None
    if not isinstance(message, Mapping):
        raise ValueError("the reply's choices[0].message is not an object")
    content = message.get("content")
    if isinstance(content, str):
        return valid_text(content)
    if isinstance(content, list):
        return valid_text(
            "".join(
                part["text"]
                for part in content
                if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            )
        )
    if isinstance(message.get("refusal"), str):
        raise ValueError(f"the model refused: {message['refusal']}")
    raise ValueError("the reply's message has no text content")
