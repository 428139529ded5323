"""``OpenAICompatibleEmbedder``: vectors from an OpenAI-compatible ``/embeddings`` endpoint.

Talks to any server that implements OpenAI's ``POST /embeddings``: OpenAI itself, Ollama,
vLLM, llama.cpp's server, LM Studio, LiteLLM. Needs ``httpx`` (``pip install
'agentrecall[http]'``) and numpy (``pip install 'agentrecall[embeddings]'``), imported only
when an embedder is constructed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
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
from agentrecall.embeddings.base import Vectors
from agentrecall.embeddings.vectors import as_vectors, check_dimension, check_texts, import_numpy
from agentrecall.errors import InvalidArgumentError, ModelError

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

PROBE_TEXT = "dimension"
"""What is embedded to learn the dimension when it is asked for before any vector came."""


class OpenAICompatibleEmbedder:
    """Embeddings served over the OpenAI embeddings API, called synchronously.

    Each batch of at most ``batch_size`` texts is one ``POST {base_url}/embeddings`` with
    ``{"model": model, "input": [texts...]}``; the answer's rows are put back in input order
    by their ``index``. Retries are those of
    :class:`~agentrecall.models.OpenAICompatibleModel`: 408, 409, 429, 5xx, timeouts and lost
    connections are retried up to ``max_retries`` times with exponential backoff (or the
    server's ``Retry-After``); other statuses fail at once.

    The dimension: given, or learnt from the first answer. Every later answer must match it,
    or the call fails: a server that switched models under the same name would otherwise mix
    vectors that cannot be compared. Reading :attr:`dimension` before any vector came sends
    one request (embedding :data:`PROBE_TEXT`), so read it where blocking is fine; pass
    ``dimension`` to avoid that. On Python 3.10 and 3.11, ``isinstance(obj, Embedder)`` reads
    it too; :func:`~agentrecall.embeddings.embedder_from` does not.

    The model id is ``openai-compatible:{model}`` by default. It leaves out ``base_url`` on
    purpose: the same model behind another address (a port, a host name, a proxy) gives the
    same vectors, and moving a server must not make a store re-embed everything. Where two
    servers give different vectors under one model name (another quantization, another
    revision), pass ``model_id`` to tell them apart.

    One connection pool serves every call and every thread; close it with :meth:`close` or
    ``with``; a call after closing opens a new pool.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dimension: int | None = None,
        model_id: str | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 2,
        retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
    ) -> None:
        """Configure the client; no connection is opened until the first request.

        Args:
            base_url: the API root including its version segment, as OpenAI clients take it
                (``https://api.openai.com/v1``, ``http://localhost:11434/v1`` for Ollama);
                ``/embeddings`` is appended, a trailing slash is ignored.
            model: the model name the server knows, sent as ``model``.
            api_key: sent as ``Authorization: Bearer <api_key>``; ``None`` sends no header.
            dimension: the length of the model's vectors; ``None`` learns it from the first
                answer.
            model_id: what identifies the vectors, instead of ``openai-compatible:{model}``.
            batch_size: the most texts per request (OpenAI takes up to 2048).
            timeout: seconds allowed for connecting, and for each read and write.
            max_retries: retries after the first attempt; 0 disables retrying.
            retry_delay: seconds before the first retry; each next wait doubles.
            max_retry_delay: the longest wait between attempts, ``Retry-After`` included.

        Raises:
            ImportError: httpx or numpy is not installed; the message names the extra.
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
        """
        self._httpx = import_httpx("OpenAICompatibleEmbedder")
        import_numpy("OpenAICompatibleEmbedder")
        check_endpoint(base_url, model, api_key, timeout)
        if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
            raise InvalidArgumentError(
                f"model_id must be a non-blank string or None, got {model_id!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self._retry = RetryPolicy(
            max_retries=max_retries, initial_delay=retry_delay, max_delay=max_retry_delay
        )
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self._model_id = model_id or f"openai-compatible:{model}"
        self._dimension = None if dimension is None else check_dimension(dimension)
        self._dimension_given = dimension is not None
        self._batch_size = batch_size
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key is not None else {}
        self._timeout = float(timeout)
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None

    @property
    def model_id(self) -> str:
        """``openai-compatible:{model}``, or the ``model_id`` given."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The vectors' length: given, learnt, or asked of the server now (one request).

        Raises:
            ModelError: it had to be asked for and the request failed.
        """
        if self._dimension is None:
            return int(self._embed_batch([PROBE_TEXT]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return the server's vectors for ``texts``: float32, one row per text, in order.

        Raises:
            InvalidArgumentError: ``texts`` is not a sequence of strings.
            ModelError: the server answered with an error status (``status_code`` and an
                excerpt of the body are kept), the answer was not embeddings for these
                texts, its vectors changed length, or the server could not be reached;
                after the retries described above.
        """
        numpy = import_numpy("OpenAICompatibleEmbedder")
        items = check_texts(texts)
        if not items:
            empty: Vectors = numpy.empty((0, self.dimension), dtype=numpy.float32)
            return empty
        parts = [
            self._embed_batch(items[start : start + self._batch_size])
            for start in range(0, len(items), self._batch_size)
        ]
        joined: Vectors = parts[0] if len(parts) == 1 else numpy.concatenate(parts)
        return joined

    def _embed_batch(self, texts: list[str]) -> Vectors:
        content = json.dumps({"model": self.model, "input": texts}, ensure_ascii=False)
        response = self._send(content.encode())
        try:
            rows = embedding_rows(response.json(), len(texts))
        except ValueError as error:
            raise ModelError(
                f"POST {self.url}: unusable reply: {error}",
                status_code=response.status_code,
                body=excerpt(response.text),
            ) from error
        length = len(rows[0])
        if self._dimension is None:
            self._dimension = check_dimension(length, f"the vector length from {self.url}")
        elif length != self._dimension:
            known = "the dimension given" if self._dimension_given else "its first answer"
            raise ModelError(
                f"POST {self.url}: model {self.model!r} returned vectors of length {length}, "
                f"but {known} is {self._dimension}: vectors of different lengths cannot be "
                "compared (did the server switch models?)",
                status_code=response.status_code,
            )
        return as_vectors(rows, len(texts), length, f"POST {self.url}")

    def _send(self, content: bytes) -> httpx.Response:
        client = self._connect()
        retry = 0
        while True:
            try:
                response = client.post(self.url, content=content)
            except transport_errors(self._httpx) as error:
                wait = retry_wait(self._retry, self.url, retry, logger, error=error)
            else:
                if response.is_success:
                    return response
                wait = retry_wait(self._retry, self.url, retry, logger, response=response)
            time.sleep(wait)
            retry += 1

    def _connect(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {"Content-Type": "application/json", **self._headers}
                self._client = self._httpx.Client(
                    headers=headers,
                    timeout=self._httpx.Timeout(self._timeout),
                    verify=tls_context(),
                )
            return self._client

    def close(self) -> None:
        """Close the connection pool; a later call opens a new one."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> OpenAICompatibleEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder({self.url!r}, {self.model!r})"


def embedding_rows(payload: Any, count: int) -> list[list[Any]]:
    """Return the vectors of an embeddings answer for ``count`` texts, in input order.

    Items are placed by their ``index``; an answer whose items all lack one (as a few servers
    give it) is taken in input order.

    Raises:
        ValueError: the answer has no ``data`` list of ``count`` items, each with a distinct
            integer ``index`` below ``count`` (or none has one) and a non-empty ``embedding``
            list, all of one length. (The numbers themselves are checked when they become an
            array.)
    """
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise ValueError("no 'data' list")
    if len(data) != count:
        raise ValueError(f"{len(data)} embeddings for {count} input(s)")
    in_order = all(isinstance(item, dict) and "index" not in item for item in data)
    rows: list[list[Any] | None] = [None] * count
    for place, item in enumerate(data):
        index = item.get("index", place if in_order else None) if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise ValueError(f"an item has index {index!r}, expected 0 to {count - 1}")
        if rows[index] is not None:
            raise ValueError(f"index {index} appears twice")
        vector = item.get("embedding")
        if not isinstance(vector, list) or not vector:
            raise ValueError(f"item {index} has no 'embedding' list of numbers")
        rows[index] = vector
    vectors = [row for row in rows if row is not None]
    if len({len(row) for row in vectors}) != 1:
        raise ValueError("the embeddings differ in length")
    return vectors
