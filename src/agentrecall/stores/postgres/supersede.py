"""The ``supersede`` transaction of ``PostgresStore``: add a memory and retire older ones by it.

One transaction of the caller's: the new content is added as :func:`.writes.add` adds it (so
concurrent supersedes of one content store it once), then the old memories are locked
``FOR UPDATE`` in id order and checked. Two concurrent supersedes of one old memory by
different contents therefore take turns on its row: the second reads it retired by the first
and fails, its own new memory rolled back with it. Every refusal raises before the
transaction commits, so nothing of a refused call is written.
"""

from __future__ import annotations

from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.front import Supersession
from agentrecall.stores.postgres import writes
from agentrecall.stores.postgres.tables import Connection, Tables
from agentrecall.stores.scopes import Scope
from agentrecall.types import AddResult

_RETIRE = (
    "WITH kept AS (INSERT INTO {history} ({fields}) "
    "SELECT m.store, m.id, m.scope, m.content, m.metadata, %s, 'supersede', %s, m.created_at, "
    "%s, %s, m.valid_from, m.valid_until FROM {memories} AS m WHERE m.seq = ANY(%s) "
    "ORDER BY m.seq RETURNING 1) "
    "UPDATE {memories} AS m SET invalidated_at = %s, superseded_by = %s, "
    "valid_until = CASE WHEN m.valid_until IS NULL THEN %s::text ELSE m.valid_until END "
    "WHERE m.seq = ANY(%s) AND (SELECT count(*) FROM kept) >= 0"
)
"""Keeps a ``"supersede"`` version of each old memory, then retires it (one statement)."""


async def supersede(
    connection: Connection,
    tables: Tables,
    scope: Scope,
    new: writes.NewMemories,
    call: Supersession,
    found: dict[str, str] | None = None,
    known: dict[Scope, int] | None = None,
) -> AddResult:
    """Add ``new`` (its one item) to ``scope`` and retire ``call.old_ids`` by it.

    Returns the new memory's result, ``created=False`` also when every old memory was
    already retired by it (a retry, which changes nothing else).

    Raises:
        InvalidArgumentError: an old id is not a memory of ``scope``, is retired by another
            memory, or is the memory the content resolves to.
    """
    [added] = await writes.add(connection, tables, scope, new, found, known)
    where, params = tables.scope_where(scope, "m")
    cursor = await connection.execute(
        f"SELECT m.id, m.seq, m.superseded_by FROM {tables.memories} AS m "
        f"WHERE m.id = ANY(%s) AND {where} ORDER BY m.id FOR UPDATE",
        [call.old_ids, *params],
    )
    rows = {memory_id: (seq, by) for memory_id, seq, by in await cursor.fetchall()}
    for memory_id in call.old_ids:
        if memory_id == added.id:
            raise InvalidArgumentError(
                f"cannot supersede a memory by itself: the content is memory '{memory_id}'"
            )
        if memory_id not in rows:
            raise InvalidArgumentError(
                f"old_ids: no memory '{memory_id}' in this scope to supersede"
            )
        by = rows[memory_id][1]
        if by is not None and by != added.id:
            raise InvalidArgumentError(
                f"old_ids: memory '{memory_id}' is already superseded by '{by}', "
                f"not by the new memory '{added.id}'"
            )
    pending = [rows[memory_id][0] for memory_id in call.old_ids if rows[memory_id][1] is None]
    if not pending:
        return AddResult(added.id, created=False)
    now = new.now
    # Retiring changes no count (the rows stay): the statement trigger has nothing to do.
    await connection.execute("SELECT set_config('agentrecall.counted_by_writer', 'on', true)")
    statement = _RETIRE.format(
        history=tables.history, memories=tables.memories, fields=writes.VERSION_FIELDS
    )
    await connection.execute(
        statement,
        [now, call.reason, now, added.id, pending]
        + [now, added.id, call.validity.valid_from, pending],
    )
    await connection.execute("SELECT set_config('agentrecall.counted_by_writer', 'off', true)")
    return added
