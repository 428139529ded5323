"""``agentrecall mcp``: serve a store's memory tools to MCP clients, over stdio or HTTP.

The server is :func:`agentrecall.mcp.memory_server` over a
:class:`~agentrecall.MemoryManager` of the one store the options name (as every command opens
it, :mod:`agentrecall.cli.opening`), optionally narrowed to one user, agent or session by
the scope options every store command takes. The ``mcp`` SDK is imported only when the
command runs, so the rest of the command line never loads it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from agentrecall.cli import opening, report, values
from agentrecall.stores.base import MemoryStore

if TYPE_CHECKING:
    from agentrecall._internal.stopping import Stop
    from agentrecall.mcp import SessionLimits
    from agentrecall.memory.manager import MemoryManager

TOKEN_ENV = "AGENTRECALL_MCP_TOKEN"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_ONLY = ("host", "port", "token", "allow_remote", "session_idle_timeout", "max_sessions")
DEFAULT_IDLE = "30m"
DEFAULT_MAX_SESSIONS = 1000
HEADER = "Authorization: Bearer <token>"
# The minimum length of a token, as agentrecall.mcp.auth checks it (not imported: the SDK
# is loaded only when the server runs).
MIN_TOKEN_LENGTH = 16

EPILOG = f"""\
Without --http the server speaks MCP on stdin and stdout, the way desktop and IDE clients
start a server. Their configuration takes a block like this one (the env is optional;
AGENTRECALL_HOME defaults to ~/.agentrecall):

  {{
    "mcpServers": {{
      "memory": {{
        "command": "agentrecall",
        "args": ["mcp", "--user-id", "alice"],
        "env": {{"AGENTRECALL_HOME": "/home/alice/.agentrecall"}}
      }}
    }}
  }}

The tools are search_memory and, unless --read-only, add_memory; forget_memory only with
--allow-forget, and so update_memory (SQLite and PostgreSQL stores), which corrects a memory
by id: the corrected text becomes a new memory and the old one is retired, kept in its
history. A tool that fails answers with an error the model can read; the server goes on.
add_memory says which entries were new and which were already stored (with ids), and takes
optional metadata (a JSON object) and ttl (seconds; SQLite and PostgreSQL stores).
search_memory takes as_of (an ISO 8601 date or time; SQLite and PostgreSQL stores) to recall
what memory held at that moment. Over stdio a line that is not a readable JSON-RPC message
(not JSON, or text with a lone surrogate such as half an emoji) is answered with a JSON-RPC
error at once.

With --http the server listens at http://{DEFAULT_HOST}:{DEFAULT_PORT}/mcp (--port 0 takes a free
port; the URL is printed on stderr), and every request needs the header "Authorization:
Bearer TOKEN" (the scheme in any case) or is refused with 401 and a JSON-RPC error before
anything runs. The token is --token, else ${TOKEN_ENV} (better: a command line is
visible to other users), else a new one printed once on stderr when the server listens; a
token has at least {MIN_TOKEN_LENGTH} visible ASCII characters. It guards every memory, reads
included, because any program on this machine can reach a loopback port. Over stdio no token
is needed: only the client that started the server can talk to it. Another address needs
--host ADDRESS --allow-remote, and the token still; the server speaks plain HTTP, so reach it
from other machines through TLS (a reverse proxy) or a tunnel.

A session with no request in flight for --session-idle-timeout ({DEFAULT_IDLE} by default)
ends (its client opens a new one), and at most --max-sessions ({DEFAULT_MAX_SESSIONS}) are
open: one more ends the session idle the longest.

Stop the server by closing its stdin (stdio) or with Ctrl-C or SIGTERM (HTTP), at any moment:
it prints one line, stops accepting connections, answers the requests in flight and exits
with status 0.

example:
  agentrecall mcp --user-id alice
  agentrecall mcp --http --port 0 --read-only"""


def add_parser(commands: Any, common: argparse.ArgumentParser, *, default: str) -> None:
    """Add the ``mcp`` command to ``commands``; ``default`` is the store's name without options."""
    parser = commands.add_parser(
        "mcp",
        parents=[common],
        help="serve the memory tools to MCP clients (stdio, or HTTP with --http)",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    parser.add_argument("--host", help=f"the address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=_port, help=f"the port (default {DEFAULT_PORT}; 0: any)")
    parser.add_argument("--token", help=f"the bearer token (default ${TOKEN_ENV}, or a new one)")
    parser.add_argument(
        "--allow-remote", action="store_true", help="allow a --host other than loopback"
    )
    parser.add_argument(
        "--session-idle-timeout",
        type=values.duration,
        metavar="TIME",
        help=f"end a session idle this long: seconds, or 90m, 12h (default {DEFAULT_IDLE})",
    )
    parser.add_argument(
        "--max-sessions",
        type=_count,
        metavar="N",
        help=f"the most sessions open at once (default {DEFAULT_MAX_SESSIONS})",
    )
    writes = parser.add_mutually_exclusive_group()
    writes.add_argument("--read-only", action="store_true", help="open the store read-only")
    writes.add_argument(
        "--allow-forget",
        action="store_true",
        help="offer forget_memory too, and update_memory (SQLite and PostgreSQL stores)",
    )
    parser.set_defaults(serve=lambda args: _serve(args, parser, default))


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser, default: str) -> int:
    _check(args, parser)
    stop = None
    if args.http:
        from agentrecall._internal.stopping import Stop  # no SDK import: it guards the imports too

        stop = Stop(_stopping)
        stop.install()  # from here on, a signal stops the server gracefully, even now
    from agentrecall.memory.manager import MemoryManager  # only the server needs it loaded
    from agentrecall.memory.tools import remembers

    try:
        from agentrecall.mcp import is_loopback  # the SDK, an optional extra
    except ImportError as error:
        return report.fail(str(error), report.FAILED, as_json=getattr(args, "json", False))
    host = args.host or DEFAULT_HOST
    if not is_loopback(host) and not args.allow_remote:
        parser.error(
            f"argument --host: {host} is not a loopback address; add --allow-remote to serve "
            "other machines (they need the token too)"
        )
    token = _token(args, parser) if args.http else None
    args.creates = not args.read_only  # a server that may add creates its store's file
    store = opening.scoped(
        opening.open_store(args, default=default, writable=not args.read_only), args
    )
    manager = MemoryManager(
        [store],
        add_tool=store.writable,
        forget_tool=args.allow_forget,
        # Correcting a memory retires it: as much in the client's hands as forgetting one.
        update_tool=args.allow_forget and remembers(store),
        injection=False,
        report_failed_searches=True,  # a client must tell a failed search from no results
    )
    asyncio.run(_run(manager, store, args, token, stop))
    return report.OK


async def _run(
    manager: MemoryManager,
    store: MemoryStore,
    args: argparse.Namespace,
    token: tuple[str, bool] | None,
    stop: Stop | None,
) -> None:
    from agentrecall.mcp import memory_server, serve_http, serve_stdio

    server = memory_server(manager)
    try:
        if stop is not None:
            stop.attach()
        await manager.initialize()  # a store that cannot be opened fails before any client
        _log_to_stderr()
        if token is None:
            await serve_stdio(server)
        elif stop is None or not stop.requested:
            secret, generated = token
            host, port = args.host or DEFAULT_HOST, DEFAULT_PORT if args.port is None else args.port

            def announce(url: str) -> None:
                if generated:  # printed only now: a server that failed to start has no token
                    report.note(
                        f"MCP bearer token (send 'Authorization: Bearer <token>'): {secret}"
                    )
                report.note(f"serving MCP over streamable HTTP at {url}")

            await serve_http(
                server,
                host=host,
                port=port,
                token=secret,
                announce=announce,
                stop=stop,
                sessions=_limits(args),
            )
    finally:
        aclose = getattr(store, "aclose", None)
        if aclose is not None:
            await aclose()


def _token(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[str, bool]:
    """Return the token from ``--token``, else the environment, else a new one; and whether new.

    A ``--token`` that is no good is a usage mistake (status 2) naming the option.
    """
    from agentrecall.errors import InvalidArgumentError
    from agentrecall.mcp import check_token, new_token

    if args.token is not None:
        try:
            return check_token(args.token, "argument --token"), False
        except InvalidArgumentError as error:
            parser.error(str(error))
    configured = os.environ.get(TOKEN_ENV, "").strip()
    if configured:
        return check_token(configured, f"${TOKEN_ENV}"), False
    return new_token(), True


def _limits(args: argparse.Namespace) -> SessionLimits:
    from agentrecall.mcp import SessionLimits

    idle = args.session_idle_timeout or values.duration(DEFAULT_IDLE)
    most = DEFAULT_MAX_SESSIONS if args.max_sessions is None else args.max_sessions
    return SessionLimits(idle_timeout=idle.total_seconds(), max_sessions=most)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1, got {text!r}")
    return value


def _stopping(name: str) -> None:
    report.note(f"{name}: stopping once the requests in flight are answered")


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if not args.http:
        for option in HTTP_ONLY:
            if getattr(args, option) not in (None, False):
                parser.error(f"argument --{option.replace('_', '-')}: only with --http")


class _OneLine(logging.Formatter):
    """A log record as one ``agentrecall: warning: ...`` line, its exception's message included."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f": {record.exc_info[1]}"
        return f"agentrecall: {record.levelname.lower()}: {report.one_line(text)}"


def _log_to_stderr() -> None:
    """Log agentrecall's warnings as one line each on stderr (the client's log).

    With ``AGENTRECALL_DEBUG=1`` a record keeps its traceback.

    A server runs for hours: what failed for a tool call goes to the log, one line per failure,
    while the model reads the error in the tool's result.
    """
    logger = logging.getLogger("agentrecall")
    if logger.handlers:
        return  # configured by whoever runs the command in-process
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    if os.environ.get(report.DEBUG_ENV, "").strip() in ("", "0"):
        handler.setFormatter(_OneLine())
    logger.addHandler(handler)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return value
