"""The store conformance suite, unchanged, on PostgresStore against a real server."""

from __future__ import annotations

from typing import Any

import pytest

from agentrecall import PostgresStore
from agentrecall.testing.conformance import StoreContract, StoreFactory


class TestPostgresStore(StoreContract):
    persistent = True

    @pytest.fixture
    def make_store(self, postgres_dsn: str) -> StoreFactory:
        def make(name: str, **options: Any) -> PostgresStore:
            return PostgresStore(postgres_dsn, name=name, **options)

        return make
