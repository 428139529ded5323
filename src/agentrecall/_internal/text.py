"""Telling text that UTF-8 can encode from text that it cannot (lone surrogates)."""

from __future__ import annotations

import re

from agentrecall.errors import InvalidArgumentError

# A Python string may hold UTF-16 surrogates (U+D800 to U+DFFF) as characters of their own:
# ``json.loads`` turns a ``"\ud800"`` escape into one, and undecodable command-line bytes
# become ``\udc80`` to ``\udcff``. UTF-8 cannot encode them, so no file or database holds them.
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate; ASCII text is answered without scanning it."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def surrogate_problem(text: str, where: str) -> str | None:
    """Return why ``text`` cannot be stored (it holds a lone surrogate), or ``None`` if it can.

    ``where`` names the text in the message.
    """
    found = None if text.isascii() else _SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"{where} holds a lone surrogate {found.group()!r} at index {found.start()}, which is "
        "not valid Unicode text and cannot be stored"
    )


def check_text(text: str, where: str) -> None:
    """Raise ``InvalidArgumentError`` naming ``where`` if ``text`` holds a lone surrogate."""
    problem = surrogate_problem(text, where)
    if problem is not None:
        raise InvalidArgumentError(problem)


def escape_surrogates(json_text: str) -> str:
    r"""Return JSON text with each lone surrogate written as its escape, e.g. ``\ud800``.

    The escape is the one ``json.dumps(..., ensure_ascii=True)`` and JavaScript's
    ``JSON.stringify`` write, and reads back as the same character. Only for JSON text, such
    as ``json.dumps`` output, where everything outside strings is ASCII, so every surrogate is
    inside a string.
    """
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", json_text)


def plural(count: int, word: str, many: str | None = None) -> str:
    """Return ``"1 memory"``, ``"2 memories"``: ``count`` and ``word``, made plural when needed."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {many or word + 's'}"
