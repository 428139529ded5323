"""``ExtractionCoordinator``: saves the conversation to stores in the background.

One coordinator serves one agent. The agent loop tells it what happened, and it decides when
each store gets which messages::

    coordinator.record(new_messages)   # after messages join the conversation
    coordinator.end_turn()             # after each agent invocation
    await coordinator.flush()          # before the program ends
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentrecall.errors import AggregateMemoryError, InvalidArgumentError
from agentrecall.extraction import reconcile
from agentrecall.extraction.config import ResolvedExtraction
from agentrecall.extraction.reconcile_prompt import ADD
from agentrecall.extraction.types import AddMessagesContext, ExtractorContext
from agentrecall.messages import Message, check_message, content_size
from agentrecall.models.base import ChatModel

logger = logging.getLogger(__name__)

BACKOFF_AFTER = 10
"""Consecutive failed saves after which a store is backed off."""

PROBE_EVERY = 3
"""While backed off, only every this-many-th save request is attempted."""

EXTRACT_CHARS = 24_000
"""The most message text (UTF-16 code units) one extractor call reads: about 6,000 tokens.

A backlog larger than that (after an outage, or a long run between triggers) goes to the
extractor in parts, oldest first, each saved on its own: one call for all of it could pass
the model's context window and fail at every retry."""

Batch = list[tuple[int, dict[str, Any]]]


@dataclass(eq=False)
class _StoreState:
    store: Any
    extraction: ResolvedExtraction
    name: str
    # Newest sequence number handed to a save: advanced before the write, rolled back if it
    # fails. ``saved`` trails it while a write is in flight, and only ``saved`` may let the
    # shared buffer shrink, or a failed write could find its messages gone.
    mark: int = -1
    saved: int = -1
    failures: int = 0
    backoff_requests: int = 0
    tail: asyncio.Task[None] | None = None


class ExtractionCoordinator:
    """Feeds each store the messages it has not saved yet, when its triggers say so.

    Guarantees:

    * **Every recorded message reaches every store at least once**, unless the program ends
      before a save succeeds (call :meth:`flush` at the end). A save cancelled midway (its
      event loop ended, as each ``asyncio.run`` does) leaves what it had not saved to the next
      save. With an extractor, a backlog of more than :data:`EXTRACT_CHARS` of text is
      extracted in parts, oldest first, each saved on its own; a failed save (or part) is
      retried from the first message it had not saved at the next request, so the model runs
      again on that part and entries already added from it may be added again (stores dedup
      identical content, and reconciling neither supersedes nor adds twice).
    * **Saves for one store run one at a time, in order**; different stores never wait for
      each other, and a failing store does not hold back a healthy one.
    * **The agent loop never sees an extraction error**: failures are logged (a warning,
      an error from the 10th consecutive failure of a store) and retried later. After 10
      consecutive failures a store is backed off: only every 3rd request is attempted, until
      one succeeds and saves the whole backlog. :meth:`flush` ignores the backoff.
    * **Each message has a sequence number** (0, 1, 2, ... in recording order, per
      coordinator) passed to ``add_messages`` with the batch, so a store can recognise a batch
      sent again.

    A save takes the store's unsaved messages, applies its filter to copies, and writes the
    survivors: through the extractor (a part at a time), the reconciling step when the store
    has one (see :mod:`agentrecall.extraction.reconcile`: at most one more model call per
    part), and the store's ``add_many`` (one write for each part's plain adds;
    ``add`` per entry for a store without it, or after a failed batch), or, without
    an extractor, in one ``store.add_messages(messages, AddMessagesContext(...))`` call. A
    batch the filter empties writes nothing and counts as saved. Messages every store has
    saved leave the buffer.
    """

    def __init__(
        self,
        bindings: Iterable[tuple[Any, ResolvedExtraction]],
        *,
        default_model: ChatModel | None = None,
    ) -> None:
        """Set up extraction for some stores.

        Args:
            bindings: ``(store, resolved)`` pairs, ``resolved`` coming from
                :func:`~agentrecall.extraction.resolve_extraction`. A store's triggers,
                extractor and write methods are taken as given; a memory manager checks them.
            default_model: the model extractors without their own use.

        Raises:
            InvalidArgumentError: a pair's second item is not a ``ResolvedExtraction``.
        """
        self._states: list[_StoreState] = []
        for store, resolved in bindings:
            if not isinstance(resolved, ResolvedExtraction):
                raise InvalidArgumentError(
                    "ExtractionCoordinator: bindings must pair each store with a "
                    f"ResolvedExtraction, got {type(resolved).__name__}"
                )
            name = str(getattr(store, "name", type(store).__name__))
            self._states.append(_StoreState(store, resolved, name))
        self._context = ExtractorContext(default_model=default_model)
        self._buffer: deque[tuple[int, dict[str, Any]]] = deque()
        self._next_sequence = 0
        self._turns = 0

    def record(self, messages: Iterable[Message]) -> None:
        """Add messages that just joined the conversation, in conversation order.

        Record every message once: user prompts, assistant replies and tool results alike.
        A shallow copy is kept (the mapping and its content list), so replacing a message's
        content later does not change what is saved.

        Raises:
            InvalidArgumentError: a message is not usable (see
                :func:`~agentrecall.messages.check_message`); nothing is recorded then.
        """
        batch = list(messages)
        for index, message in enumerate(batch):
            check_message(message, index)
        if not self._states:
            return
        for message in batch:
            self._buffer.append((self._next_sequence, _snapshot(message)))
            self._next_sequence += 1

    def end_turn(self) -> None:
        """Count one agent invocation and start the saves its triggers ask for.

        Returns at once: saves run as tasks on the running event loop. Never raises; called
        outside an event loop it logs a warning and the messages wait for the next save.
        """
        self._turns += 1
        due = [state for state in self._states if self._fires(state)]
        if not due:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            logger.warning(
                "end_turn() was called outside an event loop; %d store(s) will save their "
                "messages at the next save instead",
                len(due),
            )
            return
        for state in due:
            self._request(state, bypass_backoff=False)

    async def flush(self) -> None:
        """Save every store's unsaved messages now, ignoring backoff, and wait for all saves.

        Also waits for saves already running and for any started while waiting. Never raises
        (a failed save is logged and stays pending); cancelling the call cancels only the
        waiting.
        """
        for state in self._states:
            self._request(state, bypass_backoff=True)
        await self.wait_idle()

    async def wait_idle(self) -> None:
        """Wait until no save is queued or running, without requesting any. Never raises."""
        while True:
            running = [s.tail for s in self._states if s.tail is not None and not s.tail.done()]
            if not running:
                return
            await asyncio.wait(running)

    def _fires(self, state: _StoreState) -> bool:
        try:
            return any(trigger.fires(self._turns) for trigger in state.extraction.triggers)
        except Exception:
            logger.warning(
                "an extraction trigger of store '%s' raised; not saving after turn %d",
                state.name,
                self._turns,
                exc_info=True,
            )
            return False

    def _request(self, state: _StoreState, *, bypass_backoff: bool) -> None:
        if not bypass_backoff and state.failures >= BACKOFF_AFTER:
            state.backoff_requests += 1
            if state.backoff_requests % PROBE_EVERY:
                logger.debug("store '%s' is backed off; save request skipped", state.name)
                return
        state.tail = asyncio.get_running_loop().create_task(self._save_after(state.tail, state))

    async def _save_after(self, previous: asyncio.Task[None] | None, state: _StoreState) -> None:
        if previous is not None and not previous.done():
            # wait() rather than await: the previous save's fate must not end this one.
            await asyncio.wait([previous])
        await self._save(state)

    async def _save(self, state: _StoreState) -> None:
        pending = [
            (sequence, message) for sequence, message in self._buffer if sequence > state.mark
        ]
        if not pending:
            return
        done = state.mark  # the newest message saved, as each part of the batch is
        state.mark = pending[-1][0]
        try:
            batch = _filtered(state, pending)
            parts = _parts(batch) if state.extraction.extractor is not None else [batch]
            for part in parts:
                if part:
                    await self._write(state, part)
                    done = part[-1][0]
        except BaseException as error:
            # What the parts before saved stays saved; the next save takes the rest again.
            state.mark = state.saved = max(done, state.saved)
            self._trim()
            if not isinstance(error, Exception):
                raise  # cancelled (its event loop ended, say): not a failure
            state.failures += 1
            _log_failure(state, sum(1 for n, _ in pending if n > done), error)
            return
        state.saved = state.mark
        if batch:
            state.failures = state.backoff_requests = 0
        self._trim()

    async def _write(self, state: _StoreState, batch: Batch) -> None:
        messages = [message for _, message in batch]
        extractor = state.extraction.extractor
        if extractor is None:
            sequence_numbers = [sequence for sequence, _ in batch]
            await state.store.add_messages(
                messages, AddMessagesContext(sequence_numbers=sequence_numbers)
            )
            return
        entries = await extractor.extract(messages, self._context)
        settings = state.extraction.reconcile
        if settings is None:
            decisions = [ADD for _ in entries]
        else:
            model = reconcile.deciding_model(settings, extractor, self._context)
            decisions = await reconcile.decide(state.store, state.name, entries, settings, model)
        errors = await reconcile.write(state.store, state.name, entries, decisions)
        if errors:
            raise AggregateMemoryError(
                f"failed to write {len(errors)} of {len(entries)} extracted entries", errors
            )

    def _trim(self) -> None:
        floor = min(state.saved for state in self._states)
        while self._buffer and self._buffer[0][0] <= floor:
            self._buffer.popleft()


def _filtered(state: _StoreState, pending: Sequence[tuple[int, dict[str, Any]]]) -> Batch:
    message_filter = state.extraction.filter
    return [
        (sequence, kept)
        for sequence, message in pending
        if (kept := message_filter.apply(message)) is not None
    ]


def _parts(batch: Batch) -> list[Batch]:
    """Cut ``batch`` into parts of at most :data:`EXTRACT_CHARS` of text, in order.

    A message larger than that alone is a part of its own.
    """
    parts: list[Batch] = [[]]
    size = 0
    for item in batch:
        length = content_size(item[1])
        if parts[-1] and size + length > EXTRACT_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(item)
        size += length
    return parts


def _snapshot(message: Message) -> dict[str, Any]:
    copy = dict(message)
    if isinstance(copy.get("content"), list):
        copy["content"] = list(copy["content"])
    return copy


def _log_failure(state: _StoreState, unsaved: int, error: Exception) -> None:
    backed_off = state.failures >= BACKOFF_AFTER
    logger.log(
        logging.ERROR if backed_off else logging.WARNING,
        "saving %d message(s) to store '%s' failed (%d in a row); they will be sent again%s: %r",
        unsaved,
        state.name,
        state.failures,
        f" (backed off: one save request in {PROBE_EVERY} is attempted)" if backed_off else "",
        error,
        exc_info=error,
    )
