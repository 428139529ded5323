"""The records of one JSON memory file held in memory, with what searching and writing need.

A :class:`RecordSet` is the parsed file plus indexes built on first use: the record texts for
writing, token sets and postings for searching, maps for dedup and lookup by id. Appending
updates them in place, so a process that keeps adding never re-reads, re-tokenizes or
re-serializes the whole file. Not thread-safe: the owning store serializes access.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Set

from agentrecall.retrieval.tokenize import tokenize
from agentrecall.storage.base import Version
from agentrecall.stores.jsonformat import Record, file_bytes, record_bytes


class RecordSet:
    """The records of one file version, oldest first, as the file lists them."""

    def __init__(self, records: list[Record], version: Version) -> None:
        self.records = records
        self.version = version
        self._texts: list[bytes] | None = None
        self._by_content: dict[str, str] | None = None
        self._positions: dict[str, int] | None = None
        self._postings: dict[str, list[int]] | None = None

    def duplicate_of(self, content: str) -> str | None:
        """Return the id of the first record whose stripped content equals ``content.strip()``."""
        if self._by_content is None:
            self._by_content = {}
            for record in self.records:
                self._by_content.setdefault(record["content"].strip(), record["id"])
        return self._by_content.get(content.strip())

    def position_of(self, record_id: str) -> int | None:
        """Return the index of the first record with ``record_id``, or ``None``."""
        if self._positions is None:
            self._positions = {}
            for index, record in enumerate(self.records):
                self._positions.setdefault(record["id"], index)
        return self._positions.get(record_id)

    def append(self, record: Record) -> None:
        """Add ``record`` at the end, keeping every built index current."""
        texts = self._record_texts()
        index = len(self.records)
        self.records.append(record)
        texts.append(record_bytes(record))
        if self._by_content is not None:
            self._by_content.setdefault(record["content"].strip(), record["id"])
        if self._positions is not None:
            self._positions.setdefault(record["id"], index)
        if self._postings is not None:
            for token in tokenize(record["content"]):
                self._postings.setdefault(token, []).append(index)

    def remove(self, positions: Set[int]) -> None:
        """Drop the records at ``positions``; indexes that shift are rebuilt on next use."""
        texts = self._record_texts()
        keep = [i for i in range(len(self.records)) if i not in positions]
        self.records = [self.records[i] for i in keep]
        self._texts = [texts[i] for i in keep]
        self._by_content = self._positions = self._postings = None

    def to_bytes(self) -> bytes:
        """Return the file's bytes for the current records."""
        return file_bytes(self._record_texts())

    def top(self, query_tokens: Set[str], limit: int) -> list[tuple[int, int]]:
        """Return up to ``limit`` ``(position, score)`` pairs with a score above 0, best first.

        Score is the number of distinct query tokens in the record's content. Order: score,
        then ``createdAt`` compared as strings, both descending, then position ascending:
        records with equal score and ``createdAt`` (added within one millisecond, as a batch
        often is) keep the file's order, as the reference's stable sort keeps them.
        """
        postings = self._token_postings()
        scores: Counter[int] = Counter()
        for token in query_tokens:
            hits = postings.get(token)
            if hits:
                scores.update(hits)
        if not scores:
            return []
        # Common words match most records; rank only those that can still make the cut.
        cutoff = heapq.nlargest(limit, scores.values())[-1]
        contenders = [position for position, score in scores.items() if score >= cutoff]
        records = self.records

        def rank(position: int) -> tuple[int, str, int]:
            return scores[position], records[position]["createdAt"], -position

        best = heapq.nlargest(limit, contenders, key=rank)
        return [(position, scores[position]) for position in best]

    def _record_texts(self) -> list[bytes]:
        if self._texts is None:
            self._texts = [record_bytes(record) for record in self.records]
        return self._texts

    def _token_postings(self) -> dict[str, list[int]]:
        if self._postings is None:
            postings: dict[str, list[int]] = {}
            for index, record in enumerate(self.records):
                for token in tokenize(record["content"]):
                    postings.setdefault(token, []).append(index)
            self._postings = postings
        return self._postings
