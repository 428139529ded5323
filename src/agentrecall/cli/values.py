"""The values command-line options take: counts, JSON objects, times, lifetimes, content.

Each parser raises :class:`argparse.ArgumentTypeError`, which the command line reports as a
usage mistake (exit status 2) naming the option and what it expected; content read from a
file or stdin fails as an error on that file (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from typing import Any

from agentrecall.cli import report
from agentrecall.retrieval.filters import check_filter
from agentrecall.types import JsonObject

MAX_COUNT = 2**63 - 1
"""The largest count or offset: SQLite's largest integer."""

STDIN = "-"
"""The content argument that means "read standard input"."""

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def utf8(value: str) -> str:
    """Any text whose bytes were UTF-8 (a file path is not text: it may hold any bytes).

    Python reads an argument's bytes that are not UTF-8 as lone surrogates, which no store
    can keep; they are refused here, naming the argument, rather than deep in a store.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise argparse.ArgumentTypeError(
            f"not UTF-8 text (a byte that is not UTF-8 at character {error.start})"
        ) from error
    return value


def memory_id(value: str) -> str:
    r"""A memory's id: UTF-8 text, or the bytes of a lone surrogate that a JSON file's id holds.

    A JSON file another program wrote may hold an id such as ``"a\ud800b"``, which the
    command line shows as ``a\ud800b``; bash's ``$'a\ud800b'`` passes it as the bytes
    ``61 ed a0 80 62``, which Python's ``surrogatepass`` reads back as that very id. Bytes
    that are no character at all (a lone ``\xff``) are refused, as :func:`utf8` refuses them.
    """
    if value.isascii():
        return value
    try:
        data = os.fsencode(value)
    except UnicodeEncodeError:
        return value  # already the characters themselves: main() was called from Python
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return utf8(value)  # refuses it, naming the character, as any other argument


def scope_id(value: str) -> str:
    """A non-empty id of a user, agent or session, in UTF-8."""
    if not value:
        raise argparse.ArgumentTypeError("expected an id, got an empty string")
    return utf8(value)


def count(text: str) -> int:
    """A whole number from 1 to :data:`MAX_COUNT`."""
    return _whole(text, 1)


def offset(text: str) -> int:
    """A whole number from 0 to :data:`MAX_COUNT`."""
    return _whole(text, 0)


def _whole(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if not low <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {low} to {MAX_COUNT}, got {text!r}"
        )
    return value


def score(text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a number such as 0.5, got {text!r}")
    return value


def json_object(text: str) -> JsonObject:
    """A JSON object, such as ``{"topic": "travel"}``."""
    utf8(text)
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except RecursionError as error:
        raise argparse.ArgumentTypeError("the JSON is nested too deeply") from error
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f'expected a JSON object such as \'{{"topic": "travel"}}\', got {text!r} ({error})'
        ) from error
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"expected a JSON object (in braces), got {type(value).__name__} {text!r}"
        )
    return value


def metadata_filter(text: str) -> JsonObject:
    """A JSON object that is a valid metadata filter, such as ``{"n": {"$gte": 2}}``."""
    value = json_object(text)
    try:
        check_filter(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return value


def moment(text: str) -> datetime | str:
    """An ISO 8601 date (midnight UTC) or time; a time without an offset is local time."""
    stripped = text.strip()
    try:
        date.fromisoformat(stripped)
    except ValueError:
        pass
    else:
        return stripped
    try:
        # Python 3.10 reads no "Z"; it means the same as "+00:00".
        value = datetime.fromisoformat(re.sub(r"[zZ]$", "+00:00", stripped))
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 date or time such as 2025-01-31 or 2025-01-31T09:30:00Z, "
            f"got {text!r}"
        ) from error
    return value if value.tzinfo is not None else value.astimezone()


def duration(text: str) -> timedelta:
    """A positive lifetime: seconds, or a number with ``s``, ``m``, ``h``, ``d`` or ``w``."""
    match = _DURATION.fullmatch(text.strip())
    value = float(match.group(1)) * _UNITS[match.group(2) or "s"] if match else 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive lifetime such as 3600, 90m, 12h, 30d or 2w, got {text!r}"
        )
    try:
        return timedelta(seconds=value)
    except OverflowError as error:
        raise argparse.ArgumentTypeError(f"the lifetime {text!r} is too long") from error


def meta_pair(text: str) -> tuple[str, Any]:
    """One ``--meta KEY=VALUE``: the key, and the value as JSON if it is JSON, else as typed.

    A value JSON reads as a number no float can hold (``1e999``, which would be infinity) or
    as ``NaN``/``Infinity`` is not JSON here: it is kept as the text typed, as any other text
    that is not JSON.
    """
    utf8(text)
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE such as topic=travel, got {text!r}")
    try:
        return key, json.loads(value, parse_constant=_not_json, parse_float=_finite)
    except RecursionError as error:
        raise argparse.ArgumentTypeError(f"{key}: the JSON value is nested too deeply") from error
    except ValueError:
        return key, value


def pairs(items: Sequence[tuple[str, Any]], base: JsonObject | None) -> JsonObject | None:
    """``base`` with the :func:`meta_pair` ``items`` set on a copy (a later key wins)."""
    if not items:
        return base
    metadata: JsonObject = dict(base or {})
    metadata.update(items)
    return metadata


def not_blank(what: str) -> Callable[[str], str]:
    """The type of an option naming something (a store, a file): any text but a blank one.

    ``what`` is what the option expects, for the message, such as ``"a store name"``.
    """

    def parse(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(
                f"expected {what}, got {'an empty' if not value else 'a blank'} string"
            )
        return value

    return parse


def text_argument(what: str) -> Callable[[str], str]:
    """The type of a positional text: UTF-8 and not blank (``-`` reads standard input).

    ``what`` names the text in the message, such as ``"memory's text"``.
    """
    blank = not_blank(f"the {what}")
    return lambda value: utf8(blank(value))


def content(text: str | None, file: str | None, what: str = "content") -> str | None:
    """The content given as ``text`` (``-``: standard input) or in ``file``, or ``None``.

    Content read from a file or stdin is UTF-8 and loses one final line break, the one a text
    file ends with; an argument is kept exactly.

    Raises:
        UsageMistake: both were given.
        ValueError: the input is not UTF-8, or blank.
        OSError: the file cannot be read (the message names it and ``--file``).
    """
    if text is not None and file is not None:
        raise report.UsageMistake(f"give the {what} as an argument or with --file, not both")
    if file is not None:
        try:
            with open(file, "rb") as source:
                data = source.read()
        except OSError as error:
            raise OSError(error.errno, f"--file '{file}': {error.strerror}") from error
        return _decoded(data, f"--file '{file}'")
    if text == STDIN:
        report.reading_stdin()
        return _decoded(sys.stdin.buffer.read(), "standard input")
    return text


def _decoded(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{where} is not UTF-8 text (byte {error.start})") from error
    if not text.strip():
        raise ValueError(f"{where} is empty" if not text else f"{where} holds only blanks")
    for ending in ("\r\n", "\n"):
        if text.endswith(ending):
            return text[: -len(ending)]
    return text


def _not_json(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too large for a number (it would be infinity)")
    return value
