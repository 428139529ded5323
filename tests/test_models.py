"""OpenAICompatibleModel against a real HTTP server on 127.0.0.1, and its pure helpers."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agentrecall import BufferMemory, OpenAICompatibleEmbedder
from agentrecall._internal.retry import RetryPolicy, is_retryable_status, parse_retry_after
from agentrecall.errors import AgentRecallError, InvalidArgumentError, ModelError
from agentrecall.models import ChatModel, OpenAICompatibleModel
from agentrecall.models.openai_wire import completion_text, request_body, to_openai_message
from agentrecall.testing import ChatServer, Reply


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as running:
        yield running


@pytest.fixture
async def model(server: ChatServer) -> AsyncIterator[OpenAICompatibleModel]:
    async with OpenAICompatibleModel(
        server.base_url, "test-model", max_retries=2, retry_delay=0.001
    ) as client:
        yield client


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_returns_the_assistant_text(server: ChatServer, model: OpenAICompatibleModel) -> None:
    server.push("Hello there")
    reply = await model.complete([{"role": "user", "content": "Hi"}], system="Be brief.")
    assert reply == "Hello there"
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert request.json == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "stream": False,
    }


def test_is_a_chat_model(server: ChatServer) -> None:
    assert isinstance(OpenAICompatibleModel(server.base_url, "m"), ChatModel)


async def test_sends_the_api_key_as_a_bearer_token(server: ChatServer) -> None:
    server.push("ok")
    async with OpenAICompatibleModel(server.base_url + "/", "m", api_key="sk-test") as model:
        assert await model.complete([{"role": "user", "content": "Hi"}]) == "ok"
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.path == "/v1/chat/completions"  # the trailing slash is not doubled


async def test_extra_body_fields_are_sent_but_cannot_replace_the_core(server: ChatServer) -> None:
    server.push("ok")
    extra = {"temperature": 0, "model": "other", "stream": True}
    async with OpenAICompatibleModel(server.base_url, "m", extra_body=extra) as model:
        await model.complete([{"role": "user", "content": "Hi"}])
    body = server.requests[0].json
    assert (body["temperature"], body["model"], body["stream"]) == (0, "m", False)


async def test_a_server_error_is_retried(
    server: ChatServer, model: OpenAICompatibleModel, caplog: pytest.LogCaptureFixture
) -> None:
    server.push(Reply.error(500, "boom"), "recovered")
    with caplog.at_level(logging.WARNING, logger="agentrecall.models.openai"):
        assert await model.complete([{"role": "user", "content": "Hi"}]) == "recovered"
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert "status 500" in caplog.text


async def test_a_rate_limit_with_retry_after_is_retried(
    server: ChatServer, model: OpenAICompatibleModel
) -> None:
    server.push(Reply.error(429, "slow down", headers={"Retry-After": "0"}), "done")
    assert await model.complete([{"role": "user", "content": "Hi"}]) == "done"
    assert len(server.requests) == 2


async def test_a_bad_request_fails_at_once_with_status_and_body(
    server: ChatServer, model: OpenAICompatibleModel
) -> None:
    server.push(Reply.error(400, "messages[0].role is invalid"))
    with pytest.raises(ModelError) as caught:
        await model.complete([{"role": "user", "content": "Hi"}])
    error = caught.value
    assert isinstance(error, AgentRecallError)
    assert error.status_code == 400
    assert error.body is not None and "messages[0].role is invalid" in error.body
    assert "400" in str(error) and "messages[0].role is invalid" in str(error)
    assert server.base_url in str(error)
    assert len(server.requests) == 1


async def test_retries_stop_after_max_retries(
    server: ChatServer, model: OpenAICompatibleModel
) -> None:
    server.push(*[Reply.error(503, "overloaded")] * 3)
    with pytest.raises(ModelError) as caught:
        await model.complete([{"role": "user", "content": "Hi"}])
    assert caught.value.status_code == 503
    assert "after 3 attempts" in str(caught.value)
    assert len(server.requests) == 3


async def test_a_long_body_is_quoted_as_an_excerpt(
    server: ChatServer, model: OpenAICompatibleModel
) -> None:
    server.push(Reply.raw(401, "x" * 5000))
    with pytest.raises(ModelError) as caught:
        await model.complete([{"role": "user", "content": "Hi"}])
    assert caught.value.body is not None
    assert caught.value.body.endswith("...") and len(caught.value.body) < 600


async def test_a_dropped_connection_is_retried(
    server: ChatServer, model: OpenAICompatibleModel
) -> None:
    server.push(Reply.disconnect(), "after the drop")
    assert await model.complete([{"role": "user", "content": "Hi"}]) == "after the drop"
    assert len(server.requests) == 2


async def test_a_stopped_server_answers_nobody() -> None:
    with ChatServer() as server:
        server.push("first")
        async with OpenAICompatibleModel(server.base_url, "m", max_retries=0) as model:
            assert await model.complete([{"role": "user", "content": "a"}]) == "first"
            server.stop()
            with pytest.raises(ModelError):
                await model.complete([{"role": "user", "content": "b"}])
    assert len(server.requests) == 1


async def test_connection_refused_is_a_model_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    async with OpenAICompatibleModel(url, "m", max_retries=1, retry_delay=0.001) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete([{"role": "user", "content": "Hi"}])
    message = str(caught.value)
    assert caught.value.status_code is None
    assert "ConnectError" in message and "after 2 attempt(s)" in message
    assert url in message


async def test_a_timeout_is_a_model_error(server: ChatServer) -> None:
    server.push(Reply.text("too late", delay=30))
    async with OpenAICompatibleModel(server.base_url, "m", timeout=0.2, max_retries=0) as model:
        with pytest.raises(ModelError, match="Timeout") as caught:
            await model.complete([{"role": "user", "content": "Hi"}])
    assert caught.value.status_code is None


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"choices": []}),
        json.dumps({"choices": [{"message": {"role": "assistant", "content": None}}]}),
    ],
)
async def test_an_unusable_reply_is_a_model_error(
    server: ChatServer, model: OpenAICompatibleModel, body: str
) -> None:
    server.push(Reply.raw(200, body))
    with pytest.raises(ModelError, match="unusable reply") as caught:
        await model.complete([{"role": "user", "content": "Hi"}])
    assert caught.value.status_code == 200
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "content",
    [
        r'"Here is a cat \ud83d"',
        r'[{"type": "text", "text": "Here is a cat "}, {"type": "text", "text": "\ud83d"}]',
    ],
)
async def test_a_reply_cut_in_an_emoji_is_text_a_buffer_keeps(
    server: ChatServer, model: OpenAICompatibleModel, tmp_path: Path, content: str
) -> None:
    server.push(Reply.raw(200, '{"choices": [{"message": {"content": ' + content + "}}]}"))
    answer = await model.complete([{"role": "user", "content": "Show me a cat"}])
    assert answer == "Here is a cat \ufffd"
    async with BufferMemory(path=tmp_path / "c.db") as conversation:
        await conversation.write([{"role": "assistant", "content": answer}])


async def test_strands_messages_are_sent_as_text(
    server: ChatServer, model: OpenAICompatibleModel
) -> None:
    server.push("ok")
    conversation = [
        {"role": "user", "content": [{"text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Paris"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t1",
                        "content": [{"text": "Sunny"}, {"json": {"c": 21}}],
                    }
                },
                {"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}},
            ],
        },
    ]
    await model.complete(conversation)
    assert server.requests[0].messages == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": 'Checking.\n[tool call weather (t1): {"city": "Paris"}]',
        },
        {"role": "user", "content": '[tool result (t1): Sunny\n{"c": 21}]'},
    ]


async def test_the_client_is_reusable_after_aclose(server: ChatServer) -> None:
    model = OpenAICompatibleModel(server.base_url, "m")
    server.push("one", "two")
    assert await model.complete([{"role": "user", "content": "a"}]) == "one"
    await model.aclose()
    assert await model.complete([{"role": "user", "content": "b"}]) == "two"
    await model.aclose()
    await model.aclose()


def test_one_model_serves_a_program_that_runs_a_loop_per_call(server: ChatServer) -> None:
    # Each asyncio.run makes and ends its own event loop; the pool of an ended loop is closed
    # with it (no unclosed-socket warning, which this test run would turn into an error).
    model = OpenAICompatibleModel(server.base_url, "m")
    server.push("one", "two", "three")
    for expected in ("one", "two", "three"):
        assert asyncio.run(model.complete([{"role": "user", "content": "hi"}])) == expected
    asyncio.run(model.aclose())
    gc.collect()


async def test_unusable_messages_are_refused_before_sending(
    server: ChatServer, model: OpenAICompatibleModel
) -> None:
    with pytest.raises(InvalidArgumentError, match=r"messages\[0\]"):
        await model.complete([{"role": "robot", "content": "hi"}])
    parts = [{"type": "image_url", "image_url": {"url": b"raw bytes"}}]
    with pytest.raises(InvalidArgumentError, match="JSON"):
        await model.complete([{"role": "user", "content": parts}])
    for messages in (None, "Hi", {"role": "user", "content": "Hi"}):
        with pytest.raises(InvalidArgumentError, match="messages must be a list"):
            await model.complete(messages)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="system"):
        await model.complete([{"role": "user", "content": "Hi"}], system=["Be brief."])  # type: ignore[arg-type]
    assert server.requests == []


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="base_url"):
        OpenAICompatibleModel("localhost:8000/v1", "m")
    with pytest.raises(InvalidArgumentError, match="model"):
        OpenAICompatibleModel("http://localhost/v1", " ")
    with pytest.raises(InvalidArgumentError, match="timeout"):
        OpenAICompatibleModel("http://localhost/v1", "m", timeout=0)
    with pytest.raises(InvalidArgumentError, match="max_retries"):
        OpenAICompatibleModel("http://localhost/v1", "m", max_retries=-1)
    with pytest.raises(InvalidArgumentError, match="initial_delay"):
        OpenAICompatibleModel("http://localhost/v1", "m", retry_delay=float("nan"))
    for extra in (5, "temperature=0", {1: 2}, {"logit_bias": {1, 2}}, {"t": float("nan")}):
        with pytest.raises(InvalidArgumentError, match="extra_body"):
            OpenAICompatibleModel("http://localhost/v1", "m", extra_body=extra)  # type: ignore[arg-type]
    # A key pasted with its newline, or with a typographic quote, cannot go in a header.
    for key in ("sk-abc\n", "sk-\u201cabc\u201d", "sk abc"):
        with pytest.raises(InvalidArgumentError, match="api_key must be printable ASCII"):
            OpenAICompatibleModel("http://localhost/v1", "m", api_key=key)
        with pytest.raises(InvalidArgumentError, match="api_key must be printable ASCII"):
            OpenAICompatibleEmbedder("http://localhost/v1", "e", api_key=key)
    OpenAICompatibleModel("http://localhost/v1", "m", api_key="sk-proj_AB-12.x")


def test_missing_httpx_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(ImportError, match=r"pip install 'agentrecall\[http\]'"):
        OpenAICompatibleModel("http://localhost/v1", "m")


def test_importing_models_needs_the_standard_library_only() -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import agentrecall.models, agentrecall.extraction, agentrecall.testing\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'agentrecall'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# Pure helpers


def test_retry_policy_doubles_caps_and_jitters() -> None:
    policy = RetryPolicy(max_retries=5, initial_delay=1.0, max_delay=5.0, jitter=0.1)
    for retry, base in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (9, 5.0)]:
        assert base <= policy.delay(retry) <= base * 1.1
    assert RetryPolicy(jitter=0).delay(1) == 1.0


def test_retry_after_replaces_the_backoff_within_the_cap() -> None:
    policy = RetryPolicy(initial_delay=1.0, max_delay=5.0)
    assert policy.delay(0, retry_after=3.0) == 3.0
    assert policy.delay(0, retry_after=60.0) == 5.0
    assert policy.delay(4, retry_after=0.0) == 0.0


def test_parse_retry_after() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after(None) is None
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert parse_retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    for unusable in ("-1", "inf", "nan", "soon", ""):
        assert parse_retry_after(unusable, now) is None


def test_retryable_statuses() -> None:
    assert [s for s in (400, 401, 404, 408, 409, 422, 429, 500, 503) if is_retryable_status(s)] == [
        408,
        409,
        429,
        500,
        503,
    ]


def test_request_body_and_message_shapes() -> None:
    camel = {"role": "tool", "toolCallId": "c1", "content": "42", "metadata": {"at": 1}}
    assert to_openai_message(camel) == {"role": "tool", "tool_call_id": "c1", "content": "42"}
    parts = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert to_openai_message(parts) == parts and to_openai_message(parts) is not parts
    body = request_body("m", [parts], None, {})
    assert body == {"model": "m", "messages": [parts], "stream": False}


def test_completion_text_joins_text_parts() -> None:
    payload = {
        "choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"text": "b"}]}}]
    }
    assert completion_text(payload) == "ab"
    with pytest.raises(ValueError, match="refused"):
        completion_text({"choices": [{"message": {"content": None, "refusal": "no"}}]})
