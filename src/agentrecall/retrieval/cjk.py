"""Chinese, Japanese and Korean text as keyword terms: overlapping character pairs.

These scripts do not put spaces between words, so a run of their characters is not one word:
it becomes each of its characters and each pair of neighbours, as Lucene's CJK analyzer makes
them with ``outputUnigrams`` on. ``用户喜欢座位`` holds the pairs ``用户 户喜 喜欢 欢座 座位`` and
the characters ``用 户 喜 欢 座 位``, so both ``座位`` and ``座`` find it. A query is read the
same way; a pair that matches counts for more than its two characters apart (it is rarer).

A run is widened first (NFKC: half-width katakana and jamo become their full-width forms,
ideographs written as compatibility characters become the unified ones) and keeps its voiced
marks and Hangul syllables: folding them away, as Latin diacritics are, would merge different
words (``ガ`` and ``カ``), and would break Hangul syllables into their letters.
"""

from __future__ import annotations

import operator
import re
import unicodedata

CJK_CHARACTERS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK and Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation (iteration marks, ideographic space)
    "\u3040-\u31ff"  # Hiragana, Katakana, Bopomofo, compatibility Jamo, Kanbun, strokes
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\ua960-\ua97f"  # Hangul Jamo Extended-A
    "\uac00-\ud7ff"  # Hangul Syllables, Hangul Jamo Extended-B
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff61-\uffdc"  # half-width CJK punctuation, Katakana and Hangul
    "\U0001aff0-\U0001b16f"  # Kana extensions and supplement
    "\U00020000-\U0003ffff"  # CJK Unified Ideographs Extensions B to H, compatibility supplement
)
"""The characters a run is made of, as a regular expression class body."""

CJK_RUN = re.compile(f"[{CJK_CHARACTERS}]+")
"""A run of CJK characters; the text around it is read as words."""

_LETTERS = re.compile(r"[^\W_]+")


def cjk_terms(run: str) -> list[str]:
    """Return the terms of a run of CJK characters: each character, and each neighbouring pair.

    The run is widened (NFKC) and split at what is not a letter or digit (``。``, ``、``); a
    part of one character is that character alone.
    """
    terms: list[str] = []
    for part in _LETTERS.findall(unicodedata.normalize("NFKC", run)):
        terms += part
        terms += map(operator.add, part, part[1:])
    return terms
