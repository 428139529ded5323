"""The public surface: what ``import agentrecall`` gives, and what it costs."""

from __future__ import annotations

import subprocess
import sys

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
