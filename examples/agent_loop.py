"""A chat agent with long-term and conversation memory, in one plain loop.

Run it against any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp)::

    python examples/agent_loop.py http://localhost:11434/v1 llama3.1

Facts the model extracts land in ``agent-data/facts.db``; the conversation is kept in
``agent-data/conversations.db``. Stop and start it again: it still knows you.
"""

from __future__ import annotations

import asyncio
import os
import sys

from agentrecall import (
    BufferMemory,
    ExtractionConfig,
    IntervalTrigger,
    MemoryManager,
    OpenAICompatibleModel,
    SQLiteStore,
)


async def chat(base_url: str, model_name: str, turns: list[str], data: str) -> list[str]:
    """Answer each of ``turns`` in one session, remembering facts across sessions."""
    model = OpenAICompatibleModel(base_url, model_name, api_key=os.getenv("OPENAI_API_KEY"))
    facts = SQLiteStore(  # stems words: "Which seat do I like?" finds "prefers aisle seats"
        f"{data}/facts.db",
        name="facts",
        extraction=ExtractionConfig(trigger=IntervalTrigger(2)),  # every 2 turns
    )
    manager = MemoryManager([facts], model=model)
    conversation = BufferMemory(max_tokens=3000, path=f"{data}/conversations.db")
    replies = []
    async with model, conversation, facts:
        for text in turns:
            history = await conversation.read("me")
            ask = {"role": "user", "content": text}
            manager.record([ask])  # what the conversation gains
            answer = await model.complete(await manager.inject([*history, ask]))
            reply = {"role": "assistant", "content": answer}
            manager.record([reply])
            manager.end_turn()  # extraction may run now
            await conversation.write([*history, ask, reply], "me")
            replies.append(answer)
        await manager.flush()  # extract what the triggers left
    return replies


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} BASE_URL MODEL  (then type one message per line)")
    url, name = sys.argv[1], sys.argv[2]
    for line in sys.stdin:
        if line.strip():  # a blank line is no message
            print(asyncio.run(chat(url, name, [line.strip()], "agent-data"))[0], flush=True)
