"""The store conformance suite, unchanged, on PostgresStore against a real server."""

from __future__ import annotations

from typing import Any

import pytest

from agentrecall import PostgresStore
from agentrecall.testing import HashEmbedder
from agentrecall.testing.conformance import SYNONYMS, StoreContract, StoreFactory


class TestPostgresStore(StoreContract):
    persistent = True

    @pytest.fixture
    def make_store(self, postgres_dsn: str) -> StoreFactory:
        def make(name: str, **options: Any) -> PostgresStore:
            return PostgresStore(postgres_dsn, name=name, **options)

        return make


class TestPostgresStoreWithVectors(StoreContract):
    persistent = True

    @pytest.fixture
    def make_store(self, postgres_dsn: str) -> StoreFactory:
        def make(name: str, **options: Any) -> PostgresStore:
            embedder = HashEmbedder(1024, synonyms=SYNONYMS)
            return PostgresStore(
                postgres_dsn, name=name, embedder=embedder, search_mode="keyword", **options
            )

        return make
