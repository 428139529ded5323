"""The store conformance suite run on every built-in store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrecall import JsonFileStore, SQLiteStore
from agentrecall.testing import HashEmbedder
from agentrecall.testing.conformance import SYNONYMS, StoreContract, StoreFactory


class TestJsonFileStore(StoreContract):
    persistent = True

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> StoreFactory:
        def make(name: str, **options: Any) -> JsonFileStore:
            return JsonFileStore(name=name, path=tmp_path / f"{name}.json", **options)

        return make


class TestJsonFileStoreInMemory(StoreContract):
    persistent = False

    @pytest.fixture
    def make_store(self) -> StoreFactory:
        def make(name: str, **options: Any) -> JsonFileStore:
            return JsonFileStore(name=name, persist=False, **options)

        return make


class TestSQLiteStore(StoreContract):
    persistent = True

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> StoreFactory:
        def make(name: str, **options: Any) -> SQLiteStore:
            return SQLiteStore(tmp_path / f"{name}.db", name=name, **options)

        return make


class TestSQLiteStoreWithVectors(StoreContract):
    persistent = True

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> StoreFactory:
        def make(name: str, **options: Any) -> SQLiteStore:
            embedder = HashEmbedder(1024, synonyms=SYNONYMS)
            return SQLiteStore(
                tmp_path / f"{name}.db",
                name=name,
                embedder=embedder,
                search_mode="keyword",
                **options,
            )

        return make


def test_the_suite_stays_out_of_plain_imports() -> None:
    code = (
        "import sys, agentrecall, agentrecall.testing\n"
        "names = ('pytest', 'agentrecall.testing.conformance')\n"
        "print(sorted(set(names) & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
