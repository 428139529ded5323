"""The store conformance suite, unchanged, on PostgresStore against a real server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentrecall import PostgresStore
from agentrecall.testing import HashEmbedder
from agentrecall.testing.conformance import SYNONYMS, StoreContract, StoreFactory


async def _factory(dsn: str, **defaults: Any) -> AsyncIterator[StoreFactory]:
    """Yield a factory of stores on ``dsn``; every store it made is closed afterwards.

    A pool left open when the test's event loop ends would leave its tasks pending.
    """
    made: list[PostgresStore] = []

    def make(name: str, **options: Any) -> PostgresStore:
        store = PostgresStore(dsn, name=name, **defaults, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()


class TestPostgresStore(StoreContract):
    persistent = True

    @pytest.fixture
    async def make_store(self, postgres_dsn: str) -> AsyncIterator[StoreFactory]:
        async for factory in _factory(postgres_dsn):
            yield factory


class TestPostgresStoreWithVectors(StoreContract):
    persistent = True

    @pytest.fixture
    async def make_store(self, postgres_dsn: str) -> AsyncIterator[StoreFactory]:
        embedder = HashEmbedder(1024, synonyms=SYNONYMS)
        async for factory in _factory(postgres_dsn, embedder=embedder, search_mode="keyword"):
            yield factory
