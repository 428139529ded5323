"""The ``agentrecall`` command: a thin shell over the library."""

from agentrecall.cli.main import main

__all__ = ["main"]
