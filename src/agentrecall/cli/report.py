"""How the command line ends: its output, its notes and errors, and its exit status.

Every failure becomes one line on stderr, ``agentrecall: error: ...``, or with ``--json`` one
JSON object ``{"error": "...", "code": N}``; never a traceback, unless ``AGENTRECALL_DEBUG=1``
asks for one with an unexpected error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

from agentrecall.errors import AgentRecallError

OK = 0
"""The command did what it was asked."""
FAILED = 1
"""The command failed: no such store or memory, a file that cannot be used, a full disk."""
USAGE = 2
"""The command line is wrong: an unknown command or option, a missing or bad value."""
INTERRUPTED = 130
"""Interrupted (Ctrl-C): 128 plus SIGINT, as a shell reports it."""
BROKEN_PIPE = 141
"""Standard output was closed early (``| head``): 128 plus SIGPIPE, as a shell reports it."""

EXIT_CODES = f"""\
exit status:
  {OK}    done
  {FAILED}    failed: no store or memory there (delete: an id not found, the others
       are deleted), a file that cannot be used, an option the store cannot serve
  {USAGE}    usage: an unknown command or option, a missing or bad value, options that do
       not go together (clear without --yes when standard input is not a terminal)
  {INTERRUPTED}  interrupted (Ctrl-C)
  {BROKEN_PIPE}  standard output was closed before everything was written (| head)

With --json, an error is one JSON object on stderr: {{"error": "...", "code": STATUS}}.
Set AGENTRECALL_DEBUG=1 to see the traceback of an unexpected error."""
"""The exit statuses as ``--help`` shows them."""

DEBUG_ENV = "AGENTRECALL_DEBUG"

_REPORTED = (AgentRecallError, ImportError, OSError, OverflowError, ValueError)
"""Failures whose message is meant for the user as it is (an ``ImportError`` names the extra to
install)."""


class UsageError(Exception):
    """The command line cannot be parsed; ``usage`` is the usage text of the parser that said so."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class UsageMistake(Exception):
    """A usage mistake seen once the command line is parsed; exit status 2, as a parse error.

    A pair of options that do not go together, or a value no parser could check (a path the
    store refuses); the message names the option.
    """


class OutputError(Exception):
    """Standard output refused a write (a full disk, a closed terminal), other than EPIPE."""


class Parser(argparse.ArgumentParser):
    """An argument parser that raises :class:`UsageError` instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        """Raise :class:`UsageError`, for :func:`run` to report."""
        raise UsageError(message, self.format_usage())


def run(body: Callable[[], int], *, as_json: bool) -> int:
    """Run ``body`` and return its exit status, or the status of the failure it raised.

    Whatever ``body`` printed is flushed before returning, so a write that fails is reported
    here rather than at interpreter exit.
    """
    try:
        try:
            code = body()
        except SystemExit as done:  # --help and --version end the parse with a status
            code = done.code if isinstance(done.code, int) else OK
        _flush_stdout()
        return code
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt as interrupt:
        detail = f": {interrupt}" if str(interrupt) else ""
        return fail(f"interrupted{detail}", INTERRUPTED, as_json=as_json)
    except (UsageError, UsageMistake) as error:
        if isinstance(error, UsageError) and not as_json:
            _write_stderr(error.usage)
        return fail(str(error), USAGE, as_json=as_json)
    except OutputError as error:
        _silence_stdout()
        return fail(str(error), FAILED, as_json=as_json)
    except _REPORTED as error:
        return fail(describe(error), FAILED, as_json=as_json)
    except Exception as error:
        if os.environ.get(DEBUG_ENV, "").strip() not in ("", "0"):
            traceback.print_exc()
        message = (
            f"unexpected {type(error).__name__}: {error} (this is a bug, please report it; "
            f"set {DEBUG_ENV}=1 to see the traceback)"
        )
        return fail(message, FAILED, as_json=as_json)


def fail(message: str, code: int, *, as_json: bool) -> int:
    """Write ``message`` as the one error line (or JSON object) on stderr; return ``code``."""
    if as_json:
        _write_stderr(json.dumps({"error": message, "code": code}, ensure_ascii=False) + "\n")
    else:
        _write_stderr(f"agentrecall: error: {one_line(message)}\n")
    return code


def note(message: str) -> None:
    """Write one ``agentrecall: note: ...`` line on stderr."""
    _write_stderr(f"agentrecall: note: {one_line(message)}\n")


def reading_stdin() -> None:
    """Say how to end the input when standard input is a terminal; nothing for a pipe or file.

    On a terminal, reading waits for the person at it, who may have meant to pipe a file in:
    without a word the command would seem to hang.
    """
    if sys.stdin is not None and sys.stdin.isatty():
        note("reading standard input; end it with Ctrl-D on a line of its own")


def emit(text: str) -> None:
    """Write ``text`` and a newline on stdout, all of it, or raise (see :func:`write`)."""
    write(text + "\n")


def write(text: str) -> None:
    """Write ``text`` on stdout, all of it, or raise.

    On POSIX the bytes go to stdout's descriptor through :class:`WholeWriter`. Python's own
    stdout, unbuffered (``PYTHONUNBUFFERED=1``, as many containers set it), ignores a short
    write: when a disk fills up or the reader leaves part-way through a long output, the rest
    was dropped without an error and the command ended "done" with its output cut short.

    Raises:
        BrokenPipeError: the reader went away (handled by :func:`run`).
        OutputError: stdout refused the write for another reason.
    """
    try:
        out = standard_output()
        if out is None:
            sys.stdout.write(text)
        else:
            out.write(text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"))
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OutputError(f"cannot write to standard output: {describe(error)}") from error
    _flush_stdout()


class WholeWriter:
    """Writes to a file descriptor, each ``write`` writing every byte it is given or raising.

    ``os.write`` may write part of the bytes (a pipe whose reader leaves, a disk that fills
    up); the rest is written again until done, so that the error, if any, is raised rather
    than lost the way an unbuffered file object loses it after a short write.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> int:
        """Write all of ``data``; return its length.

        Raises:
            OSError: the descriptor refused the rest (``BrokenPipeError`` when the reader left).
        """
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        return len(data)

    def flush(self) -> None:
        """Nothing to do: no byte is held back."""


class _StandardOutput(WholeWriter):
    """A :class:`WholeWriter` on stdout, whose failures say that stdout failed."""

    def write(self, data: bytes) -> int:
        """Write all of ``data``; return its length.

        Raises:
            BrokenPipeError: the reader went away (handled by :func:`run`).
            OutputError: stdout refused the write for another reason.
        """
        try:
            return super().write(data)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputError(f"cannot write to standard output: {describe(error)}") from error


def standard_output() -> WholeWriter | None:
    """A :class:`WholeWriter` on stdout's descriptor (flushed first), or ``None``.

    ``None`` without a descriptor (a test's capture) or off POSIX, where the text stream
    translates line breaks: write to ``sys.stdout`` then.

    Raises:
        BrokenPipeError: the reader went away while what was written before was flushed.
        OutputError: the flush failed for another reason.
    """
    fd = _descriptor(sys.stdout) if os.name == "posix" else None
    if fd is None:
        return None
    _flush_stdout()
    return _StandardOutput(fd)


def _descriptor(stream: object) -> int | None:
    try:
        fd: int = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return None
    return fd


def describe(error: BaseException) -> str:
    """Return the message of ``error``; an ``OSError`` says what failed and on which file."""
    if isinstance(error, OSError) and error.strerror:
        names = [name for name in (error.filename, error.filename2) if name is not None]
        where = " -> ".join(f"'{os.fsdecode(name)}'" for name in names)
        return f"{where}: {error.strerror}" if where else error.strerror
    return str(error) or type(error).__name__


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OutputError(f"cannot write to standard output: {describe(error)}") from error


def _silence_stdout() -> None:
    """Point stdout at the null device, so the flush at interpreter exit cannot fail again."""
    fd = _descriptor(sys.stdout)
    if fd is None:
        return  # not a file descriptor (a test's capture): nothing flushes it at exit
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def _write_stderr(text: str) -> None:
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # nowhere left to say it


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What a terminal would act on rather than show: control characters other than tab and line
feed (escape sequences can recolour, retitle or rewrite the screen) and the bidirectional
overrides that make text read in another order than it is stored; and lone surrogates, which
no output encoding can write (a JSON file another program wrote may hold one)."""

_NAMED = {"\r": "\\r"}


def printable(text: str) -> str:
    r"""Return ``text`` with each character a terminal would act on written as an escape.

    ``\r``, ``\x1b``, ``\u202e``: memories are data from models, clients and files, and
    showing one must never run its escape sequences on the reader's terminal. Tabs and line
    breaks stay.
    """
    return _CONTROLS.sub(_escaped, text)


def one_line(text: str) -> str:
    """Return :func:`printable` ``text``, each line break written as a backslash and a letter."""
    return printable(text).replace("\n", "\\n")


def _escaped(found: re.Match[str]) -> str:
    character = found.group()
    if character in _NAMED:
        return _NAMED[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
