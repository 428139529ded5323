"""The deterministic test embedder satisfies the embedder protocol and keeps its promises."""

from __future__ import annotations

import numpy

from agentrecall.embeddings import Embedder
from agentrecall.testing import HashEmbedder


def cosine(a: numpy.ndarray, b: numpy.ndarray) -> float:
    return float(a @ b / (numpy.linalg.norm(a) * numpy.linalg.norm(b)))


def test_it_is_an_embedder_with_float32_rows_in_order() -> None:
    embedder = HashEmbedder(32)
    assert isinstance(embedder, Embedder)
    vectors = embedder.embed(["tea time", "green tea", "bicycle repair"])
    assert vectors.shape == (3, 32) and vectors.dtype == numpy.float32
    assert embedder.calls == [3]
    assert cosine(vectors[0], vectors[1]) > 0.3
    assert abs(cosine(vectors[0], vectors[2])) < 0.3


def test_the_same_text_gives_the_same_vector_in_any_batch() -> None:
    alone = HashEmbedder().embed(["User likes tea"])[0]
    among = HashEmbedder().embed(["something else", "User likes tea"])[1]
    assert numpy.array_equal(alone, among)


def test_synonyms_make_different_words_close_and_change_the_model_id() -> None:
    plain, taught = HashEmbedder(), HashEmbedder(synonyms={"chair": "seat"})
    assert plain.model_id != taught.model_id
    seat, chair = taught.embed(["seat", "chair"])
    assert numpy.array_equal(seat, chair)
    seat, chair = plain.embed(["seat", "chair"])
    assert not numpy.array_equal(seat, chair)
