"""Where agentrecall keeps its files by default."""

from __future__ import annotations

import os
import re
from pathlib import Path

HOME_ENV = "AGENTRECALL_HOME"

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def agentrecall_home() -> Path:
    """Return ``$AGENTRECALL_HOME`` if set and not blank, else ``~/.agentrecall``."""
    configured = os.environ.get(HOME_ENV, "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".agentrecall"


def sanitize_name(name: str) -> str:
    """Turn a store name into a safe file stem, exactly as the Strands file store does.

    ``..`` becomes ``_`` first (so ``..`` can never climb a directory), then every slash or
    backslash becomes ``_``, then each remaining code point outside ``[A-Za-z0-9_.-]`` becomes
    one ``_``. Distinct names can map to one stem (``a/b`` and ``a_b``).
    """
    return _UNSAFE.sub("_", name.replace("..", "_").replace("/", "_").replace("\\", "_"))
