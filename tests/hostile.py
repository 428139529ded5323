"""Hostile strings for the injection tests: keys, values and texts that would break naive SQL."""

from __future__ import annotations

HOSTILE_KEYS = [
    "a.b",
    "a[0]",
    'q"uote',
    "'; DROP TABLE m; --",
    "back\\slash",
    "x$.a",
    "x$",
    "new\nline",
    "tab\t",
    "café",
    "日本",
    "😀",
    " ",
    "*",
    "%",
    "?",
]

HOSTILE_TEXTS = [
    "'; DROP TABLE memories; --",
    "Robert'); DELETE FROM memories WHERE ('1' = '1",
    '" OR 1=1 --',
    "%s %(name)s {} $1 ?",
    "back\\slash \\' quote",
    "a' || pg_sleep(5) || '",
    "*/ SELECT 1; /*",
    "NEAR(x y) AND OR NOT content : ^",
    "$$ ; $tag$ ;",
]
"""Contents, filter values and scope ids that are SQL, full-text query syntax or placeholders."""
