"""Serving an MCP server: over standard input and output, or over streamable HTTP with a token."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol, cast

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage

from agentrecall._internal.stopping import Stop
from agentrecall.errors import InvalidArgumentError
from agentrecall.mcp.auth import ASGIApp, Message, Receive, Scope, Send, require_bearer
from agentrecall.mcp.lines import check_line
from agentrecall.mcp.sessions import SessionKeeper, SessionLimits

HTTP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is served."""

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""How a client on this machine names it in a ``Host`` or ``Origin`` header."""


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on this process's stdin and stdout until the client closes stdin.

    Standard output carries the protocol only; anything else the process says goes to
    stderr. Every line the client sends is answered or is a notification: one the SDK cannot
    read (not JSON, not a JSON-RPC message, text that is not Unicode) gets a JSON-RPC error
    at once (:func:`~agentrecall.mcp.lines.check_line`), and the server goes on.
    """
    lines = _CheckedLines(anyio.wrap_file(sys.stdin.buffer))
    # The SDK reads any async iterable of text lines as stdin, though it names AsyncFile.
    async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (reading, writing):
        lines.answer_with(writing)
        await server.run(reading, writing, server.create_initialization_options())


class _Sender(Protocol):
    """The send side of the SDK's write stream."""

    async def send(self, item: SessionMessage, /) -> None: ...


class _CheckedLines:
    """The lines of stdin the SDK can read; the others answered on the SDK's write stream."""

    def __init__(self, stdin: anyio.AsyncFile[bytes]) -> None:
        self._stdin = stdin
        self._writing: _Sender | None = None
        self._ready = anyio.Event()

    def answer_with(self, writing: _Sender) -> None:
        """Answer bad lines on ``writing`` (until then, no line is read)."""
        self._writing = writing
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        await self._ready.wait()
        assert self._writing is not None, "set with the event"
        async for line in self._stdin:
            checked = check_line(line)
            if isinstance(checked, str):
                yield checked
            elif checked is not None:
                await self._writing.send(SessionMessage(checked))


async def serve_http(
    server: Server[Any],
    *,
    host: str,
    port: int,
    token: str,
    announce: Callable[[str], None],
    stop: Stop | None = None,
    sessions: SessionLimits | None = None,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until ``stop`` says so.

    Every request must carry ``Authorization: Bearer <token>`` (:func:`require_bearer`). On a
    loopback host (:func:`is_loopback`, written any way: ``::1`` or ``[::1]``, ``127.0.0.2``,
    ``LOCALHOST``) requests whose ``Host`` or ``Origin`` header names another machine are
    refused too (DNS rebinding). ``port`` 0 takes a free port. ``announce`` is called once
    with the endpoint's URL, once the server is ready (after the socket is bound and the
    server has started), never when binding fails. Sessions are kept within ``sessions``
    (:class:`~agentrecall.mcp.sessions.SessionLimits`, its defaults without it): idle ones
    end, and there are never more than its ``max_sessions``.

    With ``stop`` (installed: it has taken SIGINT and SIGTERM over), a signal ends the
    server gracefully at any moment: new connections are refused, the requests in flight
    are answered, then this returns. Without it, the server runs until cancelled.

    Raises:
        InvalidArgumentError: nothing can listen at ``host``:``port`` (taken, or not an
            address of this machine).
    """
    address = host.strip("[]")  # an IPv6 address may come in its URL brackets, or without
    where = f"[{address}]" if ":" in address else address
    limits = SessionLimits() if sessions is None else sessions
    # The keeper ends idle sessions and keeps their number bounded; the SDK's own limits,
    # measured on another clock, are off.
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        transport_security=_rebinding_guard(address, where),
        session_idle_timeout=None,
        max_sessions=None,
    )
    keeper = SessionKeeper(app, path=HTTP_PATH, limits=limits)
    listener = _listen(address, port)
    url = f"http://{where}:{listener.getsockname()[1]}{HTTP_PATH}"
    config = uvicorn.Config(
        _announcing(require_bearer(keeper, token), lambda: announce(url)),
        log_level="warning",
        lifespan="on",
    )
    running = _Uvicorn(config)
    if stop is not None:
        stop.serving(running)
    with listener:
        async with anyio.create_task_group() as group:
            group.start_soon(keeper.sweep_every, min(60.0, limits.idle_timeout / 4))
            await running.serve(sockets=[listener])
            group.cancel_scope.cancel()


class _Uvicorn(uvicorn.Server):
    """A uvicorn server that leaves the signals to its caller.

    uvicorn's own handlers are installed only once it runs, and re-raise the signal after
    its shutdown (a ``KeyboardInterrupt`` traceback, or death by SIGTERM); a
    ``Stop`` covers the whole life of the command instead.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _announcing(app: ASGIApp, announce: Callable[[], None]) -> ASGIApp:
    """Wrap ``app`` to call ``announce`` once its lifespan has started (the server is ready)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def watched(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                announce()

        await app(scope, receive, watched)

    return wrapped


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
