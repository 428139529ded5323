"""BufferMemory(dsn=...): what only the PostgreSQL backend has to show.

One conversation carried on by machines taking turns, a server restarted or crashed in the
middle of it, tables side by side in one database, many processes creating the table at once,
and the arguments it refuses. The behaviour it shares with the other backends is tested in
test_buffer.py, test_buffer_properties.py and test_buffer_processes.py.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
from typing import Any

import psycopg
import pytest

from agentrecall import BufferMemory, InvalidArgumentError, PostgresStore, StorageError
from agentrecall.errors import ServerUnavailableError
from agentrecall.testing.postgres import TemporaryPostgres

CHILD_TIMEOUT = 60

# One turn of an agent on "another machine": read the conversation, answer, hand it back.
TURN = """
import asyncio, json, sys
from agentrecall import BufferMemory

args = json.loads(sys.argv[1])

async def main():
    async with BufferMemory(max_messages=None, dsn=args["dsn"]) as buffer:
        history = await buffer.read("trip")
        question = {"role": "user", "content": f"question {len(history) // 2} from {args['who']}"}
        answer = {"role": "assistant", "content": f"answer {len(history) // 2} by {args['who']}"}
        await buffer.write([*history, question, answer], "trip", agent_name=args["who"])
        (entry,) = await buffer.entries("trip")
        print(json.dumps({"seen": history, "id": entry.id}))

asyncio.run(main())
"""


def _turn(dsn: str, who: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", TURN, json.dumps({"dsn": dsn, "who": who})],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_two_processes_taking_turns_continue_one_conversation(postgres_dsn: str) -> None:
    turns = [_turn(postgres_dsn, who) for who in ("east", "west", "east", "west")]

    assert turns[0]["seen"] == []
    for n, turn in enumerate(turns[1:], start=1):
        assert len(turn["seen"]) == 2 * n, "each turn sees every earlier turn"
        assert turn["seen"][-1]["content"].endswith(("east", "west")[(n - 1) % 2])
    assert len({turn["id"] for turn in turns}) == 1, "one session, one id, on every machine"


def _ask(n: int) -> list[dict[str, Any]]:
    return [
        message
        for i in range(n)
        for message in (
            {"role": "user", "content": f"q{i}"},
            {"role": "assistant", "content": f"a{i}"},
        )
    ]


def test_a_restart_mid_conversation_loses_nothing_and_the_next_call_succeeds(
    private_postgres: TemporaryPostgres,
) -> None:
    async def scenario() -> None:
        async with BufferMemory(max_messages=None, dsn=private_postgres.dsn) as buffer:
            await buffer.write(_ask(1), "chat")
            private_postgres.restart()
            assert await buffer.read("chat") == _ask(1)
            await buffer.write(_ask(2), "chat")
            assert await buffer.read("chat") == _ask(2)

    asyncio.run(scenario())


def test_while_the_server_is_down_calls_fail_retryably_then_the_buffer_resumes(
    private_postgres: TemporaryPostgres,
) -> None:
    dsn = f"{private_postgres.dsn}?connect_timeout=2"

    async def scenario() -> None:
        async with BufferMemory(max_messages=None, dsn=dsn) as buffer:
            await buffer.write(_ask(1), "chat")
            private_postgres.crash()
            with pytest.raises(ServerUnavailableError) as caught:
                await buffer.write(_ask(2), "chat")
            assert caught.value.database == "postgres" and caught.value.host == "127.0.0.1"
            assert f"127.0.0.1:{private_postgres.port}" in str(caught.value)
            private_postgres.start()
            assert await buffer.read("chat") == _ask(1), "the failed write stored nothing"
            await buffer.write(_ask(2), "chat")  # the retry
            assert await buffer.read("chat") == _ask(2)

    asyncio.run(scenario())


def test_buffers_with_different_tables_share_a_database_untouched(postgres_dsn: str) -> None:
    async def scenario() -> None:
        async with (
            BufferMemory(dsn=postgres_dsn) as default,
            BufferMemory(dsn=postgres_dsn, schema="team_b", table="chats") as other,
        ):
            await default.write(_ask(1), "s")
            await other.write(_ask(2), "s")
            await other.clear()
            assert await default.read("s") == _ask(1)
            assert await other.read("s") == []

    asyncio.run(scenario())
    with psycopg.connect(postgres_dsn) as connection:
        tables = connection.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
        ).fetchall()
    assert tables == [
        ("agentrecall", "agentrecall_versions"),
        ("agentrecall", "buffer_sessions"),
        ("team_b", "agentrecall_versions"),
        ("team_b", "chats"),
    ]


CREATE_AT_ONCE = """
import asyncio, sys
from agentrecall import BufferMemory

async def main():
    async with BufferMemory(dsn=sys.argv[1]) as buffer:
        print("ready", flush=True)
        sys.stdin.readline()
        await buffer.write([{"role": "user", "content": sys.argv[2]}], sys.argv[2])

asyncio.run(main())
"""


def test_processes_creating_the_table_at_once_never_collide(postgres_dsn: str) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-W", "error", "-c", CREATE_AT_ONCE, postgres_dsn, f"p{n}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(6)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    for child in children:
        _, err = child.communicate("go\n", timeout=CHILD_TIMEOUT)
        assert child.returncode == 0 and err == "", err

    async def count() -> int:
        async with BufferMemory(dsn=postgres_dsn) as buffer:
            return await buffer.count_sessions()

    assert asyncio.run(count()) == 6


def test_stores_and_buffers_creating_one_schema_at_once_never_collide(postgres_dsn: str) -> None:
    """Both create the schema when it is missing: two CREATE SCHEMA IF NOT EXISTS at once
    failed one of them on pg_namespace's unique key."""

    async def scenario() -> None:
        for number in range(5):
            schema = f"fresh_{number}"
            stores = [PostgresStore(postgres_dsn, schema=schema, name=f"n{k}") for k in range(2)]
            buffers = [
                BufferMemory(dsn=postgres_dsn, schema=schema, table=f"t{k}") for k in range(2)
            ]
            turn = [{"role": "user", "content": "Hello"}]
            try:
                await asyncio.gather(
                    *(store.setup() for store in stores),
                    *(buffer.write(turn, "s") for buffer in buffers),
                )
                for buffer in buffers:
                    assert await buffer.read("s") == turn
            finally:
                for closable in (*stores, *buffers):
                    await closable.aclose()

    asyncio.run(scenario())


def test_a_table_of_a_newer_agentrecall_is_refused_and_left_alone(postgres_dsn: str) -> None:
    async def write() -> None:
        async with BufferMemory(dsn=postgres_dsn) as buffer:
            await buffer.write(_ask(1), "s")

    asyncio.run(write())
    with psycopg.connect(postgres_dsn, autocommit=True) as connection:
        connection.execute("UPDATE agentrecall.agentrecall_versions SET version = 99")
    with pytest.raises(StorageError, match="version 99, newer than this agentrecall knows"):
        asyncio.run(write())
    with psycopg.connect(postgres_dsn) as connection:
        assert connection.execute("SELECT count(*) FROM agentrecall.buffer_sessions").fetchone()


def test_a_message_the_database_cannot_hold_names_the_table_and_stores_nothing(
    postgres_dsn: str,
) -> None:
    async def scenario() -> None:
        async with BufferMemory(dsn=postgres_dsn) as buffer:
            bad = {"role": "assistant", "content": "x", "toolCalls": [{"arguments": {1j: 2}}]}
            with pytest.raises(InvalidArgumentError, match=r"messages\[1\].*buffer_sessions"):
                await buffer.write([{"role": "user", "content": "q"}, bad], "s")
            assert await buffer.entries() == []

    asyncio.run(scenario())


def test_a_buffer_table_named_as_a_stores_table_is_refused_by_name_both_ways(
    postgres_dsn: str,
) -> None:
    """A PostgresStore and a buffer share the default schema, and with it table names."""

    async def scenario() -> None:
        async with BufferMemory(dsn=postgres_dsn, table="memories") as buffer:
            await buffer.write([{"role": "user", "content": "Hello"}], "s")
        with pytest.raises(StorageError, match=r"'agentrecall' already holds .*\"memories\""):
            async with PostgresStore(postgres_dsn) as store:
                await store.add("A memory with nowhere to go")
        async with PostgresStore(postgres_dsn, schema="apart") as store:
            await store.add("A memory in a schema of its own")
        async with BufferMemory(dsn=postgres_dsn, schema="apart", table="history") as buffer:
            with pytest.raises(StorageError, match=r"apart\.history.*choose another table="):
                await buffer.write([{"role": "user", "content": "Hello"}], "s")
        async with BufferMemory(dsn=postgres_dsn, table="memories") as buffer:
            assert await buffer.read("s") == [{"role": "user", "content": "Hello"}]

    asyncio.run(scenario())


def test_a_session_id_with_nul_or_too_long_or_an_agent_name_with_nul_is_refused(
    postgres_dsn: str,
) -> None:
    """PostgreSQL text cannot hold U+0000: bad input for a write, no session for a read."""

    async def scenario() -> None:
        async with BufferMemory(dsn=postgres_dsn) as buffer:
            turn = [{"role": "user", "content": "Hello \0 there"}]
            for session, agent in (("nul \0 inside", None), ("s", "agent \0")):
                argument = "session_id" if agent is None else "agent_name"
                with pytest.raises(InvalidArgumentError, match=f"{argument}.*U\\+0000"):
                    await buffer.write(turn, session, agent_name=agent)
            await buffer.write(turn, "s", tags={"k": "v \0"})
            assert await buffer.read("s") == turn
            assert await buffer.read("nul \0 inside") == []
            assert await buffer.entries("nul \0 inside") == []
            await buffer.clear("nul \0 inside")
            assert [entry.session_id for entry in await buffer.entries()] == ["s"]
            # The primary key: B-tree index rows hold 2,704 bytes (random ids failed at 2,700).
            letters = random.Random(3)
            longest, too_long = ("".join(letters.choices("abcdefgh", k=n)) for n in (2600, 2700))
            await buffer.write(turn, longest)
            assert await buffer.read(longest) == turn
            with pytest.raises(InvalidArgumentError, match=r"session_id: 2700 bytes .* 2600"):
                await buffer.write(turn, too_long)
            assert await buffer.read(too_long) == [] and await buffer.entries(too_long) == []

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"dsn": "postgresql://u@h/d", "path": "x.db"}, "not both"),
        ({"schema": "elsewhere"}, "pass dsn= too"),
        ({"dsn": "postgresql://u@h/d", "schema": "bad-name"}, "schema must be 1 to 63"),
        ({"dsn": "postgresql://u@h/d", "table": "1st"}, "table must be 1 to 54"),
        ({"dsn": "postgresql://u@h/d", "table": "t" * 55}, "table must be 1 to 54"),
        ({"dsn": ""}, "dsn must be a PostgreSQL connection string"),
        ({"dsn": "host=h port=x"}, "port must be a number"),
    ],
)
def test_unusable_postgres_arguments_are_refused_at_construction(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        BufferMemory(**arguments)


def test_construction_connects_to_nothing() -> None:
    BufferMemory(dsn="postgresql://nobody@127.0.0.1:1/none")
