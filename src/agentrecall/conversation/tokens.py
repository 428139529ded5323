"""Token counting for conversation budgets."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from agentrecall.messages import Message, content_size, json_text

TokenCounter = Callable[[Message], int]
"""Any callable that returns how many tokens a message costs."""

MESSAGE_OVERHEAD = 4
"""Tokens every message costs on top of its content (role and framing)."""


def estimate_tokens(message: Message) -> int:
    """Estimate a message's tokens with no tokenizer: ceil(UTF-16 length / 4) + 4.

    The length is that of the message's content (see
    :func:`agentrecall.messages.content_size`) plus, for OpenAI ``tool_calls`` (or AgentLIB
    ``toolCalls``), each call's function name and arguments, which the model reads as surely
    as text; an empty message costs 4. This is the estimate AgentLIB's ``BufferMemory`` uses,
    except that AgentLIB counts no tool calls, so a budget let tool arguments of any size pass.
    """
    pieces = [{"text": piece} for piece in _tool_call_text(message)]
    calls = content_size({"content": pieces}) if pieces else 0
    return -(-(content_size(message) + calls) // 4) + MESSAGE_OVERHEAD


def tiktoken_counter(encoding: Any = "o200k_base") -> TokenCounter:
    """Return a counter that tokenizes message text with ``tiktoken``, plus 4 per message.

    The text is what :func:`estimate_tokens` measures: content, tool blocks as JSON, and
    OpenAI tool calls' names and arguments.

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
    """Everything in the message the model reads, as one string."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else _blocks_text(content or ())
    parts.extend(_tool_call_text(message))
    return "\n".join(parts)


def _blocks_text(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif (
            "toolUse" in block
            or "toolResult" in block
            or "json" in block
            or block.get("type") in ("tool_use", "tool_result")
        ):
            parts.append(json_text(block))
    return parts


def _tool_call_text(message: Message) -> Iterator[str]:
    """Yield the function name and the arguments of each OpenAI-style tool call outside content."""
    for field in ("tool_calls", "toolCalls"):
        calls = message.get(field)
        for call in calls if isinstance(calls, list) else ():
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            # OpenAI nests name and arguments in "function"; AgentLIB keeps them on the call.
            named = function if isinstance(function, Mapping) else call
            yield str(named.get("name") or "")
            arguments = named.get("arguments")
            if isinstance(arguments, str):
                yield arguments
            elif arguments is not None:
                yield json_text(arguments)
