"""Pure pieces of ``SQLiteStore``'s SQL: scopes, keyword terms, time bounds. No I/O here."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.tokenize import STOP_WORDS, tokenize

COMMON_SHARE = 0.05
"""A query term found in more than this share of memories says little about any of them."""

COMMON_FLOOR = 2_000
"""...but below this many memories no term counts as too common (small stores keep them all)."""

SCORED_ROWS_BUDGET = 60_000
"""At most this many postings are scored per search: rarest terms first, the rest dropped."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memories a store view holds: any of user, agent and session, or none (all)."""

    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    def key(self) -> str:
        """Return the scope's identity as stored with each memory (dedup is per key)."""
        return json.dumps([self.user_id, self.agent_id, self.session_id])

    def where(self, alias: str = "m") -> tuple[str, list[object]]:
        """Return an SQL condition selecting this scope's memories (``1`` for the root)."""
        parts: list[str] = []
        params: list[object] = []
        for column, value in self.columns().items():
            if value is not None:
                parts.append(f"{alias}.{column} = ?")
                params.append(value)
        return (" AND ".join(parts) or "1"), params

    def columns(self) -> dict[str, str | None]:
        """Return the scope as column values."""
        return {"user_id": self.user_id, "agent_id": self.agent_id, "session_id": self.session_id}

    def narrowed(self, **ids: str | None) -> Scope:
        """Return this scope with more ids set; an id already set cannot change."""
        merged = self.columns()
        for column, value in ids.items():
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise InvalidArgumentError(f"{column} must be a non-empty string, got {value!r}")
            if merged[column] not in (None, value):
                raise InvalidArgumentError(
                    f"this view is already scoped to {column}={merged[column]!r}; "
                    f"it cannot be narrowed to {value!r}"
                )
            merged[column] = value
        return Scope(**merged)

    def label(self) -> str:
        """Return ``user=ana,session=s1``-style text for names and messages."""
        return ",".join(
            f"{column.removesuffix('_id')}={value}"
            for column, value in self.columns().items()
            if value is not None
        )


def fold(term: str) -> str:
    """Return ``term`` as the full-text index stores it: lowercase, diacritics removed."""
    decomposed = unicodedata.normalize("NFKD", term.lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def query_terms(query: str) -> list[str]:
    """Return the distinct searchable terms of ``query``: its words minus stop words, folded."""
    folded = {fold(token) for token in tokenize(query) - STOP_WORDS}
    return sorted(term for term in folded if term)


def choose_terms(frequency: Mapping[str, int], total: int) -> list[str]:
    """Pick the terms worth scoring, given how many memories hold each and how many there are.

    Terms no memory holds are dropped. Terms held by more than ``COMMON_SHARE`` of a store of
    more than ``COMMON_FLOOR`` memories are dropped, unless every term is that common, when the
    rarest one stays. Then terms are taken rarest first while their postings fit
    ``SCORED_ROWS_BUDGET`` (the rarest always does): the cost of a search is bounded by what
    it scores, and rare terms are the ones that tell memories apart.
    """
    present = sorted((count, term) for term, count in frequency.items() if count > 0)
    if not present:
        return []
    common = max(COMMON_FLOOR, int(COMMON_SHARE * total))
    telling = [(count, term) for count, term in present if count <= common] or present[:1]
    chosen: list[str] = []
    scored = 0
    for count, term in telling:
        if chosen and scored + count > SCORED_ROWS_BUDGET:
            break
        chosen.append(term)
        scored += count
    return chosen


def match_expression(terms: list[str]) -> str:
    """Return an FTS5 query that matches any of ``terms``, each quoted as a literal string."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def timestamp(value: datetime | str | None, argument: str) -> str | None:
    """Return a time bound in the stored shape (``YYYY-MM-DDTHH:MM:SS.mmmZ``, UTC).

    Accepts an aware ``datetime`` or an ISO 8601 string with a time zone; a naive value is
    refused, since guessing its zone would shift the bound.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as error:
            raise InvalidArgumentError(
                f"{argument} must be an ISO 8601 time, got {value!r}"
            ) from error
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidArgumentError(
            f"{argument} must be a timezone-aware datetime or ISO 8601 string, got {value!r}"
        )
    moment = value.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
