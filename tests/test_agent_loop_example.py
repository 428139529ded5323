"""The README's agent loop, run for real against an OpenAI-compatible server on loopback."""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentrecall import SQLiteStore
from agentrecall.testing import ChatServer, Reply

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent_loop.py"


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("agent_loop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def respond(request: Any) -> Reply:
    """Extraction requests get facts; chat replies show whether memory was injected."""
    if "JSON array" in (request.system or ""):
        transcript = request.last_user_text or ""
        facts = (
            [{"content": "The user is vegetarian and plans dinner at home."}]
            if "vegetarian" in transcript
            else []
        )
        return Reply.text(json.dumps(facts))
    recalled = (request.last_user_text or "").partition("<memory>")[2]
    return Reply.text("I remember you are vegetarian." if "vegetarian" in recalled else "Noted!")


def test_the_readme_shows_the_example_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = EXAMPLE.read_text(encoding="utf-8")
    body = code[code.index("async def chat") : code.index('\n\nif __name__ == "__main__":')]
    assert body in readme


async def test_memory_survives_between_runs(tmp_path: Path) -> None:
    example = load_example()
    with ChatServer(responder=respond) as server:
        first = await example.chat(
            server.base_url, "m", ["Hi! I'm vegetarian.", "Plan my dinner."], str(tmp_path)
        )
        second = await example.chat(
            server.base_url, "m", ["What should I cook for dinner?"], str(tmp_path)
        )
    assert first == ["Noted!", "Noted!"]
    assert second == ["I remember you are vegetarian."]
    async with SQLiteStore(tmp_path / "facts.db", writable=False) as facts:
        stored = [memory.content for memory in await facts.list()]
    assert stored == ["The user is vegetarian and plans dinner at home."]
    last_chat = [r for r in server.requests if "JSON array" not in (r.system or "")][-1]
    assert re.search(
        r'<entry source="facts">The user is vegetarian and plans dinner at home\.</entry>',
        last_chat.last_user_text or "",
    )
    # The second run saw the first run's conversation, from the database.
    assert [m["content"] for m in last_chat.messages[-5:-1]] == [
        "Hi! I'm vegetarian.",
        "Noted!",
        "Plan my dinner.",
        "Noted!",
    ]
    with sqlite3.connect(tmp_path / "conversations.db") as db:
        (stored,) = db.execute("SELECT messages FROM buffer_sessions").fetchone()
    assert len(json.loads(stored)) == 6


def recall_seats(request: Any) -> Reply:
    """Extraction yields the seat preference; a chat reply says what memory held."""
    if "JSON array" in (request.system or ""):
        transcript = request.last_user_text or ""
        facts = [{"content": "Ana prefers aisle seats."}] if "aisle" in transcript else []
        return Reply.text(json.dumps(facts))
    recalled = (request.last_user_text or "").partition("<memory>")[2]
    return Reply.text("An aisle seat." if "aisle seats" in recalled else "I do not know.")


async def test_a_later_question_in_other_words_recalls_the_stored_fact(tmp_path: Path) -> None:
    """The question's "seat" must find "seats": the loop keeps facts in a store that stems."""
    example = load_example()
    with ChatServer(responder=recall_seats) as server:
        await example.chat(server.base_url, "m", ["I'm Ana. I prefer aisle seats."], str(tmp_path))
        answer = await example.chat(server.base_url, "m", ["Which seat do I like?"], str(tmp_path))
    assert answer == ["An aisle seat."]
    asked = [r for r in server.requests if "JSON array" not in (r.system or "")][-1]
    assert '<entry source="facts">Ana prefers aisle seats.</entry>' in (asked.last_user_text or "")


def test_the_script_answers_each_line_and_remembers_across_lines(tmp_path: Path) -> None:
    with ChatServer(responder=respond) as server:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), server.base_url, "m"],
            input="Hi! I'm vegetarian.\n\n   \nWhat should I cook for dinner?\n",
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
            check=True,
        )
    assert done.stdout.splitlines() == ["Noted!", "I remember you are vegetarian."]
    assert (tmp_path / "agent-data" / "facts.db").exists()


def test_the_script_without_arguments_says_how_to_run_it() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1 and "usage:" in done.stderr and "Traceback" not in done.stderr
