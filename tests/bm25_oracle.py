"""Okapi BM25 as ``SQLiteStore`` documents it, computed independently of the store's code.

k1 1.2, b 0.75, idf ln(1 + (N - df + 0.5) / (df + 0.5)), words folded to lowercase without
diacritics, stop words left out of queries, ties to the newer memory.
"""

from __future__ import annotations

import math
import re
import unicodedata

from agentrecall.retrieval.tokenize import STOP_WORDS


def words(text: str) -> list[str]:
    """Return the words of ``text`` as the store's full-text index folds them."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(char for char in folded if not unicodedata.combining(char))
    return re.findall(r"[^\W_]+", folded)


class Corpus:
    """The memories of a store, oldest first, tokenized once for many queries."""

    def __init__(self, memories: list[str]) -> None:
        self.documents = [words(text) for text in memories]
        self.average = sum(len(each) for each in self.documents) / len(self.documents)

    def ranked(self, query: str) -> list[tuple[int, float]]:
        """Return (index, score) of the memories with a positive score, best first."""
        total = len(self.documents)
        terms = set(words(query)) - STOP_WORDS
        df = {term: sum(term in other for other in self.documents) for term in terms}
        scored = []
        for index, each in enumerate(self.documents):
            score = 0.0
            for term in terms:
                frequency = each.count(term)
                if not frequency:
                    continue
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                norm = 1.2 * (1 - 0.75 + 0.75 * len(each) / self.average)
                score += idf * frequency * 2.2 / (frequency + norm)
            if score > 0:
                scored.append((index, score))
        return sorted(scored, key=lambda item: (-item[1], -item[0]))


def ranked(memories: list[str], query: str) -> list[tuple[int, float]]:
    """Return (index, score) of the memories with a positive score, best first."""
    return Corpus(memories).ranked(query)
