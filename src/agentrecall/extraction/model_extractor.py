"""``ModelExtractor``: a chat model reads the conversation and writes down the facts."""

from __future__ import annotations

from collections.abc import Sequence

from agentrecall._internal.http import excerpt
from agentrecall.errors import InvalidArgumentError, ModelError
from agentrecall.extraction.prompt import read_answer, render_transcript, system_prompt
from agentrecall.extraction.types import ExtractionResult, ExtractorContext
from agentrecall.messages import Message
from agentrecall.models.base import ChatModel


class ModelExtractor:
    """Extracts durable facts from a conversation with one chat model call per batch.

    The model gets a system prompt (``system_prompt`` or a default asking for durable,
    self-contained facts about the user) followed by a fixed instruction to answer with a
    JSON array of ``{"content": ...}`` objects, and one user message holding the transcript.
    The answer is read leniently (see :func:`~agentrecall.extraction.prompt.read_answer`).
    An answer holding no JSON array at all is a :class:`~agentrecall.errors.ModelError`, so a
    coordinator asks again later rather than take it for "nothing worth remembering" and lose
    the batch.
    """

    def __init__(self, model: ChatModel | None = None, system_prompt: str | None = None) -> None:
        """Configure the extractor.

        Args:
            model: the model to ask; ``None`` uses the coordinator's default model.
            system_prompt: replaces the default instructions; the output-format instruction
                is appended to it all the same.

        Raises:
            InvalidArgumentError: ``model`` has no ``complete`` method, or ``system_prompt``
                is not a non-blank string.
        """
        if model is not None and not isinstance(model, ChatModel):
            raise InvalidArgumentError(
                f"ModelExtractor: model must be a ChatModel (an object with an async "
                f"complete method), got {type(model).__name__}"
            )
        if system_prompt is not None and (
            not isinstance(system_prompt, str) or not system_prompt.strip()
        ):
            raise InvalidArgumentError("ModelExtractor: system_prompt must be a non-blank string")
        self.model = model
        self.system_prompt = system_prompt

    async def extract(
        self, messages: Sequence[Message], context: ExtractorContext | None = None
    ) -> list[ExtractionResult]:
        """Return the facts worth remembering from ``messages``.

        An empty batch returns ``[]`` without calling the model.

        Raises:
            InvalidArgumentError: neither this extractor nor ``context`` has a model.
            ModelError: the answer holds no JSON array (its start is in ``body``).
            AgentRecallError: the model call failed (whatever the model raises propagates).
        """
        if not messages:
            return []
        model = self.model if self.model is not None else getattr(context, "default_model", None)
        if model is None:
            raise InvalidArgumentError(
                "ModelExtractor: no model configured and no default model available; pass "
                "ModelExtractor(model=...) or give the memory manager a default model"
            )
        answer = await model.complete(
            [{"role": "user", "content": render_transcript(messages)}],
            system=system_prompt(self.system_prompt),
        )
        results = read_answer(answer.strip())
        if results is None:
            raise ModelError(
                "ModelExtractor: the model's answer holds no JSON array of memories",
                body=excerpt(answer),
            )
        return results

    def __repr__(self) -> str:
        return f"ModelExtractor(model={self.model!r})"
