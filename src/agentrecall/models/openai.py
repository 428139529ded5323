"""``OpenAICompatibleModel``: a :class:`~agentrecall.models.ChatModel` over HTTP.

Talks to any server that implements OpenAI's ``POST /chat/completions``: OpenAI itself, vLLM,
Ollama, llama.cpp's server, LM Studio, LiteLLM. Needs ``httpx`` (``pip install
'agentrecall[http]'``), imported only when a model is constructed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentrecall._internal.http import (
    check_endpoint,
    excerpt,
    import_httpx,
    retry_wait,
    tls_context,
    transport_errors,
)
from agentrecall._internal.retry import RetryPolicy
from agentrecall.errors import InvalidArgumentError, ModelError
from agentrecall.messages import Message, check_message
from agentrecall.models.openai_wire import completion_text, request_body

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)


class OpenAICompatibleModel:
    """A chat model served over the OpenAI chat completions API.

    Each :meth:`complete` sends one non-streaming request to ``{base_url}/chat/completions``
    and returns the text of the first choice. Messages may be OpenAI-style or Strands-style;
    see :mod:`agentrecall.models.openai_wire` for how Strands blocks are sent.

    Retries: a request that gets 408, 409, 429 or a 5xx status, times out, cannot connect or
    loses its connection is sent again up to ``max_retries`` times, after an exponentially
    growing wait with a little jitter (see :class:`~agentrecall._internal.retry.RetryPolicy`). A
    ``Retry-After`` header sets the wait instead, up to ``max_retry_delay``. Other statuses
    fail at once: retrying a bad request or a bad key cannot help.

    One connection pool serves every call on one event loop. Close it with :meth:`aclose` or
    ``async with``; a call after closing opens a new pool, and so does a call on another event
    loop (a program calling ``asyncio.run`` once per request, say); the pool of a loop that
    ends is closed as it shuts down (``asyncio.run`` does this).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        """Configure the client; no connection is opened until the first call.

        Args:
            base_url: the API root including its version segment, as OpenAI clients take it:
                ``https://api.openai.com/v1``, ``http://localhost:11434/v1`` (Ollama),
                ``http://localhost:8000/v1`` (vLLM). ``/chat/completions`` is appended; a
                trailing slash is ignored. Nothing is guessed: a root without ``/v1`` is
                used as given.
            model: the model name the server knows, sent as ``model``.
            api_key: sent as ``Authorization: Bearer <api_key>``; ``None`` sends no header.
            timeout: seconds allowed for connecting, and for each read and write.
            max_retries: retries after the first attempt; 0 disables retrying.
            retry_delay: seconds before the first retry; each next wait doubles.
            max_retry_delay: the longest wait between attempts, ``Retry-After`` included.
            extra_body: more request fields sent with every call (``temperature``,
                ``max_tokens``, ``response_format``...), a mapping of names to values JSON
                can carry (copied); they cannot replace ``model``, ``messages`` or ``stream``.

        Raises:
            ImportError: httpx is not installed.
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
        """
        self._httpx = import_httpx("OpenAICompatibleModel")
        check_endpoint(base_url, model, api_key, timeout)
        self._retry = RetryPolicy(
            max_retries=max_retries, initial_delay=retry_delay, max_delay=max_retry_delay
        )
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key is not None else {}
        self._timeout = float(timeout)
        self._extra = _checked_extra(extra_body)
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    async def complete(self, messages: Sequence[Message], *, system: str | None = None) -> str:
        """Return the model's reply to ``messages``; see :meth:`ChatModel.complete`.

        Raises:
            InvalidArgumentError: ``messages`` is not a list of usable messages (one holds values
                JSON cannot carry, say), or ``system`` is not a string.
            ModelError: the server answered with an error status (``status_code`` and an
                excerpt of the body are kept), the reply was not a chat completion, or the
                server could not be reached; after the retries described above.
        """
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise InvalidArgumentError(
                f"messages must be a list of message mappings, got {type(messages).__name__}"
            )
        for index, message in enumerate(messages):
            check_message(message, index)
        if system is not None and not isinstance(system, str):
            raise InvalidArgumentError(f"system must be a string or None, got {system!r}")
        body = request_body(self.model, messages, system, self._extra)
        try:
            content = json.dumps(body, ensure_ascii=False).encode()
        except (TypeError, ValueError) as error:
            raise InvalidArgumentError(f"messages cannot be sent as JSON: {error}") from error
        response = await self._send(content)
        try:
            return completion_text(response.json())
        except ValueError as error:
            raise ModelError(
                f"POST {self.url}: unusable reply: {error}",
                status_code=response.status_code,
                body=excerpt(response.text),
            ) from error

    async def _send(self, content: bytes) -> httpx.Response:
        client = await self._connect()
        retry = 0
        while True:
            try:
                response = await client.post(self.url, content=content)
            except transport_errors(self._httpx) as error:
                wait = retry_wait(self._retry, self.url, retry, logger, error=error)
            else:
                if response.is_success:
                    return response
                wait = retry_wait(self._retry, self.url, retry, logger, response=response)
            await asyncio.sleep(wait)
            retry += 1

    async def _connect(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is loop:
            return self._client
        # A pool serves one event loop: one made on another (each asyncio.run makes its own)
        # is closed by that loop as it shuts down, or left to it.
        headers = {"Content-Type": "application/json", **self._headers}
        client: httpx.AsyncClient = self._httpx.AsyncClient(
            headers=headers, timeout=self._httpx.Timeout(self._timeout), verify=tls_context()
        )
        closer = _closed_with_loop(client)
        await anext(closer)  # now the loop's to finish: its shutdown_asyncgens closes the pool
        self._client, self._loop, self._closer = client, loop, closer
        return client

    async def aclose(self) -> None:
        """Close the connection pool; a later call opens a new one."""
        closer, loop = self._closer, self._loop
        self._client = self._loop = self._closer = None
        if closer is not None and loop is asyncio.get_running_loop():
            await closer.aclose()

    async def __aenter__(self) -> OpenAICompatibleModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel({self.url!r}, {self.model!r})"


async def _closed_with_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Hold ``client`` open until the generator is closed.

    It is closed by :meth:`OpenAICompatibleModel.aclose`, or by its event loop's end.
    """
    try:
        yield
    finally:
        await client.aclose()


def _checked_extra(extra_body: object) -> dict[str, Any]:
    """Return a copy of ``extra_body`` once it is a mapping JSON can carry as an object."""
    if extra_body is None:
        return {}
    if not isinstance(extra_body, Mapping) or not all(isinstance(k, str) for k in extra_body):
        raise InvalidArgumentError(
            f"extra_body must be a mapping of field names to values, got {extra_body!r}"
        )
    try:
        json.dumps(extra_body, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(f"extra_body cannot be sent as JSON: {error}") from error
    return dict(extra_body)
