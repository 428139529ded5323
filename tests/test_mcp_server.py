"""``agentrecall mcp`` driven by the MCP SDK's own client: over stdio and over HTTP on loopback.

Every server is a real ``python -m agentrecall mcp`` subprocess on a real SQLite file; what
it stored is checked by opening that file with a fresh ``SQLiteStore``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agentrecall import MemoryManager, SQLiteStore
from agentrecall.cli.main import main
from agentrecall.errors import InvalidArgumentError
from agentrecall.mcp import SessionLimits, memory_server, serve_http
from agentrecall.testing import ManualClock

TIMEOUT = 60  # seconds: only a guard against a hang, generous for a loaded machine
TOKEN = "test-token-0123456789"
URL = re.compile(r"serving MCP over streamable HTTP at (http://\S+)")


def server_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "agentrecall", "mcp", *arguments]


def stdio_client(*arguments: str, wrapper: str | None = None) -> Client:
    command = server_command(*arguments)
    if wrapper is not None:
        command = [sys.executable, "-c", wrapper, *command[3:]]
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    return Client(parameters, read_timeout_seconds=TIMEOUT)


@asynccontextmanager
async def connected(client: Client) -> AsyncIterator[Client]:
    with anyio.fail_after(TIMEOUT):
        async with client:
            yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    """Call a tool that must succeed; return its result parsed from the JSON text."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    [block] = result.content
    return json.loads(block.text)  # type: ignore[union-attr]


async def tool_error(client: Client, tool: str, arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    [block] = result.content
    text: str = block.text  # type: ignore[union-attr]
    assert text.startswith("Error: ")
    return text


async def contents(client: Client, query: str) -> list[str]:
    return [hit["content"] for hit in await call(client, "search_memory", {"query": query})]


async def stored(db: Path) -> list[str]:
    async with SQLiteStore(db, writable=False) as store:
        return sorted(record.content for record in await store.list())


async def assert_offers_the_managers_tools(client: Client, db: Path, **tools: bool) -> None:
    """The server lists exactly the definitions a manager of the same store gives a model."""
    expected = [tool.as_mcp() for tool in MemoryManager([SQLiteStore(db)], **tools).tools]
    listed = [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
        for t in (await client.list_tools()).tools
    ]
    assert listed == expected


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


# stdio ------------------------------------------------------------------------------------


async def test_add_search_forget_over_stdio(db: Path) -> None:
    async with connected(stdio_client("--db", str(db), "--allow-forget")) as client:
        await assert_offers_the_managers_tools(
            client, db, add_tool=True, forget_tool=True, update_tool=True
        )
        facts = ["The user's dog is named Biscuit.", "The user prefers aisle seats."]
        assert (await call(client, "add_memory", {"entries": facts}))["stored"] == 2
        [hit] = await call(client, "search_memory", {"query": "dog", "max_search_results": 1})
        assert hit["content"] == facts[0]
        assert hit["store_name"] == "memory"
        assert await call(client, "forget_memory", {"ids": [hit["id"]]}) == {"deleted": 1}
        assert await contents(client, "dog") == []
    assert await stored(db) == [facts[1]]


async def test_forget_needs_the_flag(db: Path) -> None:
    async with connected(stdio_client("--db", str(db))) as client:
        await assert_offers_the_managers_tools(client, db, add_tool=True)
        await call(client, "add_memory", {"entries": ["The user lives in Lisbon."]})
        [hit] = await call(client, "search_memory", {"query": "Lisbon"})
        assert "id" not in hit  # ids are for forgetting, which this server does not offer
        async with SQLiteStore(db, writable=False) as store:
            [record_id] = [record.id for record in await store.list()]
        with pytest.raises(MCPError, match="unknown tool 'forget_memory'"):
            await client.call_tool("forget_memory", {"ids": [record_id]})
        with pytest.raises(MCPError, match="unknown tool 'update_memory'"):
            await client.call_tool("update_memory", {"memory_id": record_id, "content": "Porto"})
        assert await contents(client, "Lisbon") == ["The user lives in Lisbon."]


async def test_update_and_as_of_over_stdio(db: Path) -> None:
    async with SQLiteStore(db) as store:
        with ManualClock(datetime(2025, 3, 1, tzinfo=timezone.utc)):
            lyon = (await store.add("The user lives in Lyon.", {"topic": "home"})).id
    async with connected(stdio_client("--db", str(db), "--allow-forget")) as client:
        [hit] = await call(client, "search_memory", {"query": "where does the user live"})
        assert hit["id"] == lyon
        arguments = {"memory_id": lyon, "content": "The user lives in Berlin.", "reason": "moved"}
        [updated] = (await call(client, "update_memory", arguments))["updated"]
        assert updated["replaces"] == lyon and updated["store_name"] == "memory"
        assert await contents(client, "user lives") == ["The user lives in Berlin."]
        # The server corrected it now; on 1 June 2025 the store still held Lyon.
        then = await call(client, "search_memory", {"query": "user lives", "as_of": "2025-06-01"})
        assert [(h["id"], h["content"]) for h in then] == [(lyon, "The user lives in Lyon.")]
        error = await tool_error(client, "search_memory", {"query": "x", "as_of": "June"})
        assert error.startswith("Error: as_of must be a timezone-aware datetime")
        error = await tool_error(client, "update_memory", {"memory_id": "nope", "content": "x"})
        assert error == "Error: MemoryManager: no memory with id 'nope' in memory"
    async with SQLiteStore(db, writable=False) as store:
        old = await store.get(lyon, include_superseded=True)
        new = await store.get(updated["id"])
        [version] = await store.history(lyon)
    assert old is not None and old.superseded_by == updated["id"]
    assert new is not None and new.metadata == {"topic": "home"}
    assert (version.change, version.reason) == ("supersede", "moved")


async def test_a_json_store_offers_no_update_and_no_as_of(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    async with connected(stdio_client("--path", str(path), "--allow-forget")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == ["search_memory", "add_memory", "forget_memory"]
        assert "as_of" not in tools["search_memory"].input_schema["properties"]


async def test_bad_arguments_are_tool_errors_and_the_server_goes_on(db: Path) -> None:
    bad = [
        ("search_memory", {}, "query"),
        ("search_memory", {"query": 5}, "query"),
        ("search_memory", {"query": "x", "max_search_results": "three"}, "max_search_results"),
        ("search_memory", {"query": "x", "stores": ["elsewhere"]}, "elsewhere"),
        ("search_memory", {"query": "x", "max_search_results": 0}, "max_search_results"),
        ("search_memory", {"query": "x", "max_search_results": -3}, "max_search_results"),
        ("search_memory", {"query": "x", "max_search_results": 10**30}, "max_search_results"),
        ("add_memory", {"entries": "not a list"}, "entries"),
        ("add_memory", {"entries": []}, "at least one entry"),
        ("add_memory", {"entries": ["   "]}, "non-blank"),
    ]
    async with connected(stdio_client("--db", str(db))) as client:
        await call(client, "add_memory", {"entries": ["The user plays the violin."]})
        for tool, arguments, named in bad:
            assert named in await tool_error(client, tool, arguments)
            assert await contents(client, "violin") == ["The user plays the violin."]
        with pytest.raises(MCPError, match="unknown tool 'remember'"):
            await client.call_tool("remember", {"entries": ["x"]})
        assert await contents(client, "violin") == ["The user plays the violin."]
    assert await stored(db) == ["The user plays the violin."]


async def test_add_says_what_was_new_and_what_was_there_with_ids(db: Path) -> None:
    async with connected(stdio_client("--db", str(db))) as client:
        first = await call(client, "add_memory", {"entries": ["Ana likes tea.", "Ana has a cat."]})
        assert first["stored"] == 2 and first["already_stored"] == []
        ids = {item["content"]: item["id"] for item in first["new"]}
        assert sorted(ids) == ["Ana has a cat.", "Ana likes tea."]
        entries = ["  Ana likes tea.", "Ana rides a bike.", "Ana rides a bike."]
        second = await call(client, "add_memory", {"entries": entries})
    assert second["stored"] == 3
    [bike] = second["new"]
    assert bike["content"] == "Ana rides a bike." and bike["store_name"] == "memory"
    assert second["already_stored"] == [
        {"content": "  Ana likes tea.", "store_name": "memory", "id": ids["Ana likes tea."]},
        {"content": "Ana rides a bike.", "store_name": "memory", "id": bike["id"]},
    ]
    assert await stored(db) == ["Ana has a cat.", "Ana likes tea.", "Ana rides a bike."]


async def test_add_stores_metadata_and_a_ttl(db: Path) -> None:
    arguments = {"entries": ["Ana flies on Friday."], "metadata": {"topic": "travel"}, "ttl": 3600}
    async with connected(stdio_client("--db", str(db))) as client:
        [added] = (await call(client, "add_memory", arguments))["new"]
        await call(client, "add_memory", {"entries": ["Ana is from Porto."]})
    async with SQLiteStore(db, writable=False) as store:
        flight = await store.get(added["id"])
        [porto] = [r for r in await store.list() if r.id != added["id"]]
    assert flight is not None and flight.metadata == {"topic": "travel"}
    assert flight.expires_at is not None and flight.expires_at > flight.created_at
    assert (porto.metadata, porto.expires_at) == (None, None)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"metadata": "travel"}, "metadata\n  should be an object"),
        ({"metadata": ["travel"]}, "metadata\n  should be an object"),
        ({"ttl": "an hour"}, "ttl\n  should be a number"),
        ({"ttl": 0}, "ttl: expected a positive number of seconds, got 0"),
        ({"ttl": -60}, "ttl: expected a positive number of seconds, got -60"),
        ({"ttl": True}, "ttl\n  should be a number"),
    ],
)
async def test_add_refuses_bad_metadata_and_ttl_naming_them(
    db: Path, arguments: dict[str, Any], message: str
) -> None:
    async with connected(stdio_client("--db", str(db))) as client:
        error = await tool_error(client, "add_memory", {"entries": ["Ana sings."], **arguments})
        assert message in error
        assert await contents(client, "sings") == []


async def test_add_with_a_ttl_to_a_store_that_cannot_expire_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    async with connected(stdio_client("--path", str(path))) as client:
        arguments = {"entries": ["Ana sings."], "ttl": 60}
        error = await tool_error(client, "add_memory", arguments)
        assert "ttl: the store memory cannot forget memories after a time" in error
        assert (await call(client, "add_memory", {"entries": ["Ana sings."]}))["stored"] == 1


async def test_read_only_server_offers_no_writes(db: Path) -> None:
    async with SQLiteStore(db) as store:
        await store.add("The user is vegetarian.")
    before = db.read_bytes()
    async with connected(stdio_client("--db", str(db), "--read-only")) as client:
        await assert_offers_the_managers_tools(client, db)
        assert [t.name for t in (await client.list_tools()).tools] == ["search_memory"]
        with pytest.raises(MCPError, match="unknown tool 'add_memory'"):
            await client.call_tool("add_memory", {"entries": ["The user eats meat."]})
        assert await contents(client, "vegetarian") == ["The user is vegetarian."]
    assert db.read_bytes() == before


# A server whose files may not grow past LIMIT bytes: a real write failure (EFBIG) on demand.
LIMIT = 4 * 1024 * 1024
FILE_SIZE_LIMIT = f"""\
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, {LIMIT}))
sys.argv[0] = "agentrecall"
runpy.run_module("agentrecall", run_name="__main__")
"""


@pytest.mark.skipif(not hasattr(os, "setrlimit") and sys.platform == "win32", reason="POSIX")
async def test_a_failing_store_is_a_tool_error_and_the_server_goes_on(db: Path) -> None:
    huge = "word " * (LIMIT // 4)  # more than the file may grow by
    async with connected(stdio_client("--db", str(db), wrapper=FILE_SIZE_LIMIT)) as client:
        await call(client, "add_memory", {"entries": ["The user's cat is called Miso."]})
        message = await tool_error(client, "add_memory", {"entries": [huge]})
        assert "failed to add 1 of 1 entries" in message
        assert str(db) in message
        assert await contents(client, "cat") == ["The user's cat is called Miso."]
        await call(client, "add_memory", {"entries": ["The user works nights."]})
    assert await stored(db) == ["The user works nights.", "The user's cat is called Miso."]


def test_a_corrupt_database_stops_the_server_before_it_serves(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db.write_bytes(b"this is not a database, " * 200)
    before = db.read_bytes()
    assert main(["mcp", "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith("agentrecall: error: ") and str(db) in line
    assert db.read_bytes() == before


async def test_scopes_keep_two_users_apart_on_one_database(db: Path) -> None:
    alice = stdio_client("--db", str(db), "--user-id", "alice")
    bob = stdio_client("--db", str(db), "--user-id", "bob")
    async with connected(alice), connected(bob):
        await call(alice, "add_memory", {"entries": ["My dog is named Biscuit."]})
        await call(bob, "add_memory", {"entries": ["My dog is named Rex."]})
        assert await contents(alice, "dog") == ["My dog is named Biscuit."]
        assert await contents(bob, "dog") == ["My dog is named Rex."]
    async with SQLiteStore(db, writable=False) as store:
        alices = await store.scope(user_id="alice").list()
    assert [record.content for record in alices] == ["My dog is named Biscuit."]


def test_scope_flags_need_a_store_with_scopes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "memory.json"
    assert main(["mcp", "--path", str(path), "--user-id", "alice"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "--user-id" in line and "has no scopes" in line
    assert not path.exists()


def test_without_the_sdk_the_command_names_the_extra(db: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None  # as if the mcp package were not installed\n"
        "from agentrecall.cli import main\n"
        f"sys.exit(main(['mcp', '--db', {str(db)!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("agentrecall: error: ")
    assert "pip install 'agentrecall[mcp]'" in line
    assert not db.exists()


def jsonrpc(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps({"jsonrpc": "2.0", **m}) + "\n" for m in messages)


async def test_stdio_server_ends_when_its_client_leaves_mid_call(db: Path) -> None:
    entries = [f"Fact number {i} about the user." for i in range(10_000)]
    handshake = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    add = {"name": "add_memory", "arguments": {"entries": entries}}
    messages = jsonrpc(
        {"id": 1, "method": "initialize", "params": handshake},
        {"method": "notifications/initialized"},
        {"id": 2, "method": "tools/call", "params": add},
    )
    # The client writes its call and goes away at once: stdin closes while the call runs.
    with anyio.fail_after(TIMEOUT):
        result = await anyio.run_process(
            server_command("--db", str(db)), input=messages.encode(), check=False
        )
    assert result.returncode == 0, result.stderr
    assert len(await stored(db)) in (0, len(entries))  # one batch, one transaction: all or nothing


class RawStdio:
    """A stdio server spoken to line by line, as a client that sends anything would."""

    def __init__(self, *arguments: str) -> None:
        self.process = subprocess.Popen(
            server_command(*arguments),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> Any:
        """The next line the server writes, parsed; fails if none comes within TIMEOUT."""
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            assert selector.select(TIMEOUT), "the server did not answer"
        line = self.process.stdout.readline()
        assert line, "the server ended"
        return json.loads(line)

    def close(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(TIMEOUT)
        return code, self.process.stderr.read().decode()


def tool_call(request_id: int, tool: str, arguments_json: str) -> bytes:
    """A tools/call line whose arguments are written as given (JSON text, escapes and all)."""
    return (
        f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
        f'"params": {{"name": "{tool}", "arguments": {arguments_json}}}}}'
    ).encode()


@pytest.fixture
def raw_stdio(db: Path) -> Iterator[RawStdio]:
    server = RawStdio("--db", str(db), "--allow-forget")
    handshake = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    server.send(jsonrpc({"id": 0, "method": "initialize", "params": handshake}).strip().encode())
    assert server.reply()["id"] == 0
    server.send(jsonrpc({"method": "notifications/initialized"}).strip().encode())
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait(TIMEOUT)
        for pipe in (server.process.stdin, server.process.stdout, server.process.stderr):
            assert pipe is not None
            pipe.close()


@pytest.mark.parametrize(
    ("tool", "arguments", "where"),
    [
        # What a JavaScript client sends for an emoji cut in half: a lone high surrogate.
        ("search_memory", r'{"query": "sushi \ud83c"}', "params.arguments.query"),
        ("add_memory", r'{"entries": ["ok", "Ana loves \ud83c"]}', "params.arguments.entries[1]"),
        ("forget_memory", r'{"ids": ["\udc00"]}', "params.arguments.ids[0]"),
        ("update_memory", r'{"memory_id": "a", "content": "\ud83c"}', "params.arguments.content"),
    ],
)
def test_stdio_answers_text_that_is_not_unicode_at_once_and_goes_on(
    raw_stdio: RawStdio, db: Path, tool: str, arguments: str, where: str
) -> None:
    raw_stdio.send(tool_call(7, tool, arguments))
    answer = raw_stdio.reply()
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32602
    assert where in answer["error"]["message"]
    assert "lone surrogate" in answer["error"]["message"]
    raw_stdio.send(tool_call(8, "add_memory", '{"entries": ["Ana loves sushi."]}'))
    answer = raw_stdio.reply()
    assert (answer["id"], answer["result"]["isError"]) == (8, False)
    assert json.loads(answer["result"]["content"][0]["text"])["stored"] == 1
    code, stderr = raw_stdio.close()
    assert code == 0, stderr
    assert anyio.run(stored, db) == ["Ana loves sushi."]


@pytest.mark.parametrize(
    ("line", "code", "answer_id"),
    [
        (b"this is not JSON", -32700, None),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call"', -32700, None),  # cut short
        (b"[]", -32600, None),
        (b'{"id": 6}', -32600, 6),
        # Bytes that are not UTF-8: answered with the request's id too.
        (
            tool_call(9, "search_memory", '{"query": "cafe"}').replace(b"cafe", b"caf\xe9"),
            -32602,
            9,
        ),
    ],
)
def test_stdio_answers_a_line_it_cannot_read_and_goes_on(
    raw_stdio: RawStdio, line: bytes, code: int, answer_id: int | None
) -> None:
    raw_stdio.send(line)
    answer = raw_stdio.reply()
    assert answer["id"] == answer_id
    assert answer["error"]["code"] == code
    raw_stdio.send(tool_call(10, "search_memory", '{"query": "anything"}'))
    assert raw_stdio.reply()["result"]["content"][0]["text"] == "[]"
    assert raw_stdio.close()[0] == 0


# HTTP -------------------------------------------------------------------------------------


@dataclass
class HttpServer:
    process: subprocess.Popen[str]
    db: Path
    url: str
    stderr: str


def read_until(process: subprocess.Popen[str], pattern: re.Pattern[str]) -> tuple[str, str]:
    """Read the server's stderr until a line matches; return the match's group and the text.

    It reads the pipe a byte at a time, straight from its descriptor: a buffered readline could
    take two lines at once and leave the second where the selector cannot see it, and reading
    no further than the matching line leaves the rest to the test.
    """
    assert process.stderr is not None
    descriptor = process.stderr.fileno()
    text = ""
    with selectors.DefaultSelector() as selector:
        selector.register(descriptor, selectors.EVENT_READ)
        line = b""
        while True:
            assert selector.select(TIMEOUT), f"no {pattern.pattern!r} on stderr: {text}"
            byte = os.read(descriptor, 1)
            assert byte, f"the server ended: {text + line.decode()}"
            line += byte
            if byte != b"\n":
                continue
            text += line.decode()
            found = pattern.search(line.decode())
            line = b""
            if found:
                return found.group(1), text


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One server for the HTTP tests, which each use words of their own."""
    db = tmp_path_factory.mktemp("http") / "memory.db"
    yield from start_http(db, "--token", TOKEN, "--allow-forget")


def start_http(db: Path, *flags: str, env: dict[str, str] | None = None) -> Iterator[HttpServer]:
    command = server_command("--http", "--port", "0", "--db", str(db), *flags)
    environment = {k: v for k, v in os.environ.items() if k != "AGENTRECALL_MCP_TOKEN"}
    environment.update(env or {})
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment
    )
    try:
        url, text = read_until(process, URL)
        yield HttpServer(process, db, url, text)
    finally:
        process.terminate()
        process.wait(TIMEOUT)
        assert process.stderr is not None
        process.stderr.close()


def http_client(
    url: str, token: str | None = TOKEN, **options: Any
) -> tuple[httpx2.AsyncClient, Client]:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    http = httpx2.AsyncClient(headers=headers, timeout=TIMEOUT, **options)
    return http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=TIMEOUT)


@asynccontextmanager
async def http_session(
    url: str, token: str | None = TOKEN, **options: Any
) -> AsyncIterator[Client]:
    http, client = http_client(url, token, **options)
    async with http, connected(client):
        yield client


async def test_http_lists_adds_searches_and_forgets(http_server: HttpServer) -> None:
    async with http_session(http_server.url) as client:
        expected_names = ["search_memory", "add_memory", "forget_memory", "update_memory"]
        assert [t.name for t in (await client.list_tools()).tools] == expected_names
        await call(client, "add_memory", {"entries": ["The user is learning Japanese."]})
        [hit] = await call(client, "search_memory", {"query": "Japanese"})
        assert await call(client, "forget_memory", {"ids": [hit["id"]]}) == {"deleted": 1}
        assert await tool_error(client, "search_memory", {"query": None})


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer wrong-token",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN.upper()}",
        f"Bearer  {TOKEN}",
        TOKEN,
        f"Basic {TOKEN}",
    ],
)
async def test_http_refuses_a_wrong_or_missing_token_before_any_tool_runs(
    http_server: HttpServer, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    call_add = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add_memory", "arguments": {"entries": ["Intruder was here."]}},
    }
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        for method, path in (("POST", "/mcp"), ("GET", "/mcp"), ("GET", "/"), ("DELETE", "/mcp")):
            response = await http.request(
                method,
                http_server.url.replace("/mcp", path),
                json=call_add if method == "POST" else None,
                headers={**headers, "Accept": "application/json, text/event-stream"},
            )
            assert response.status_code == 401, (method, path)
            assert response.headers["www-authenticate"] == "Bearer"
            # A JSON-RPC error, which an MCP client can show.
            body = response.json()
            assert body["jsonrpc"] == "2.0" and body["id"] is None
            assert "Authorization: Bearer <token>" in body["error"]["message"]
    assert not [c for c in await stored(http_server.db) if "Intruder" in c]


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
async def test_http_takes_the_scheme_in_any_case(http_server: HttpServer, scheme: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"{scheme} {TOKEN}"}, timeout=TIMEOUT)
    client = Client(streamable_http_client(http_server.url, http_client=http))
    async with http, connected(client):
        assert await contents(client, "nothing like this") == []


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside ``error``, groups opened (the SDK raises from a task group)."""
    inner: tuple[BaseException, ...] = getattr(error, "exceptions", ())  # a group, on 3.10 too
    return [leaf for one in inner for leaf in leaves(one)] if inner else [error]


async def test_http_sdk_client_with_a_wrong_token_reads_why(http_server: HttpServer) -> None:
    with pytest.raises(Exception) as raised:  # noqa: B017  (checked below, inside its group)
        async with http_session(http_server.url, "wrong-token-wrong-token"):
            pass
    [refusal] = [e for e in leaves(raised.value) if isinstance(e, MCPError)]
    assert "unauthorized: send the header 'Authorization: Bearer <token>'" in str(refusal)


@pytest.mark.parametrize("token", [None, "wrong-token"])
async def test_http_sdk_client_without_the_token_gets_nowhere(
    http_server: HttpServer, token: str | None
) -> None:
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    with pytest.raises(Exception):  # noqa: B017  (the SDK reports the 401 in its own way)
        async with http_session(http_server.url, token, event_hooks={"response": [record]}):
            pass
    assert statuses and set(statuses) == {401}
    async with http_session(http_server.url) as client:
        assert await contents(client, "anything") == []  # the server answers those with it


async def test_http_serves_two_clients_at_once(http_server: HttpServer) -> None:
    async def work(client: Client, who: str) -> None:
        for i in range(5):
            await call(client, "add_memory", {"entries": [f"{who} fact {i} zebra"]})
            assert await call(client, "search_memory", {"query": "zebra"})

    async with http_session(http_server.url) as one, http_session(http_server.url) as two:
        async with anyio.create_task_group() as group:
            group.start_soon(work, one, "first")
            group.start_soon(work, two, "second")
    expected = sorted(f"{who} fact {i} zebra" for who in ("first", "second") for i in range(5))
    assert [c for c in await stored(http_server.db) if "zebra" in c] == expected


async def test_http_client_that_leaves_mid_call_does_not_stop_the_server(
    http_server: HttpServer,
) -> None:
    entries = [f"Bulk fact {i} about the user." for i in range(20_000)]
    answering = anyio.Event()

    async def on_response(response: httpx2.Response) -> None:
        # The server answers a call's POST with the headers of its event stream as it starts
        # the tool, before the result: the moment to leave.
        if b"tools/call" in response.request.content:
            answering.set()

    async with http_session(http_server.url) as other:
        await call(other, "add_memory", {"entries": ["The user's name is Kim."]})
        leaving = http_client(http_server.url, event_hooks={"response": [on_response]})
        async with anyio.create_task_group() as group:

            async def leave_mid_call() -> None:
                http, client = leaving
                async with http, connected(client):
                    group.start_soon(client.call_tool, "add_memory", {"entries": entries})
                    with anyio.fail_after(TIMEOUT):
                        await answering.wait()
                    group.cancel_scope.cancel()

            group.start_soon(leave_mid_call)
        assert await contents(other, "Kim") == ["The user's name is Kim."]
        async with http_session(http_server.url) as newcomer:
            assert await contents(newcomer, "Kim") == ["The user's name is Kim."]
    assert http_server.process.poll() is None
    bulk = [c for c in await stored(http_server.db) if c.startswith("Bulk fact")]
    assert len(bulk) in (0, len(entries))  # one batch, one transaction: all or nothing


def test_http_generates_a_token_and_prints_it_once(tmp_path: Path) -> None:
    token_line = re.compile(r"Bearer <token>'\): (\S+)")
    for server in start_http(tmp_path / "gen.db"):
        [token] = token_line.findall(server.stderr)

        async def use(url: str, token: str) -> None:
            async with http_session(url, token) as client:
                await call(client, "add_memory", {"entries": ["The user's bike is red."]})

        anyio.run(use, server.url, token)
        assert server.stderr.count(token) == 1


def test_http_takes_the_token_from_the_environment(tmp_path: Path) -> None:
    for server in start_http(
        tmp_path / "env.db", env={"AGENTRECALL_MCP_TOKEN": "token-from-the-environment"}
    ):
        assert "Bearer <token>" not in server.stderr

        async def use(url: str) -> None:
            async with http_session(url, "token-from-the-environment") as client:
                assert await contents(client, "anything") == []

        anyio.run(use, server.url)


STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM]


def stopping(number: signal.Signals) -> str:
    return f"agentrecall: note: {number.name}: stopping once the requests in flight are answered"


def block_stop_signals() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


@pytest.mark.parametrize("number", STOP_SIGNALS, ids=lambda number: number.name)
def test_http_a_signal_before_it_serves_stops_it_in_one_line(
    tmp_path: Path, number: signal.Signals
) -> None:
    # Started with the signal blocked and sent it at once: it is held, whatever the
    # scheduling, until the command takes the signals over, which is before anything starts.
    command = server_command("--http", "--port", "0", "--db", str(tmp_path / "m.db"))
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=block_stop_signals,
        env={**os.environ, "AGENTRECALL_MCP_TOKEN": TOKEN},
    ) as process:
        process.send_signal(number)
        _, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, stderr
    assert stderr.splitlines() == [stopping(number)]


def test_http_two_signals_before_it_serves_give_up_in_one_line(tmp_path: Path) -> None:
    command = server_command("--http", "--port", "0", "--db", str(tmp_path / "m.db"))
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=block_stop_signals,
        env={**os.environ, "AGENTRECALL_MCP_TOKEN": TOKEN},
    ) as process:
        process.send_signal(signal.SIGINT)  # both held until the command takes them over
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 130, stderr
    assert stderr.splitlines() == ["agentrecall: error: interrupted"]


@pytest.mark.parametrize("number", STOP_SIGNALS, ids=lambda number: number.name)
def test_http_a_signal_once_it_serves_stops_it_in_one_line(
    tmp_path: Path, number: signal.Signals
) -> None:
    for server in start_http(tmp_path / "m.db", "--token", TOKEN):
        server.process.send_signal(number)
        assert server.process.stderr is not None
        rest = server.process.stderr.read()
        assert server.process.wait(TIMEOUT) == 0, rest
        assert rest.splitlines() == [stopping(number)]


# A server whose adds wait, once they reach the store, for the test to let them go on: each
# writes a byte to the fd ARRIVED, then reads one from the fd GATE.
GATED = """\
import asyncio, os, runpy, sys
from agentrecall import SQLiteStore
arrived, gate = int(os.environ["ARRIVED"]), int(os.environ["GATE"])
real = SQLiteStore.add
async def gated(self, *args, **kwargs):
    os.write(arrived, b"!")
    await asyncio.to_thread(os.read, gate, 1)
    return await real(self, *args, **kwargs)
SQLiteStore.add = gated
sys.argv[0] = "agentrecall"
runpy.run_module("agentrecall", run_name="__main__")
"""


ACCEPT = "application/json, text/event-stream"


def sse_results(stream: str) -> list[Any]:
    """The tool results in an event stream's ``data:`` lines, parsed from their JSON text."""
    messages = [json.loads(line[5:]) for line in stream.splitlines() if line.startswith("data:")]
    return [json.loads(m["result"]["content"][0]["text"]) for m in messages if "result" in m]


def wait_readable(fd: int) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        assert selector.select(TIMEOUT), "nothing came"


@pytest.mark.parametrize("number", STOP_SIGNALS, ids=lambda number: number.name)
async def test_http_a_signal_lets_the_call_in_flight_finish(
    tmp_path: Path, number: signal.Signals
) -> None:
    db = tmp_path / "m.db"
    arrived_read, arrived_write = os.pipe()
    gate_read, gate_write = os.pipe()
    command = [sys.executable, "-c", GATED, "mcp", "--http", "--port", "0", "--db", str(db)]
    environment = {
        **os.environ,
        "AGENTRECALL_MCP_TOKEN": TOKEN,
        "ARRIVED": str(arrived_write),
        "GATE": str(gate_read),
    }
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        pass_fds=(arrived_write, gate_read),
    )
    try:
        url, _ = read_until(process, URL)
        # Raw HTTP rather than the SDK's client, which says goodbye (DELETE) to a server that
        # may be gone by then.
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept": ACCEPT}
        async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http:
            opened = await http.post(url, json=INITIALIZE)
            headers = {
                "Mcp-Session-Id": opened.headers["mcp-session-id"],
                "Mcp-Protocol-Version": "2025-06-18",
            }
            started = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post(url, json=started, headers=headers)).status_code == 202
            results: list[Any] = []
            add = {"name": "add_memory", "arguments": {"entries": ["Kim likes tea."]}}
            request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": add}

            async def add_memory() -> None:
                response = await http.post(url, json=request, headers=headers)
                results.extend(sse_results(response.text))

            async with anyio.create_task_group() as group:
                group.start_soon(add_memory)
                await anyio.to_thread.run_sync(wait_readable, arrived_read)  # in flight
                process.send_signal(number)
                pattern = re.compile(r"(stopping once the requests in flight)")
                await anyio.to_thread.run_sync(read_until, process, pattern)
                os.write(gate_write, b"!")  # only now may the call go on
        assert [result["stored"] for result in results] == [1]
        assert process.wait(TIMEOUT) == 0
        assert process.stderr is not None
        assert process.stderr.read() == ""  # nothing after the one line
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(TIMEOUT)
        assert process.stderr is not None
        process.stderr.close()
        for fd in (arrived_read, arrived_write, gate_read, gate_write):
            os.close(fd)
    assert await stored(db) == ["Kim likes tea."]


# Sessions --------------------------------------------------------------------------------


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def in_process_http(db: Path, limits: SessionLimits) -> AsyncIterator[str]:
    """An HTTP server in this process (real sockets on loopback); yields its URL."""
    manager = MemoryManager([SQLiteStore(db)], add_tool=True)
    ready = anyio.Event()
    urls: list[str] = []

    def announce(url: str) -> None:
        urls.append(url)
        ready.set()

    server = memory_server(manager)
    async with anyio.create_task_group() as group:
        serving = functools.partial(
            serve_http, host="127.0.0.1", port=0, token=TOKEN, sessions=limits
        )
        group.start_soon(functools.partial(serving, server, announce=announce))
        with anyio.fail_after(TIMEOUT):
            await ready.wait()
        yield urls[0]
        group.cancel_scope.cancel()


async def open_session(http: httpx2.AsyncClient, url: str) -> str:
    """Open a session as a client would, and leave it (abandoned); return its id."""
    opened = await http.post(url, json=INITIALIZE)
    assert opened.status_code == 200, opened.text
    session: str = opened.headers["mcp-session-id"]
    started = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=started, headers=of(session))).status_code == 202
    return session


def of(session: str) -> dict[str, str]:
    return {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-06-18"}


async def alive(http: httpx2.AsyncClient, url: str, session: str) -> bool:
    ping = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
    response = await http.post(url, json=ping, headers=of(session))
    assert response.status_code in (200, 404), response.text
    return response.status_code == 200


def loopback_http() -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": ACCEPT}
    return httpx2.AsyncClient(headers=headers, timeout=TIMEOUT)


async def test_http_sessions_idle_too_long_end(db: Path) -> None:
    clock = Clock()
    limits = SessionLimits(idle_timeout=600, clock=clock)
    async with in_process_http(db, limits) as url, loopback_http() as http:
        first = await open_session(http, url)
        clock.now += 100
        second = await open_session(http, url)
        clock.now += 599  # the first has been idle 699 s, the second 599 s
        third = await open_session(http, url)  # every new session sweeps first
        assert not await alive(http, url, first)
        assert await alive(http, url, second) and await alive(http, url, third)
        clock.now += 600  # both idle for 600 s now: the next sweep ends them
        fourth = await open_session(http, url)
        assert [await alive(http, url, s) for s in (second, third, fourth)] == [
            False,
            False,
            True,
        ]


async def test_http_sessions_are_capped_ending_the_longest_idle(db: Path) -> None:
    clock = Clock()
    limits = SessionLimits(idle_timeout=600, max_sessions=3, clock=clock)
    async with in_process_http(db, limits) as url, loopback_http() as http:
        sessions = []
        for _ in range(3):
            sessions.append(await open_session(http, url))
            clock.now += 1
        assert await alive(http, url, sessions[0])  # now the most recently active
        clock.now += 1
        for _ in range(20):  # abandoned sessions, one after another: never more than 3
            sessions.append(await open_session(http, url))
            clock.now += 1
        kept = [s for s in sessions if await alive(http, url, s)]
        assert kept == sessions[-3:]
        assert len(set(sessions)) == len(sessions)


async def test_http_a_busy_session_is_never_ended_to_make_room(db: Path) -> None:
    clock = Clock()
    limits = SessionLimits(idle_timeout=600, max_sessions=1, clock=clock)
    async with in_process_http(db, limits) as url, loopback_http() as http:
        busy = await open_session(http, url)
        listening = {**of(busy), "Accept": "text/event-stream"}
        # An open event stream (the client listening for the server's messages) is in flight.
        async with http.stream("GET", url, headers=listening) as stream:
            assert stream.status_code == 200
            clock.now += 10_000
            refused = await http.post(url, json=INITIALIZE)
            assert refused.status_code == 503
            assert refused.json()["error"]["message"].startswith("too many open sessions")
            assert await alive(http, url, busy)
        # The server notices the stream closed when its connection ends: until then it is
        # still busy, and a new session is refused.
        with anyio.fail_after(TIMEOUT):
            while (await http.post(url, json=INITIALIZE)).status_code == 503:
                await anyio.sleep(0.01)
        assert not await alive(http, url, busy)  # idle, it made room


def test_session_limits_refuse_nonsense() -> None:
    with pytest.raises(InvalidArgumentError, match="idle_timeout: expected a positive number"):
        SessionLimits(idle_timeout=0)
    with pytest.raises(InvalidArgumentError, match="max_sessions: expected a whole number"):
        SessionLimits(max_sessions=0)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--session-idle-timeout", "0"), "argument --session-idle-timeout: expected a positive"),
        (("--max-sessions", "none"), "argument --max-sessions: expected a whole number from 1"),
        (("--max-sessions", "0"), "argument --max-sessions: expected a whole number from 1"),
    ],
)
def test_session_options_are_checked(
    db: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], message: str
) -> None:
    assert main(["mcp", "--db", str(db), "--http", "--token", TOKEN, *flags]) == 2
    assert message in capsys.readouterr().err.splitlines()[-1]
    assert not db.exists()


def ipv6_loopback() -> bool:
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    ("host", "url_host"),
    [
        pytest.param("[::1]", "[::1]", marks=pytest.mark.skipif(not ipv6_loopback(), reason="")),
        pytest.param("::1", "[::1]", marks=pytest.mark.skipif(not ipv6_loopback(), reason="")),
        ("127.0.0.2", "127.0.0.2"),
        ("LOCALHOST", "LOCALHOST"),
    ],
)
def test_http_on_any_loopback_spelling_serves_its_url_and_refuses_other_host_names(
    tmp_path: Path, host: str, url_host: str
) -> None:
    for server in start_http(tmp_path / "loop.db", "--host", host, "--token", TOKEN):
        assert server.url.startswith(f"http://{url_host}:") and server.url.endswith("/mcp")

        async def use(url: str) -> None:
            async with http_session(url) as client:
                await call(client, "add_memory", {"entries": ["The user's tea is green."]})
            # A page in a browser reaching the port under a name of its own (DNS rebinding).
            port = url.rsplit(":", 1)[1].split("/")[0]
            headers = {
                "Authorization": f"Bearer {TOKEN}",
                "Accept": "application/json, text/event-stream",
            }
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                for name, value in [("Host", f"attacker.example:{port}"), ("Origin", "http://x.y")]:
                    response = await http.post(
                        url, json=INITIALIZE, headers={**headers, name: value}
                    )
                    assert response.status_code in (421, 403), (name, response.status_code)

        anyio.run(use, server.url)
    assert anyio.run(stored, tmp_path / "loop.db") == ["The user's tea is green."]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "page", "version": "0"},
    },
}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--host", "0.0.0.0", "--http"), "--allow-remote"),
        (("--port", "9000"), "argument --port: only with --http"),
        (("--token", "t"), "argument --token: only with --http"),
        (("--session-idle-timeout", "5m"), "argument --session-idle-timeout: only with --http"),
        (("--max-sessions", "5"), "argument --max-sessions: only with --http"),
        (("--http", "--port", "70000"), "argument --port"),
        (("--read-only", "--allow-forget"), "not allowed with argument"),
    ],
)
def test_usage_mistakes(
    db: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], message: str
) -> None:
    assert main(["mcp", "--db", str(db), *flags]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert message in err.splitlines()[-1]
    assert not db.exists()


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("two words and some more", "argument --token: a bearer token must be letters"),
        (
            "caf\u00e9-caf\u00e9-caf\u00e9-caf\u00e9",
            "argument --token: a bearer token must be letters",
        ),
        ("", "argument --token: a bearer token needs at least 16 characters, got 0"),
        ("abc", "argument --token: a bearer token needs at least 16 characters, got 3"),
        ("x" * 15, "argument --token: a bearer token needs at least 16 characters, got 15"),
    ],
)
def test_a_token_that_is_no_good_is_a_usage_mistake(
    db: Path, capsys: pytest.CaptureFixture[str], token: str, message: str
) -> None:
    assert main(["mcp", "--db", str(db), "--http", "--token", token]) == 2
    line = capsys.readouterr().err.splitlines()[-1]
    assert line == f"agentrecall: error: {message}" or line.startswith(
        f"agentrecall: error: {message}"
    )
    assert not db.exists()


def test_the_help_states_the_minimum_the_server_enforces() -> None:
    from agentrecall.cli import mcp_command
    from agentrecall.mcp import auth

    assert mcp_command.MIN_TOKEN_LENGTH == auth.MIN_TOKEN_LENGTH
    assert f"at least {auth.MIN_TOKEN_LENGTH} visible ASCII characters" in mcp_command.EPILOG


def test_a_short_token_in_the_environment_is_refused_naming_it(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTRECALL_MCP_TOKEN", "short")
    assert main(["mcp", "--db", str(db), "--http"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "$AGENTRECALL_MCP_TOKEN: a bearer token needs at least 16 characters" in line
    assert not db.exists()


def test_a_port_taken_is_one_error_and_no_token(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        environment = {k: v for k, v in os.environ.items() if k != "AGENTRECALL_MCP_TOKEN"}
        result = subprocess.run(
            server_command("--http", "--port", port, "--db", str(tmp_path / "m.db")),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=environment,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode == 1
    [line] = result.stderr.splitlines()  # the error alone: no token for a server that never ran
    assert line.startswith("agentrecall: error: cannot listen on 127.0.0.1 port " + port)
