"""The bearer token an HTTP MCP server requires before anything runs."""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from agentrecall.errors import InvalidArgumentError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_BYTES = 32
"""Random bytes in a generated token: 256 bits, as URL-safe base64."""

MIN_TOKEN_LENGTH = 16
"""The fewest characters a token may have: a shorter one could be guessed."""

# A JSON-RPC error without a request id (the request was not read): what an MCP client
# expects of any error body, so its SDK can show the message.
_REFUSAL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32001,
            "message": "unauthorized: send the header 'Authorization: Bearer <token>' "
            "with the server's token",
        },
    }
).encode()


def new_token() -> str:
    """Return a fresh random token for a server that was given none."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def check_token(token: str, source: str) -> str:
    """Return ``token`` if a client can send it in a header and it is long enough to keep.

    A token is visible ASCII without spaces, at least :data:`MIN_TOKEN_LENGTH` characters.

    Raises:
        InvalidArgumentError: it holds other characters or is too short; ``source`` (the
            option or variable it came from) is named in the message.
    """
    if not all("!" <= character <= "~" for character in token):
        raise InvalidArgumentError(
            f"{source}: a bearer token must be letters, digits and ASCII punctuation, "
            "without spaces"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise InvalidArgumentError(
            f"{source}: a bearer token needs at least {MIN_TOKEN_LENGTH} characters, got "
            f"{len(token)} (leave it out to have one generated)"
        )
    return token


def require_bearer(app: ASGIApp, token: str) -> ASGIApp:
    """Wrap an ASGI app so that only requests carrying ``Authorization: Bearer <token>`` reach it.

    The scheme is case-insensitive (``bearer`` and ``BEARER`` too, as HTTP says); the token
    is not. Every other HTTP request, on any path and with any method, is answered ``401``
    with ``WWW-Authenticate: Bearer`` and a JSON-RPC error body before the app sees it (a
    WebSocket is closed), so no tool runs and nothing is read. The comparison takes the same
    time whatever the header holds (``hmac``), so the token cannot be guessed byte by byte
    from response times. The ASGI lifespan passes through.

    Raises:
        InvalidArgumentError: ``token`` is not one :func:`check_token` accepts.
    """
    expected = b"bearer " + check_token(token, "the bearer token").encode("ascii")

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or _carries(scope, expected):
            await app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # policy violation
        else:
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"www-authenticate", b"Bearer"),
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(_REFUSAL)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": _REFUSAL})

    return guarded


def _carries(scope: Scope, expected: bytes) -> bool:
    values = [value for key, value in scope["headers"] if key.lower() == b"authorization"]
    # One header exactly: two could be read differently by a proxy in front of the server.
    if len(values) != 1:
        return False
    scheme, space, credentials = values[0].partition(b" ")
    return hmac.compare_digest(scheme.lower() + space + credentials, expected)
