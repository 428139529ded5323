"""Token counting for conversation budgets."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from agentrecall.errors import InvalidArgumentError, ModelError
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
            ``Encoding`` object. For a name, tiktoken downloads the encoding's token table
            (``<name>.tiktoken``, a few MB, from ``openaipublic.blob.core.windows.net``) on
            first use and caches it in the directory ``TIKTOKEN_CACHE_DIR`` names (by default
            ``data-gym-cache`` in the system's temporary directory). Offline, point
            ``TIKTOKEN_CACHE_DIR`` at a copy of a cache filled on a machine with network
            access, or pass an ``Encoding`` built from local files.

    Raises:
        ImportError: tiktoken is not installed (``pip install 'agentrecall[tiktoken]'``).
        InvalidArgumentError: ``encoding`` is a name tiktoken does not know.
        ModelError: the encoding's table is not cached and cannot be downloaded (or cached);
            the message names the file and how to provide it offline.
    """
    try:
        import tiktoken
    except ImportError as error:
        raise ImportError(
            "tiktoken_counter needs tiktoken: pip install 'agentrecall[tiktoken]'"
        ) from error
    codec = _named_encoding(tiktoken, encoding) if isinstance(encoding, str) else encoding

    def count(message: Message) -> int:
        return len(codec.encode(_model_text(message), disallowed_special=())) + MESSAGE_OVERHEAD

    return count


def _named_encoding(tiktoken: Any, name: str) -> Any:
    """Return tiktoken's encoding ``name``, explaining a download that failed.

    Raises:
        InvalidArgumentError: tiktoken knows no encoding ``name``.
        ModelError: its table could not be fetched or cached.
    """
    known = tiktoken.list_encoding_names()
    if name not in known:
        raise InvalidArgumentError(
            f"tiktoken_counter: unknown encoding {name!r}; tiktoken knows {', '.join(known)}"
        )
    try:
        return tiktoken.get_encoding(name)
    except OSError as error:  # requests' errors are OSErrors too
        raise ModelError(_unreachable(name, error)) from error


def _unreachable(name: str, error: OSError) -> str:
    request = getattr(error, "request", None)
    source = getattr(request, "url", None) or f"the file of encoding {name!r}"
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    where = (
        f"TIKTOKEN_CACHE_DIR ({cache!r})"
        if cache
        else f"{os.path.join(tempfile.gettempdir(), 'data-gym-cache')!r} (TIKTOKEN_CACHE_DIR unset)"
    )
    return (
        f"tiktoken_counter({name!r}): tiktoken downloads the token table of encoding {name!r} "
        f"({source}) on first use and found no copy in its cache, {where}; the download "
        f'failed: {error}. To work offline, run `TIKTOKEN_CACHE_DIR=DIR python -c "import '
        f"tiktoken; tiktoken.get_encoding('{name}')\"` on a machine with network access, copy "
        f"DIR here and set TIKTOKEN_CACHE_DIR to it (or pass a tiktoken Encoding built from "
        f"local files)"
    )


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
