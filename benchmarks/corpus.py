"""The benchmark corpus of realistic English memories, its queries, and the LoCoMo recall task.

Everything here comes from the LoCoMo dev file ``data/locomo/locomo-dev.json``: LoCoMo,
"Evaluating Very Long-Term Conversational Memory of LLM Agents" (Maharana, Lee, Tulyakov, Bansal,
Barbieri, Fang; ACL 2024, arXiv 2402.17753), licensed CC BY-NC 4.0; keep this attribution
wherever the data or figures computed on it appear, and make no commercial use of the data.

What it builds:

* :func:`corpus` yields ``size`` distinct ``(content, metadata)`` memories: the 1,451 dialogue
  turns of the file, written ``"<speaker>: <text>"`` with metadata (conversation, dia_id,
  speaker, session number, the session's date in ISO 8601), in chronological order and spread
  evenly among generated filler entries (:func:`filler`). The sizes benchmarked are
  :data:`SIZES`.
* :func:`questions` are the queries: the file's ``qa[].question`` strings; :func:`query_sample`
  picks evenly spaced ones to time and others to warm up with.
* :func:`recall_task` is the recall benchmark of the data README, read by
  :mod:`agentrecall.evaluation.locomo`: per conversation, the turns in order and the questions
  with their evidence ids repaired.

The filler ("natural word frequencies, stop words included"):

* Entry lengths are drawn from the word counts of the turns themselves (median 23 words),
  raised to at least :data:`MIN_WORDS` so that two entries are practically never equal (none
  are at 1M); entries average about 145 characters.
* Each word is drawn independently from a mixture of three distributions:

  1. stop words (the ``STOP_WORDS`` list of ``agentrecall.retrieval.tokenize``) with their
     frequencies among the turns' tokens, which are also their share of all words (about 45%,
     as in ordinary English prose);
  2. the other words of the turns (about 2,480 of them) with their frequencies there, scaled
     so that together they make ``1 - 0.45 - TAIL_SHARE`` of all words;
  3. a long tail of :data:`TAIL_WORDS` generated pseudo-words (``"brozizul"``) that make
     :data:`TAIL_SHARE` of all words, the share that words outside the few thousand most common
     ones take in ordinary English. The tail continues the Zipf curve where the turns'
     vocabulary ends: the tail word of rank *r* (from 0) has weight about ``1 / (r + V)``, with
     *V* the size of that vocabulary, so the most common tail word is about as frequent as a
     word seen once in the turns. Tail words never equal a word of the turns or questions.

* Bias, stated so that figures are read correctly. Stop words come out at a realistic density.
  The question words that remain after stop-word removal are drawn at the frequency they have
  in three conversations about those very topics (names such as "caroline", topic words such
  as "dance"), scaled by about 0.64. So they match far more filler entries than they would in
  a real store of a million memories written by many people about many things: a pessimistic
  case for query cost, and for recall on the full corpus. At 1M entries the median question
  (stop words removed) matches about 111,000 entries; 12 question words are in more than 5% of
  entries (``s`` 31%, ``great`` 13%, ``john`` 9%, ``caroline`` 6%) and 89 in more than 1%.
  The tail only dilutes and populates the term dictionary; it never matches a question. The
  words of an entry are independent, so filler has no phrases or topics, and its sentences are
  not grammatical.

Generation is deterministic: fixed seeds, so one ``seed`` gives one corpus on every machine
with the same Python version (``random`` guarantees only ``random()`` across versions; the
``choice`` and ``getrandbits`` used here have been stable in practice). It is lazy: a generator
that holds only the vocabulary. One million entries take about 18 seconds on one core of the
project machine, in about 55 MB.

Run ``python benchmarks/corpus.py [SIZE]`` for a summary of the corpus, or with ``--jsonl`` to
write it as JSON lines to stdout.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentrecall.evaluation.locomo import Conversation, Turn, load
from agentrecall.retrieval.tokenize import STOP_WORDS

DATA = Path(__file__).resolve().parents[1] / "data" / "locomo" / "locomo-dev.json"
SIZES = (10_000, 100_000, 1_000_000)
TAIL_SHARE = 0.2
"""Share of filler words drawn from the generated long tail."""
TAIL_WORDS = 200_000
"""Size of the generated long-tail vocabulary."""
MIN_WORDS = 8
"""Fewest words in one filler entry."""

_WORD = re.compile(r"\w+")
_ONSETS = "b d f g k l m n p r s t v z br dr gr kr pl st tr ch sh th".split()
_VOWELS = "a e i o u ai ea io ou".split()
_CODAS = ["", "", "", "n", "r", "s", "l", "t", "m", "x"]


@lru_cache(maxsize=4)
def _load(path: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


@lru_cache(maxsize=4)
def recall_task(path: Path = DATA) -> tuple[Conversation, ...]:
    """Return the LoCoMo recall task as :mod:`agentrecall.evaluation.locomo` reads it.

    Per conversation: the turns in chronological order and the questions with their evidence
    ids repaired; questions left without evidence are skipped (495 of 497 on the dev file).
    """
    return tuple(load(path))


def turns(path: Path = DATA) -> list[tuple[str, Turn]]:
    """Return ``(conversation id, turn)`` for every turn: file order, each chronologically."""
    return [(conv.sample_id, turn) for conv in recall_task(path) for turn in conv.turns]


def questions(path: Path = DATA) -> list[str]:
    """Return every ``qa[].question`` of the file, in file order (497 on the dev file)."""
    return [item["question"] for conv in _load(path) for item in conv["qa"]]


def query_sample(
    count: int = 200, warmup: int = 20, path: Path = DATA
) -> tuple[list[str], list[str]]:
    """Return ``count`` evenly spaced questions to time, and ``warmup`` other questions.

    Spacing covers every conversation and category; the warm-up questions are the first ones
    not chosen.
    """
    every = questions(path)
    if count + warmup > len(every):
        raise ValueError(f"only {len(every)} questions; asked for {count} + {warmup}")
    chosen = sorted({int(i * len(every) / count) for i in range(count)})
    taken = set(chosen)
    rest = [q for i, q in enumerate(every) if i not in taken]
    return [every[i] for i in chosen], rest[:warmup]


def _pseudo_words(count: int, exclude: set[str], rng: random.Random) -> list[str]:
    """Return ``count`` distinct pronounceable pseudo-words that are not in ``exclude``."""
    words: list[str] = []
    seen = set(exclude)
    while len(words) < count:
        syllables = rng.choice((2, 2, 3, 3, 3))
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        word += rng.choice(_CODAS)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class _Vocabulary:
    """The filler's word distribution (see the module docstring), sampled fast and exactly.

    Sampling is the hot loop of corpus generation, so it avoids a binary search per word: a
    table of 2**16 slots holds each real word ``floor(p * 2**16)`` times and answers one
    ``getrandbits(16)`` draw in most cases. The empty slots stand for the remaining mass (the
    fractions left over by the table, and the whole tail); a draw landing there samples that
    remainder exactly: a binary search over the leftover fractions, or the tail's inverse
    cumulative distribution in closed form. The tail word of rank *k* (from 0) has probability
    proportional to ``ln((k + 1 + V) / (k + V))``, that is about ``1 / (k + V)``.
    """

    _BITS = 16

    def __init__(self, path: Path, tail_share: float, tail_words: int) -> None:
        counts: Counter[str] = Counter()
        self.lengths: list[int] = []
        for _, turn in turns(path):
            tokens = _WORD.findall(turn.text.lower())
            counts.update(tokens)
            self.lengths.append(max(len(tokens), MIN_WORDS))
        total = sum(counts.values())
        stop_share = sum(c for w, c in counts.items() if w in STOP_WORDS) / total
        other_share = 1.0 - stop_share - tail_share
        if other_share <= 0 or tail_share <= 0 or tail_words <= 0:
            raise ValueError(f"tail_share {tail_share} must be in (0, {1 - stop_share:.2f})")
        other_total = total - stop_share * total
        probability = {
            word: count / total if word in STOP_WORDS else other_share * count / other_total
            for word, count in sorted(counts.items())
        }
        slots = 1 << self._BITS
        self.table: list[str | None] = []
        leftover: list[tuple[str, float]] = []
        for word, p in probability.items():
            whole = int(p * slots)
            self.table += [word] * whole
            leftover.append((word, p - whole / slots))
        self.table += [None] * (slots - len(self.table))
        self.leftover_words = [word for word, _ in leftover]
        self.leftover_cum = list(itertools.accumulate(p for _, p in leftover))
        self.tail_share = tail_share
        question_words = {w for q in questions(path) for w in _WORD.findall(q.lower())}
        self.tail = _pseudo_words(tail_words, set(counts) | question_words, random.Random(2402))
        self.offset = len(counts)
        self.tail_log = math.log((tail_words + self.offset) / self.offset)

    def sentences(self, count: int, rng: random.Random) -> Iterator[str]:
        """Yield ``count`` sentences drawn with ``rng``."""
        table, lengths, tail, offset = self.table, self.lengths, self.tail, self.offset
        leftover_words, leftover_cum = self.leftover_words, self.leftover_cum
        leftover_total, tail_share, tail_log = leftover_cum[-1], self.tail_share, self.tail_log
        last, bits, draw, exp, find = len(tail) - 1, self._BITS, rng.random, math.exp, bisect.bisect

        def rest() -> str:
            u = draw() * (leftover_total + tail_share)
            if u < leftover_total:
                return leftover_words[find(leftover_cum, u)]
            rank = int(offset * (exp((u - leftover_total) / tail_share * tail_log) - 1))
            return tail[min(rank, last)]

        getrandbits, choice = rng.getrandbits, rng.choice
        for _ in range(count):
            words = [table[getrandbits(bits)] or rest() for _ in range(choice(lengths))]
            sentence = " ".join(words)
            yield sentence[0].upper() + sentence[1:] + "."


@lru_cache(maxsize=4)
def _vocabulary(path: Path, tail_share: float, tail_words: int) -> _Vocabulary:
    return _Vocabulary(path, tail_share, tail_words)


def filler(
    count: int,
    *,
    seed: int = 0,
    tail_share: float = TAIL_SHARE,
    tail_words: int = TAIL_WORDS,
    path: Path = DATA,
) -> Iterator[str]:
    """Yield ``count`` filler entries: sentences of independent words with natural frequencies.

    Each entry is lowercase words joined by spaces, the first capitalised, ending with a full
    stop (``"You brozizul how rachi me broufa informative leaplus teach."``).
    """
    return _vocabulary(path, tail_share, tail_words).sentences(count, random.Random(seed))


def corpus(size: int, *, seed: int = 0, path: Path = DATA) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``size`` distinct ``(content, metadata)`` memories: every turn plus filler.

    The turns keep their file order and are spread evenly: turn *j* of *T* sits at position
    ``(2j + 1) * size // (2T)``. Turn metadata is the turn's (dia_id, speaker, session, date)
    plus ``"conversation"`` and ``"source": "locomo"``; filler metadata is
    ``{"source": "filler"}``.

    Raises:
        ValueError: ``size`` is smaller than the number of turns (1,451 on the dev file).
    """
    all_turns = turns(path)
    if size < len(all_turns):
        raise ValueError(f"size {size} is smaller than the {len(all_turns)} turns")
    slots = {(2 * j + 1) * size // (2 * len(all_turns)): item for j, item in enumerate(all_turns)}
    fill = filler(size - len(all_turns), seed=seed, path=path)
    for position in range(size):
        item = slots.get(position)
        if item is None:
            yield next(fill), {"source": "filler"}
        else:
            conversation, turn = item
            metadata = {"source": "locomo", "conversation": conversation, **turn.metadata()}
            yield turn.content(), metadata


def _summary(size: int, seed: int) -> str:
    started = time.perf_counter()
    entries = chars = 0
    for content, _ in corpus(size, seed=seed):
        entries += 1
        chars += len(content)
    elapsed = time.perf_counter() - started
    sample = min(size, 100_000)
    words: Counter[str] = Counter()
    for content, _ in itertools.islice(corpus(size, seed=seed), sample):
        words.update(set(_WORD.findall(content.lower())))
    common = ", ".join(f"{w} {n / sample:.0%}" for w, n in words.most_common(12))
    task = recall_task()
    return (
        f"{entries:,} entries generated in {elapsed:.1f} s, {chars / entries:.0f} characters "
        f"per entry\nwords in most of the first {sample:,} entries: {common}\n"
        f"recall task: {len(task)} conversations, {sum(len(c.turns) for c in task):,} turns, "
        f"{sum(len(c.questions) for c in task)} questions with evidence; "
        f"{len(questions())} queries"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("size", type=int, nargs="?", default=SIZES[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jsonl", action="store_true", help="write the corpus as JSON lines")
    args = parser.parse_args(argv)
    if not args.jsonl:
        print(_summary(args.size, args.seed))
        return
    out = sys.stdout
    for content, metadata in corpus(args.size, seed=args.seed):
        out.write(json.dumps({"content": content, "metadata": metadata}, ensure_ascii=False))
        out.write("\n")


if __name__ == "__main__":
    main()
