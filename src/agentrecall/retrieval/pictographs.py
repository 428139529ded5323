"""Emoji and other pictographs as keyword terms: each one a term of its own.

``Ana loves 🍣 sushi`` holds the terms ``ana love 🍣 sushi``, so ``🍣`` finds it. A pictograph
is a character of the blocks in :data:`PICTOGRAPHS` (emoji, dingbats such as ``✈ ✅ ❤``, other
symbols such as ``★ ♥ ☎ ■``), whether or not the Unicode version of this Python assigns it
yet: the terms a store's index holds must not change with the Python that reads them.

An emoji sequence becomes the pictographs it is made of; what only modifies them is dropped,
as punctuation is: variation selectors (``❤️`` is ``❤`` and U+FE0F, and finds ``❤``), skin
tones (``👍🏽`` finds ``👍``), zero-width joiners (``👩‍🚀`` holds ``👩`` and ``🚀``), keycap marks
and tags. A flag, a pair of regional indicator letters (``🇯🇵``), is one term. Letters, digits
and punctuation stay what they were: ``-``, ``.``, ``,``, arrows and mathematical signs are
not terms.

SQLite's full-text tokenizer reads pictographs as separators, so the index is given each one
as :func:`index_word`: the same characters moved to the private use planes, which it reads as
a word.
"""

from __future__ import annotations

import re

PICTOGRAPHS = (
    "\u2300-\u23ff"  # Miscellaneous Technical (⌚ ⌛ ⏰ ⏳)
    "\u25a0-\u25ff"  # Geometric Shapes (■ ▶ ●)
    "\u2600-\u27bf"  # Miscellaneous Symbols, Dingbats (☀ ★ ♥ ✈ ✅ ❤)
    "\u2b00-\u2bff"  # Miscellaneous Symbols and Arrows (⬆ ⭐ ⭕)
    "\U0001f000-\U0001f3fa"  # Mahjong to Miscellaneous Symbols and Pictographs (🀄 🇯 🍣)
    # U+1F3FB to U+1F3FF: the skin tone modifiers, dropped.
    "\U0001f400-\U0001faff"  # the rest of those, Emoticons to Pictographs Extended-A (😀 🚀 🫠)
)
"""The characters that are terms on their own, as a regular expression class body."""

FLAG = "[\U0001f1e6-\U0001f1ff]{2}"
"""A flag: two regional indicator letters (``🇯🇵``), one term."""

PICTOGRAPH = re.compile(f"{FLAG}|[{PICTOGRAPHS}]")
"""A term made of pictographs: a flag, or one pictograph."""

FOLDED_INTO_PICTOGRAPHS = "\uffed\uffee"
"""The characters outside :data:`PICTOGRAPHS` that become one when folded (NFKD): the
half-width ``■`` and ``○``."""

_PRIVATE_BMP = 0xF0000
"""A pictograph of the Basic Multilingual Plane moves to plane 15 (Supplementary Private Use
Area-A), at its own offset."""

_PRIVATE_SMP = 0x100000 - 0x10000
"""A pictograph of plane 1 moves to plane 16 (Supplementary Private Use Area-B)."""


def index_word(term: str) -> str:
    """Return the word SQLite's full-text index reads for the pictograph ``term``.

    Each character is moved to a private use plane, one to one: FTS5's ``unicode61`` tokenizer
    reads private use characters as parts of words and pictographs as separators. Such
    characters are unassigned by definition; a text holding them is found by the index for a
    pictograph's word, and then scored by its real terms (none of them), so never returned.
    """
    return "".join(
        chr(code + (_PRIVATE_BMP if code < 0x10000 else _PRIVATE_SMP)) for code in map(ord, term)
    )
