"""Values and contracts shared by the extraction pieces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentrecall.messages import Message
from agentrecall.models.base import ChatModel
from agentrecall.types import JsonObject


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    """One memory distilled from a conversation, ready for a store's ``add``.

    Attributes:
        content: the memory's text.
        metadata: metadata to store with it, or ``None``.
        valid_from: when the fact became true in the world, as an ISO 8601 date or time with
            an offset (``"2025-03-01"``), or ``None`` when the conversation did not say. Passed
            to the store's ``add``/``supersede`` when it declares ``Capability.SUPERSEDE``.
    """

    content: str
    metadata: JsonObject | None = None
    valid_from: str | None = None


@dataclass(frozen=True, slots=True)
class ExtractorContext:
    """What a coordinator tells an extractor about the agent it works for.

    Attributes:
        default_model: the model an extractor without one of its own should use.
    """

    default_model: ChatModel | None = None


@runtime_checkable
class Extractor(Protocol):
    """Turns a batch of conversation messages into memories."""

    async def extract(
        self, messages: Sequence[Message], context: ExtractorContext | None = None
    ) -> list[ExtractionResult]:
        """Return the memories worth keeping from ``messages`` (possibly none).

        Raising makes the coordinator retry the whole batch later.
        """
        ...


@dataclass(frozen=True, slots=True)
class AddMessagesContext:
    """What a coordinator passes to a store's ``add_messages`` with each batch.

    Attributes:
        sequence_numbers: the position of each message of the batch in the conversation,
            index for index: increasing, with gaps where messages were filtered out, and the
            same when a failed batch is sent again, so a store can drop what it already has.
    """

    sequence_numbers: list[int] | None = None
