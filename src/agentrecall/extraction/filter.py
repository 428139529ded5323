"""Which parts of a conversation extraction sees: content blocks dropped by kind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentrecall.errors import InvalidArgumentError
from agentrecall.messages import Message

BLOCK_KINDS = frozenset(
    {
        "text",
        "toolUse",
        "toolResult",
        "image",
        "document",
        "reasoningContent",
        "video",
        "audio",
        "guardContent",
        "citationsContent",
        "cachePoint",
    }
)
"""The kinds a filter can exclude: Strands block kinds, plus ``audio`` for OpenAI audio parts."""

DEFAULT_EXCLUDE = ("toolUse", "toolResult")
"""Tool traffic: calls and their results say little about the user and cost many tokens."""

# OpenAI and Anthropic content parts name their kind in "type"; these map onto Strands names.
_PART_KINDS = {
    "text": "text",
    "refusal": "text",
    "image_url": "image",
    "input_audio": "audio",
    "file": "document",
    "tool_use": "toolUse",
    "tool_result": "toolResult",
    "thinking": "reasoningContent",
}
_TOOL_CALL_FIELDS = ("tool_calls", "toolCalls")


def block_kind(block: Mapping[str, Any]) -> str:
    """Return a content block's kind: an OpenAI part's mapped ``type``, else its first key."""
    part_type = block.get("type")
    if isinstance(part_type, str):
        return _PART_KINDS.get(part_type, part_type)
    return next(iter(block), "")


@dataclass(frozen=True, slots=True, init=False)
class MessageFilter:
    """Drops content blocks by kind before messages reach an extractor or a store.

    Works on every message shape. In Strands messages each block is judged by its kind. In
    OpenAI and Anthropic messages string content counts as ``text``, each content part by its
    ``type`` (``image_url`` is ``image``, ``file`` is ``document``, ``input_audio`` is
    ``audio``, ``tool_use`` is ``toolUse``, ``tool_result`` is ``toolResult``),
    ``tool_calls`` as ``toolUse``, and a whole ``tool`` message as ``toolResult``. A message
    left with no content and no tool calls is dropped.

    Attributes:
        exclude: the kinds to drop.
    """

    exclude: frozenset[str]

    def __init__(self, exclude: Iterable[str] = DEFAULT_EXCLUDE) -> None:
        """Keep everything but the blocks whose kind is in ``exclude``.

        Args:
            exclude: kinds from :data:`BLOCK_KINDS`; the default drops tool calls and tool
                results, ``()`` keeps everything.

        Raises:
            InvalidArgumentError: ``exclude`` is a string or names an unknown kind.
        """
        if isinstance(exclude, str):
            raise InvalidArgumentError(
                f"MessageFilter: exclude must be a collection of block kinds, got {exclude!r}"
            )
        kinds = frozenset(exclude)
        unknown = sorted(str(kind) for kind in kinds - BLOCK_KINDS)
        if unknown:
            raise InvalidArgumentError(
                f"MessageFilter: unknown block kind(s) {', '.join(unknown)}; "
                f"expected some of {', '.join(sorted(BLOCK_KINDS))}"
            )
        object.__setattr__(self, "exclude", kinds)

    def apply(self, message: Message) -> dict[str, Any] | None:
        """Return a filtered copy of ``message``, or ``None`` when nothing is left.

        The copy keeps every other field (``metadata`` included); the input is not mutated.
        """
        if message.get("role") == "tool":
            return None if "toolResult" in self.exclude else dict(message)
        kept = dict(message)
        content = message.get("content")
        if isinstance(content, str) and "text" in self.exclude:
            kept["content"] = None
        elif isinstance(content, list):
            kept["content"] = [
                block
                for block in content
                if not (isinstance(block, Mapping) and block_kind(block) in self.exclude)
            ]
        if "toolUse" in self.exclude:
            for field in _TOOL_CALL_FIELDS:
                kept.pop(field, None)
        has_calls = any(kept.get(field) for field in _TOOL_CALL_FIELDS)
        return kept if kept.get("content") or has_calls else None
