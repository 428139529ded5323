"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat and embeddings APIs from a script.

Tests (and examples) point :class:`~agentrecall.models.OpenAICompatibleModel`, or any other
OpenAI-compatible client, at :attr:`ChatServer.base_url` and decide what each request gets
back::

    with ChatServer() as server:
        server.push("Hello!", Reply.error(503, "busy"), "Second answer")
        model = OpenAICompatibleModel(server.base_url, "test-model")
        ...
        assert server.requests[0].messages[-1]["content"] == "Hi"

Replies come first from the queue filled by :meth:`ChatServer.push`, then, for an
embeddings request, from the ``embedder`` (any :class:`~agentrecall.embeddings.Embedder`, such
as :class:`~agentrecall.testing.HashEmbedder`), then from the ``responder`` callable, if any;
a request with none of these gets a 400 whose body says no reply was scripted. One queue
serves both endpoints, in arrival order. Every request is recorded, in arrival order, before
it is answered. ``POST <prefix>/chat/completions`` and ``POST <prefix>/embeddings`` are served
(prefix ``/v1`` by default); other paths get 404. The server uses the standard library only
(an ``embedder`` brings what it needs) and serves each connection on its own thread.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentrecall.embeddings.base import Embedder

__all__ = ["ChatServer", "ReceivedRequest", "Reply"]


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer.

    Build it with :meth:`text`, :meth:`embeddings`, :meth:`error`, :meth:`raw` or
    :meth:`disconnect`; a plain ``str`` given to :meth:`ChatServer.push` or returned by a
    responder means ``Reply.text``.

    Attributes:
        status: the HTTP status.
        body: the exact response body; ``None`` with :attr:`content` set builds a chat
            completion around it.
        content: the assistant text of a chat completion.
        headers: extra response headers (``Retry-After``...).
        delay: seconds to wait before answering (to provoke client timeouts); cut short when
            the server stops.
        drop: close the connection without answering.
    """

    status: int = 200
    body: bytes | None = None
    content: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0) -> Reply:
        """A successful chat completion whose assistant message is ``content``."""
        return cls(content=content, delay=delay)

    @classmethod
    def embeddings(cls, vectors: Sequence[Sequence[float]], *, model: str = "scripted") -> Reply:
        """A successful embeddings answer: ``vectors[i]`` is the embedding of input ``i``."""
        data = [
            {"object": "embedding", "index": index, "embedding": [float(x) for x in vector]}
            for index, vector in enumerate(vectors)
        ]
        payload = {"object": "list", "data": data, "model": model, "usage": _NO_USAGE}
        return cls(body=json.dumps(payload).encode())

    @classmethod
    def error(cls, status: int, message: str, *, headers: Mapping[str, str] | None = None) -> Reply:
        """An OpenAI-style error body ``{"error": {"message", "type", "code"}}``."""
        payload = {"error": {"message": message, "type": "scripted_error", "code": status}}
        return cls(status=status, body=json.dumps(payload).encode(), headers=dict(headers or {}))

    @classmethod
    def raw(
        cls, status: int, body: str | bytes, *, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """Exactly ``body`` with ``status``: for replies that are not chat completions."""
        data = body.encode() if isinstance(body, str) else body
        return cls(status=status, body=data, headers=dict(headers or {}))

    @classmethod
    def disconnect(cls) -> Reply:
        """Close the connection without sending anything back."""
        return cls(drop=True)


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """A request as the server received it.

    Attributes:
        method: the HTTP method.
        path: the request path.
        headers: the request headers, names lowercased.
        body: the raw body.
        json: the body parsed as JSON, ``None`` when it is not JSON.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's ``messages`` (empty when the body has none)."""
        if isinstance(self.json, dict) and isinstance(self.json.get("messages"), list):
            return list(self.json["messages"])
        return []

    @property
    def system(self) -> str | None:
        """The content of the first ``system`` message, if there is one."""
        for message in self.messages:
            if isinstance(message, dict) and message.get("role") == "system":
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None

    @property
    def inputs(self) -> list[str]:
        """The texts of an embeddings request's ``input`` (one string counts as a list of one)."""
        value = self.json.get("input") if isinstance(self.json, dict) else None
        if isinstance(value, str):
            return [value]
        return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []

    @property
    def last_user_text(self) -> str | None:
        """The string content of the last ``user`` message, if there is one."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None


_NO_USAGE = {"prompt_tokens": 0, "total_tokens": 0}

Responder = Callable[[ReceivedRequest], "Reply | str"]
"""Computes the reply to a request that found the queue empty."""


class ChatServer:
    """An OpenAI-compatible chat completions and embeddings server on a free port of 127.0.0.1.

    Use it as a context manager (or call :meth:`start` and :meth:`stop`). Thread-safe: the
    test pushes replies and reads requests while the server answers on its own threads.
    """

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        embedder: Embedder | None = None,
        prefix: str = "/v1",
    ) -> None:
        """Configure the server; nothing listens until :meth:`start`.

        Args:
            responder: called with each request the queue (and the embedder) has no reply for.
            embedder: answers each embeddings request the queue has no reply for, with its
                vectors for the request's ``input``.
            prefix: the path the API is served under; :attr:`base_url` ends with it.
        """
        self._responder = responder
        self._embedder = embedder
        self._prefix = prefix.rstrip("/")
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[ReceivedRequest] = []
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._http: _QuietServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The root to hand to an OpenAI-compatible client, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self._http is None:
            raise RuntimeError("ChatServer is not running; call start() first")
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}{self._prefix}"

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def push(self, *replies: Reply | str) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._queue.extend(_as_reply(reply) for reply in replies)

    def start(self) -> ChatServer:
        """Start listening and serving on a background thread; return ``self``."""
        if self._http is not None:
            raise RuntimeError("ChatServer is already running")
        self._stopping.clear()
        self._http = _QuietServer(("127.0.0.1", 0), _handler_class(self))
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.01},  # stop() waits up to one poll for the loop to end
            name="agentrecall-chat-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; pending delayed replies end at once."""
        http, thread, self._http, self._thread = self._http, self._thread, None, None
        if http is None or thread is None:
            return
        self._stopping.set()
        http.shutdown()
        http.close_connections()
        http.server_close()
        thread.join()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _reply_to(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        embedder = self._embedder if request.path.endswith("/embeddings") else None
        try:
            if embedder is not None:
                vectors = embedder.embed(request.inputs)
                return Reply.embeddings(vectors.tolist(), model=embedder.model_id)
            if self._responder is not None:
                return _as_reply(self._responder(request))
        except Exception as error:  # a broken responder must still answer the client
            return Reply.error(500, f"ChatServer responder raised {error!r}")
        number = len(self.requests)
        return Reply.error(400, f"ChatServer: no reply scripted for request {number}")

    def _completion(self, request: ReceivedRequest, content: str) -> bytes:
        model = request.json.get("model") if isinstance(request.json, dict) else None
        payload = {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": 0,
            "model": model or "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        return json.dumps(payload).encode()


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End kept-alive connections, so a stopped server answers nobody."""
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out or hung up is part of what tests provoke; anything else is
        # a bug in the server and still printed.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _as_reply(reply: Reply | str) -> Reply:
    return Reply.text(reply) if isinstance(reply, str) else reply


def _handler_class(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers and pooled clients use
        # Headers and body leave in separate writes; with Nagle's algorithm the body would
        # wait for the client's delayed ACK, about 40 ms per request.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches to)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            served = (f"{server._prefix}/chat/completions", f"{server._prefix}/embeddings")
            if self.path not in served:
                self._send(404, json.dumps({"error": {"message": "not found"}}).encode(), {})
                return
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = ReceivedRequest("POST", self.path, headers, body, parsed)
            reply = server._reply_to(request)
            if reply.delay and server._stopping.wait(reply.delay):
                self.close_connection = True
                return
            if reply.drop:
                self.close_connection = True
                return
            data = reply.body
            if data is None:
                data = server._completion(request, reply.content or "")
            self._send(reply.status, data, reply.headers)

        def _send(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Keep the test output quiet; requests are recorded instead."""

    return Handler
