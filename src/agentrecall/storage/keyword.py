"""Keyword search over every key of a storage, the default ``Storage.search``."""

from __future__ import annotations

import asyncio
import posixpath

from agentrecall.errors import StorageError
from agentrecall.retrieval.tokenize import STOP_WORDS, overlap_score, tokenize
from agentrecall.storage.base import Storage, StorageSearchResult

_BATCH = 8


async def keyword_search(storage: Storage, query: str) -> list[StorageSearchResult]:
    """Rank every key of ``storage`` by distinct query words found in its name and bytes.

    Stop words are dropped from the query (a query of only stop words finds nothing). A key is
    scored on its name without the final extension plus its bytes decoded as UTF-8 (invalid
    bytes replaced), so ``notes/dark-mode.md`` matches "dark mode". Keys that cannot be read are
    skipped. Hits with a score of 0 are left out; ties keep key order. There is no limit.
    """
    terms = tokenize(query) - STOP_WORDS
    if not terms:
        return []
    keys = await storage.list()
    hits: list[StorageSearchResult] = []
    for start in range(0, len(keys), _BATCH):
        batch = keys[start : start + _BATCH]
        contents = await asyncio.gather(
            *(storage.read(key) for key in batch), return_exceptions=True
        )
        for key, data in zip(batch, contents, strict=True):
            if isinstance(data, StorageError) or data is None:
                continue
            if isinstance(data, BaseException):
                raise data
            name = posixpath.splitext(key)[0]
            score = overlap_score(terms, f"{name} {data.decode('utf-8', errors='replace')}")
            if score > 0:
                hits.append(StorageSearchResult(key=key, score=float(score), data=data))
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return hits
