"""The terms keyword search reads in a text, the same for a memory and for a query.

This is how SQLite's FTS5 tokenizer ``porter unicode61 remove_diacritics 2`` reads text, so
that a ranking computed in Python agrees with the full-text index:

* words are runs of letters and digits (``_`` separates), lowercased, diacritics removed
  (``café`` and ``cafe`` are one word), each reduced to its Porter stem
  (:mod:`~agentrecall.retrieval.porter`: ``seats`` and ``seat`` are one term);
* a run of Chinese, Japanese or Korean characters becomes its characters and its neighbouring
  pairs (:mod:`~agentrecall.retrieval.cjk`). FTS5 cannot split such runs, so the index reads
  :func:`index_text` in their place;
* an emoji or other pictograph is a term on its own, its modifiers dropped
  (:mod:`~agentrecall.retrieval.pictographs`); FTS5 reads them as separators, so the index
  reads them in :func:`index_text` too, as private use characters.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection

from agentrecall.retrieval.cjk import CJK_CHARACTERS, CJK_RUN, cjk_terms
from agentrecall.retrieval.pictographs import FLAG, PICTOGRAPH, PICTOGRAPHS, index_word
from agentrecall.retrieval.porter import stem

_WORD_OR_PICTOGRAPH = re.compile(rf"([^\W_]+)|({FLAG}|[{PICTOGRAPHS}])")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
"""Words (``[^\\W_]+``) in lowercased ASCII text, which holds no pictograph: a little faster."""

STEMS_KEPT = 1 << 17
"""Stems :func:`distinct_terms` and :func:`keyword_terms` keep in a plain ``dict``: a look-up
there costs a third of one through :func:`~agentrecall.retrieval.porter.stem`'s LRU cache, and
the words of a row are most of the cost of building it for a bulk import (and of ranking a
search's candidates). The first words met are kept (the common ones come early); once full,
other words go to the LRU cache as before: emptying it instead made every word miss again,
each time a large import's vocabulary filled it. About 15 MB when full."""

_STEMS: dict[str, str] = {}
_AROUND_RUNS = re.compile(f"([{CJK_CHARACTERS}]+)")


def fold(text: str) -> str:
    """Return ``text`` lowercased, with diacritics removed."""
    lowered = text.lower()
    if lowered.isascii():
        # Nothing to decompose: most text, and the per-character pass below is most of the
        # time of ranking a search's candidates.
        return lowered
    # Lowercased again: a compatibility character can decompose into capitals (``Ⅻ``, ``𝐀``).
    decomposed = unicodedata.normalize("NFKD", lowered).lower()
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def keyword_terms(text: str) -> list[str]:
    """Return the terms of ``text``, in order, with repeats."""
    if text.isascii():
        # The kept stems first: this is most of the cost of ranking a search's candidates.
        known = _STEMS.get
        return [known(word) or _stemmed(word) for word in _ASCII_WORD.findall(text.lower())]
    return [term for _, term in words(text)]


def term_counter(terms: Collection[str]) -> Callable[[str], tuple[dict[str, int], int]]:
    """Return a function giving, for a text, how often it holds each of ``terms``, and its length.

    The counts and the length are those of :func:`keyword_terms` (a term absent from the text
    has no count), for ranking many texts against one query. In ASCII text a word is stemmed
    only if it can stem to one of ``terms``: a Porter stem keeps the start of its word and
    changes at most its last two characters (``bility`` -> ``ble``; no step adds more), and
    never its first, so a word that does not begin with a term's characters up to its last two
    (at least its first) cannot have that stem. Stemming every word of a search's candidates
    would be most of the cost of ranking them, and all of it in a process new to their words.
    """
    wanted = frozenset(terms)
    starts = tuple({term[: max(1, len(term) - 2)] for term in wanted})

    def count(text: str) -> tuple[dict[str, int], int]:
        if text.isascii():
            found = _ASCII_WORD.findall(text.lower())
            known = _STEMS.get
            stems = [known(word) or _stemmed(word) for word in found if word.startswith(starts)]
        else:
            found = stems = keyword_terms(text)
        counts: dict[str, int] = {}
        for term in stems:
            if term in wanted:
                counts[term] = counts.get(term, 0) + 1
        return counts, len(found)

    return count


def term_counts(text: str) -> tuple[dict[str, int], int]:
    """Return how often ``text`` holds each of its terms, and how many terms it has.

    The counts of :func:`keyword_terms`: what a store keeps of a long memory, so that ranking
    it reads a few counts instead of its whole text.
    """
    terms = keyword_terms(text)
    return dict(Counter(terms)), len(terms)


def distinct_terms(text: str) -> tuple[list[str], int]:
    """Return the distinct terms of ``text`` in order of first use, and how many terms it has.

    The same terms as :func:`keyword_terms`, with each distinct word stemmed once: a stored
    memory's index needs no repeats, and this is most of the cost of building its row.
    """
    if text.isascii():
        found = _ASCII_WORD.findall(text.lower())
        known = _STEMS.get
        stems = [known(word) or _stemmed(word) for word in dict.fromkeys(found)]
        return list(dict.fromkeys(stems)), len(found)
    terms = [term for _, term in words(text)]
    return list(dict.fromkeys(terms)), len(terms)


def _stemmed(word: str) -> str:
    """Return the stem of ``word``, kept in :data:`_STEMS` while it has room."""
    found = stem(word)
    if len(_STEMS) < STEMS_KEPT:
        _STEMS[word] = found
    return found


def words(text: str) -> list[tuple[str, str]]:
    """Return ``(word, term)`` for each term of ``text``, in order, with repeats.

    ``word`` is what a full-text query asks for to find ``term``: the folded word the index
    stems (a stem is not always its own stem), the CJK character or pair itself, or the
    :func:`~agentrecall.retrieval.pictographs.index_word` of a pictograph.
    """
    found: list[tuple[str, str]] = []
    for index, part in enumerate(_split(text)):
        if index % 2:
            found.extend((term, term) for term in cjk_terms(part))
        else:
            found.extend(
                (word, stem(word)) if word else (index_word(pictograph), pictograph)
                for word, pictograph in _WORD_OR_PICTOGRAPH.findall(fold(part))
            )
    return found


def index_text(text: str) -> str | None:
    """Return what the full-text index reads for ``text``: ``None`` when it is ``text`` itself.

    FTS5 reads words its own way: it neither widens compatibility characters (``ﬁ``, ``Ｔ``,
    ``²``) nor folds every diacritic :func:`fold` removes (Greek accents, ``й``), and cannot
    split CJK runs, and reads pictographs as separators. A text where :func:`fold` changes more
    than the case, or that holds a CJK run or a pictograph, is therefore given to the index as
    its words, folded, its CJK terms and its pictographs' words, apart, so that the index finds
    exactly :func:`keyword_terms` (which the ranking reads) and a memory is found by the same
    words once indexed as while it waits for the index.
    """
    if text.isascii():
        return None
    if (
        CJK_RUN.search(text) is None
        and PICTOGRAPH.search(text) is None
        and fold(text) == text.lower()
    ):
        return None
    return " ".join(word for word, _ in words(text))


def _split(text: str) -> list[str]:
    """Return ``text`` cut around its CJK runs: other text, a run, other text, and so on."""
    return [text] if text.isascii() else _AROUND_RUNS.split(text)
