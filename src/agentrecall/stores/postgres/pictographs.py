"""The migration that gives PostgreSQL's keyword index the emoji and other pictographs of memories.

Up to migration 6 a memory's ``terms`` held no pictograph (``🍣``, ``★``, ``✈``): the shared
tokenizer read them as separators, so a search for one found nothing. From here on they are
terms (:mod:`agentrecall.retrieval.pictographs`); the memories that hold one get their terms
and length again, and the statement trigger counts the change in ``term_stats`` and
``store_stats``, in the migration's transaction.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from agentrecall.retrieval.pictographs import FOLDED_INTO_PICTOGRAPHS, PICTOGRAPHS
from agentrecall.stores.postgres.rows import as_tsvector, lexemes

CHUNK = 1_000
"""Memories read and written at a time."""

MAY_HOLD = f"[{PICTOGRAPHS}{FOLDED_INTO_PICTOGRAPHS}]"
"""A regular expression, read alike by PostgreSQL and Python, matching a character that is,
or folds into, a pictograph: only a content holding one has other terms now."""


async def pictograph_terms(connection: AsyncConnection[Any], schema: str) -> None:
    """Migration 7: compute again the terms and length of every memory holding a pictograph.

    ``schema`` is the quoted schema name. Every store of the schema; the server picks the
    memories (a scan of the table, reading each content once), Python computes their terms
    as a new write would.
    """
    last = 0
    while True:
        cursor = await connection.execute(
            f"SELECT seq, content FROM {schema}.memories WHERE seq > %s AND content ~ %s "
            "ORDER BY seq LIMIT %s",
            [last, MAY_HOLD, CHUNK],
        )
        rows = await cursor.fetchall()
        if not rows:
            return
        seqs, texts, lengths = [], [], []
        for seq, content in rows:
            found, length = lexemes(content)
            seqs.append(seq)
            texts.append(as_tsvector(found))
            lengths.append(length)
        # One statement a chunk: the statement trigger counts the chunk's changes once.
        await connection.execute(
            f"UPDATE {schema}.memories AS m SET terms = t.terms::tsvector, length = t.length "
            "FROM unnest(%s::bigint[], %s::text[], %s::integer[]) AS t (seq, terms, length) "
            "WHERE m.seq = t.seq",
            [seqs, texts, lengths],
        )
        last = seqs[-1]
