"""The extraction prompt and the reading of the model's answer. No I/O here."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from agentrecall.errors import InvalidArgumentError
from agentrecall.extraction.types import ExtractionResult
from agentrecall.messages import Message, message_text
from agentrecall.models.base import valid_text
from agentrecall.stores.times import timestamp

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = """\
You keep the long-term memory of an AI assistant. You will read a transcript of a \
conversation and pick out what is worth knowing in future conversations with the same user: \
stated preferences, personal details the user shared, decisions that were reached, and \
lasting facts about the user's goals, projects, constraints and circumstances.

Write each memory as one short statement that makes sense on its own, months later, without \
the transcript: name who or what it is about instead of using pronouns, and keep exact names, \
numbers and dates. One fact per memory. Leave out greetings and small talk, questions that \
were asked, details that only matter for the task at hand, suggestions the user did not take \
up, and general knowledge."""
"""What :class:`~agentrecall.extraction.ModelExtractor` asks for unless given its own prompt."""

OUTPUT_INSTRUCTION = """\
Answer with a JSON array and nothing else. Each element is an object of the form \
{"content": "<one memory>"}; when the transcript says when the fact became true ("we moved \
in March 2025"), add "valid_from": "<that date, YYYY-MM-DD>". If nothing in the transcript is \
worth remembering, answer []."""
"""Appended to every system prompt, custom ones included, so the answer can be parsed."""

TRANSCRIPT_INTRO = "Here is the transcript to extract memories from:\n\n"


def system_prompt(custom: str | None) -> str:
    """Return the system prompt: ``custom`` or the default, then the output instruction."""
    return f"{custom or DEFAULT_SYSTEM_PROMPT}\n\n{OUTPUT_INSTRUCTION}"


def render_transcript(messages: Sequence[Message]) -> str:
    """Return the user message: an introduction, then ``<role>: <text>`` per message.

    A message's text is its string content or its text blocks joined by newlines; other
    blocks are left out, so a message without text renders as ``<role>: ``.
    """
    lines = (f"{message.get('role')}: {message_text(message)}" for message in messages)
    return TRANSCRIPT_INTRO + "\n".join(lines)


def parse_results(answer: str) -> list[ExtractionResult]:
    """Read the memories out of a model's answer; an unreadable answer gives ``[]``.

    As :func:`read_answer`, with ``[]`` where that returns ``None``.
    """
    results = read_answer(answer)
    return [] if results is None else results


def read_answer(answer: str) -> list[ExtractionResult] | None:
    r"""Read the memories out of a model's answer, tolerating prose and code fences around it.

    The answer's JSON arrays are found by decoding from each ``[`` in turn, so brackets in the
    prose before or after (``"I found [2] facts: [...]"``) do not hide the array. The first
    array holding a usable item is read; when none does, the first array is (an empty one means
    nothing to remember). Without an array, the first JSON object with a string ``content``
    is the one memory (small models often answer so). An answer holding neither gives
    ``None`` with a warning: it says nothing about the conversation (a reply cut short, an
    error page). Each item of the
    array is one memory, in order, when it is either a string or an object with a string
    ``content``, and that text is not blank after stripping (it is kept stripped). Any other
    item is skipped, and one warning per answer says how many were skipped and shows the
    first. An object's ``metadata`` is kept when it is a JSON object and dropped otherwise (the
    reference keeps any value, which a store's ``add`` then refuses and the batch fails for
    good). An object's ``valid_from`` is kept when it is a time :func:`world_time` accepts,
    and dropped otherwise. A lone surrogate the JSON held (``"\ud83d"`` pairing with nothing)
    becomes U+FFFD, in content and metadata alike, for the same reason.
    """
    arrays, error = json_values(answer, "[")
    if not arrays:
        objects = (_result(value) for value in json_values(answer, "{")[0])
        single = next((result for result in objects if result is not None), None)
        if single is not None:
            return [single]
        if error is None:
            logger.warning("extraction answer has no JSON array: %.200r", answer)
        else:
            logger.warning("extraction answer is not valid JSON (%s)", error)
        return None
    read = [_read_items(items) for items in arrays]
    results, skipped, items = next((found for found in read if found[0]), read[0])
    if skipped:
        logger.warning(
            "extraction answer: skipped %d of %d items that are neither a non-blank string nor "
            "an object with a non-blank string content; the first is %.200r",
            len(skipped),
            len(items),
            skipped[0],
        )
    return results


def json_values(answer: str, opener: str) -> tuple[list[Any], Exception | None]:
    """Return the JSON values starting at an ``opener`` of ``answer`` and not inside another.

    ``opener`` is ``"["`` (arrays) or ``"{"`` (objects). Also returns the error of the first
    ``opener`` that starts no JSON value, if any.
    """
    decoder = json.JSONDecoder()
    values: list[Any] = []
    first_error: Exception | None = None
    position = answer.find(opener)
    while position >= 0:
        try:
            value, end = decoder.raw_decode(answer, position)
        except ValueError as error:
            first_error = first_error or error
            end = position + 1
        except RecursionError as error:
            # Nested deeper than Python decodes: no value from here on can be read.
            return values, first_error or error
        else:
            values.append(value)
        position = answer.find(opener, end)
    return values, first_error


def _read_items(items: list[Any]) -> tuple[list[ExtractionResult], list[Any], list[Any]]:
    results, skipped = [], []
    for item in items:
        result = _result(item)
        if result is None:
            skipped.append(item)
        else:
            results.append(result)
    return results, skipped, items


def _result(item: object) -> ExtractionResult | None:
    if isinstance(item, str):
        return ExtractionResult(valid_text(item.strip())) if item.strip() else None
    if not isinstance(item, Mapping) or not isinstance(item.get("content"), str):
        return None
    content = item["content"].strip()
    if not content:
        return None
    metadata = item.get("metadata")
    return ExtractionResult(
        valid_text(content),
        _valid_json(metadata) if isinstance(metadata, dict) else None,
        world_time(item.get("valid_from")),
    )


def world_time(value: object) -> str | None:
    """Return a model's ``valid_from`` when a store accepts it, else ``None`` (logged).

    Accepted: an ISO 8601 date (``"2025-03-01"``) or a time with an offset, as
    :func:`~agentrecall.stores.times.timestamp` reads them. A date the model got wrong
    (``"March 2025"``, a naive time) is dropped rather than failing the write: the fact matters
    more than when it became true.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            timestamp(value, "valid_from")
        except InvalidArgumentError:
            pass
        else:
            return value
    logger.warning("extraction: ignoring valid_from %.100r, not an ISO 8601 date", value)
    return None


def _valid_json(value: Any) -> Any:
    """Return a decoded JSON value with every string made valid text (see ``valid_text``)."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {valid_text(key): _valid_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_valid_json(item) for item in value]
    return value
