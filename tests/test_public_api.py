"""The public surface: what ``import agentrecall`` gives, and what it costs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import agentrecall


def test_all_is_sorted_and_importable() -> None:
    assert agentrecall.__all__ == sorted(agentrecall.__all__)
    for name in agentrecall.__all__:
        assert getattr(agentrecall, name) is not None


def test_error_tree() -> None:
    from agentrecall import errors

    for cls in (
        errors.StorageError,
        errors.InvalidArgumentError,
        errors.InvalidFileError,
        errors.AggregateMemoryError,
    ):
        assert issubclass(cls, agentrecall.AgentRecallError)
    assert issubclass(errors.InvalidArgumentError, ValueError)
    assert issubclass(errors.InvalidFileError, ValueError)
    assert not issubclass(errors.StorageError, (ValueError, OSError))
    failure = errors.AggregateMemoryError("two failed", [ValueError("a"), OSError("b")])
    assert [type(e) for e in failure.errors] == [ValueError, OSError]


def test_import_needs_the_standard_library_only() -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import agentrecall, agentrecall.cli\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'agentrecall'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_embedders_are_exported_and_cost_nothing_until_created() -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import agentrecall, agentrecall.embeddings, agentrecall.testing\n"
        "from agentrecall import CallableEmbedder, Embedder, LocalEmbedder\n"
        "from agentrecall import OpenAICompatibleEmbedder\n"
        "from agentrecall.embeddings import embed_checked, embedder_from\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'agentrecall'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
    for name in ("CallableEmbedder", "Embedder", "LocalEmbedder", "OpenAICompatibleEmbedder"):
        assert name in agentrecall.__all__
        assert getattr(agentrecall, name) is getattr(agentrecall.embeddings, name)


def test_a_command_line_search_loads_only_what_it_uses(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from agentrecall.cli.main import main\n"
        f"main(['--db', {str(tmp_path / 'm.db')!r}, 'add', 'a fact'])\n"
        f"main(['--db', {str(tmp_path / 'm.db')!r}, 'search', 'fact'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentrecall.')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    loaded = result.stdout.splitlines()[-1]
    for unused in (
        "agentrecall.memory.manager",
        "agentrecall.conversation.buffer",
        "agentrecall.extraction",
        "agentrecall.transfer",
        "agentrecall.mcp",
    ):
        assert f"'{unused}'" not in loaded, unused
