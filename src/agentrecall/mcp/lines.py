r"""Checking each line a stdio client sends before the SDK reads it, so every request is answered.

The SDK drops a line it cannot read without a word: a client then waits for an answer until
its own timeout (60 s in the TypeScript SDK). Such lines are common: a JavaScript client
that cuts an emoji in half sends a lone surrogate (``"\ud800"``), which Python's JSON reader
accepts but the SDK's does not. :func:`check_line` tells the lines the SDK can read from the
others, and gives the JSON-RPC error to answer each of those with.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from agentrecall._internal.text import has_surrogate

_NOT_UNICODE = (
    "is not valid Unicode text: it holds a lone surrogate (half of a UTF-16 pair, such as an "
    "emoji cut in two) or bytes that are not UTF-8; send whole characters"
)


def check_line(line: bytes) -> str | types.JSONRPCError | None:
    """Return the line as text for the SDK, the error to answer it with, or ``None`` to skip it.

    * A blank line is skipped.
    * A line that is not JSON is answered ``-32700`` (parse error), without an id.
    * A message holding text that is not Unicode (a lone surrogate, or bytes that are not
      UTF-8) is answered ``-32602`` (invalid params) naming where, with the request's id; a
      notification or response holding it is skipped, as JSON-RPC answers neither.
    * Any other line that is not a JSON-RPC message is answered ``-32600`` (invalid request),
      with its id when it has one.
    """
    # surrogateescape: bytes that are not UTF-8 become lone surrogates, reported as below with
    # the request's id, rather than an error the client cannot match to its request.
    text = line.decode("utf-8", "surrogateescape").strip()
    if not text:
        return None
    try:
        message = json.loads(text)
    except ValueError as error:  # json.JSONDecodeError, or a number too long to convert
        return _error(None, types.PARSE_ERROR, f"Parse error: the line is not JSON ({error})")
    request_id = _request_id(message)
    where = _surrogate_at(message, "")
    if where is not None:
        if request_id is None or not isinstance(message.get("method"), str):
            return None
        return _error(request_id, types.INVALID_PARAMS, f"Invalid params: {where} {_NOT_UNICODE}")
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, problem['loc'])) or 'message'}: {problem['msg']}"
            for problem in error.errors()[:3]
        )
        return _error(request_id, types.INVALID_REQUEST, f"Invalid Request: {problems}")
    return text


def _request_id(message: Any) -> str | int | None:
    """The message's id if an answer can carry it back, else ``None``."""
    if not isinstance(message, dict):
        return None
    found = message.get("id")
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    if isinstance(found, str) and has_surrogate(found):
        return None  # UTF-8 cannot carry it back: the answer goes without an id
    return found


def _surrogate_at(value: Any, where: str) -> str | None:
    """Where in a JSON value a string that is not Unicode text is: ``params.arguments.query``."""
    if isinstance(value, str):
        return (where or "the message") if has_surrogate(value) else None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_at(item, f"{where}[{index}]")
            if found is not None:
                return found
    if isinstance(value, dict):
        for key, item in value.items():
            inside = f"{where}.{key}" if where else str(key)
            if has_surrogate(key):
                return f"a key in {where or 'the message'}"
            found = _surrogate_at(item, inside)
            if found is not None:
                return found
    return None


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )
