"""What every client of an OpenAI-compatible server shares: httpx, TLS, errors and retry waits.

The chat model client is async and the embeddings client is sync; the decisions (which
failures to retry, how long to wait, what the final error says) are made here once, and each
client only sends and sleeps.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import ssl
from typing import Any

from agentrecall._internal.retry import RetryPolicy, is_retryable_status, parse_retry_after
from agentrecall.errors import InvalidArgumentError, ModelError

EXCERPT_CHARS = 500
"""How much of a server's answer an error message quotes."""


def import_httpx(user: str) -> Any:
    """Return the ``httpx`` module, or raise an ``ImportError`` naming the extra ``user`` needs."""
    try:
        import httpx
    except ImportError as error:
        raise ImportError(f"{user} needs httpx: pip install 'agentrecall[http]'") from error
    return httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Return the process's one verifying TLS context (needs httpx)."""
    # Building it reads the whole CA bundle (about 0.1 s); one context per process serves
    # every client, as httpx recommends.
    context: ssl.SSLContext = import_httpx("An HTTPS client").create_ssl_context()
    return context


_HEADER_SAFE = re.compile(r"[!-~]*")
"""What an API key may hold: printable ASCII, no space (it is sent as ``Bearer KEY``)."""


def check_endpoint(base_url: object, model: object, api_key: object, timeout: object) -> None:
    """Refuse a server root that is not an http(s) URL, a blank model, a bad key or timeout.

    Raises:
        InvalidArgumentError: the message names the argument.
    """
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise InvalidArgumentError(f"base_url must be an http:// or https:// URL, got {base_url!r}")
    if not isinstance(model, str) or not model.strip():
        raise InvalidArgumentError(f"model must be a non-blank string, got {model!r}")
    if api_key is not None and not isinstance(api_key, str):
        raise InvalidArgumentError("api_key must be a string or None")
    if isinstance(api_key, str) and not _HEADER_SAFE.fullmatch(api_key):
        # It goes into an HTTP header, which carries neither line breaks nor non-ASCII text:
        # refused here rather than at the first request, as a raw httpx or encoding error.
        raise InvalidArgumentError(
            "api_key must be printable ASCII without spaces or line breaks (an HTTP header "
            "carries it); check for a pasted newline or quote"
        )
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise InvalidArgumentError(f"timeout must be a number of seconds > 0, got {timeout!r}")


def transport_errors(httpx: Any) -> tuple[type[BaseException], ...]:
    """Return the httpx exceptions that mean no answer came: worth retrying."""
    return (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def excerpt(text: str) -> str:
    """Return ``text`` on one line, cut to :data:`EXCERPT_CHARS` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "..."


def status_error(url: str, response: Any, attempts: int) -> ModelError:
    """Return the error for an ``httpx.Response`` with a failing status."""
    reason = response.reason_phrase or "error"
    quoted = excerpt(response.text)
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return ModelError(
        f"POST {url} returned {response.status_code} {reason}{tries}: {quoted}",
        status_code=response.status_code,
        body=quoted,
    )


def retry_wait(
    policy: RetryPolicy,
    url: str,
    retry: int,
    logger: logging.Logger,
    *,
    response: Any = None,
    error: BaseException | None = None,
) -> float:
    """Return the seconds to wait before sending a failed request again, or raise.

    Call it after attempt number ``retry`` (0-based) failed, with the ``httpx.Response`` whose
    status was not a success or the transport ``error`` that stopped it. It logs a warning
    for each retry.

    Raises:
        ModelError: the failure cannot pass (a status such as 400 or 401), or the retries
            are used up; chained to ``error`` when there was one.
    """
    retry_after: float | None = None
    if error is not None:
        problem = f"{type(error).__name__}: {error}"
        if retry >= policy.max_retries:
            raise ModelError(
                f"POST {url} failed after {retry + 1} attempt(s): {problem}"
            ) from error
    else:
        if not is_retryable_status(response.status_code) or retry >= policy.max_retries:
            raise status_error(url, response, retry + 1)
        problem = f"status {response.status_code}"
        retry_after = parse_retry_after(response.headers.get("retry-after"))
    wait = policy.delay(retry, retry_after)
    logger.warning("POST %s: %s; retrying in %.2f s", url, problem, wait)
    return wait
