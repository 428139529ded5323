"""Memory that survives a restart: one process remembers, a fresh process recalls.

Run with ``make demo``. The store is a JsonFileStore under ``.demo/`` (recreated each run).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from agentrecall import JsonFileStore, SyncStore

DEMO_FILE = Path(__file__).resolve().parent.parent / ".demo" / "memory.json"

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


def remember() -> None:
    """Store the facts (the first process)."""
    with SyncStore(JsonFileStore(name="demo", path=DEMO_FILE)) as memory:
        for content, metadata in FACTS:
            result = memory.add(content, metadata)
            print(f"  stored {result.id[:8]}  {content}")


def recall() -> None:
    """Answer the questions from the file alone (a fresh process)."""
    with SyncStore(JsonFileStore(name="demo", path=DEMO_FILE)) as memory:
        print(f"  {memory.count()} memories found in {DEMO_FILE}")
        for question in QUESTIONS:
            print(f"\n  Q: {question}")
            for rank, hit in enumerate(memory.search(question, max_search_results=3), 1):
                score = (hit.metadata or {}).get("_relevanceScore")
                print(f"    {rank}. score {score}  {hit.content}")


def main() -> None:
    """Run each phase in its own process, or one phase when named on the command line."""
    if len(sys.argv) > 1:
        {"remember": remember, "recall": recall}[sys.argv[1]]()
        return
    shutil.rmtree(DEMO_FILE.parent, ignore_errors=True)
    for phase, title in (("remember", "Process 1 remembers"), ("recall", "Process 2 recalls")):
        print(f"\n== {title} ==")
        subprocess.run([sys.executable, __file__, phase], check=True)


if __name__ == "__main__":
    main()
