"""The Porter stemmer, exactly as SQLite's FTS5 ``porter`` tokenizer applies it.

M. F. Porter, "An algorithm for suffix stripping", Program 14(3), 1980, with the departures of
Porter's own reference implementation that FTS5 follows too (``bli`` -> ``ble`` instead of
``abli`` -> ``able``, and ``logi`` -> ``log``). A keyword index that stems with FTS5 and ranks
in Python must stem both sides alike, so this follows FTS5 where it reads the paper its own
way:

* a word works on its UTF-8 bytes: only ASCII ``a e i o u`` (and ``y`` after a consonant) are
  vowels, every other byte is a consonant; words under 3 or over 64 bytes are left as they
  are;
* a suffix is only taken from a longer word (``ies`` stays ``ie``, ``ated`` becomes ``at``);
* within a step the longest matching suffix decides: if its condition fails, no shorter
  suffix is tried.

The stem of a word is not always a word FTS5 stems to itself (``agreed`` -> ``agre`` ->
``agr``), so a query must hand FTS5 the word, never its stem.
"""

from __future__ import annotations

import functools

_VOWELS = frozenset(b"aeiou")
_Y = ord("y")
# A stem ending in a double letter loses one, unless it is a vowel (``y`` is not) or l, s, z.
_KEPT_DOUBLES = (b"a", b"e", b"i", b"o", b"u", b"l", b"s", b"z")

Rules = dict[int, list[tuple[bytes, bytes]]]
"""A step's (suffix, replacement) rules by the second-last byte of the suffix, longest first."""


def _by_second_last(rules: list[tuple[bytes, bytes]]) -> Rules:
    """Group ``rules`` as FTS5 does: a word only ends in the suffixes of its second-last byte.

    Every suffix has two bytes or more, so one lookup leaves at most five to try; longest
    first, so the first that matches is the longest.
    """
    table: Rules = {}
    for suffix, replacement in sorted(rules, key=lambda rule: -len(rule[0])):
        table.setdefault(suffix[-2], []).append((suffix, replacement))
    return table


_STEP_2 = _by_second_last(
    [
        (b"ational", b"ate"), (b"tional", b"tion"), (b"enci", b"ence"), (b"anci", b"ance"),
        (b"izer", b"ize"), (b"bli", b"ble"), (b"alli", b"al"), (b"entli", b"ent"),
        (b"eli", b"e"), (b"ousli", b"ous"), (b"ization", b"ize"), (b"ation", b"ate"),
        (b"ator", b"ate"), (b"alism", b"al"), (b"iveness", b"ive"), (b"fulness", b"ful"),
        (b"ousness", b"ous"), (b"aliti", b"al"), (b"iviti", b"ive"), (b"biliti", b"ble"),
        (b"logi", b"log"),
    ]
)  # fmt: skip
_STEP_3 = _by_second_last(
    [
        (b"icate", b"ic"), (b"ative", b""), (b"alize", b"al"), (b"iciti", b"ic"),
        (b"ical", b"ic"), (b"ful", b""), (b"ness", b""),
    ]
)  # fmt: skip
_STEP_4 = _by_second_last(
    [
        (suffix, b"")
        for suffix in (
            b"al", b"ance", b"ence", b"er", b"ic", b"able", b"ible", b"ant", b"ement", b"ment",
            b"ent", b"ion", b"ou", b"ism", b"ate", b"iti", b"ous", b"ive", b"ize",
        )
    ]
)  # fmt: skip

SHORTEST = 3
"""Words of fewer bytes than this are not stemmed."""
LONGEST = 64
"""Words of more bytes than this are not stemmed."""


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Return the Porter stem of ``word``, a lowercase token, as FTS5's ``porter`` makes it.

    A stem that cuts a multibyte character (FTS5 compares bytes) holds the cut bytes as
    surrogate escapes; such a stem is only ever compared with other stems.
    """
    data = word.encode("utf-8", "surrogatepass")
    if not SHORTEST <= len(data) <= LONGEST:
        return word
    data = _step_1(data)
    data = _replace(data, _STEP_2)
    data = _replace(data, _STEP_3)
    data = _strip(data)
    data = _step_5(data)
    return data.decode("utf-8", "surrogateescape")


def _consonants(word: bytes) -> list[bool]:
    """Return, per byte, whether it is a consonant (``y`` is one at the start or after a vowel)."""
    flags: list[bool] = []
    for byte in word:
        if byte in _VOWELS:
            flags.append(False)
        elif byte == _Y:
            flags.append(not flags or not flags[-1])
        else:
            flags.append(True)
    return flags


def _measure(stem: bytes) -> int:
    """Return Porter's m: how many vowel-consonant sequences ``stem`` holds."""
    count = 0
    vowel = False  # whether the byte before is a vowel
    for index, byte in enumerate(stem):
        # ``y`` is a vowel after a consonant, a consonant first or after a vowel.
        now = byte in _VOWELS or (byte == _Y and index > 0 and not vowel)
        if vowel and not now:
            count += 1
        vowel = now
    return count


def _has_vowel(stem: bytes) -> bool:
    return not all(_consonants(stem))


def _ends_cvc(stem: bytes) -> bool:
    """Porter's ``*o``: consonant, vowel, consonant, the last not ``w``, ``x`` or ``y``."""
    flags = _consonants(stem)
    return flags[-3:] == [True, False, True] and stem[-1:] not in (b"w", b"x", b"y")


def _takes(word: bytes, suffix: bytes) -> bool:
    """Whether ``word`` ends in ``suffix`` and holds more than it."""
    return len(word) > len(suffix) and word.endswith(suffix)


def _step_1(word: bytes) -> bytes:
    """Plurals and ``-ed`` or ``-ing``, then a final ``y`` after a vowel becomes ``i``."""
    if _takes(word, b"sses") or _takes(word, b"ies"):
        word = word[:-2]
    elif word.endswith(b"s") and not word.endswith(b"ss"):
        word = word[:-1]
    if _takes(word, b"eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif _takes(word, b"ed") and _has_vowel(word[:-2]):
        word = _tidy_1b(word[:-2])
    elif _takes(word, b"ing") and _has_vowel(word[:-3]):
        word = _tidy_1b(word[:-3])
    if word.endswith(b"y") and _has_vowel(word[:-1]):
        word = word[:-1] + b"i"
    return word


def _tidy_1b(word: bytes) -> bytes:
    """Mend a stem that lost ``-ed`` or ``-ing``: ``hop(p)``, ``siz(e)``, ``conflat(e)``."""
    for suffix in (b"at", b"bl", b"iz"):
        if _takes(word, suffix):
            return word + b"e"
    last = word[-1:]
    if len(word) > 1 and last == word[-2:-1] and last not in _KEPT_DOUBLES:
        return word[:-1]
    if _measure(word) == 1 and _ends_cvc(word):
        return word + b"e"
    return word


def _replace(word: bytes, rules: Rules) -> bytes:
    """Steps 2 and 3: replace the longest suffix of ``rules`` in ``word`` if its stem has m > 0."""
    if len(word) > 2:
        for suffix, replacement in rules.get(word[-2], ()):
            if word.endswith(suffix) and len(word) > len(suffix):
                stem = word[: -len(suffix)]
                return stem + replacement if _measure(stem) > 0 else word
    return word


def _strip(word: bytes) -> bytes:
    """Step 4: drop the longest suffix of ``_STEP_4`` from a stem of m > 1 (``-ion`` after s, t)."""
    if len(word) > 2:
        for suffix, _ in _STEP_4.get(word[-2], ()):
            if word.endswith(suffix) and len(word) > len(suffix):
                stem = word[: -len(suffix)]
                if suffix == b"ion" and not stem.endswith((b"s", b"t")):
                    return word
                return stem if _measure(stem) > 1 else word
    return word


def _step_5(word: bytes) -> bytes:
    """Drop a final ``e`` (unless the stem is short and ends cvc) and a double ``l``."""
    if word.endswith(b"e"):
        stem = word[:-1]
        measure = _measure(stem)
        if measure > 1 or (measure == 1 and not _ends_cvc(stem)):
            word = stem
    if word.endswith(b"ll") and _measure(word) > 1:
        word = word[:-1]
    return word
