from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The conformance suite's assertions live in the package: rewritten, a failure shows its values.
pytest.register_assert_rewrite("agentrecall.testing")

from hypothesis import HealthCheck, settings  # noqa: E402

# Hypothesis times each example (a 200 ms deadline) and checks data generation for slowness:
# both fail tests on a loaded machine, where a correct example can take any time.
settings.register_profile(
    "agentrecall", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("agentrecall")

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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--smoke",
        action="store_true",
        help="run only the first test of each test module (what `make smoke` runs)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--smoke"):
        return
    seen: set[str] = set()
    kept, dropped = [], []
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        (dropped if module in seen else kept).append(item)
        seen.add(module)
    items[:] = kept
    config.hook.pytest_deselected(items=dropped)
