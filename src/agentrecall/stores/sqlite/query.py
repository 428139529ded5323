"""Pure pieces of ``SQLiteStore``: scopes, query terms and their plan, BM25, time bounds."""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from agentrecall._internal.text import check_text
from agentrecall.errors import InvalidArgumentError
from agentrecall.retrieval.keywords import keyword_terms, words
from agentrecall.retrieval.tokenize import STOP_WORDS

PROBE_POSTINGS = 1_000
"""A term's document frequency is counted exactly below this many postings, estimated above."""

POSTINGS_BUDGET = 20_000
"""Rarest terms first, a term's postings are all candidates while the running total fits this."""

COMMON_SHARE = 0.05
"""A term held by more than this share of memories adds no candidates (it still scores)."""

NEWEST_POSTINGS = 300
"""A term past the budget but not common adds only its newest this many postings."""

CANDIDATES = 100
"""How many candidates the index picks for the exact BM25 rerank."""

SCOPE_TERMS = 64
"""A view over at most this many exact scopes names them in its full-text queries; a wider
one (say, an agent with thousands of sessions) checks each posting's memory instead."""

MAX_QUERY_TERMS = 64
"""A query's rarest this many terms take part in a search; the commoner others are left out.

Each term is one part of the statement that picks candidates, and SQLite takes at most 500;
a pasted document has thousands of distinct words. Rare words tell memories apart, common
ones add almost nothing to a score; no LoCoMo question has more than 11 terms."""

K1 = 0.9
"""BM25's term-frequency saturation. With :data:`B`, chosen by leave-one-conversation-out
cross-validation on the LoCoMo dev file (``benchmarks/tune_bm25.py``, results in
``benchmarks/results/bm25-tuning.md``): recall@10 0.647 there, against 0.629 with the usual
k1 1.2, b 0.75."""

B = 0.25
"""BM25's length normalisation. Memories are short (LoCoMo turns: 35 terms on average), so a
long one says little about its relevance: b matters more than k1, and less of it is better."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memories a store view holds: any of user, agent and session, or none (all)."""

    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    def where(self, alias: str = "m") -> tuple[str, list[object]]:
        """Return an SQL condition selecting this scope's rows (``1`` for the root).

        The rows of ``alias`` carry a ``scope`` number; every exact scope with all of this
        one's ids (a user's view: each of that user's sessions) is selected.
        """
        numbers = self.numbers()
        if numbers is None:
            return "1", []
        sql, params = numbers
        return f"{alias}.scope IN ({sql})", params

    def numbers(self) -> tuple[str, list[object]] | None:
        """Return SQL selecting the numbers of the exact scopes this view sees; the root: None."""
        parts: list[str] = []
        params: list[object] = []
        for column, value in self.columns().items():
            if value is not None:
                parts.append(f"{column} = ?")
                params.append(value)
        if not parts:
            return None
        return f"SELECT scope FROM memory_scopes WHERE {' AND '.join(parts)}", params

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
            check_text(value, column)
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


STORED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
"""The stored shape of a time; filters and expiry compare these strings, so only it sorts right."""


def content_hash(content: str) -> bytes:
    """Return a 128-bit BLAKE2b digest of ``content``'s stripped text.

    The dedup key of a memory whose :func:`content_key` another text of its scope already
    holds (see :mod:`agentrecall.stores.sqlite.dedup`); two different texts would share it
    only among about 2**64 memories of one scope.
    """
    text = content.strip().encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).digest()


def content_key(content: str) -> int:
    """Return the dedup key of ``content``: a signed 64-bit integer digest of its stripped text.

    Two memories of one scope are duplicates when their stripped contents are equal. Keying
    the dedup index by an integer instead of the text (or a 16-byte digest) keeps it small and
    its comparisons cheap. Different texts share a key once in about 2**64 pairs, so a key is
    never trusted alone: :mod:`agentrecall.stores.sqlite.dedup` compares the texts.
    """
    digest = _KEY_HASH.copy()
    digest.update(content.strip().encode("utf-8", "surrogatepass"))
    key: int = _SIGNED_64(digest.digest())[0]
    return key


# Copying a prepared hash object and unpacking with a compiled struct took a third off the key's
# cost (2.0 to 1.4 µs a memory), which a bulk import pays for every memory.
_KEY_HASH = hashlib.blake2b(digest_size=8)
_SIGNED_64 = struct.Struct(">q").unpack


def query_terms(query: str) -> dict[str, str]:
    """Return the searchable terms of ``query``, keyed by the word a full-text query asks for.

    A term is what the index keeps for a word (:mod:`~agentrecall.retrieval.keywords`: a Porter
    stem, a CJK character or pair); stop words are left out before stemming. Of several words
    with one term, the first in sort order stands for it. Sorted by word.
    """
    chosen: dict[str, str] = {}
    for word, term in words(query):
        if word not in STOP_WORDS and (term not in chosen or word < chosen[term]):
            chosen[term] = word
    return {word: term for term, word in sorted(chosen.items(), key=lambda item: item[1])}


def estimate_df(newest: int, lowest: int | None, first: int, last: int) -> int:
    """Return how many memories hold a term, from a probe of its newest postings.

    Args:
        newest: how many postings the probe found (at most ``PROBE_POSTINGS``).
        lowest: the lowest row id among them.
        first: the lowest row id of the store.
        last: the highest row id of the store.

    Below ``PROBE_POSTINGS`` the count is exact. Otherwise the term is assumed as dense over the
    whole id range as over the stretch its newest postings span: counting a long posting list
    costs time in proportion to its length, the estimate costs nothing.
    """
    if newest < PROBE_POSTINGS or lowest is None:
        return newest
    span = max(1, last - lowest + 1)
    return max(newest, round(newest * (last - first + 1) / span))


def idf(df: int, total: int) -> float:
    """Return BM25's inverse document frequency, always positive."""
    return math.log(1 + (max(total, df) - df + 0.5) / (df + 0.5))


@dataclass(frozen=True, slots=True)
class TermPlan:
    """How one query term takes part in a search.

    ``postings`` is how many of its newest postings become candidates: ``None`` for all of
    them, ``0`` for none (the term still counts in the rerank).
    """

    term: str
    weight: float
    postings: int | None


def plan_terms(df: Mapping[str, int], total: int) -> list[TermPlan]:
    """Decide, rarest term first, how many of each term's postings are candidates.

    A term adds all its postings while the running total of postings stays within
    ``POSTINGS_BUDGET`` (a term under ``PROBE_POSTINGS`` always does); after that, a term held by
    at most ``COMMON_SHARE`` of the memories adds its ``NEWEST_POSTINGS`` newest, and a more
    common term adds none. Rare terms tell memories apart, so they get the budget; if no term
    adds candidates, the rarest adds its newest, so a query of common words still finds some.
    Terms no memory holds are left out, and so are all but the ``MAX_QUERY_TERMS`` rarest
    (fewest memories, then the term's text): they neither add candidates nor score.
    """
    plans: list[TermPlan] = []
    running = 0
    held = sorted((count, term) for term, count in df.items() if count > 0)
    for count, term in held[:MAX_QUERY_TERMS]:
        postings: int | None
        if count < PROBE_POSTINGS or running + count <= POSTINGS_BUDGET:
            postings = None
            running += count
        elif count <= COMMON_SHARE * total:
            postings = NEWEST_POSTINGS
        else:
            postings = 0
        plans.append(TermPlan(term, idf(count, total), postings))
    if plans and all(plan.postings == 0 for plan in plans):
        plans[0] = TermPlan(plans[0].term, plans[0].weight, NEWEST_POSTINGS)
    return plans


def candidate_query(
    plans: Sequence[TermPlan],
    where: str | None,
    limit: int,
    floors: Mapping[str, int] | None = None,
) -> str:
    """Return SQL picking up to ``limit`` memory row ids by their summed term weights.

    Each term with postings to add becomes one member of a ``UNION ALL``; the sum of weights per
    row decides, the newer row first on a tie. Parameters, per member: the weight, the match
    expression, then (when ``where`` is given) the condition's parameters; then ``limit``.
    With ``where`` (over alias ``m``, and ``f`` for the posting), each member keeps only
    memories meeting it before its newest-postings limit, so a small scope in a large store
    still gets its own candidates. With ``floors`` too, a member with a newest-postings limit
    reads only its term's postings from the row id its floor gives: checking postings one by
    one until enough meet a selective ``where`` costs time in proportion to all the term's
    postings.
    """
    members = []
    for plan in plans:
        if plan.postings == 0:
            continue
        if where is None:
            member = "SELECT rowid AS id, ? AS w FROM memories_fts WHERE memories_fts MATCH ?"
        else:
            floor = (floors or {}).get(plan.term) if plan.postings is not None else None
            since = "" if floor is None else f"f.rowid >= {int(floor)} AND "
            # CROSS JOIN keeps the postings as the outer loop: left to itself, SQLite may walk
            # the scope's index and run one full-text query per memory, many times slower.
            member = (
                "SELECT f.rowid AS id, ? AS w FROM memories_fts AS f "
                "CROSS JOIN memories AS m ON m.seq = f.rowid "
                f"WHERE f.memories_fts MATCH ? AND {since}{where}"
            )
        if plan.postings is not None:
            member = f"SELECT * FROM ({member} ORDER BY id DESC LIMIT {int(plan.postings)})"
        members.append(member)
    return (
        f"SELECT id FROM ({' UNION ALL '.join(members)}) "
        "GROUP BY id ORDER BY sum(w) DESC, id DESC LIMIT ?"
    )


def bm25(
    query: Mapping[str, float], text: str, average_length: float, *, k1: float = K1, b: float = B
) -> float:
    """Return the Okapi BM25 score of ``text`` for terms weighted by their idf."""
    tokens = keyword_terms(text)
    counts: dict[str, int] = {}
    for token in tokens:
        if token in query:
            counts[token] = counts.get(token, 0) + 1
    return bm25_of_counts(query, counts, len(tokens), average_length, k1=k1, b=b)


def bm25_of_counts(
    query: Mapping[str, float],
    counts: Mapping[str, int],
    length: int,
    average_length: float,
    *,
    k1: float = K1,
    b: float = B,
) -> float:
    """Return :func:`bm25` of a text of ``length`` terms holding the query's terms ``counts``."""
    norm = k1 * (1 - b + b * length / max(average_length, 1e-9))
    return sum(query[term] * tf * (k1 + 1) / (tf + norm) for term, tf in counts.items())


def averages(record: bytes | None) -> tuple[int, int]:
    """Return (rows, tokens) from an FTS5 averages record (two SQLite varints), or (0, 0)."""
    values: list[int] = []
    position = 0
    data = record or b""
    while len(values) < 2 and position < len(data):
        value = 0
        for index in range(9):
            byte = data[position]
            position += 1
            if index == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80 or position >= len(data):
                break
        values.append(value)
    return (values + [0, 0])[0], (values + [0, 0])[1]


def match_expression(terms: list[str], scopes: Sequence[int] | None = None) -> str:
    """Return an FTS5 query matching any of ``terms`` in the text, within ``scopes`` if given.

    Each term is quoted as a literal string and confined to the ``content`` column, so that a
    query word never matches the scope numbers indexed beside it.
    """
    words = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    expression = f"content : ({words})"
    if scopes is not None:
        numbers = " OR ".join(f'"{int(number)}"' for number in scopes)
        expression += f" AND scope : ({numbers})"
    return expression


def timestamp(value: datetime | str | None, argument: str) -> str | None:
    """Return a time bound in the stored shape (``YYYY-MM-DDTHH:MM:SS.mmmZ``, UTC).

    Accepts an aware ``datetime``; an ISO 8601 date (``2025-01-31``, midnight UTC); or an ISO
    8601 time with an offset (``2025-01-31T09:30:00Z``, ``2025-01-31T09:30:00+02:00``). A
    naive time (a ``datetime`` or a string without an offset) is refused, since guessing its
    zone would shift the bound. The time must fall within the years 1 to 9999 in UTC.

    Raises:
        InvalidArgumentError: any other value; the message names ``argument`` and the forms
            accepted.
    """
    if value is None:
        return None
    moment = _parsed(value, argument) if isinstance(value, str) else value
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise InvalidArgumentError(f"{argument} must be {_TIME_FORMS}, got {value!r}")
    try:
        return stored_time(moment)
    except OverflowError:
        raise InvalidArgumentError(
            f"{argument} must fall within the years 1 to 9999 in UTC, got {value!r}"
        ) from None


def expiry_after(lifetime: float, argument: str) -> str:
    """Return the stored time ``lifetime`` seconds from now, refusing one past the year 9999."""
    try:
        return stored_time(datetime.now(timezone.utc) + timedelta(seconds=lifetime))
    except OverflowError:
        raise InvalidArgumentError(
            f"{argument} of {lifetime:.0f} seconds would expire past the year 9999; "
            "give a shorter one, or None for no expiry"
        ) from None


def stored_time(moment: datetime) -> str:
    """Return an aware ``moment`` in the stored shape; ``OverflowError`` if UTC cannot hold it."""
    utc = moment.astimezone(timezone.utc)
    # Spelled out rather than strftime, whose ``%Y`` does not pad years below 1000 everywhere.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z"
    )


_TIME_FORMS = (
    "a timezone-aware datetime, an ISO 8601 date such as '2025-01-31' (midnight UTC), or an "
    "ISO 8601 time with an offset such as '2025-01-31T09:30:00Z' or '2025-01-31T09:30:00+02:00'"
)

_DATE = re.compile(r"\d{4}-\d\d-\d\d")


def _parsed(text: str, argument: str) -> datetime:
    try:
        if _DATE.fullmatch(text):
            return datetime.combine(date.fromisoformat(text), time(), timezone.utc)
        # Python 3.10 reads no ``Z``; it means UTC, as ``+00:00`` does.
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(f"{argument} must be {_TIME_FORMS}, got {text!r}") from None
