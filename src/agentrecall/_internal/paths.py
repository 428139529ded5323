"""Where agentrecall keeps its files by default."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

HOME_ENV = "AGENTRECALL_HOME"

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")

_DIGEST_CHARS = 16
"""Hex digits of the name's SHA-256 in an unsafe name's file stem: 64 bits."""


def agentrecall_home() -> Path:
    """Return ``$AGENTRECALL_HOME`` if set and not blank, else ``~/.agentrecall``."""
    configured = os.environ.get(HOME_ENV, "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".agentrecall"


def default_store_path(name: str, suffix: str) -> Path:
    """Return the default file of the store ``name``: ``$AGENTRECALL_HOME/memory/<stem><suffix>``.

    Every store that keeps a file by name gets its path here, so one name means one file
    (the stem is :func:`store_file_stem`).
    """
    return agentrecall_home() / "memory" / f"{store_file_stem(name)}{suffix}"


def store_file_stem(name: str) -> str:
    """Return a file stem that only ``name`` maps to.

    A name that is already safe (``sanitize_name(name) == name``) is its own stem, the file
    name the Strands file store gives it, so both share one default file. Any other name gets
    its sanitized form, ``+`` and the first 16 hex digits of the SHA-256 of the exact name
    (``日本`` is ``__+`` and a digest). ``+`` never occurs in a safe name, so an unsafe name
    cannot take a safe name's file, and two unsafe names share one only if 64 bits of their
    digests agree.
    """
    stem = sanitize_name(name)
    if stem == name:
        return stem
    # surrogatepass: a name decoded from undecodable bytes (a command line) still hashes.
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{stem}+{digest[:_DIGEST_CHARS]}"


def sanitize_name(name: str) -> str:
    """Turn a store name into a safe file stem, exactly as the Strands file store does.

    ``..`` becomes ``_`` first (so ``..`` can never climb a directory), then every slash or
    backslash becomes ``_``, then each remaining code point outside ``[A-Za-z0-9_.-]`` becomes
    one ``_``. Distinct names can map to one stem (``a/b`` and ``a_b``), which is why default
    files are named by :func:`store_file_stem` instead.
    """
    return _UNSAFE.sub("_", name.replace("..", "_").replace("/", "_").replace("\\", "_"))
