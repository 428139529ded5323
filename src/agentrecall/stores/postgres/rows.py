"""New rows of ``PostgresStore``: a memory's columns, computed in Python, checked for PostgreSQL.

The ``terms`` column holds the content's terms as the shared BM25 reads them
(:func:`~agentrecall.retrieval.keywords.keyword_terms`: stemmed, diacritics folded, CJK
characters and pairs), with their positions, so the GIN index finds exactly the memories the
rerank scores, and ``ts_rank_cd`` sees where the terms stand.
"""

from __future__ import annotations

from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.keywords import keyword_terms
from agentrecall.stores.contentkeys import content_hash
from agentrecall.stores.imports import encode
from agentrecall.types import JsonObject

MAX_POSITION = 16_383
"""PostgreSQL's highest ``tsvector`` position; later terms share it."""

MAX_POSITIONS = 256
"""Positions PostgreSQL keeps per lexeme."""

MAX_LEXEME_BYTES = 2_046
"""A longer term cannot be a lexeme; it is left out of the index (and so never found)."""

NewRow = tuple[str, bytes, str | None, str, int]
"""``(content, content_hash, metadata JSON, terms, length)`` of a memory to insert."""


def tsvector(content: str) -> tuple[str, int]:
    """Return the ``tsvector`` text of ``content``'s terms with positions, and how many terms."""
    terms = keyword_terms(content)
    positions: dict[str, list[int]] = {}
    for number, term in enumerate(terms, start=1):
        held = positions.setdefault(term, [])
        if len(held) < MAX_POSITIONS:
            held.append(min(number, MAX_POSITION))
    lexemes = [
        "'" + term.replace("\\", "\\\\").replace("'", "''") + "':" + ",".join(map(str, spots))
        for term, spots in positions.items()
        if len(term.encode("utf-8", "surrogatepass")) <= MAX_LEXEME_BYTES
    ]
    return " ".join(lexemes), len(terms)


def tsquery(terms: list[str]) -> str:
    """Return the ``tsquery`` text matching any of ``terms``."""
    return " | ".join("'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms)


def new_row(content: str, metadata: JsonObject | None, where: str) -> NewRow:
    """Return the computed columns of a memory whose content and metadata were checked.

    Raises:
        InvalidArgumentError: the content or metadata holds U+0000, which PostgreSQL text
            and ``jsonb`` cannot store (``where`` follows the argument's name in the message).
    """
    check_storable(content, f"content{where}")
    if metadata is not None:
        check_storable(metadata, f"metadata{where}")
    terms, length = tsvector(content)
    encoded = None if metadata is None else encode(metadata)
    return content, content_hash(content), encoded, terms, length


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
