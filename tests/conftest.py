from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
STRANDS_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "strands"
LOCOMO_DEV = ROOT / "data" / "locomo" / "locomo-dev.json"


def load_fixture(name: str) -> Any:
    return json.loads((STRANDS_FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def agentrecall_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Keep every test away from the real ~/.agentrecall."""
    home = tmp_path_factory.mktemp("agentrecall-home")
    monkeypatch.setenv("AGENTRECALL_HOME", str(home))
    return home


from postgres_fixtures import postgres_dsn, postgres_server, private_postgres  # noqa: E402, F401
