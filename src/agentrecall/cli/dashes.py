"""The hint for a text that starts with ``-``: argparse takes it for an unknown option.

``agentrecall search -dark`` fails, as ``-dark`` reads as an option, and argparse's message
("the following arguments are required: query", or "unrecognized arguments: -dark") does not
say why. When a command taking text fails to parse and one of its arguments starts with ``-``
without being one of its options, :func:`hint` says to give it after ``--``, which ends the
options, and shows the command line that does.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Sequence

_NUMBER = re.compile(r"-\d+(\.\d*)?")
"""A negative number, which argparse takes as a value, not an option."""


def hint(top: argparse.ArgumentParser, arguments: Sequence[str]) -> str | None:
    """Return the hint for ``arguments`` that did not parse, or ``None`` when none applies.

    There is one when ``arguments`` name a command that takes positional arguments and, before
    any ``--``, hold a word that starts with ``-`` and is not an option of the command line
    (nor ``-``, which means standard input, nor a negative number).
    """
    command = _command(top, arguments)
    if command is None:
        return None
    verb, parser = command
    if all(action.option_strings for action in parser._actions):
        return None  # nothing but options: a word after '--' would be refused too
    known = set(top._option_string_actions) | set(parser._option_string_actions)
    end = arguments.index("--") if "--" in arguments else len(arguments)
    dashed = [word for word in arguments[:end] if _looks_like_text(word, known)]
    if not dashed:
        return None
    before = list(arguments[:end])
    before.remove(verb)
    rest = [word for word in before if word not in dashed]
    fixed = shlex.join(["agentrecall", verb, *rest, "--", *dashed, *arguments[end + 1 :]])
    words = " and ".join(f"'{word}'" for word in dashed)
    return f"to give {words} as text, not as an option, put it after '--': {fixed}"


def _command(
    top: argparse.ArgumentParser, arguments: Sequence[str]
) -> tuple[str, argparse.ArgumentParser] | None:
    """Return the command ``arguments`` name and its parser, or ``None``."""
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word in arguments:
                if word in action.choices:
                    return word, action.choices[word]
    return None


def _looks_like_text(word: str, known: set[str]) -> bool:
    """Whether ``word`` starts with ``-`` and is no option: text argparse took for one."""
    if not word.startswith("-") or word == "-" or _NUMBER.fullmatch(word):
        return False
    name = word.split("=", 1)[0] if word.startswith("--") else word
    return name not in known
