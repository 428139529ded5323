"""Token counters: the tiktoken-based one, with an encoding built here (no download)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken

from agentrecall import BufferMemory, InvalidArgumentError, tiktoken_counter


def byte_encoding() -> tiktoken.Encoding:
    # Every byte is its own token: counts are easy to predict and nothing is fetched.
    return tiktoken.Encoding(
        name="bytes-only",
        pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={},
    )


def test_counts_text_tokens_plus_overhead() -> None:
    count = tiktoken_counter(byte_encoding())
    assert count({"role": "user", "content": "abc"}) == 3 + 4
    assert count({"role": "user", "content": "é"}) == 2 + 4  # two UTF-8 bytes
    assert count({"role": "assistant", "content": None}) == 4
    assert count({"role": "user", "content": [{"text": "ab"}, {"text": "cd"}]}) == 5 + 4
    assert count({"role": "user", "content": "<|endoftext|>"}) == 13 + 4


def test_tool_blocks_count_as_json() -> None:
    count = tiktoken_counter(byte_encoding())
    block = {"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}
    assert count({"role": "assistant", "content": [block]}) > 4


async def test_drives_a_buffer_budget() -> None:
    memory = BufferMemory(max_tokens=12, token_counter=tiktoken_counter(byte_encoding()))
    await memory.write(
        [
            {"role": "user", "content": "old question"},
            {"role": "assistant", "content": "old"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
        ]
    )
    assert [m["content"] for m in await memory.read()] == ["hi", "yo"]


def test_openai_tool_calls_count_their_name_and_arguments() -> None:
    count = tiktoken_counter(byte_encoding())
    call = {"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"q":1}'}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert count(message) == len('find\n{"q":1}') + 4
    agentlib = {"role": "assistant", "content": "ok", "toolCalls": [{"name": "f", "arguments": {}}]}
    assert count(agentlib) == len("ok\nf\n{}") + 4


def test_blocks_json_cannot_encode_are_counted_as_text() -> None:
    count = tiktoken_counter(byte_encoding())
    block = {"toolUse": {"toolUseId": "t", "name": "f", "input": {1j: 2}}}
    assert count({"role": "assistant", "content": [block]}) == len(str(block)) + 4


_OFFLINE = """
import sys
from agentrecall import ModelError, tiktoken_counter
try:
    tiktoken_counter("o200k_base")
except ModelError as error:
    print(error)
    sys.exit(3)
"""


def test_an_encoding_that_cannot_be_downloaded_says_what_and_how_to_provide_it(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    with socket.socket() as closed:  # a loopback port nothing listens on: refused at once
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "all_proxy")}
    proxy = f"http://127.0.0.1:{port}"
    env.update(TIKTOKEN_CACHE_DIR=str(cache), HTTPS_PROXY=proxy, https_proxy=proxy)
    result = subprocess.run(
        [sys.executable, "-c", _OFFLINE], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 3, result.stderr
    message = result.stdout
    assert message.startswith(
        "tiktoken_counter('o200k_base'): tiktoken downloads the token table of encoding "
        "'o200k_base' (https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken)"
    )
    assert f"TIKTOKEN_CACHE_DIR ('{cache}')" in message
    assert "set TIKTOKEN_CACHE_DIR to it" in message
    assert "Traceback" not in result.stderr
    assert list(cache.iterdir()) == []


def test_an_unknown_encoding_is_named() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown encoding 'o300k'; tiktoken knows"):
        tiktoken_counter("o300k")
