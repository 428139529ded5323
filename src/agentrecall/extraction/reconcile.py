"""Reconciling extracted facts with what a store already holds, before they are written.

Extraction alone only adds: "lives in Lyon" and, later, "moved to Berlin" would sit side by
side. Here each new fact of a batch meets the current memories nearest to it in the store's
scope, and one model call decides, for all of them, whether each is new (``add``), replaces
some of them (``supersede``: they are retired, kept in the history) or is already known
(``duplicate``: nothing is written). Without a model, an opt-in embedding rule marks a fact
as a duplicate when a current memory is close enough in meaning.

Guarantees:

* **A fact is never lost**: an answer that cannot be read or followed, ids that were not
  shown for that fact, a failed model call, or a ``supersede`` the store refuses (an id
  retired meanwhile) all make the fact an ``add``, with a warning naming the store and why.
* **A batch written twice changes nothing the second time** (the coordinator retries a failed
  batch): a fact whose text is already current is added as always (the store dedups it)
  without asking the model, a retired memory is never a candidate again, and a
  ``supersede`` repeated with the same arguments is a no-op in the store.
* **At most one model call per batch**, and none when no fact has a candidate.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall.errors import InvalidArgumentError
from agentrecall.extraction.model_extractor import ModelExtractor
from agentrecall.extraction.reconcile_prompt import (
    ADD,
    RECONCILE_SYSTEM_PROMPT,
    Candidate,
    Decision,
    read_decisions,
    render_request,
)
from agentrecall.extraction.types import ExtractionResult, Extractor, ExtractorContext
from agentrecall.models.base import ChatModel
from agentrecall.stores.base import Capability
from agentrecall.stores.batches import add_batch

logger = logging.getLogger(__name__)

DEFAULT_CANDIDATES = 5
"""Nearest current memories shown to the model for each new fact."""

MAX_CANDIDATES = 50
"""The most candidates per fact a setting may ask for: more only lengthens the prompt."""

SUPERSEDE_REASON = "extraction: replaced by a newer fact"
"""The ``reason`` kept in the history of a memory a reconciled fact retires."""


@dataclass(frozen=True, slots=True)
class ReconcileConfig:
    """How a store's extracted facts are reconciled with its memories.

    Set it as ``ExtractionConfig(reconcile=...)``; ``True`` means all defaults.

    Attributes:
        model: the model that decides; ``None`` uses the extractor's (a
            :class:`~agentrecall.extraction.ModelExtractor`'s own model, else the memory
            manager's default model).
        candidates: how many nearest current memories each fact is shown with (the store's
            hybrid search when it has an embedder, keyword search otherwise), 1 to 50.
        use_model: ``False`` never asks a model: only the embedding rule applies.
        duplicate_threshold: the embedding rule, used when no model decides: a fact whose
            cosine similarity to a current memory of its scope is above this (0 to 1) is a
            duplicate and is not written. Needs a store with an embedder
            (``Capability.SEMANTIC``). ``None``: no such rule.
    """

    model: ChatModel | None = None
    candidates: int = DEFAULT_CANDIDATES
    use_model: bool = True
    duplicate_threshold: float | None = None

    def __post_init__(self) -> None:
        if self.model is not None and not isinstance(self.model, ChatModel):
            raise InvalidArgumentError(
                "ReconcileConfig: model must be a ChatModel (an object with an async complete "
                f"method) or None, got {type(self.model).__name__}"
            )
        count = self.candidates
        if not isinstance(count, int) or isinstance(count, bool) or not 0 < count <= MAX_CANDIDATES:
            raise InvalidArgumentError(
                f"ReconcileConfig: candidates must be an integer from 1 to {MAX_CANDIDATES}, "
                f"got {count!r}"
            )
        if not isinstance(self.use_model, bool):
            raise InvalidArgumentError(
                f"ReconcileConfig: use_model must be True or False, got {self.use_model!r}"
            )
        threshold = self.duplicate_threshold
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0 < threshold < 1
        ):
            raise InvalidArgumentError(
                "ReconcileConfig: duplicate_threshold must be a number between 0 and 1 "
                f"(a cosine similarity) or None, got {threshold!r}"
            )
        if not self.use_model and threshold is None:
            raise InvalidArgumentError(
                "ReconcileConfig: use_model=False without a duplicate_threshold reconciles "
                "nothing; give a duplicate_threshold, or set reconcile=False"
            )


def deciding_model(
    config: ReconcileConfig, extractor: Extractor | None, context: ExtractorContext
) -> ChatModel | None:
    """Return the model that reconciles for ``config``, or ``None`` when none decides."""
    if not config.use_model:
        return None
    if config.model is not None:
        return config.model
    if isinstance(extractor, ModelExtractor) and extractor.model is not None:
        return extractor.model
    return context.default_model


async def decide(
    store: Any,
    name: str,
    facts: Sequence[ExtractionResult],
    config: ReconcileConfig,
    model: ChatModel | None,
) -> list[Decision]:
    """Return a decision for each of ``facts``, in order; nothing is written here.

    With a ``model``: one call for the facts that have candidates (see the module's
    guarantees). Without one: the embedding rule when ``config`` has a threshold, else every
    fact is added (a warning says so, since reconciling was asked for).

    Raises:
        Exception: whatever the store's ``search`` raises (the batch is retried later, as
            for a failed write). A failed model call is not raised: its facts are added.
    """
    if not facts:
        return []
    if model is not None:
        return await _ask(store, name, facts, config.candidates, model)
    if config.duplicate_threshold is not None:
        return [await _by_embedding(store, fact, config.duplicate_threshold) for fact in facts]
    logger.warning(
        "store '%s': no model to reconcile extracted facts with; adding %d fact(s) as they are",
        name,
        len(facts),
    )
    return [ADD for _ in facts]


async def write(
    store: Any, name: str, facts: Sequence[ExtractionResult], decisions: Sequence[Decision]
) -> list[Exception]:
    """Write each fact as its decision says; return the errors of the writes that failed.

    Plain adds go in one batch (the store's ``add_many``); a fact with a ``valid_from`` (the
    decision's, else the extractor's) is added alone with it, when the store declares
    ``Capability.SUPERSEDE`` (other stores take no world time, so it is left out there).
    A ``supersede`` the store refuses with :class:`~agentrecall.errors.InvalidArgumentError`
    (an id retired or deleted since it was shown) is an ``add`` instead, logged.
    """
    timed = Capability.SUPERSEDE in getattr(store, "capabilities", ())
    plain: list[ExtractionResult] = []
    single: list[tuple[ExtractionResult, Decision, str | None]] = []
    for fact, decision in zip(facts, decisions, strict=True):
        valid_from = (decision.valid_from or fact.valid_from) if timed else None
        if decision.action == "add" and valid_from is None:
            plain.append(fact)
        elif decision.action != "duplicate":
            single.append((fact, decision, valid_from))
    errors = [e for e in await add_batch(store, [(f.content, f.metadata) for f in plain]) if e]
    for fact, decision, valid_from in single:
        try:
            await _write_one(store, name, fact, decision, valid_from)
        except Exception as error:
            errors.append(error)
    return errors


async def _write_one(
    store: Any, name: str, fact: ExtractionResult, decision: Decision, valid_from: str | None
) -> None:
    world: dict[str, Any] = {} if valid_from is None else {"valid_from": valid_from}
    if decision.action == "supersede":
        try:
            await store.supersede(
                list(decision.ids),
                fact.content,
                metadata=fact.metadata,
                reason=SUPERSEDE_REASON,
                **world,
            )
            return
        except InvalidArgumentError as error:
            logger.warning(
                "store '%s': could not supersede %s by an extracted fact (%s); adding it instead",
                name,
                ", ".join(decision.ids),
                error,
            )
    await store.add(fact.content, fact.metadata, **world)


async def _ask(
    store: Any, name: str, facts: Sequence[ExtractionResult], k: int, model: ChatModel
) -> list[Decision]:
    decisions: list[Decision | None] = []
    asked: list[tuple[int, list[Candidate]]] = []
    for index, fact in enumerate(facts):
        found = await _nearest(store, fact.content, k)
        if not found or any(c.content.strip() == fact.content.strip() for c in found):
            # Nothing to compare with, or already current (a retried batch, a restated fact):
            # an add, which the store dedups, settles it without a model.
            decisions.append(ADD)
        else:
            decisions.append(None)
            asked.append((index, found))
    if asked:
        answers = await _answers(name, [(facts[i].content, found) for i, found in asked], model)
        for (index, _), decision in zip(asked, answers, strict=True):
            if decision.problem is not None:
                logger.warning(
                    "store '%s': reconcile answer not followed for fact %r (%s); adding it",
                    name,
                    facts[index].content[:100],
                    decision.problem,
                )
            decisions[index] = decision
    return [ADD if decision is None else decision for decision in decisions]


async def _answers(
    name: str, shown: list[tuple[str, list[Candidate]]], model: ChatModel
) -> list[Decision]:
    try:
        answer = await model.complete(
            [{"role": "user", "content": render_request(shown)}], system=RECONCILE_SYSTEM_PROMPT
        )
    except Exception as error:
        logger.warning(
            "store '%s': the reconcile model call failed (%r); adding %d fact(s) as they are",
            name,
            error,
            len(shown),
        )
        return [ADD for _ in shown]
    return read_decisions(answer, [found for _, found in shown])


async def _nearest(store: Any, content: str, k: int) -> list[Candidate]:
    """The current memories of the store's scope nearest to ``content``, best first."""
    options: dict[str, Any] = {"max_search_results": k}
    if Capability.SEMANTIC in getattr(store, "capabilities", ()):
        options["mode"] = "hybrid"
    hits = await store.search(content, options)
    found: dict[str, Candidate] = {}
    for hit in hits:
        if isinstance(hit.id, str) and hit.id not in found:
            found[hit.id] = Candidate(hit.id, hit.content)
    return list(found.values())


async def _by_embedding(store: Any, fact: ExtractionResult, threshold: float) -> Decision:
    hits = await store.search(fact.content, {"mode": "semantic", "max_search_results": 1})
    hit = hits[0] if hits else None
    if hit is None or not isinstance(hit.id, str) or hit.content.strip() == fact.content.strip():
        return ADD  # nothing near, or the same text: the store's own dedup applies
    score = (hit.metadata or {}).get("_relevanceScore")
    if isinstance(score, int | float) and score > threshold:
        return Decision("duplicate", (hit.id,))
    return ADD
