"""Token counting for conversation budgets."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentrecall.messages import Message, content_size

TokenCounter = Callable[[Message], int]
"""Any callable that returns how many tokens a message costs."""

MESSAGE_OVERHEAD = 4
"""Tokens every message costs on top of its content (role and framing)."""


def estimate_tokens(message: Message) -> int:
    """Estimate a message's tokens with no tokenizer: ceil(UTF-16 length / 4) + 4.

    The length is that of the message's content (see
    :func:`agentrecall.messages.content_size`); an empty message costs 4. This is the estimate
    AgentLIB's ``BufferMemory`` uses, so budgets behave the same.
    """
    return -(-content_size(message) // 4) + MESSAGE_OVERHEAD


def tiktoken_counter(encoding: Any = "o200k_base") -> TokenCounter:
    """Return a counter that tokenizes message text with ``tiktoken``, plus 4 per message.

    Args:
        encoding: an encoding name (``"o200k_base"``, ``"cl100k_base"``) or a ``tiktoken``
            ``Encoding`` object. tiktoken downloads a named encoding's tables on first use and
            caches them; offline, pass an ``Encoding`` built from local files.

    Raises:
        ImportError: tiktoken is not installed (``pip install 'agentrecall[tiktoken]'``).
    """
    try:
        import tiktoken
    except ImportError as error:
        raise ImportError(
            "tiktoken_counter needs tiktoken: pip install 'agentrecall[tiktoken]'"
        ) from error
    codec = tiktoken.get_encoding(encoding) if isinstance(encoding, str) else encoding

    def count(message: Message) -> int:
        return len(codec.encode(_model_text(message), disallowed_special=())) + MESSAGE_OVERHEAD

    return count


def _model_text(message: Message) -> str:
    """Everything in the message's content the model reads, as one string."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or ():
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif (
            "toolUse" in block
            or "toolResult" in block
            or "json" in block
            or block.get("type") in ("tool_use", "tool_result")
        ):
            parts.append(json.dumps(block, ensure_ascii=False, default=str))
    return "\n".join(parts)
