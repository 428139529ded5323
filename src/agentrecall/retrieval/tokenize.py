"""The keyword tokenizer of the Strands file format, and its overlap score.

These rules decide which memories a query finds in a ``JsonFileStore``; they match the
reference to the letter, quirks included, so both rank one file the same way:

* text is lowercased with ``str.lower()`` (not ``casefold``), then split into runs of word
  characters (Unicode letters and digits, and ``_``); everything else separates, including
  apostrophes, hyphens, dots and combining marks;
* no stop words are removed and no minimum length applies; ``snake_case`` is one token;
* there is no Unicode normalisation: precomposed ``café`` does not match ``cafe``.
"""

from __future__ import annotations

import re
from collections.abc import Set

_WORD = re.compile(r"\w+")

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again all although an and any are as at be because been before being
    below between both but by can could dare did do does during each either every few for from
    further had has have he her him his how i if in into is it its just may me might more most my
    need neither no nor not of off on once only or other ought our out over own same shall she
    should since so some such than that the their them then these they this those though through
    to too under unless until up us used very was we were what when where which while who whom
    why will with would yet you your
    """.split()
)
"""Common English words that storage-level keyword search ignores (never ``JsonFileStore``)."""


def tokenize(text: str) -> frozenset[str]:
    """Return the distinct lowercase word tokens of ``text``."""
    return frozenset(_WORD.findall(text.lower()))


def overlap_score(query_tokens: Set[str], content: str) -> int:
    """Return how many distinct query tokens occur as whole tokens of ``content``."""
    return len(query_tokens & tokenize(content))
