"""When a store's extraction runs: after every agent invocation, or every few."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentrecall.errors import InvalidArgumentError


@runtime_checkable
class ExtractionTrigger(Protocol):
    """Decides, at the end of each agent invocation, whether to save a store's new messages.

    An invocation (a *turn*) is one run of the agent on one input, however many model calls
    and tool rounds it took; the caller marks its end with ``end_turn()``. A trigger that
    never fires saves nothing until ``flush()``; messages of turns it skipped are saved at
    its next firing.
    """

    def fires(self, turn: int) -> bool:
        """Whether to save after turn number ``turn`` (1 for the first invocation)."""
        ...


@dataclass(frozen=True, slots=True)
class InvocationTrigger:
    """Fires after every agent invocation."""

    def fires(self, turn: int) -> bool:
        """Always ``True``."""
        return True


@dataclass(frozen=True, slots=True)
class IntervalTrigger:
    """Fires after every ``turns``-th agent invocation (turns ``turns``, ``2 * turns``, ...).

    The turn count belongs to the coordinator, so one instance shared by several stores fires
    for all of them on the same turns.

    Attributes:
        turns: invocations between two saves; a positive integer.
    """

    turns: int

    def __post_init__(self) -> None:
        if isinstance(self.turns, bool) or not isinstance(self.turns, int) or self.turns < 1:
            raise InvalidArgumentError(
                f"IntervalTrigger: turns must be a positive integer, got {self.turns!r}"
            )

    def fires(self, turn: int) -> bool:
        """Whether ``turn`` is a multiple of :attr:`turns`."""
        return turn % self.turns == 0
