"""Okapi BM25 as ``SQLiteStore`` documents it, computed independently of the store's code.

k1 0.9, b 0.25, idf ln(1 + (N - df + 0.5) / (df + 0.5)); words folded to lowercase without
diacritics and stemmed by SQLite's own FTS5 ``porter`` tokenizer (asked directly, never through
agentrecall's stemmer); a run of Chinese, Japanese or Korean characters read, once widened
(NFKC), as each of its characters and each neighbouring pair; stop words left out of queries
before stemming; ties to the newer memory.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
import unicodedata

from agentrecall.retrieval.tokenize import STOP_WORDS

K1 = 0.9
B = 0.25
_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "IDEOGRAPHIC", "HALFWIDTH KATAKANA")


def _is_cjk(char: str) -> bool:
    return unicodedata.name(char, "").startswith(_SCRIPTS)


@functools.cache
def fts5_stem(word: str) -> str:
    """Return what FTS5's ``porter`` tokenizer makes of ``word``, a folded word."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='porter ascii')")
        db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'row')")
        db.execute("INSERT INTO t (x) VALUES (?)", (word,))
        (term,) = db.execute("SELECT term FROM v").fetchone()
        return str(term)
    finally:
        db.close()


def _folded_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(char for char in folded if not unicodedata.combining(char))
    return re.findall(r"[^\W_]+", folded)


def _pieces(text: str) -> list[tuple[bool, str]]:
    """Return ``text`` as (is a CJK run, part) pieces."""
    pieces: list[tuple[bool, str]] = []
    for char in text:
        cjk = _is_cjk(char)
        if pieces and pieces[-1][0] == cjk:
            pieces[-1] = (cjk, pieces[-1][1] + char)
        else:
            pieces.append((cjk, char))
    return pieces


def terms(text: str, *, query: bool = False) -> list[str]:
    """Return the terms of ``text`` as the store's index keeps them (a query: no stop words)."""
    found: list[str] = []
    for cjk, part in _pieces(text):
        if cjk:
            for run in re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", part)):
                found += list(run) + [run[i : i + 2] for i in range(len(run) - 1)]
        else:
            found += [
                fts5_stem(word)
                for word in _folded_words(part)
                if not (query and word in STOP_WORDS)
            ]
    return found


class Corpus:
    """The memories of a store, oldest first, tokenized once for many queries."""

    def __init__(self, memories: list[str]) -> None:
        self.documents = [terms(text) for text in memories]
        self.average = sum(len(each) for each in self.documents) / len(self.documents)

    def ranked(self, query: str) -> list[tuple[int, float]]:
        """Return (index, score) of the memories with a positive score, best first."""
        total = len(self.documents)
        wanted = set(terms(query, query=True))
        df = {term: sum(term in other for other in self.documents) for term in wanted}
        scored = []
        for index, each in enumerate(self.documents):
            score = 0.0
            for term in wanted:
                frequency = each.count(term)
                if not frequency:
                    continue
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                norm = K1 * (1 - B + B * len(each) / self.average)
                score += idf * frequency * (K1 + 1) / (frequency + norm)
            if score > 0:
                scored.append((index, score))
        return sorted(scored, key=lambda item: (-item[1], -item[0]))


def ranked(memories: list[str], query: str) -> list[tuple[int, float]]:
    """Return (index, score) of the memories with a positive score, best first."""
    return Corpus(memories).ranked(query)
