"""A read replica of ``PostgresStore``: which reads it may serve without hiding a write.

A standby replays the primary's write-ahead log a little after each commit, so a read there
may miss a write that has just been acknowledged. The store keeps read-your-writes by log
position: after every transaction on the primary it reads the primary's WAL insert position
(``pg_current_wal_insert_lsn()``, past that transaction's commit record) and keeps the highest
seen by any of its views. A read on the replica first asks whether the replica has replayed
that far (``pg_last_wal_replay_lsn()``; a replica promoted meanwhile answers with its own
insert position); if not, the read runs on the primary instead. So a store never reads older
data than it wrote; writes of other clients show on the replica once it has replayed them.
"""

from __future__ import annotations

import psycopg

from agentrecall._internal.postgres import AsyncPostgresPool
from agentrecall.stores.postgres.tables import Connection

_POSITION = "SELECT pg_current_wal_insert_lsn()::text"

_REACHED = (
    "SELECT coalesce(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
    "ELSE pg_current_wal_insert_lsn() END >= %s::pg_lsn, false)"
)


class Replica:
    """A replica's pool and the primary's log position this store's reads must see.

    Shared by a store and its scope views, so each view sees what any of them wrote.
    """

    def __init__(self, pool: AsyncPostgresPool) -> None:
        self.pool = pool
        self._written = 0
        self._lost = 0  # positions that could not be read
        self._covered = 0  # of which a later position covers this many

    async def record(self, connection: Connection) -> None:
        """Note the log position after a transaction that ``connection`` committed on the primary.

        Called outside the transaction, after its commit. When the position cannot be read
        (the connection was lost just after the commit), the write still succeeded, so no
        error is raised: reads go to the primary until a later transaction's position is
        noted, which is past the lost one.
        """
        started = self._lost
        try:
            cursor = await connection.execute(_POSITION)
            row = await cursor.fetchone()
        except psycopg.Error:
            self._lost += 1
            return
        assert row is not None, "pg_current_wal_insert_lsn() returns a row"
        self._written = max(self._written, parse_lsn(row[0]))
        # Only a position read after a loss is past the lost write.
        self._covered = max(self._covered, started)

    async def serves(self, connection: Connection) -> bool:
        """Whether the replica of ``connection`` has replayed every write this store made."""
        if self._lost > self._covered:
            return False
        if not self._written:
            return True
        cursor = await connection.execute(_REACHED, [format_lsn(self._written)])
        row = await cursor.fetchone()
        return bool(row and row[0])


def parse_lsn(text: str) -> int:
    """Return a log position written ``X/Y`` (hexadecimal halves) as an integer."""
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def format_lsn(position: int) -> str:
    """Return an integer log position as PostgreSQL writes it, ``X/Y``."""
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"
