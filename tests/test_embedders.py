"""Plugging embedders in: CallableEmbedder, embedder_from, embed_checked, and the pure helpers."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy
import pytest

import agentrecall
from agentrecall.embeddings import (
    CallableEmbedder,
    Embedder,
    LocalEmbedder,
    OpenAICompatibleEmbedder,
    embed_checked,
    embedder_from,
)
from agentrecall.embeddings.vectors import l2_normalize, length_batches, mean_pool
from agentrecall.errors import InvalidArgumentError, ModelError
from agentrecall.testing import ChatServer, HashEmbedder


def three_numbers(texts: list[str]) -> list[list[float]]:
    return [[float(len(text)), 1.0, 0.5] for text in texts]


class Recorder:
    """An embedding function that records the batches it gets."""

    def __init__(self, result: Any = None) -> None:
        self.calls: list[list[str]] = []
        self.result = result

    def __call__(self, texts: list[str]) -> Any:
        self.calls.append(texts)
        return three_numbers(texts) if self.result is None else self.result


# CallableEmbedder


def test_a_function_becomes_an_embedder() -> None:
    embedder = CallableEmbedder(three_numbers, model_id="lengths-v1", dimension=3)
    assert isinstance(embedder, Embedder)
    assert (embedder.model_id, embedder.dimension) == ("lengths-v1", 3)
    vectors = embedder.embed(["ab", "abcd"])
    assert vectors.dtype == numpy.float32
    assert vectors.tolist() == [[2.0, 1.0, 0.5], [4.0, 1.0, 0.5]]
    assert agentrecall.CallableEmbedder is CallableEmbedder


def test_batch_size_splits_the_calls_and_keeps_the_order() -> None:
    function = Recorder()
    embedder = CallableEmbedder(function, model_id="m", dimension=3, batch_size=2)
    vectors = embedder.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert function.calls == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert vectors[:, 0].tolist() == [1, 2, 3, 4, 5]


def test_an_empty_input_calls_nothing() -> None:
    function = Recorder()
    vectors = CallableEmbedder(function, model_id="m", dimension=3).embed([])
    assert vectors.shape == (0, 3)
    assert vectors.dtype == numpy.float32
    assert function.calls == []


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ([[1.0, 2.0, 3.0]], r"shape \(1, 3\) for 2 text"),
        ([[1.0, 2.0], [3.0, 4.0]], r"shape \(2, 2\)"),
        ([[1.0, 2.0, 3.0], [1.0, 2.0]], "not vectors"),
        ([["a", "b", "c"], ["d", "e", "f"]], "not vectors"),
        ([[1.0, float("nan"), 3.0], [1.0, 2.0, 3.0]], "NaN or infinity"),
        (numpy.full((2, 3), numpy.inf), "NaN or infinity"),
        ([[1e300, 0.0, 0.0], [1.0, 2.0, 3.0]], "NaN or infinity"),  # beyond float32
        (numpy.ones((2, 3), dtype=complex), "complex numbers"),
        (None, "not vectors"),
    ],
)
def test_unusable_results_are_model_errors(result: Any, problem: str) -> None:
    function = Recorder(result if result is not None else object())
    embedder = CallableEmbedder(function, model_id="broken-v1", dimension=3)
    with pytest.raises(ModelError, match=problem) as caught:
        embedder.embed(["one", "two"])
    assert "broken-v1" in str(caught.value)


class AsyncCall:
    async def __call__(self, texts: list[str]) -> Any:
        return numpy.ones((len(texts), 3))


def test_an_async_callable_object_is_refused_without_a_coroutine_left_unawaited() -> None:
    embedder = CallableEmbedder(AsyncCall(), model_id="async-v1", dimension=3)
    # A coroutine never awaited warns when it is collected: an error in this test suite.
    with pytest.raises(ModelError, match="async-v1.* awaitable, not vectors"):
        embedder.embed(["one"])


def test_a_float64_array_is_accepted_as_float32() -> None:
    embedder = CallableEmbedder(
        lambda texts: numpy.ones((len(texts), 4)), model_id="m", dimension=4
    )
    vectors = embedder.embed(["a"])
    assert vectors.dtype == numpy.float32
    assert vectors.flags.c_contiguous


def test_exceptions_of_the_function_pass_through() -> None:
    def failing(texts: list[str]) -> Any:
        raise RuntimeError("the GPU caught fire")

    with pytest.raises(RuntimeError, match="caught fire"):
        CallableEmbedder(failing, model_id="m", dimension=3).embed(["a"])


async def _async_function(texts: list[str]) -> list[list[float]]:
    return three_numbers(texts)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"function": "not callable"}, "function must be callable"),
        ({"function": _async_function}, "plain function"),
        ({"model_id": " "}, "model_id"),
        ({"model_id": None}, "model_id"),
        ({"dimension": 0}, "dimension"),
        ({"dimension": True}, "dimension"),
        ({"dimension": 70_000}, "dimension"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_arguments_are_refused(arguments: dict[str, Any], problem: str) -> None:
    given: dict[str, Any] = {"function": three_numbers, "model_id": "m", "dimension": 3}
    given.update(arguments)
    function = given.pop("function")
    with pytest.raises(InvalidArgumentError, match=problem):
        CallableEmbedder(function, **given)


def test_a_string_is_refused_as_texts() -> None:
    embedder = CallableEmbedder(three_numbers, model_id="m", dimension=3)
    with pytest.raises(InvalidArgumentError, match="sequence of strings"):
        embedder.embed("abc")


def test_numpy_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ImportError, match=r"pip install 'agentrecall\[embeddings\]'"):
        CallableEmbedder(three_numbers, model_id="m", dimension=3)


# embedder_from


def test_embedders_come_back_as_they_are() -> None:
    for embedder in (
        HashEmbedder(8),
        CallableEmbedder(three_numbers, model_id="m", dimension=3),
        LocalEmbedder(),
    ):
        assert embedder_from(embedder) is embedder


def test_a_bare_function_needs_a_model_id_and_a_dimension() -> None:
    with pytest.raises(InvalidArgumentError, match="three_numbers") as caught:
        embedder_from(three_numbers)
    assert "CallableEmbedder(three_numbers, model_id=" in str(caught.value)
    with pytest.raises(InvalidArgumentError, match="CallableEmbedder"):
        embedder_from(lambda texts: [])


class NoEmbed:
    model_id = "m"
    dimension = 3


class BlankId:
    model_id = ""
    dimension = 3

    def embed(self, texts: Sequence[str]) -> Any:
        return numpy.zeros((len(texts), 3), dtype=numpy.float32)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (None, "got NoneType"),
        (42, "got int"),
        ("LocalEmbedder", "got str"),
        (NoEmbed(), "it has no embed"),
        (BlankId(), "non-blank string"),
        (LocalEmbedder, r"got the class LocalEmbedder: pass LocalEmbedder\(...\)"),
    ],
)
def test_unusable_values_are_refused(value: object, problem: str) -> None:
    with pytest.raises(InvalidArgumentError, match=problem):
        embedder_from(value)


def test_embedder_from_sends_nothing_for_an_embedder_that_learns_its_dimension() -> None:
    with ChatServer(embedder=HashEmbedder(8)) as server:
        with OpenAICompatibleEmbedder(server.base_url, "m") as remote:
            assert embedder_from(remote) is remote
            assert server.requests == []


# embed_checked


def test_embed_checked_returns_sound_vectors() -> None:
    vectors = embed_checked(HashEmbedder(8), ["a b", "c"])
    assert vectors.shape == (2, 8)
    assert vectors.dtype == numpy.float32


class WrongRows:
    model_id = "wrong-rows-v1"
    dimension = 3

    def embed(self, texts: Sequence[str]) -> Any:
        return numpy.zeros((len(texts) + 1, 3))


class WrongDimension(WrongRows):
    dimension = 0

    def embed(self, texts: Sequence[str]) -> Any:
        return numpy.zeros((len(texts), 3))


def test_embed_checked_refuses_what_breaks_the_protocol() -> None:
    with pytest.raises(ModelError, match="wrong-rows-v1"):
        embed_checked(WrongRows(), ["a"])
    with pytest.raises(InvalidArgumentError, match="dimension"):
        embed_checked(WrongDimension(), ["a"])


# Pure helpers


def test_length_batches_sort_cap_and_split_on_length() -> None:
    lengths = [5, 40, 6, 41, 7, 300, 5]
    batches = length_batches(lengths, batch_size=2, max_tokens=1000)
    assert batches == [[5], [3, 1], [4, 2], [0, 6]]
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    # The token budget ends a batch, and a text too long for it goes alone.
    assert length_batches([10, 10, 10, 10, 50], batch_size=64, max_tokens=30) == [
        [4],
        [0, 1, 2],
        [3],
    ]
    assert length_batches([], batch_size=4, max_tokens=100) == []


def test_mean_pool_ignores_padding_and_l2_normalize_makes_unit_rows() -> None:
    hidden = numpy.array(
        [[[1.0, 0.0], [3.0, 2.0], [100.0, 100.0]], [[0.0, 0.0], [9.0, 9.0], [9.0, 9.0]]],
        dtype=numpy.float32,
    )
    mask = numpy.array([[1, 1, 0], [1, 0, 0]])
    pooled = mean_pool(hidden, mask)
    assert pooled.tolist() == [[2.0, 1.0], [0.0, 0.0]]
    unit = l2_normalize(pooled)
    assert numpy.allclose(unit[0], numpy.array([2.0, 1.0]) / numpy.sqrt(5.0))
    assert unit[1].tolist() == [0.0, 0.0]
    assert unit.dtype == numpy.float32


class Failing(WrongRows):
    def embed(self, texts: Sequence[str]) -> Any:
        raise ConnectionError("the model server went away")


def test_embed_checked_names_the_embedder_that_raised() -> None:
    with pytest.raises(ModelError, match="'wrong-rows-v1' failed on 1 texts: the model server"):
        embed_checked(Failing(), ["a"])
