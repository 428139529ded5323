"""Memory that survives a restart: one process remembers, fresh processes recall.

Run with ``make demo``. Everything lives under ``.demo/`` (recreated each run): long-term facts
in an SQLiteStore (the store the command line uses by default), and a conversation in a
BufferMemory persisted to SQLite. The third process runs an agent turn through a MemoryManager
with a scripted model (no network): memories are folded into the model's input, and a new fact
is extracted from the conversation into the same database.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentrecall import (
    BufferMemory,
    ExtractionConfig,
    InvocationTrigger,
    MemoryManager,
    SQLiteStore,
)
from agentrecall.extraction.reconcile_prompt import RECONCILE_SYSTEM_PROMPT
from agentrecall.testing import ModelCall, ScriptedChatModel

DEMO_DIR = Path(__file__).resolve().parent.parent / ".demo"
FACTS_FILE = DEMO_DIR / "memory.db"
CONVERSATIONS = DEMO_DIR / "conversations.db"

FACTS = [
    ("The user prefers aisle seats on long flights.", {"topic": "travel"}),
    ("The user is allergic to peanuts.", {"topic": "health"}),
    ("The user's daughter Mia plays the violin.", {"topic": "family"}),
    ("The team ships the mobile app release every second Thursday.", {"topic": "work"}),
    ("The user's favourite editor is Neovim with a dark theme.", {"topic": "tools"}),
    ("The user lives in Lisbon and works remotely.", {"topic": "home"}),
]

QUESTIONS = [
    "Which seats does the user like on flights?",
    "Is the user allergic to anything?",
    "What instrument does Mia play?",
    "When does the team ship the app release?",
]

CALL = {"id": "call-1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Find me a flight to Porto on Friday."},
    {"role": "assistant", "content": "There is a 9:40 flight with aisle seats left."},
    {"role": "user", "content": "What will the weather be like?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call-1", "content": '{"forecast": "sunny, 24 C"}'},
    {"role": "assistant", "content": "Sunny and 24 C in Porto on Friday."},
    {"role": "user", "content": "Great, book the 9:40 one."},
    {"role": "assistant", "content": "Booked: Lisbon to Porto, Friday 9:40, seat 14C."},
]


def buffer() -> BufferMemory:
    """The conversation memory both processes open: 6 messages kept, reads within 60 tokens."""
    return BufferMemory(max_messages=6, max_tokens=60, path=CONVERSATIONS)


async def remember() -> None:
    """The first process: store facts and a conversation, then exit."""
    facts = SQLiteStore(FACTS_FILE, name="demo")
    for (content, _), result in zip(FACTS, await facts.add_many(FACTS), strict=True):
        # Ids are time-ordered, so memories added together share their first digits.
        print(f"  stored ...{result.id[-8:]}  {content}")
    await facts.aclose()
    async with buffer() as conversations:
        await conversations.write(CONVERSATION, "trip", agent_name="travel-agent")
        (entry,) = await conversations.entries("trip")
        print(
            f"\n  conversation 'trip': {len(CONVERSATION)} messages written, "
            f"{len(entry.messages)} kept (system prompt left out, cut at a user turn)"
        )


async def recall() -> None:
    """The second, fresh process: answer from the files alone."""
    facts = SQLiteStore(FACTS_FILE, name="demo")
    print(f"  {await facts.count()} memories found in {FACTS_FILE}")
    for question in QUESTIONS:
        print(f"\n  Q: {question}")
        for rank, hit in enumerate(await facts.search(question, {"max_search_results": 3}), 1):
            score = (hit.metadata or {})["_relevanceScore"]
            print(f"    {rank}. score {score:.2f}  {hit.content}")
    await facts.aclose()
    async with buffer() as conversations:
        history = await conversations.read("trip")
        print(f"\n  conversation 'trip' read back within 60 tokens ({len(history)} messages):")
        for message in history:
            print(f"    {message['role']:>9}: {message['content']}")


AGENT_SYSTEM = "You are a travel assistant."


def scripted_answer(call: ModelCall) -> str:
    """The scripted model: agent turns get a reply, extraction requests get a fact list.

    Reconcile requests (the new fact against the stored ones nearest to it) get "add": the
    flight is new, and replaces nothing stored.
    """
    if call.system == AGENT_SYSTEM:
        return "Done: aisle seat 14C on your Friday flight to Porto."
    if call.system == RECONCILE_SYSTEM_PROMPT:
        return json.dumps({"decisions": [{"fact": 1, "action": "add"}]})
    return json.dumps([{"content": "The user is flying from Lisbon to Porto on Friday."}])


async def agent() -> None:
    """The third process: one agent turn with injection, then extraction."""
    facts = SQLiteStore(
        FACTS_FILE, name="demo", extraction=ExtractionConfig(trigger=InvocationTrigger())
    )
    model = ScriptedChatModel(default=scripted_answer)
    manager = MemoryManager([facts], model=model, add_tool=True)
    print(f"  tools offered to the model: {[tool.name for tool in manager.tools]}")
    ask = {"role": "user", "content": "Book aisle seats on my flights to Porto."}
    manager.record([ask])
    prompt = await manager.inject([ask])
    shown = str(prompt[-1]["content"]).replace("\n", "\n    ")
    print(f"  the user message as the model sees it:\n    {shown}")
    reply = {"role": "assistant", "content": await model.complete(prompt, system=AGENT_SYSTEM)}
    print(f"  model: {reply['content']}")
    manager.record([reply])
    manager.end_turn()  # the trigger fires: extraction runs in the background
    await manager.flush()
    for hit in await facts.search("Porto Friday", {"max_search_results": 1}):
        print(f"  extracted and stored: {hit.content}")
    print(f"  {await facts.count()} memories in {FACTS_FILE.name} now")
    await facts.aclose()


def main() -> None:
    """Run each phase in its own process, or one phase when named on the command line."""
    if len(sys.argv) > 1:
        asyncio.run({"remember": remember, "recall": recall, "agent": agent}[sys.argv[1]]())
        return
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    for phase, title in (
        ("remember", "Process 1 remembers"),
        ("recall", "Process 2 recalls"),
        ("agent", "Process 3: an agent turn with a memory manager"),
    ):
        print(f"\n== {title} ==")
        subprocess.run([sys.executable, __file__, phase], check=True)
    print("\nThe memories stay in the file; ask them from the command line:")
    print(f"  {command_line()} --db {shown(FACTS_FILE)} search 'What instrument does Mia play?'")


def command_line() -> str:
    """The ``agentrecall`` command of the Python running the demo, as short as it can be said."""
    script = Path(sys.executable).with_name("agentrecall")
    if script.exists():
        return shown(script)
    return f"{shown(Path(sys.executable))} -m agentrecall"


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies inside it, else as it is."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    main()
