"""The term counts of ``PostgresStore``'s long memories, kept so that ranking them costs little.

A search ranks its candidates by exact BM25, which needs how often each holds each query term
(its length is the ``length`` column). Counting them in the text is cheap for a memory of a
few sentences and was half a second for one of 4 MB, at every search it was a candidate of.
So the counts of every content of more than :data:`~agentrecall.retrieval.bm25.LONG_TEXT`
characters are kept in ``long_terms``, keyed by the content's digest (``content_hash``), one
row per distinct term and one, of term ``''`` (no term is empty), holding its length; the
rerank reads the query's terms there instead.

Counts depend on the content alone, so a row is never wrong, only unused once no memory holds
its content: the writer adds them in the transaction that writes the content (every add,
import and update goes through :func:`counted` and :func:`write`), and a trigger removes them
when the last memory holding the content is deleted or rewritten. (The counts of a content a
write then skipped, an imported record whose id was taken, stay unused: never wrong.)
Migration 8 counts the long memories already stored. A long memory whose counts are missing
is still ranked exactly, from its text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from psycopg import AsyncConnection

from agentrecall.retrieval.bm25 import LONG_TEXT, Counts
from agentrecall.retrieval.keywords import term_counts
from agentrecall.stores.contentkeys import content_hash
from agentrecall.stores.postgres.rows import MAX_LEXEME_CHARACTERS
from agentrecall.stores.postgres.tables import Connection, Tables

CHUNK = 100
"""Long memories the migration reads at a time."""

Counted = dict[bytes, Counts]
"""The counts and length of long contents, by the content's digest."""

_TABLES = f"""
    CREATE TABLE {{schema}}.long_terms (
        content_hash bytea NOT NULL,
        term text NOT NULL,
        n integer NOT NULL,
        PRIMARY KEY (content_hash, term)
    );
    CREATE FUNCTION {{schema}}.forget_long_terms() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
    BEGIN
        -- The contents of the statement's old rows that are long (octet_length reads a
        -- stored value's size without decompressing it; a long content has at least as many
        -- bytes as characters) and gone: deleted, or rewritten. Their counts go unless
        -- another memory holds the content: a scan of the table, only when a long content
        -- goes (rare), not when an update leaves the content as it was.
        IF TG_OP = 'DELETE' THEN
            DELETE FROM {{schema}}.long_terms AS l
                USING (SELECT DISTINCT o.content_hash FROM old_rows AS o
                    WHERE octet_length(o.content) > {LONG_TEXT}) AS g
                WHERE l.content_hash = g.content_hash AND NOT EXISTS
                    (SELECT 1 FROM {{schema}}.memories AS m
                    WHERE m.content_hash = g.content_hash);
        ELSE
            DELETE FROM {{schema}}.long_terms AS l
                USING (SELECT DISTINCT o.content_hash FROM old_rows AS o
                    WHERE octet_length(o.content) > {LONG_TEXT} AND NOT EXISTS
                        (SELECT 1 FROM new_rows AS n
                        WHERE n.seq = o.seq AND n.content_hash = o.content_hash)) AS g
                WHERE l.content_hash = g.content_hash AND NOT EXISTS
                    (SELECT 1 FROM {{schema}}.memories AS m
                    WHERE m.content_hash = g.content_hash);
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_long_removed AFTER DELETE ON {{schema}}.memories
        REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.forget_long_terms();
    CREATE TRIGGER memories_long_rewritten AFTER UPDATE ON {{schema}}.memories
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.forget_long_terms();
"""


def counted(contents: Iterable[object]) -> Counted:
    """Return the counts of the long ones of ``contents`` (other values are left out).

    Terms longer than PostgreSQL's index keeps are left out too: no search asks for them.
    """
    found: Counted = {}
    for content in contents:
        if isinstance(content, str) and len(content) > LONG_TEXT:
            key = content_hash(content)
            if key not in found:
                counts, length = term_counts(content)
                kept = {t: n for t, n in counts.items() if len(t) <= MAX_LEXEME_CHARACTERS}
                found[key] = kept, length
    return found


async def write(connection: Connection, schema: str, found: Counted) -> None:
    """Keep the counts ``found`` in ``long_terms`` of ``schema`` (quoted), if not kept already."""
    keys: list[bytes] = []
    terms: list[str] = []
    numbers: list[int] = []
    for key, (counts, length) in found.items():
        for term, n in [("", length), *counts.items()]:
            keys.append(key)
            terms.append(term)
            numbers.append(n)
    if keys:
        await connection.execute(
            f"INSERT INTO {schema}.long_terms (content_hash, term, n) "
            "SELECT * FROM unnest(%s::bytea[], %s::text[], %s::integer[]) "
            "ON CONFLICT DO NOTHING",
            [keys, terms, numbers],
        )


async def long_term_counts(connection: AsyncConnection[Any], schema: str) -> None:
    """Migration 8: create ``long_terms`` and its triggers; count the long memories stored.

    ``schema`` is the quoted schema name.
    """
    await connection.execute(_TABLES.replace("{schema}", schema).encode())
    last = 0
    while True:
        # octet_length first: it reads no content that cannot be long.
        cursor = await connection.execute(
            f"SELECT seq, content FROM {schema}.memories WHERE seq > %s "
            f"AND octet_length(content) > {LONG_TEXT} ORDER BY seq LIMIT {CHUNK}",
            [last],
        )
        rows = await cursor.fetchall()
        if not rows:
            return
        await write(connection, schema, counted(content for _, content in rows))
        last = rows[-1][0]


async def stored(
    connection: Connection, tables: Tables, seqs: list[int], terms: Iterable[str]
) -> dict[int, Counts]:
    """Return the kept counts of ``terms`` and the length of the long memories ``seqs``.

    Memories whose counts are not kept are left out; a term a memory lacks has no count.
    """
    if not seqs:
        return {}
    cursor = await connection.execute(
        f"SELECT m.seq, l.term, l.n FROM {tables.memories} AS m "
        f"JOIN {tables.schema}.long_terms AS l ON l.content_hash = m.content_hash "
        "WHERE m.seq = ANY(%s) AND l.term = ANY(%s)",
        [seqs, ["", *terms]],
    )
    counts: dict[int, dict[str, int]] = {}
    lengths: dict[int, int] = {}
    for seq, term, n in await cursor.fetchall():
        if term:
            counts.setdefault(seq, {})[term] = n
        else:
            lengths[seq] = n
    return {seq: (counts.get(seq, {}), length) for seq, length in lengths.items()}
