"""OpenAICompatibleEmbedder against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy
import pytest

import agentrecall
from agentrecall.embeddings import Embedder, OpenAICompatibleEmbedder
from agentrecall.embeddings.openai import PROBE_TEXT
from agentrecall.errors import InvalidArgumentError, ModelError
from agentrecall.stores.sqlite import SQLiteStore
from agentrecall.testing import ChatServer, HashEmbedder, Reply

TEXTS = ["the user likes aisle seats", "the user's dog is Rex", "a third", "four", "five"]


@pytest.fixture
def hashing() -> HashEmbedder:
    return HashEmbedder(8)


@pytest.fixture
def server(hashing: HashEmbedder) -> Iterator[ChatServer]:
    with ChatServer(embedder=hashing) as running:
        yield running


@pytest.fixture
def remote(server: ChatServer) -> Iterator[OpenAICompatibleEmbedder]:
    with OpenAICompatibleEmbedder(
        server.base_url, "embed-model", max_retries=2, retry_delay=0.001
    ) as client:
        yield client


def test_returns_the_servers_vectors_in_order(
    server: ChatServer, remote: OpenAICompatibleEmbedder, hashing: HashEmbedder
) -> None:
    vectors = remote.embed(TEXTS)
    assert vectors.dtype == numpy.float32
    assert numpy.array_equal(vectors, hashing.embed(TEXTS))
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.json == {"model": "embed-model", "input": TEXTS}
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert remote.dimension == 8
    assert isinstance(remote, Embedder)
    assert agentrecall.OpenAICompatibleEmbedder is OpenAICompatibleEmbedder


def test_rows_are_placed_by_their_index(
    server: ChatServer, remote: OpenAICompatibleEmbedder
) -> None:
    data = [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
    server.push(Reply.raw(200, json.dumps({"data": data})))
    assert remote.embed(["first", "second"]).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_rows_without_an_index_are_taken_in_order(
    server: ChatServer, remote: OpenAICompatibleEmbedder
) -> None:
    data = [{"embedding": [1.0, 0.0]}, {"embedding": [0.0, 1.0]}]
    server.push(Reply.raw(200, json.dumps({"data": data})))
    assert remote.embed(["first", "second"]).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_large_inputs_go_in_batches(server: ChatServer, hashing: HashEmbedder) -> None:
    with OpenAICompatibleEmbedder(server.base_url, "m", batch_size=2) as remote:
        vectors = remote.embed(TEXTS)
    assert [request.inputs for request in server.requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:]]
    assert numpy.array_equal(vectors, hashing.embed(TEXTS))


def test_the_api_key_is_sent_as_a_bearer_token(server: ChatServer) -> None:
    with OpenAICompatibleEmbedder(server.base_url, "m", api_key="sk-test") as remote:
        remote.embed(["a"])
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


def test_a_500_is_retried(
    server: ChatServer,
    remote: OpenAICompatibleEmbedder,
    hashing: HashEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server.push(Reply.error(500, "busy"))
    with caplog.at_level(logging.WARNING, logger="agentrecall.embeddings.openai"):
        vectors = remote.embed(TEXTS[:2])
    assert numpy.array_equal(vectors, hashing.embed(TEXTS[:2]))
    assert len(server.requests) == 2
    assert "status 500" in caplog.text


def test_a_timeout_is_retried(server: ChatServer, hashing: HashEmbedder) -> None:
    server.push(Reply(status=200, body=b"{}", delay=5.0))
    with OpenAICompatibleEmbedder(server.base_url, "m", timeout=0.2, retry_delay=0.001) as remote:
        vectors = remote.embed(["a"])
    assert numpy.array_equal(vectors, hashing.embed(["a"]))
    assert len(server.requests) == 2


def test_retries_end_with_the_last_error(
    server: ChatServer, remote: OpenAICompatibleEmbedder
) -> None:
    server.push(*[Reply.error(503, "still busy")] * 3)
    with pytest.raises(ModelError, match="503") as caught:
        remote.embed(["a"])
    assert caught.value.status_code == 503
    assert "after 3 attempts" in str(caught.value)
    assert len(server.requests) == 3


def test_a_401_fails_at_once_with_status_and_body(
    server: ChatServer, remote: OpenAICompatibleEmbedder
) -> None:
    server.push(Reply.error(401, "Incorrect API key provided"))
    with pytest.raises(ModelError, match="401") as caught:
        remote.embed(["a"])
    assert caught.value.status_code == 401
    assert caught.value.body is not None
    assert "Incorrect API key provided" in caught.value.body
    assert str(caught.value).startswith(f"POST {server.base_url}/embeddings returned 401")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("not json", "unusable reply"),
        ('{"object": "list"}', "no 'data' list"),
        ('{"data": [{"index": 0, "embedding": [1, 2]}]}', "1 embeddings for 2 input"),
        (
            '{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}',
            "index 0 appears twice",
        ),
        (
            '{"data": [{"index": 0, "embedding": [1]}, {"index": 2, "embedding": [2]}]}',
            "index 2",
        ),
        ('{"data": [{"index": 0, "embedding": [1]}, {"embedding": [2]}]}', "index None"),
        (
            '{"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [2]}]}',
            "no 'embedding' list",
        ),
        (
            '{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [2]}]}',
            "differ in length",
        ),
        (
            '{"data": [{"index": 0, "embedding": ["x"]}, {"index": 1, "embedding": [2]}]}',
            "not vectors",
        ),
    ],
)
def test_malformed_answers_are_model_errors(
    server: ChatServer, remote: OpenAICompatibleEmbedder, body: str, problem: str
) -> None:
    server.push(Reply.raw(200, body))
    with pytest.raises(ModelError, match=problem):
        remote.embed(["a", "b"])
    assert len(server.requests) == 1


def test_a_change_of_dimension_is_refused(
    server: ChatServer, remote: OpenAICompatibleEmbedder
) -> None:
    remote.embed(["a"])
    server.push(Reply.embeddings([[1.0, 2.0, 3.0]]))
    with pytest.raises(ModelError, match="length 3, but its first answer is 8"):
        remote.embed(["b"])
    assert remote.dimension == 8


def test_a_given_dimension_is_checked_on_the_first_answer(server: ChatServer) -> None:
    with OpenAICompatibleEmbedder(server.base_url, "m", dimension=4) as remote:
        assert remote.dimension == 4
        assert server.requests == []
        with pytest.raises(ModelError, match="length 8, but the dimension given is 4"):
            remote.embed(["a"])


def test_the_dimension_is_asked_for_once_when_needed_first(
    server: ChatServer, remote: OpenAICompatibleEmbedder
) -> None:
    assert remote.dimension == 8
    assert remote.dimension == 8
    assert [request.inputs for request in server.requests] == [[PROBE_TEXT]]
    assert remote.embed([]).shape == (0, 8)
    assert len(server.requests) == 1


def test_model_id_leaves_the_address_out(server: ChatServer) -> None:
    with OpenAICompatibleEmbedder(server.base_url, "nomic-embed-text") as remote:
        assert remote.model_id == "openai-compatible:nomic-embed-text"
    custom = OpenAICompatibleEmbedder(server.base_url, "m", model_id="m-q4-on-gpu-box")
    assert custom.model_id == "m-q4-on-gpu-box"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_an_unreachable_server_is_a_model_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with OpenAICompatibleEmbedder(url, "m", max_retries=1, retry_delay=0.001) as remote:
        with pytest.raises(ModelError, match="failed after 2 attempt") as caught:
            remote.embed(["a"])
    assert caught.value.status_code is None


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"base_url": "localhost:11434"}, "base_url"),
        ({"model": " "}, "model"),
        ({"api_key": 12}, "api_key"),
        ({"timeout": 0}, "timeout"),
        ({"dimension": 0}, "dimension"),
        ({"model_id": ""}, "model_id"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_retries": -1}, "max_retries"),
    ],
)
def test_bad_arguments_are_refused(arguments: dict[str, object], problem: str) -> None:
    given: dict[str, object] = {"base_url": "http://localhost/v1", "model": "m"}
    given.update(arguments)
    with pytest.raises(InvalidArgumentError, match=problem):
        OpenAICompatibleEmbedder(**given)  # type: ignore[arg-type]


def test_missing_httpx_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(ImportError, match=r"pip install 'agentrecall\[http\]'"):
        OpenAICompatibleEmbedder("http://localhost/v1", "m")


def test_chat_server_serves_chat_and_embeddings_from_one_queue(hashing: HashEmbedder) -> None:
    with ChatServer(embedder=hashing) as server:
        server.push(Reply.embeddings([[1.0, 2.0]], model="scripted-embedder"))
        with OpenAICompatibleEmbedder(server.base_url, "m") as remote:
            assert remote.embed(["x"]).tolist() == [[1.0, 2.0]]
        (request,) = server.requests
        assert request.inputs == ["x"]


async def test_a_store_sends_nothing_before_its_first_use(
    server: ChatServer, remote: OpenAICompatibleEmbedder, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "memory.db", embedder=remote)
    assert server.requests == []  # the dimension is learnt in the store's worker, later
    await store.add("the user likes aisle seats")
    assert [request.inputs for request in server.requests] == [["the user likes aisle seats"]]
    hits = await store.search("aisle seats", {"mode": "semantic"})
    assert [hit.content for hit in hits] == ["the user likes aisle seats"]
    await store.aclose()


async def test_a_store_with_an_unreachable_server_is_made_and_fails_on_use(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with OpenAICompatibleEmbedder(url, "m", max_retries=0) as remote:
        store = SQLiteStore(tmp_path / "memory.db", embedder=remote)
        with pytest.raises(ModelError, match="failed after 1 attempt"):
            await store.add("the user likes aisle seats")
        assert await store.count() == 0
        await store.aclose()
