"""Identifiers for new memories."""

from __future__ import annotations

import uuid


def new_id() -> str:
    """Return a fresh lowercase, hyphenated UUID v4 string."""
    return str(uuid.uuid4())
