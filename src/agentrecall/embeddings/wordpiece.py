"""BERT's uncased WordPiece tokenizer, as all-MiniLM-L6-v2's ``tokenizer.json`` defines it.

Standard library only. For every text it gives the token ids that the ``tokenizers`` package
gives with the model's own ``tokenizer.json`` (no padding, cut to a maximum length), as the
tests check on the LoCoMo turns and on generated Unicode text; so ``LocalEmbedder`` needs no
``tokenizers`` (and none of the packages it brings). The steps, in ``tokenizers``' order:

1. the special tokens (``[CLS]``, ``[SEP]``, ``[PAD]``, ``[UNK]``, ``[MASK]``) written in the
   text are taken as they are, before anything else;
2. normalisation: control and format characters, U+0000 and U+FFFD are dropped and every
   whitespace character becomes a space; CJK ideographs get a space on each side; accents are
   stripped (canonical decomposition, then the nonspacing marks dropped); every character is
   lowercased on its own (so a final sigma stays σ);
3. pre-tokenisation: words are split at spaces, and every punctuation character (Unicode's
   ``P*`` categories and all ASCII symbols) is a word of its own;
4. WordPiece: each word becomes its longest prefix in the vocabulary, then the longest
   ``##``-prefixed continuations; a word that cannot be covered so, or longer than
   :data:`MAX_WORD_CHARS` characters, becomes ``[UNK]``;
5. ``[CLS]`` before and ``[SEP]`` after, the words' tokens cut so that the whole fits.

Character classes come from :mod:`unicodedata`, except for the code points ``tokenizers``'
older tables hold as unassigned (a table here, found by comparing every code point). So the ids
are the same on Python 3.10 and 3.11 (Unicode 13 and 14); on a Python whose Unicode is newer,
a nonspacing mark, punctuation or format character assigned since Unicode 14 is stripped, split
or dropped here where ``tokenizers`` keeps it (and makes its word ``[UNK]``).
"""

from __future__ import annotations

import bisect
import json
import re
import unicodedata
from collections.abc import Mapping

MAX_WORD_CHARS = 100
"""A longer word is ``[UNK]`` as a whole, as ``max_input_chars_per_word`` says."""

PREFIX = "##"

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

_SPECIAL = re.compile("|".join(re.escape(token) for token in SPECIAL))

# White_Space (Unicode 6.3 and later); all of these become a space, the rest of Cc is dropped.
_WHITESPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

# The ideograph blocks BERT pads with spaces (the ranges of tokenizers' is_chinese_char).
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# Code points that tokenizers' character tables (an older Unicode than Python's) hold as
# unassigned, among those whose category here would drop, strip or split them: found by
# running every code point through tokenizers 0.23 and comparing. Python's own categories
# apply to every other code point.
_OLDER_UNASSIGNED = (
    (0x061D, 0x061D),
    (0x07FD, 0x07FD),
    (0x0890, 0x0891),
    (0x0898, 0x089F),
    (0x08CA, 0x08E2),
    (0x09FD, 0x09FE),
    (0x0A76, 0x0A76),
    (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55),
    (0x0C04, 0x0C04),
    (0x0C3C, 0x0C3C),
    (0x0C77, 0x0C77),
    (0x0C84, 0x0C84),
    (0x0D00, 0x0D00),
    (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81),
    (0x0EBA, 0x0EBA),
    (0x180F, 0x180F),
    (0x1885, 0x1886),
    (0x1ABF, 0x1ACE),
    (0x1B7D, 0x1B7E),
    (0x1DF6, 0x1DFB),
    (0x2E43, 0x2E4F),
    (0x2E52, 0x2E5D),
    (0xA82C, 0xA82C),
    (0xA8C5, 0xA8C5),
    (0xA8FF, 0xA8FF),
    (0xA9BD, 0xA9BD),
    (0x10D24, 0x10D27),
    (0x10EAB, 0x10EAD),
    (0x10F46, 0x10F50),
    (0x10F55, 0x10F59),
    (0x10F82, 0x10F89),
    (0x11070, 0x11070),
    (0x11073, 0x11074),
    (0x110C2, 0x110C2),
    (0x110CD, 0x110CD),
    (0x111CF, 0x111CF),
    (0x1123E, 0x1123E),
    (0x1133B, 0x1133B),
    (0x11438, 0x1143F),
    (0x11442, 0x11444),
    (0x11446, 0x11446),
    (0x1144B, 0x1144F),
    (0x1145A, 0x1145B),
    (0x1145D, 0x1145E),
    (0x11660, 0x1166C),
    (0x116B9, 0x116B9),
    (0x1182F, 0x11837),
    (0x11839, 0x1183B),
    (0x1193B, 0x1193C),
    (0x1193E, 0x1193E),
    (0x11943, 0x11946),
    (0x119D4, 0x119D7),
    (0x119DA, 0x119DB),
    (0x119E0, 0x119E0),
    (0x119E2, 0x119E2),
    (0x11A01, 0x11A0A),
    (0x11A33, 0x11A38),
    (0x11A3B, 0x11A47),
    (0x11A51, 0x11A56),
    (0x11A59, 0x11A5B),
    (0x11A8A, 0x11A96),
    (0x11A98, 0x11A9C),
    (0x11A9E, 0x11AA2),
    (0x11C30, 0x11C36),
    (0x11C38, 0x11C3D),
    (0x11C3F, 0x11C3F),
    (0x11C41, 0x11C45),
    (0x11C70, 0x11C71),
    (0x11C92, 0x11CA7),
    (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3),
    (0x11CB5, 0x11CB6),
    (0x11D31, 0x11D36),
    (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D45),
    (0x11D47, 0x11D47),
    (0x11D90, 0x11D91),
    (0x11D95, 0x11D95),
    (0x11D97, 0x11D97),
    (0x11EF3, 0x11EF4),
    (0x11EF7, 0x11EF8),
    (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2),
    (0x13430, 0x13438),
    (0x16E97, 0x16E9A),
    (0x16F4F, 0x16F4F),
    (0x16FE2, 0x16FE2),
    (0x16FE4, 0x16FE4),
    (0x1CF00, 0x1CF2D),
    (0x1CF30, 0x1CF46),
    (0x1E000, 0x1E006),
    (0x1E008, 0x1E018),
    (0x1E01B, 0x1E021),
    (0x1E023, 0x1E024),
    (0x1E026, 0x1E02A),
    (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE),
    (0x1E2EC, 0x1E2EF),
    (0x1E944, 0x1E94A),
    (0x1E95E, 0x1E95F),
)
_OLDER_STARTS = [low for low, _ in _OLDER_UNASSIGNED]
# And the three whose category has changed since, in a way that matters here.
_OLDER_CATEGORY = {0x166D: "Po", 0x1734: "Mn", 0x111C9: "Po"}

_CONTROL = frozenset(("Cc", "Cf", "Co", "Cs"))

_ASCII_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ASCII_CONTROLS = {code: None for code in [*range(0x20), 0x7F]} | dict.fromkeys(
    map(ord, "\t\n\r"), " "
)
_ASCII_WORDS = re.compile(
    "[^ " + re.escape(_ASCII_PUNCTUATION) + "]+|[" + re.escape(_ASCII_PUNCTUATION) + "]"
)

_CACHE_WORDS = 1 << 16

_WINDOW_CHARS = 4_096
"""Characters of a text split into words at a time (up to the next space or line break)."""

_BREAK = re.compile("[ \n]")


class WordPiece:
    """A WordPiece tokenizer over a vocabulary; :meth:`encode` gives a text's token ids.

    Safe to share between threads: its only state after creation is a cache of words'
    tokens, which a race can at worst fill twice.
    """

    def __init__(self, vocab: Mapping[str, int], unknown: str = "[UNK]") -> None:
        """Use ``vocab`` (token to id), which must hold ``unknown`` and the special tokens."""
        self._vocab = dict(vocab)
        self._unknown = self._vocab[unknown]
        self._special = {token: self._vocab[token] for token in SPECIAL}
        self._first = self._special["[CLS]"]
        self._last = self._special["[SEP]"]
        self._words: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_tokenizer_json(cls, text: str) -> WordPiece:
        """Read the vocabulary of a ``tokenizer.json`` whose model is BERT's WordPiece.

        Raises:
            ValueError: the file is not such a tokenizer (its model is not WordPiece with
                the ``##`` prefix, or a special token is missing).
        """
        model = json.loads(text).get("model") or {}
        if model.get("type") != "WordPiece" or model.get("continuing_subword_prefix") != PREFIX:
            raise ValueError("the tokenizer file's model is not WordPiece with a ## prefix")
        vocab = model.get("vocab") or {}
        missing = [token for token in SPECIAL if token not in vocab]
        if missing:
            raise ValueError(f"the tokenizer file's vocabulary lacks {', '.join(missing)}")
        return cls(vocab, model.get("unk_token", "[UNK]"))

    def encode(self, text: str, max_tokens: int) -> list[int]:
        """Return ``[CLS]``, the tokens of ``text`` and ``[SEP]``: at most ``max_tokens`` ids.

        Only the start of a long text is read: the time it takes stops growing with the text
        once ``max_tokens`` are found, wherever the text has spaces or line breaks.
        """
        keep = max(max_tokens - 1, 1)
        ids = [self._first]
        place = 0
        for special in _SPECIAL.finditer(text):
            if len(ids) >= keep:
                break
            self._extend(ids, text[place : special.start()], keep)
            ids.append(self._special[special.group()])
            place = special.end()
        else:
            self._extend(ids, text[place:], keep)
        del ids[keep:]
        ids.append(self._last)
        return ids

    def _extend(self, ids: list[int], text: str, keep: int) -> None:
        """Append the tokens of ``text`` to ``ids`` until ``ids`` holds ``keep`` or more."""
        words = self._words
        start = 0
        while start < len(text) and len(ids) < keep:
            # Cut after a space or line break, which no word spans, so the words are the same.
            found = _BREAK.search(text, start + _WINDOW_CHARS)
            end = len(text) if found is None else found.end()
            for word in split_words(text[start:end]):
                tokens = words.get(word)
                if tokens is None:
                    tokens = self._pieces(word)
                    if len(words) >= _CACHE_WORDS:
                        words.clear()
                    words[word] = tokens
                ids.extend(tokens)
                if len(ids) >= keep:
                    return
            start = end

    def _pieces(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first WordPiece of one word."""
        if len(word) > MAX_WORD_CHARS:
            return (self._unknown,)
        vocab, pieces, start = self._vocab, [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else PREFIX + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    pieces.append(found)
                    start = end
                    break
            else:
                return (self._unknown,)
        return tuple(pieces)


def split_words(text: str) -> list[str]:
    """Return the words of ``text``, normalised and pre-tokenised (steps 2 and 3 above)."""
    if text.isascii():
        return _ASCII_WORDS.findall(text.translate(_ASCII_CONTROLS).lower())
    words: list[str] = []
    for chunk in normalize(text).split(" "):
        if chunk:
            words.extend(_split_punctuation(chunk))
    return words


def normalize(text: str) -> str:
    """Return ``text`` as BERT's uncased normaliser leaves it (step 2 above)."""
    kept = []
    for char in text:
        if char == "\ufffd" or _is_control(char):
            continue
        if char in _WHITESPACE:
            kept.append(" ")
        elif _is_cjk(ord(char)):
            kept.append(f" {char} ")
        else:
            kept.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(kept))
    return "".join(char.lower() for char in decomposed if _category(char) != "Mn")


def _category(char: str) -> str:
    """Return the general category of ``char`` as tokenizers' tables have it."""
    code = ord(char)
    if code in _OLDER_CATEGORY:
        return _OLDER_CATEGORY[code]
    place = bisect.bisect_right(_OLDER_STARTS, code) - 1
    if place >= 0 and code <= _OLDER_UNASSIGNED[place][1]:
        return "Cn"
    return unicodedata.category(char)


def _is_control(char: str) -> bool:
    # Unassigned code points (Cn) are kept, as tokenizers keeps them; tab, newline and
    # carriage return are whitespace.
    return _category(char) in _CONTROL and char not in "\t\n\r"


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or _category(char)[0] == "P"


def _split_punctuation(chunk: str) -> list[str]:
    if not any(map(_is_punctuation, chunk)):
        return [chunk]
    words: list[str] = []
    current: list[str] = []
    for char in chunk:
        if _is_punctuation(char):
            if current:
                words.append("".join(current))
                current = []
            words.append(char)
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words
