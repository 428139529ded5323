"""Serving an MCP server: over standard input and output, or over streamable HTTP with a token."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from agentrecall.errors import InvalidArgumentError
from agentrecall.mcp.auth import require_bearer

HTTP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is served."""

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""How a client on this machine names it in a ``Host`` or ``Origin`` header."""


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
    loopback host (:func:`is_loopback`, written any way: ``::1`` or ``[::1]``, ``127.0.0.2``,
    ``LOCALHOST``) requests whose ``Host`` or ``Origin`` header names another machine are
    refused too (DNS rebinding). ``port`` 0 takes a free port. ``announce`` is called once
    with the endpoint's URL, when the socket already accepts connections.

    Raises:
        InvalidArgumentError: nothing can listen at ``host``:``port`` (taken, or not an
            address of this machine).
    """
    address = host.strip("[]")  # an IPv6 address may come in its URL brackets, or without
    where = f"[{address}]" if ":" in address else address
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, transport_security=_rebinding_guard(address, where)
    )
    listener = _listen(address, port)
    bound = listener.getsockname()[1]
    announce(f"http://{where}:{bound}{HTTP_PATH}")
    config = uvicorn.Config(require_bearer(app, token), log_level="warning", lifespan="on")
    with listener:
        await uvicorn.Server(config).serve(sockets=[listener])


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only: ``localhost`` or a loopback address."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _rebinding_guard(address: str, where: str) -> TransportSecuritySettings | None:
    """The ``Host`` and ``Origin`` headers a loopback server accepts; ``None`` for another host.

    A web page in the user's browser can reach a loopback port under a name of its own that
    resolves there; it gets no further than this check, whatever the token.
    """
    if not is_loopback(address):
        return None
    names = dict.fromkeys([*LOOPBACK_NAMES, where.lower()])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"http://{name}:*" for name in names],
    )


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except (OSError, OverflowError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise InvalidArgumentError(f"cannot listen on {host} port {port}: {reason}") from error
