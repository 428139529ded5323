"""New rows of ``PostgresStore``: a memory's columns, computed in Python, checked for PostgreSQL.

The ``terms`` column holds the content's distinct terms as the shared BM25 reads them
(:func:`~agentrecall.retrieval.keywords.keyword_terms`: stemmed, diacritics folded, CJK
characters and pairs), so the GIN index finds exactly the memories the rerank scores.
"""

from __future__ import annotations

from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.keywords import distinct_terms
from agentrecall.stores.contentkeys import content_hash
from agentrecall.stores.imports import encode
from agentrecall.types import JsonObject

MAX_LEXEME_CHARACTERS = 511
"""A longer term may pass PostgreSQL's 2,046 bytes a lexeme: it is left out of the index (and
so never found); shorter ones always fit, at 4 bytes a character at most."""

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
    return found, length


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
    encoded = None if metadata is None else encode(metadata)
    return (content, content_hash(content), encoded, as_tsvector(found), length), found


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
