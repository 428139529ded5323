"""Extraction that reconciles: new facts meet the store's current memories before being written.

A real SQLiteStore and the real coordinator; only the hosted model is scripted. Its reconcile
answers come from the prompt it is shown (the ids it names are read from there), as a truthful
model would answer.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentrecall import LocalEmbedder, MemoryManager, OpenAICompatibleModel, SQLiteStore
from agentrecall.errors import InvalidArgumentError, ModelError
from agentrecall.extraction import (
    ExtractionConfig,
    ExtractionCoordinator,
    ExtractionResult,
    ExtractorContext,
    InvocationTrigger,
    ModelExtractor,
    ReconcileConfig,
    resolve_extraction,
)
from agentrecall.extraction.prompt import OUTPUT_INSTRUCTION
from agentrecall.extraction.reconcile_prompt import (
    RECONCILE_SYSTEM_PROMPT,
    Candidate,
    Decision,
    read_decisions,
)
from agentrecall.messages import Message
from agentrecall.stores import JsonFileStore
from agentrecall.testing import ChatServer, ModelCall, ReceivedRequest, ScriptedChatModel

LYON = "The user lives in Lyon."
BERLIN = "The user moved to Berlin."
CAT = "The user has a cat called Miso."


class ScriptedExtractor:
    """Extracts the same facts from every batch (each call is counted)."""

    def __init__(self, *facts: str | ExtractionResult) -> None:
        self.facts = [f if isinstance(f, ExtractionResult) else ExtractionResult(f) for f in facts]
        self.calls = 0

    async def extract(
        self, messages: Sequence[Message], context: ExtractorContext | None = None
    ) -> list[ExtractionResult]:
        self.calls += 1
        return list(self.facts)


def shown(call: ModelCall) -> list[tuple[str, dict[str, str]]]:
    """The facts of a reconcile request, each with its candidates as ``{content: id}``."""
    assert call.system == RECONCILE_SYSTEM_PROMPT
    facts: list[tuple[str, dict[str, str]]] = []
    for line in call.messages[0]["content"].splitlines():
        if fact := re.fullmatch(r"Fact \d+: (.*)", line):
            facts.append((fact[1], {}))
        elif candidate := re.fullmatch(r"  \d+\. \[id: ([^\]]+)\] (.*)", line):
            facts[-1][1][candidate[2]] = candidate[1]
    return facts


Plan = dict[str, tuple[Any, ...]]


def truthful(plan: Plan) -> Callable[[ModelCall], str]:
    """Answer reconcile requests as ``plan`` says: fact text -> ("supersede", old text, ...),
    ("duplicate", old text) or ("add",), with ``{"valid_from": ...}`` as an optional last item."""

    def answer(call: ModelCall) -> str:
        decisions = []
        for number, (fact, candidates) in enumerate(shown(call), 1):
            action, *rest = plan.get(fact, ("add",))
            extra = rest.pop() if rest and isinstance(rest[-1], dict) else {}
            decision: dict[str, Any] = {"fact": number, "action": action, **extra}
            if action == "supersede":
                decision["ids"] = [candidates[old] for old in rest]
            elif action == "duplicate":
                decision["id"] = candidates[rest[0]]
            decisions.append(decision)
        return "```json\n" + json.dumps({"decisions": decisions}) + "\n```"

    return answer


def extracting(facts: Sequence[dict[str, Any]], plan: Plan) -> Callable[[ModelCall], str]:
    """One model for both calls: extraction requests get ``facts``, reconcile ones ``plan``."""
    decide = truthful(plan)

    def answer(call: ModelCall) -> str:
        if call.system is not None and OUTPUT_INSTRUCTION in call.system:
            return json.dumps(list(facts))
        return decide(call)

    return answer


def coordinator(store: Any, default_model: Any = None) -> ExtractionCoordinator:
    resolved = resolve_extraction(store.extraction, store)
    assert resolved is not None
    return ExtractionCoordinator([(store, resolved)], default_model=default_model)


async def save(c: ExtractionCoordinator, text: str = "we talked") -> None:
    c.record([{"role": "user", "content": text}])
    await c.flush()


def reconciling(extractor: Any, model: Any = None, **settings: Any) -> ExtractionConfig:
    return ExtractionConfig(
        trigger=InvocationTrigger(),
        extractor=extractor,
        reconcile=ReconcileConfig(model=model, **settings),
    )


async def current(store: SQLiteStore) -> list[str]:
    return [record.content for record in await store.list()]


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    async with SQLiteStore(tmp_path / "memory.db", name="facts") as opened:
        yield opened


# The model decides


async def test_a_move_supersedes_the_old_home_and_search_finds_only_the_new(
    tmp_path: Path,
) -> None:
    model = ScriptedChatModel(
        default=extracting(
            [{"content": BERLIN, "valid_from": "2025-03-01"}], {BERLIN: ("supersede", LYON)}
        )
    )
    async with SQLiteStore(
        tmp_path / "memory.db",
        name="facts",
        extraction=ExtractionConfig(trigger=InvocationTrigger(), extractor=ModelExtractor()),
    ) as store:
        lyon = (await store.add(LYON)).id
        resolved = resolve_extraction(store.extraction, store)
        assert resolved is not None and resolved.reconcile == ReconcileConfig()  # on by default
        await save(coordinator(store, default_model=model), "We moved to Berlin in March.")

        hits = await store.search("where does the user live now", {"mode": "keyword"})
        assert [hit.content for hit in hits] == [BERLIN]
        old = await store.get(lyon, include_superseded=True)
        assert old is not None and old.superseded_by == hits[0].id
        assert old.valid_until == "2025-03-01T00:00:00.000Z"
        new = await store.get(str(hits[0].id))
        assert new is not None and new.valid_from == "2025-03-01T00:00:00.000Z"
        [version] = await store.history(lyon)
        assert (version.change, version.content, version.superseded_by) == (
            "supersede",
            LYON,
            old.superseded_by,
        )
    assert len(model.calls) == 2  # the extraction, then one reconcile call


async def test_one_reconcile_call_per_batch_shows_every_fact_with_its_candidates(
    store: SQLiteStore,
) -> None:
    lyon, tea = (r.id for r in await store.add_many([(LYON, None), ("The user drinks tea.", None)]))
    facts = [BERLIN, "The user drinks green tea every morning.", CAT]
    model = ScriptedChatModel(default=truthful({}))
    store.extraction = reconciling(ScriptedExtractor(*facts), model)
    await save(coordinator(store))

    [call] = model.calls
    asked = dict(shown(call))
    assert list(asked) == facts
    assert lyon in asked[BERLIN].values() and tea in asked[facts[1]].values()
    assert sorted(await current(store)) == sorted([LYON, "The user drinks tea.", *facts])


async def test_no_candidates_means_no_model_call(store: SQLiteStore) -> None:
    model = ScriptedChatModel()  # any call fails the test
    store.extraction = reconciling(ScriptedExtractor(LYON, CAT), model)
    await save(coordinator(store))
    assert model.calls == []
    assert sorted(await current(store)) == sorted([LYON, CAT])


async def test_a_duplicate_writes_nothing(store: SQLiteStore) -> None:
    berlin = (await store.add("The user lives in Berlin.")).id
    restated = "The user is based in Berlin these days."
    model = ScriptedChatModel(
        default=truthful({restated: ("duplicate", "The user lives in Berlin.")})
    )
    store.extraction = reconciling(ScriptedExtractor(restated), model)
    await save(coordinator(store))
    assert len(model.calls) == 1
    assert await current(store) == ["The user lives in Berlin."]
    assert await store.count(include_superseded=True) == 1
    assert await store.history(berlin) == []


async def test_the_reconcile_answer_gives_world_time(store: SQLiteStore) -> None:
    await store.add(LYON)
    model = ScriptedChatModel(
        default=truthful({BERLIN: ("supersede", LYON, {"valid_from": "2024-06-15"})})
    )
    store.extraction = reconciling(ScriptedExtractor(BERLIN), model)
    await save(coordinator(store))
    [record] = await store.list()
    assert (record.content, record.valid_from) == (BERLIN, "2024-06-15T00:00:00.000Z")


# A fact is never lost


GARBAGE = {
    "prose": "I think the user moved.",
    "not json": '{"decisions": [{"fact": 1, "action": "supersede", "ids": [',
    "an array": '[{"fact": 1, "action": "duplicate", "id": "ID"}]',
    "decisions not a list": '{"decisions": "supersede"}',
    "no decision": '{"decisions": []}',
    "another fact": '{"decisions": [{"fact": 2, "action": "duplicate", "id": "ID"}]}',
    "fact as text": '{"decisions": [{"fact": "1", "action": "duplicate", "id": "ID"}]}',
    "unknown id": '{"decisions": [{"fact": 1, "action": "supersede", "ids": ["ID", "nope"]}]}',
    "unknown duplicate": '{"decisions": [{"fact": 1, "action": "duplicate", "id": "nope"}]}',
    "ids not a list": '{"decisions": [{"fact": 1, "action": "supersede", "ids": "ID"}]}',
    "empty ids": '{"decisions": [{"fact": 1, "action": "supersede", "ids": []}]}',
    "unknown action": '{"decisions": [{"fact": 1, "action": "delete", "id": "ID"}]}',
    "conflicting": '{"decisions": [{"fact": 1, "action": "duplicate", "id": "ID"},'
    ' {"fact": 1, "action": "add"}]}',
}


@pytest.mark.parametrize("answer", list(GARBAGE.values()), ids=list(GARBAGE))
async def test_an_answer_that_cannot_be_followed_adds_the_fact(
    store: SQLiteStore, answer: str, caplog: pytest.LogCaptureFixture
) -> None:
    lyon = (await store.add(LYON)).id
    model = ScriptedChatModel([answer.replace("ID", lyon)])
    store.extraction = reconciling(ScriptedExtractor(BERLIN), model)
    with caplog.at_level(logging.WARNING, logger="agentrecall.extraction.reconcile"):
        await save(coordinator(store))
    assert len(model.calls) == 1
    assert sorted(await current(store)) == sorted([LYON, BERLIN])
    [warning] = caplog.records
    assert "store 'facts'" in warning.getMessage() and "adding it" in warning.getMessage()


@pytest.mark.parametrize(
    "error", [ModelError("HTTP 500 from the model"), TimeoutError("read timed out")]
)
async def test_a_failed_model_call_adds_the_facts(
    store: SQLiteStore, error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    await store.add(LYON)
    store.extraction = reconciling(ScriptedExtractor(BERLIN, CAT), ScriptedChatModel([error]))
    with caplog.at_level(logging.WARNING):
        await save(coordinator(store))
    assert sorted(await current(store)) == sorted([LYON, BERLIN, CAT])
    [warning] = caplog.records
    assert "store 'facts'" in warning.getMessage() and "call failed" in warning.getMessage()


class RetiringModel:
    """Answers "supersede" for the one candidate, which it has retired itself meanwhile."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    async def complete(self, messages: Sequence[Message], *, system: str | None = None) -> str:
        call = ModelCall([dict(message) for message in messages], system)
        [(fact, candidates)] = shown(call)
        [old] = candidates.values()
        await self.store.supersede([old], "The user lives in Paris.")
        return json.dumps({"decisions": [{"fact": 1, "action": "supersede", "ids": [old]}]})


async def test_a_supersede_the_store_refuses_adds_the_fact(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    await store.add(LYON)
    store.extraction = reconciling(ScriptedExtractor(BERLIN), RetiringModel(store))
    with caplog.at_level(logging.WARNING):
        await save(coordinator(store))
    assert sorted(await current(store)) == sorted(["The user lives in Paris.", BERLIN])
    [warning] = caplog.records
    assert "could not supersede" in warning.getMessage() and "adding it instead" in str(
        warning.getMessage()
    )


# Retries


async def test_the_same_batch_twice_changes_nothing_the_second_time(store: SQLiteStore) -> None:
    lyon = (await store.add(LYON)).id
    await store.add("The user drinks tea.")
    facts = [BERLIN, "The user likes tea.", CAT]
    plan: Plan = {BERLIN: ("supersede", LYON), facts[1]: ("duplicate", "The user drinks tea.")}
    model = ScriptedChatModel(default=truthful(plan))

    async def run_batch() -> tuple[Any, ...]:
        store.extraction = reconciling(ScriptedExtractor(*facts), model)
        await save(coordinator(store))  # a new coordinator sends the batch again
        return (
            await store.list(include_superseded=True),
            await store.history(lyon),
            [page async for page in store.versions()],
        )

    first = await run_batch()
    assert sorted(await current(store)) == sorted(["The user drinks tea.", BERLIN, CAT])
    assert await run_batch() == first
    assert [version.change for version in first[1]] == ["supersede"]


class FlakyStore(SQLiteStore):
    """A real store whose ``add`` fails once for each content in ``fail_once``."""

    fail_once: set[str]

    async def add(self, content: str, metadata: Any = None, **options: Any) -> Any:
        if content in self.fail_once:
            self.fail_once.discard(content)
            raise OSError("disk hiccup")
        return await super().add(content, metadata, **options)


async def test_a_batch_the_coordinator_retries_neither_adds_nor_supersedes_twice(
    tmp_path: Path,
) -> None:
    async with FlakyStore(tmp_path / "memory.db", name="facts") as store:
        store.fail_once = {CAT}
        lyon = (await store.add(LYON)).id
        extractor = ScriptedExtractor(BERLIN, CAT)
        model = ScriptedChatModel(default=truthful({BERLIN: ("supersede", LYON)}))
        store.extraction = reconciling(extractor, model)
        c = coordinator(store)
        await save(c)  # Berlin supersedes Lyon; the cat fails: the batch is kept
        assert await current(store) == [BERLIN]
        await c.flush()  # the batch again: extracted and reconciled anew
        assert extractor.calls == 2
        assert sorted(await current(store)) == sorted([BERLIN, CAT])
        assert await store.count(include_superseded=True) == 3
        assert [version.change for version in await store.history(lyon)] == ["supersede"]
        # The second time Berlin was already current: only the cat was asked about.
        assert [fact for fact, _ in shown(model.calls[-1])] == [CAT]


async def test_a_manager_over_http_keeps_the_newest_home(tmp_path: Path) -> None:
    """The whole path: a MemoryManager, its model over real HTTP, a real SQLiteStore."""
    said = {"I live in Lyon.": LYON, "We moved to Berlin.": BERLIN}
    decide = truthful({BERLIN: ("supersede", LYON)})
    kinds: list[str] = []

    def respond(request: ReceivedRequest) -> str:
        text = request.last_user_text or ""
        if request.system == RECONCILE_SYSTEM_PROMPT:
            kinds.append("reconcile")
            return decide(ModelCall([{"role": "user", "content": text}], request.system))
        kinds.append("extract")
        return json.dumps([{"content": fact} for line, fact in said.items() if line in text])

    async with SQLiteStore(
        tmp_path / "memory.db",
        name="facts",
        extraction=ExtractionConfig(trigger=InvocationTrigger()),
    ) as store:
        with ChatServer(responder=respond) as server:
            async with OpenAICompatibleModel(server.base_url, "m") as model:
                manager = MemoryManager([store], model=model)
                for line in said:
                    manager.record([{"role": "user", "content": line}])
                    manager.end_turn()
                    await manager.flush()
        assert kinds == ["extract", "extract", "reconcile"]  # Lyon met an empty store
        assert [hit.content for hit in await store.search("Where does the user live?")] == [BERLIN]
        assert await store.count(include_superseded=True) == 2


# Scopes


async def test_candidates_come_from_the_facts_scope_only(store: SQLiteStore) -> None:
    alice, bob = store.scope(user_id="alice"), store.scope(user_id="bob")
    await alice.add(LYON)
    await bob.add("The user lives in Paris.")
    model = ScriptedChatModel(default=truthful({BERLIN: ("supersede", "The user lives in Paris.")}))
    bob.extraction = reconciling(ScriptedExtractor(BERLIN), model)
    await save(coordinator(bob))
    [call] = model.calls
    assert [list(candidates) for _, candidates in shown(call)] == [["The user lives in Paris."]]
    assert await current(alice) == [LYON]
    assert await current(bob) == [BERLIN]


# Without a model: the embedding rule


async def test_the_embedding_rule_drops_close_restatements(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "memory.db", name="facts", embedder=LocalEmbedder()) as store:
        await store.add("The user lives in Berlin.")
        facts = ["User resides in Berlin", "The user lives in Munich.", "The user has a dog."]
        store.extraction = ExtractionConfig(
            trigger=InvocationTrigger(),
            extractor=ScriptedExtractor(*facts),
            reconcile=ReconcileConfig(use_model=False, duplicate_threshold=0.85),
        )
        await save(coordinator(store, default_model=ScriptedChatModel()))
        assert sorted(await current(store)) == sorted(["The user lives in Berlin.", *facts[1:]])


async def test_the_embedding_rule_applies_when_no_model_is_at_hand(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "memory.db", name="facts", embedder=LocalEmbedder()) as store:
        await store.add("The user lives in Berlin.")
        store.extraction = ExtractionConfig(
            trigger=InvocationTrigger(),
            extractor=ScriptedExtractor("User resides in Berlin"),
            reconcile=ReconcileConfig(duplicate_threshold=0.85),
        )
        await save(coordinator(store))
        assert await current(store) == ["The user lives in Berlin."]


# Settings


def test_on_by_default_only_for_a_model_extractor_and_a_superseding_store(
    tmp_path: Path,
) -> None:
    sqlite = SQLiteStore(tmp_path / "memory.db", name="facts")
    resolved = resolve_extraction(True, sqlite)
    assert resolved is not None and resolved.reconcile == ReconcileConfig()
    custom = resolve_extraction(ExtractionConfig(extractor=ScriptedExtractor()), sqlite)
    assert custom is not None and custom.reconcile is None
    off = resolve_extraction({"reconcile": False}, sqlite)
    assert off is not None and off.reconcile is None
    json_store = JsonFileStore(name="notes", path=tmp_path / "notes.json")
    plain = resolve_extraction(True, json_store)
    assert plain is not None and plain.reconcile is None


def test_settings_a_store_cannot_follow_are_refused(tmp_path: Path) -> None:
    sqlite = SQLiteStore(tmp_path / "memory.db", name="facts")
    with pytest.raises(InvalidArgumentError, match=r"store 'facts'.*Capability\.SEMANTIC"):
        resolve_extraction(
            ExtractionConfig(reconcile=ReconcileConfig(duplicate_threshold=0.9)), sqlite
        )
    json_store = JsonFileStore(name="notes", path=tmp_path / "notes.json")
    with pytest.raises(InvalidArgumentError, match=r"store 'notes'.*Capability\.SUPERSEDE"):
        resolve_extraction(ExtractionConfig(reconcile=True), json_store)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"candidates": 0}, "candidates must be an integer from 1 to 50, got 0"),
        ({"candidates": True}, "candidates must be an integer"),
        ({"duplicate_threshold": 1.5}, "duplicate_threshold must be a number between 0 and 1"),
        ({"duplicate_threshold": "0.9"}, "duplicate_threshold must be a number"),
        ({"use_model": False}, "reconciles nothing"),
        ({"use_model": "no"}, "use_model must be True or False"),
        ({"model": "gpt"}, "model must be a ChatModel"),
    ],
)
def test_reconcile_config_checks_its_fields(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        ReconcileConfig(**settings)


def test_extraction_config_checks_reconcile() -> None:
    with pytest.raises(InvalidArgumentError, match="reconcile must be True, False, None or a"):
        ExtractionConfig(reconcile="yes")  # type: ignore[arg-type]


# Reading answers


def test_read_decisions_follows_a_fenced_answer_and_checks_each_fact() -> None:
    candidates = [[Candidate("a", "A")], [Candidate("b", "B"), Candidate("c", "C")], []]
    answer = (
        "Here you go:\n```json\n"
        + json.dumps(
            {
                "decisions": [
                    {"fact": 1, "action": "duplicate", "id": "a"},
                    {
                        "fact": 2,
                        "action": "supersede",
                        "ids": ["c", "b", "c"],
                        "valid_from": "2025-01-02",
                    },
                    {"fact": 3, "action": "supersede", "ids": ["a"]},
                ]
            }
        )
        + "\n```"
    )
    first, second, third = read_decisions(answer, candidates)
    assert first == Decision("duplicate", ("a",))
    assert second == Decision("supersede", ("c", "b"), "2025-01-02")
    assert third.action == "add" and third.problem is not None and "'a'" in third.problem
