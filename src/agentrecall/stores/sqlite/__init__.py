"""``SQLiteStore``: the embedded production store (see :mod:`agentrecall.stores.sqlite.store`)."""

from agentrecall.stores.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
