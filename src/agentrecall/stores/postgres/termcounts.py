"""Term counts of a bulk write, kept by the writer rather than by the statement trigger.

The trigger on ``memories`` counts the terms of each statement's new rows (``term_stats``):
for a large batch that is most of the server's work, unnesting every row's ``tsvector`` and
upserting the terms of each chunk apart. A bulk write instead tallies the terms in Python as
it builds the rows (it has them as a list before they become a ``tsvector``), keeps the tally
of the rows the database actually inserted (those ``RETURNING`` names, or those copied once
the held ones were left out), and upserts the whole write's counts in one statement at its
end, in the transaction's shard, so each term of the write is one row update whatever the
number of chunks. From :meth:`TermCounts.begun` until :meth:`TermCounts.write` (or the
transaction's end) the trigger counts only the
memories and their lengths (migration 4). The counts stay exact: the tally is of the inserted
rows, in the same transaction as the rows.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Collection

from agentrecall.stores.postgres.tables import Connection, Tables

Terms = dict[bytes, list[str]]
"""The distinct terms of each distinct content of a chunk, by the content's digest."""

FLAG = "agentrecall.terms_by_writer"
"""The transaction-local setting that tells the trigger the writer counts the terms."""


def tally(terms: Terms) -> Counter[str]:
    """Return how many of the contents of ``terms`` hold each term."""
    return Counter(itertools.chain.from_iterable(terms.values()))


class TermCounts:
    """The term counts of one bulk write's new memories, written at its end in one statement."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()

    @classmethod
    async def begun(cls, connection: Connection) -> TermCounts:
        """Return new counts, taking the counting of terms over from the trigger.

        For the inserts of ``connection``'s transaction from now on.
        """
        await connection.execute("SELECT set_config(%s, 'on', true)", [FLAG])
        return cls()

    def add(self, terms: Terms, tallied: Counter[str], inserted: Collection[bytes]) -> None:
        """Count the terms of the contents ``inserted`` (digests), of a chunk's ``terms``.

        ``tallied`` is :func:`tally` of ``terms``, right when every content was inserted.
        """
        if len(inserted) == len(terms):
            self._counts.update(tallied)
        else:
            self._counts.update(itertools.chain.from_iterable(terms[key] for key in inserted))

    async def write(self, connection: Connection, tables: Tables) -> None:
        """Add the counts to the transaction's shard of ``term_stats``; the trigger counts again."""
        if self._counts:
            await connection.execute(
                f"INSERT INTO {tables.schema}.term_stats AS s (store, term, shard, memories) "
                f"SELECT %s, t.term, (SELECT {tables.schema}.write_shard()), t.n "
                "FROM unnest(string_to_array(%s, ' '), string_to_array(%s, ' ')::bigint[]) "
                'AS t (term, n) ORDER BY t.term COLLATE "C" ON CONFLICT (store, term, shard) '
                "DO UPDATE SET memories = s.memories + excluded.memories",
                # Joined text, not lists: psycopg adapts a list element by element in Python,
                # which cost as much client time as building the rows. No term holds a space.
                [tables.store, " ".join(self._counts), " ".join(map(str, self._counts.values()))],
            )
            self._counts.clear()
        await connection.execute("SELECT set_config(%s, 'off', true)", [FLAG])
