"""Stores for manager and tool tests: real JSON files with fixed records, and recording stores."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentrecall import AddResult, JsonFileStore, MemoryEntry
from agentrecall.stores.base import MemoryStore

PREFS = "User preferences & habits"
TEAM = 'team"s <notes>'
DARK_MODE = "User prefers dark mode & large fonts"
CHOCOLATE = "dark chocolate is the user's favourite"
TEAM_DARK = "Team uses <dark> theme in dashboards; \"quoted\" & 'single'"


def write_records(path: Path, *records: tuple[str, str, str]) -> Path:
    """Write a store file of ``(id, content, createdAt)`` records, in that order."""
    data = [{"id": i, "content": c, "createdAt": t} for i, c, t in records]
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def reference_stores(tmp_path: Path, **team: Any) -> list[JsonFileStore]:
    """The two stores the reference fixtures were made with, as JSON files with fixed times.

    ``personal`` holds the dark-mode fact (newer) and the chocolate fact; ``team"s <notes>``
    holds the dashboard fact. ``team`` overrides the team store's constructor arguments.
    """
    personal = write_records(
        tmp_path / "personal.json",
        ("p-dark-mode", DARK_MODE, "2026-01-01T00:00:02.000Z"),
        ("p-chocolate", CHOCOLATE, "2026-01-01T00:00:01.000Z"),
    )
    team_file = write_records(
        tmp_path / "team.json", ("t-dashboards", TEAM_DARK, "2026-01-01T00:00:03.000Z")
    )
    options: dict[str, Any] = {"name": TEAM, "path": team_file, **team}
    return [
        JsonFileStore(name="personal", description=PREFS, path=personal),
        JsonFileStore(**options),
    ]


class RecordingStore:
    """A writable store that records every call and returns fixed hits.

    ``search_error`` / ``add_error`` make the calls raise.
    """

    def __init__(
        self,
        name: str,
        hits: Sequence[str] = (),
        *,
        description: str | None = None,
        max_search_results: int | None = None,
        writable: bool = True,
        extraction: Any = None,
        search_error: Exception | None = None,
        add_error: Exception | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.max_search_results = max_search_results
        self.writable = writable
        self.extraction = extraction
        self.hits = list(hits)
        self.search_error = search_error
        self.add_error = add_error
        self.searches: list[tuple[str, dict[str, Any] | None]] = []
        self.adds: list[tuple[str, Any]] = []

    async def search(
        self, query: str, options: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        self.searches.append((query, None if options is None else dict(options)))
        if self.search_error is not None:
            raise self.search_error
        # A store-set name must be overridden by the manager.
        return [
            MemoryEntry(content=hit, store_name="wrong", id=f"{self.name}-{i}")
            for i, hit in enumerate(self.hits)
        ]

    async def add(self, content: str, metadata: dict[str, Any] | None = None) -> AddResult:
        self.adds.append((content, metadata))
        if self.add_error is not None:
            raise self.add_error
        return AddResult(id=f"{self.name}-{len(self.adds)}")


class SearchOnlyStore:
    """A read-only store: ``search`` and nothing else."""

    def __init__(self, name: str, hits: Sequence[str] = ()) -> None:
        self.name = name
        self.description: str | None = None
        self.max_search_results: int | None = None
        self.writable = False
        self.extraction: Any = None
        self.hits = list(hits)

    async def search(
        self, query: str, options: Mapping[str, Any] | None = None
    ) -> list[MemoryEntry]:
        return [MemoryEntry(content=hit) for hit in self.hits]


class MessagesOnlyStore(SearchOnlyStore):
    """A writable store that takes whole conversations (``add_messages``) but has no ``add``."""

    def __init__(self, name: str, *, extraction: Any = None) -> None:
        super().__init__(name)
        self.writable = True
        self.extraction = extraction
        self.batches: list[list[Any]] = []

    async def add_messages(self, messages: list[Any], context: Any = None) -> None:
        self.batches.append(list(messages))


class CountingJsonStore(JsonFileStore):
    """A real JSON file store that counts the write calls reaching it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.add_calls = 0
        self.add_many_calls = 0

    async def add(self, content: str, metadata: dict[str, Any] | None = None) -> AddResult:
        self.add_calls += 1
        return await super().add(content, metadata)

    async def add_many(self, items: Any) -> list[AddResult]:
        self.add_many_calls += 1
        return await super().add_many(items)


def names(stores: Sequence[MemoryStore]) -> list[str]:
    return [store.name for store in stores]
