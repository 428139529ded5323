"""Serving an MCP server: over standard input and output, or over streamable HTTP with a token."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from agentrecall.errors import InvalidArgumentError
from agentrecall.mcp.auth import require_bearer

HTTP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is served."""


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin and stdout until the client closes stdin.

    Standard output carries the protocol only; anything else the process says goes to
    stderr.
    """
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(
    server: Server[Any],
    *,
    host: str,
    port: int,
    token: str,
    announce: Callable[[str], None],
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (Ctrl-C, SIGTERM).

    Every request must carry ``Authorization: Bearer <token>`` (:func:`require_bearer`). On a
    loopback host the SDK also refuses requests whose ``Host`` or ``Origin`` header names
    another machine (DNS rebinding). ``port`` 0 takes a free port. ``announce`` is called once
    with the endpoint's URL, when the socket already accepts connections.

    Raises:
        InvalidArgumentError: nothing can listen at ``host``:``port`` (taken, or not an
            address of this machine).
    """
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    listener = _listen(host, port)
    bound = listener.getsockname()[1]
    where = f"[{host}]" if ":" in host else host
    announce(f"http://{where}:{bound}{HTTP_PATH}")
    config = uvicorn.Config(require_bearer(app, token), log_level="warning", lifespan="on")
    with listener:
        await uvicorn.Server(config).serve(sockets=[listener])


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family)
    except (OSError, OverflowError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise InvalidArgumentError(f"cannot listen on {host} port {port}: {reason}") from error
