"""The ``supersede`` transaction of ``SQLiteStore``: a new memory retires older ones.

One transaction of :meth:`Database.run`, so a crash leaves the store as it was before or as
it is after, never in between. Every check comes before the first write (the scope's row,
which an add of a new scope inserts, is the only exception, and an error rolls it back).
"""

from __future__ import annotations

import sqlite3

from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.sqlite import Database
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.contentkeys import content_key
from agentrecall.stores.front import Supersession
from agentrecall.stores.scopes import Scope
from agentrecall.stores.sqlite import vector_sql
from agentrecall.stores.sqlite.dedup import KEY_CHUNK, find_equal
from agentrecall.stores.sqlite.query import scope_where
from agentrecall.stores.sqlite.tables import keep_versions, purge_expired, scope_number
from agentrecall.stores.sqlite.writes import adding, write_and_index
from agentrecall.types import AddResult


def supersede(
    db: Database,
    scope: Scope,
    durable: bool,
    call: Supersession,
    vectors: vector_sql.PreparedVectors | None = None,
) -> AddResult:
    """Add ``call``'s content as :func:`~.writes.add` would and retire ``call.old_ids`` by it.

    The old memories must be memories of ``scope``, current or retired by the memory the
    content resolves to (a retry); when all of them are retired by it already, nothing is
    written. Each old memory retired now gets a ``"supersede"`` version (``changed_at`` and
    ``invalidated_at`` now, ``superseded_by`` the new memory), then ``invalidated_at``,
    ``superseded_by`` and, when the call gives a ``valid_from`` and the memory has no
    ``valid_until``, that ``valid_until``. One time, now, for the whole call.

    Raises:
        InvalidArgumentError: an old id is not a memory of ``scope``, or is retired by another
            memory, or the content resolves to one of the old memories; nothing is written.
    """
    now = utc_timestamp()
    validity = call.validity
    insert = adding(
        [(call.content, call.metadata)], call.expires_at, True, vectors, validity, scope, now
    )
    where, params = scope_where(scope, "m")

    def write(connection: sqlite3.Connection) -> AddResult:
        purge_expired(connection, now)
        olds = _old_rows(connection, call.old_ids, where, params)
        key = content_key(call.content)
        resolved = find_equal(connection, scope_number(connection, scope), call.content, key)
        _check(call.old_ids, olds, resolved)
        if resolved is not None and all(olds[i][2] == resolved for i in call.old_ids):
            return AddResult(resolved, created=False)  # a retry: every old one retired by it
        [result] = insert(connection)
        current = [olds[i][0] for i in call.old_ids if olds[i][1] is None]
        for start in range(0, len(current), KEY_CHUNK):
            chunk = current[start : start + KEY_CHUNK]
            condition = f"m.seq IN ({', '.join('?' * len(chunk))})"
            keep_versions(
                connection, condition, list(chunk), now, "supersede", call.reason, result.id
            )
            connection.execute(
                "UPDATE memories AS m SET invalidated_at = ?, superseded_by = ?, "
                "valid_until = coalesce(valid_until, ?) "
                f"WHERE {condition}",
                [now, result.id, validity.valid_from, *chunk],
            )
        return result

    return write_and_index(db, durable, write, 1)


Old = tuple[int, str | None, str | None]
"""An old memory's row number, ``invalidated_at`` and ``superseded_by``."""


def _old_rows(
    connection: sqlite3.Connection, ids: list[str], where: str, params: list[object]
) -> dict[str, Old]:
    """Return the memories of the view (current or retired) among ``ids``, by id."""
    found: dict[str, Old] = {}
    for start in range(0, len(ids), KEY_CHUNK):
        chunk = ids[start : start + KEY_CHUNK]
        for memory_id, *row in connection.execute(
            "SELECT m.id, m.seq, m.invalidated_at, m.superseded_by FROM memories AS m "
            f"WHERE m.id IN ({', '.join('?' * len(chunk))}) AND {where}",
            [*chunk, *params],
        ):
            found[memory_id] = (row[0], row[1], row[2])
    return found


def _check(ids: list[str], olds: dict[str, Old], resolved: str | None) -> None:
    """Refuse a supersede whose old ids are absent, retired by another, or the new memory.

    ``resolved`` is the current memory the new content is, ``None`` when it is new.
    """
    for memory_id in ids:
        old = olds.get(memory_id)
        if old is None:
            raise InvalidArgumentError(
                f"old_ids: no memory {memory_id!r} in this store's scope to supersede"
            )
        if memory_id == resolved:
            raise InvalidArgumentError(
                f"cannot supersede a memory by itself: the new content is memory {memory_id!r}"
            )
        if old[1] is not None and old[2] != resolved:
            raise InvalidArgumentError(
                f"old_ids: memory {memory_id!r} is already superseded by {old[2]!r}"
            )
