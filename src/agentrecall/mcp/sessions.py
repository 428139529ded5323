"""Keeping an HTTP MCP server's sessions bounded: idle ones end, and there are never too many.

A client that goes away without ending its session (a crash, a closed laptop, a script that
never says goodbye) leaves it in the server, about 24 KB each. :class:`SessionKeeper` ends
such sessions, the way a client would (``DELETE`` with the session's id, so the SDK frees
everything it holds), once they have been idle for a while or when room is needed for a new
one.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from agentrecall.errors import InvalidArgumentError
from agentrecall.mcp.auth import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"
# What the SDK checks on a request of a session: kept from the session's latest request.
_KEPT_HEADERS = (b"host", b"origin", b"mcp-protocol-version")

_FULL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32000,
            "message": "too many open sessions, all of them busy: try again later",
        },
    }
).encode()


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """How long an HTTP MCP session may stay idle, and how many may be open at once.

    Attributes:
        idle_timeout: seconds a session may go without a request in flight before it ends
            (its id then answers 404 and the client opens a new session).
        max_sessions: the most sessions open at once; opening one more ends the session idle
            the longest (or, when every one is busy, is refused with 503).
        clock: the monotonic clock, in seconds, that idleness is measured on.
    """

    idle_timeout: float = 30 * 60
    max_sessions: int = 1000
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.idle_timeout, int | float) and 0 < self.idle_timeout < 1e9):
            raise InvalidArgumentError(
                f"idle_timeout: expected a positive number of seconds, got {self.idle_timeout!r}"
            )
        if isinstance(self.max_sessions, bool) or not (
            isinstance(self.max_sessions, int) and self.max_sessions >= 1
        ):
            raise InvalidArgumentError(
                f"max_sessions: expected a whole number from 1, got {self.max_sessions!r}"
            )


@dataclass(slots=True)
class _Session:
    scope: Scope  # of its latest request, to end it with one of its own
    busy: int = 0
    idle_since: float = 0.0


class SessionKeeper:
    """ASGI middleware in front of the SDK's streamable HTTP app at ``path``.

    Guarantees:

    * a session with no request in flight (an open event stream counts as one) for
      ``limits.idle_timeout`` seconds is ended at the next :meth:`sweep`, which runs before
      every new session opens and every so often (:meth:`sweep_every`);
    * at most ``limits.max_sessions`` sessions are open: opening one more ends the least
      recently active idle session first, or is answered ``503`` with a JSON-RPC error when
      none is idle;
    * a session is ended as its client would end it, with ``DELETE``: the SDK frees it and
      its id answers ``404`` from then on.
    """

    def __init__(self, app: ASGIApp, *, path: str, limits: SessionLimits) -> None:
        self._app = app
        self._path = path
        self._limits = limits
        # Least recently active first: eviction takes the first idle one.
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    @property
    def open_sessions(self) -> int:
        """How many sessions are open."""
        return len(self._sessions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI request, keeping track of the session it belongs to."""
        if scope["type"] != "http" or scope["path"] != self._path:
            await self._app(scope, receive, send)
            return
        session_id = _header(scope, SESSION_HEADER)
        if session_id is None:
            await self._open(scope, receive, send)
            return
        session = self._sessions.get(session_id)
        if session is None:  # not one of ours: the SDK answers it (404)
            await self._app(scope, receive, send)
            return
        self._sessions.move_to_end(session_id)
        session.scope = scope
        session.busy += 1
        status: int | None = None
        try:
            status = await self._serve(scope, receive, send)
        finally:
            session.busy -= 1
            session.idle_since = self._limits.clock()
        if status == 404 or (scope["method"] == "DELETE" and status is not None and status < 300):
            self._sessions.pop(session_id, None)  # ended by its client, or by the SDK

    async def sweep(self) -> None:
        """End every session idle for ``idle_timeout`` seconds or more."""
        now = self._limits.clock()
        expired = [
            session_id
            for session_id, session in self._sessions.items()
            if not session.busy and now - session.idle_since >= self._limits.idle_timeout
        ]
        for session_id in expired:
            logger.info("ending MCP session %s: idle too long", session_id)
            await self._end(session_id)

    async def sweep_every(self, seconds: float) -> None:
        """Run :meth:`sweep` every ``seconds`` until cancelled."""
        while True:
            await anyio.sleep(seconds)
            await self.sweep()

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sweep()
        if len(self._sessions) >= self._limits.max_sessions:
            idle = next((i for i, s in self._sessions.items() if not s.busy), None)
            if idle is None:
                await _refuse(send)
                return
            logger.info("ending MCP session %s: room is needed for a new one", idle)
            await self._end(idle)
        opened: list[str] = []

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                found = _header({"headers": message.get("headers", [])}, SESSION_HEADER)
                if found is not None and found not in self._sessions:
                    # Busy until this response ends: an opening response may be a stream.
                    self._sessions[found] = _Session(scope, busy=1)
                    opened.append(found)
            await send(message)

        try:
            await self._app(scope, receive, watched)
        finally:
            for session_id in opened:
                session = self._sessions.get(session_id)
                if session is not None:
                    session.busy -= 1
                    session.idle_since = self._limits.clock()

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> int | None:
        status: int | None = None

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self._app(scope, receive, watched)
        return status

    async def _end(self, session_id: str) -> None:
        session = self._sessions.pop(session_id)
        kept = [(k, v) for k, v in session.scope["headers"] if k.lower() in _KEPT_HEADERS]
        scope = {
            **session.scope,
            "method": "DELETE",
            "headers": [*kept, (SESSION_HEADER, session_id.encode("latin-1"))],
            "query_string": b"",
        }
        delivered = False

        async def receive() -> Message:
            nonlocal delivered
            if delivered:  # the SDK reads no more than the body; wait as a client would
                await anyio.sleep_forever()
            delivered = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            pass

        await self._app(scope, receive, discard)


def _header(scope: Scope | dict[str, Any], name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _refuse(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(_FULL)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _FULL})
