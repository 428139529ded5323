"""New rows of ``PostgresStore``: a memory's columns, computed in Python, checked for PostgreSQL.

The ``terms`` column holds the content's distinct terms as the shared BM25 reads them
(:func:`~agentrecall.retrieval.keywords.keyword_terms`: stemmed, diacritics folded, CJK
characters and pairs), so the GIN index finds exactly the memories the rerank scores.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agentrecall._internal.postgres_schema import MAX_KEY_BYTES
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.keywords import distinct_terms
from agentrecall.stores.contentkeys import content_hash
from agentrecall.stores.imports import encode
from agentrecall.types import JsonObject

MAX_LEXEME_CHARACTERS = 511
"""A longer term may pass PostgreSQL's 2,046 bytes a lexeme: it is left out of the index (and
so never found); shorter ones always fit, at 4 bytes a character at most."""

MAX_TSVECTOR_BYTES = 1_048_575
"""The most bytes a ``tsvector``'s lexemes may hold together (PostgreSQL refuses a larger one):
about 100,000 distinct words. A content with more keeps the first of its distinct terms that
fit in its index; the rest are left out (the content itself is stored whole)."""

_CHECK_SIZE_FROM = MAX_TSVECTOR_BYTES // 12
"""Contents shorter than this (in characters) cannot reach the limit: a character gives at most
three characters of terms (itself and two CJK pairs), at four bytes each."""

NewRow = tuple[str, bytes, str | None, str, int]
"""``(content, content_hash, metadata JSON, terms, length)`` of a memory to insert."""


def tsvector(content: str) -> tuple[str, int]:
    """Return the ``tsvector`` text of ``content``'s distinct terms, and how many terms it has.

    No positions are kept: the rerank reads the text, and without them an import builds rows
    twice as fast.
    """
    found, length = lexemes(content)
    return as_tsvector(found), length


def lexemes(content: str) -> tuple[list[str], int]:
    """Return the distinct terms of ``content`` its index holds, and how many terms it has."""
    found, length = distinct_terms(content)
    if len(content) > MAX_LEXEME_CHARACTERS:  # only a long content can hold a long term
        found = [term for term in found if len(term) <= MAX_LEXEME_CHARACTERS]
    if len(content) >= _CHECK_SIZE_FROM:
        found = _within_limit(found)
    return found, length


def _within_limit(terms: list[str]) -> list[str]:
    """Return the first of ``terms`` whose bytes together fit in a ``tsvector``."""
    total = 0
    for index, term in enumerate(terms):
        total += len(term.encode())
        if total > MAX_TSVECTOR_BYTES:
            return terms[:index]
    return terms


def as_tsvector(terms: list[str]) -> str:
    """Return the ``tsvector`` text of distinct ``terms``.

    Terms are runs of letters and digits (or CJK characters), so none holds a quote or a
    backslash and each can be written between quotes as it is.
    """
    return "'" + "' '".join(terms) + "'" if terms else ""


def tsquery(terms: list[str]) -> str:
    """Return the ``tsquery`` text matching any of ``terms`` (as :func:`tsvector` writes them)."""
    return "'" + "' | '".join(terms) + "'"


def new_row(content: str, metadata: JsonObject | None, where: str) -> NewRow:
    """Return the computed columns of a memory whose content and metadata were checked.

    Raises:
        InvalidArgumentError: the content or metadata holds U+0000, which PostgreSQL text
            and ``jsonb`` cannot store (``where`` follows the argument's name in the message).
    """
    return new_row_terms(content, metadata, where)[0]


def new_row_terms(
    content: str, metadata: JsonObject | None, where: str
) -> tuple[NewRow, list[str]]:
    """Return :func:`new_row`'s columns and the distinct terms its ``tsvector`` holds."""
    check_storable(content, f"content{where}")
    if metadata is not None:
        check_storable(metadata, f"metadata{where}")
    found, length = lexemes(content)
    encoded = None if metadata is None else jsonb_text(metadata)
    return (content, content_hash(content), encoded, as_tsvector(found), length), found


SCOPE_FIELDS = ("user_id", "agent_id", "session_id")
"""The scope ids of a record or a version."""


def check_storable_ids(item: object, id_field: str, where: str) -> None:
    """Refuse an imported record's or version's id, or scope ids, that PostgreSQL cannot key.

    Raises:
        InvalidArgumentError: an id holds U+0000, or the id or the scope ids pass
            :data:`MAX_KEY_BYTES` (``where`` follows the argument's name in the message).
    """
    values = [getattr(item, field, None) for field in (id_field, *SCOPE_FIELDS)]
    joined = "".join([value for value in values if isinstance(value, str)])
    if len(joined) * 4 <= MAX_KEY_BYTES and "\0" not in joined:
        return  # the common case, told in one pass (imports check every record)
    for field, value in zip((id_field, *SCOPE_FIELDS), values, strict=True):
        if isinstance(value, str) and "\0" in value:
            check_storable(value, f"{field}{where}")
    check_key_size(values[:1], f"{id_field}{where}")
    check_key_size(values[1:], f"scope ids{where}")


def check_key_size(ids: list[object], argument: str) -> None:
    """Refuse ids (``None`` for an id not given) longer together than :data:`MAX_KEY_BYTES`."""
    texts = [value for value in ids if isinstance(value, str)]
    if sum(map(len, texts)) * 4 <= MAX_KEY_BYTES:  # no character takes more than four bytes
        return
    size = sum(len(text.encode()) for text in texts)
    if size > MAX_KEY_BYTES:
        raise InvalidArgumentError(
            f"{argument}: {size} bytes in UTF-8, more than the {MAX_KEY_BYTES} a "
            "PostgresStore can key (PostgreSQL's index rows hold at most 2,704 bytes)"
        )


def check_storable(value: object, argument: str) -> None:
    """Refuse text, or JSON holding text, with U+0000, which PostgreSQL cannot store."""
    if isinstance(value, str):
        if "\0" in value:
            raise InvalidArgumentError(
                f"{argument} holds U+0000 (NUL), which PostgreSQL cannot store"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            check_storable(key, argument)
            check_storable(item, argument)
    elif isinstance(value, list):
        for item in value:
            check_storable(item, argument)


def jsonb_text(metadata: JsonObject) -> str:
    """Return checked ``metadata`` (no U+0000) as JSON text that ``jsonb`` reads back unchanged.

    ``jsonb`` keeps a number as a decimal and writes it without an exponent, so a float that
    Python writes with one (from 1e16 up: ``1e+16``) came back as an integer, and for large
    ones an integer of another value (``1.7976931348623157e+308`` became 17976931348623157
    followed by zeros). Such floats are written positionally with a ``.0``, a decimal with a
    fraction, which reads back as the same float. Other floats already have a point or an
    exponent below zero. What ``jsonb`` still changes: the order of keys, and ``-0.0``.
    """
    text = encode(metadata)
    if "e+" not in text:  # no float from 1e16 up (a string may hold "e+" too)
        return text
    positional: list[str] = []
    text = encode(_marked(metadata, positional))
    for number, digits in enumerate(positional):
        # A marker is U+0000 and its number, as JSON writes it: no checked string holds one.
        text = text.replace(f'"\\u0000{number}"', digits, 1)
    return text


def _marked(value: Any, positional: list[str]) -> Any:
    """Return ``value`` with a marker string for each float written with a positive exponent.

    The float's positional digits are appended to ``positional``; the marker holds its index.
    """
    if isinstance(value, float) and "e+" in repr(value):
        positional.append(f"{Decimal(repr(value)):f}.0")
        return f"\0{len(positional) - 1}"
    if isinstance(value, dict):
        return {key: _marked(item, positional) for key, item in value.items()}
    if isinstance(value, list):
        return [_marked(item, positional) for item in value]
    return value
