"""LocalEmbedder's own WordPiece tokenizer gives the ids of the ``tokenizers`` package.

``tokenizers`` is a dev dependency only: the reference the tokenizer is held to.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrecall.embeddings.local import MAX_TOKENS, TOKENIZER_FILE
from agentrecall.embeddings.wordpiece import SPECIAL, WordPiece
from agentrecall.evaluation.locomo import load

ROOT = Path(__file__).resolve().parents[1]
TEXT = resources.files("agentrecall.embeddings").joinpath(TOKENIZER_FILE).read_text("utf-8")
MINE = WordPiece.from_tokenizer_json(TEXT)


def reference() -> Any:
    tokenizer = tokenizers.Tokenizer.from_str(TEXT)
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


REFERENCE = reference()


def mismatches(texts: list[str]) -> list[tuple[str, list[int], list[int]]]:
    return [
        (text, MINE.encode(text, MAX_TOKENS), found.ids)
        for text, found in zip(texts, REFERENCE.encode_batch(texts), strict=True)
        if MINE.encode(text, MAX_TOKENS) != found.ids
    ]


def test_the_locomo_turns_and_questions_get_the_reference_ids() -> None:
    conversations = load(ROOT / "data" / "locomo" / "locomo-dev.json")
    texts = [turn.content() for c in conversations for turn in c.turns]
    texts += [question.text for c in conversations for question in c.questions]
    assert len(texts) > 1900
    assert mismatches(texts) == []


@pytest.mark.skipif(
    sys.version_info >= (3, 12),
    reason="Python's Unicode is newer than 14: characters assigned since may differ",
)
def test_every_code_point_in_context_gets_the_reference_ids() -> None:
    codes = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [
        " ".join(f"a{chr(c)}b {chr(c)}x É{chr(c)}" for c in codes[start : start + 64])
        for start in range(0, len(codes), 64)
    ]
    assert mismatches(texts) == []


def test_accents_case_cjk_punctuation_and_specials() -> None:
    texts = [
        "",
        "   ",
        "Café RÉSUMÉ naïve Ångström ΣΊΣΥΦΟΣ İstanbul",
        "用户喜欢靠过道的座位 ユーザーは通路側の席が好きです 사용자는",
        "don't stop—ever… «quoted» (x+y)=z $5 #tag @me ~ ^ |",
        "tab\there\nnew\rline\x0bvt\x0cff\x85nel\u200bzwsp\u00a0nbsp\x00nul\ufffdrep",
        "[CLS] hello [SEP] world [MASK][UNK][PAD] [cls] [SEP",
        "x" * 100,
        "x" * 101,
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "😀👍🏽 emoji ☃ and \U0001f9d1\u200d\U0001f4bb",
    ]
    assert mismatches(texts) == []


def test_texts_longer_than_the_limit_are_cut_to_it() -> None:
    text = " ".join(["word"] * 1000)
    ids = MINE.encode(text, MAX_TOKENS)
    assert len(ids) == MAX_TOKENS
    assert ids == REFERENCE.encode(text).ids
    assert MINE.encode(text, 3) == [101, MINE.encode("word", 3)[1], 102]


@pytest.mark.parametrize("separator", [" ", "\n", "  é\u0301 ", " [SEP] "])
def test_only_the_start_of_a_long_text_is_split_into_words(separator: str) -> None:
    fresh = WordPiece.from_tokenizer_json(TEXT)
    text = separator.join(f"word{i}" for i in range(50_000))
    assert fresh.encode(text, MAX_TOKENS) == REFERENCE.encode(text).ids
    # The words past the first MAX_TOKENS tokens and one window of text are never looked up.
    assert len(fresh._words) < 1_000


_ALPHABET = st.characters(exclude_categories=["Cs"])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(_ALPHABET, max_size=30),
            st.sampled_from([*SPECIAL, " ", "\n", "##", "-", "'", "é", "Σ"]),
            st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzÉ "), max_size=120),
        ),
        max_size=12,
    )
)
def test_generated_unicode_text_gets_the_reference_ids(parts: list[str]) -> None:
    text = "".join(parts)
    assert MINE.encode(text, MAX_TOKENS) == REFERENCE.encode(text).ids


def test_a_tokenizer_file_of_another_kind_is_refused() -> None:
    other = json.dumps({"model": {"type": "BPE", "vocab": {}}})
    with pytest.raises(ValueError, match="not WordPiece"):
        WordPiece.from_tokenizer_json(other)
    lacking = json.dumps(
        {"model": {"type": "WordPiece", "continuing_subword_prefix": "##", "vocab": {"a": 0}}}
    )
    with pytest.raises(ValueError, match=r"lacks \[PAD\]"):
        WordPiece.from_tokenizer_json(lacking)
