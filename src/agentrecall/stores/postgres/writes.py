"""The write transactions of ``PostgresStore``: add, update, delete, and expiry.

Each function runs inside one transaction of the caller's connection. Dedup is the database's:
new memories go in with ``ON CONFLICT (scope, content_hash) DO NOTHING``, so of concurrent
adds of one content to one scope exactly one row is stored, whatever the interleaving; the ids
of the contents that were already held are read after the insert, never before it. A batch
of up to :data:`COPY_AFTER` rows is one ``INSERT ... SELECT FROM unnest(...)``; a larger one goes
in a chunk at a time with ``COPY``, straight into the table after a read of the contents (and,
for an import, the ids) already held, or, when a concurrent writer gets in the way, through a
temporary table and the same ``INSERT ... ON CONFLICT``; it counts its own terms
(:mod:`~agentrecall.stores.postgres.termcounts`).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import errors

from agentrecall._internal.checks import check_item
from agentrecall._internal.clock import utc_timestamp
from agentrecall._internal.ids import new_time_ordered_ids
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.front import UNSAID, Change, Validity
from agentrecall.stores.postgres import vectors
from agentrecall.stores.postgres.reads import EXPIRED_AT
from agentrecall.stores.postgres.rows import new_row, new_row_terms
from agentrecall.stores.postgres.tables import RECORD_COLUMNS, Connection, Tables
from agentrecall.stores.postgres.termcounts import TermCounts, Terms, tally
from agentrecall.stores.records import record
from agentrecall.stores.scopes import Scope
from agentrecall.types import AddResult, JsonObject, MemoryRecord

Row = tuple[Any, ...]
"""A memory to insert: ``(id, content, content_hash, metadata, created_at, updated_at,
expires_at, terms, length, invalidated_at, superseded_by, valid_from, valid_until)``."""

RETIRED = 9
"""Where a :data:`Row` holds its ``invalidated_at``: a retired row never dedups."""

COPY_AFTER = 1_000
"""Batches larger than this go through ``COPY`` into a temporary table."""

COLUMNS = (
    "id, content, content_hash, metadata, created_at, updated_at, expires_at, terms, length, "
    "invalidated_at, superseded_by, valid_from, valid_until"
)
_TYPES = (
    "text",
    "text",
    "bytea",
    "jsonb",
    "text",
    "text",
    "text",
    "tsvector",
    "integer",
    "text",
    "text",
    "text",
    "text",
)


DEDUP = "ON CONFLICT (scope, content_hash) WHERE invalidated_at IS NULL DO NOTHING"
"""How an add skips a content its scope holds current (a taken id still fails, as it must)."""

SKIP_HELD = "ON CONFLICT DO NOTHING"
"""How an import skips a content its scope holds and an id the store holds."""

_EXPIRED = "m.store = %s AND m.expires_at IS NOT NULL AND m.expires_at <= %s"
"""The condition (over ``m``, with the store and the time) of memories due to expire."""

VERSION_FIELDS = (
    "store, id, scope, content, metadata, changed_at, change, reason, created_at, "
    "invalidated_at, superseded_by, valid_from, valid_until"
)
"""The columns of a history row a write fills."""

_KEEP = (
    f"INSERT INTO {{history}} ({VERSION_FIELDS}) "
    "SELECT m.store, m.id, m.scope, m.content, m.metadata, "
    f"CASE WHEN k.change = 'expire' THEN {EXPIRED_AT} ELSE k.at END, k.change, k.reason, "
    "m.created_at, m.invalidated_at, m.superseded_by, m.valid_from, m.valid_until "
    "FROM gone AS m, (SELECT %s::text AS at, %s::text AS change, %s::text AS reason) AS k "
    "ORDER BY m.seq"
)
"""Copies the memories of ``gone`` into the history, with the time, the change and a reason.

An expired memory's version is dated when it expired, not at the write that purges it, which
may come much later: :data:`~agentrecall.stores.postgres.reads.EXPIRED_AT`, as reads show it
before the purge."""

CHUNK = 5_000
"""The most rows a large write builds at a time: the next chunk is built (in a thread) while
the server inserts the one before."""

FIRST_CHUNK = 500
"""Rows in the first chunk of a large write, which is built while the server waits: the server
takes about three times as long per row to store a chunk as the client to build one, so each
later chunk may be three times the one before."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """Rows to insert, with the terms of their distinct contents and their tally, when counted.

    Attributes:
        rows: the rows, in order.
        terms: each distinct content's terms by digest (empty when the trigger counts them).
        tallied: :func:`~agentrecall.stores.postgres.termcounts.tally` of ``terms``.
    """

    rows: list[Row]
    terms: Terms
    tallied: Counter[str]


@dataclass(frozen=True, slots=True)
class NewMemories:
    """Items to add, and how their rows are built: checked, stamped with one time and expiry."""

    items: Sequence[tuple[str, JsonObject | None]]
    now: str
    expires_at: str | None
    checked: bool
    validity: Validity = UNSAID

    @property
    def bulk(self) -> bool:
        """Whether the rows go through ``COPY``, their terms counted by the writer."""
        return len(self.items) > COPY_AFTER

    def rows(self, start: int, stop: int) -> Chunk:
        """Return the rows of items ``start:stop`` (checking each first unless ``checked``)."""
        part = self.items[start:stop]
        ids = new_time_ordered_ids(len(part))
        rows: list[Row] = []
        terms: Terms = {}
        for index, (memory_id, (content, metadata)) in enumerate(zip(ids, part, strict=True)):
            where = "" if len(self.items) == 1 else f" (item {start + index})"
            if not self.checked:
                check_item(content, metadata, where)
            computed, found = new_row_terms(content, metadata, where)
            text, key, encoded, tsv, length = computed
            times = (self.now, None, self.expires_at)
            world = (self.validity.valid_from, self.validity.valid_until)
            rows.append((memory_id, text, key, encoded, *times, tsv, length, None, None, *world))
            terms.setdefault(key, found)
        if not self.bulk:
            return Chunk(rows, {}, Counter())
        return Chunk(rows, terms, tally(terms))


async def add(
    connection: Connection,
    tables: Tables,
    scope: Scope,
    new: NewMemories,
    found: dict[str, str] | None = None,
    known: dict[Scope, int] | None = None,
) -> list[AddResult]:
    """Insert new memories into ``scope``, duplicates skipped; return each item's memory id.

    With ``found`` (each content's vector), the new memories' vectors go in too; ``known``
    caches scope numbers (see :func:`scope_number`). No statement waits for the result of the
    one before unless it needs it, so on a connection in pipeline mode the purge, the insert
    and the transaction's start reach the server together.
    """
    await purge_expired(connection, tables, new.now)
    number = await scope_number(connection, tables, scope, known)
    counts = await TermCounts.begun(connection) if new.bulk else None
    rows: list[Row] = []
    terms: Terms = {}
    held: dict[bytes, str] = {}
    async for chunk in _built(new):
        rows += chunk.rows
        terms.update(chunk.terms)
        inserted = await insert(connection, tables, number, chunk, DEDUP, found, counts)
        held.update((key, memory_id) for memory_id, key in inserted)
    await _settle(connection, tables, number, (rows, terms), held, found, counts)
    if counts is not None:
        await counts.write(connection, tables)
    holders = {held[row[2]] for row in rows if held[row[2]] != row[0]}
    if holders:
        await outlive(connection, tables, sorted(holders), new.expires_at)
    return [AddResult(id=held[row[2]], created=held[row[2]] == row[0]) for row in rows]


async def outlive(
    connection: Connection, tables: Tables, ids: Sequence[str], expires_at: str | None
) -> None:
    """Let the memories an add found already stored live at least until its ``expires_at``.

    An add that dedups to an earlier copy must not be lost with it: the copy's expiry moves
    to the later of the two, and a copy that expires keeps none if the add asked for none.
    """
    await connection.execute(
        f"UPDATE {tables.memories} SET expires_at = CASE WHEN %s::text IS NULL THEN NULL "
        "ELSE greatest(expires_at, %s) END "
        "WHERE store = %s AND expires_at IS NOT NULL AND id = ANY(%s)",
        [expires_at, expires_at, tables.store, list(ids)],
    )


async def _settle(
    connection: Connection,
    tables: Tables,
    scope: int,
    built: tuple[Sequence[Row], Terms],
    held: dict[bytes, str],
    found: dict[str, str] | None,
    counts: TermCounts | None,
) -> None:
    """Complete ``held`` (content hash to id) for every row the insert skipped as held.

    ``built`` is the rows and, for a bulk write, their contents' terms. A skipped row's holder
    is read after the insert, in a statement of its own (so, under READ COMMITTED, one that
    sees a holder committed by a concurrent add). Another client may have deleted the holder
    in between: such rows are inserted again, in this transaction, until each is either
    stored or its holder read.
    """
    rows, terms = built
    first: dict[bytes, Row] = {}
    for row in rows:
        first.setdefault(row[2], row)
    while missing := [key for key in first if key not in held]:
        cursor = await connection.execute(
            f"SELECT content_hash, id FROM {tables.memories} "
            "WHERE scope = %s AND content_hash = ANY(%s) AND invalidated_at IS NULL",
            [scope, missing],
        )
        held.update({bytes(key): memory_id for key, memory_id in await cursor.fetchall()})
        vanished = [first[key] for key in missing if key not in held]
        if vanished:
            part = {row[2]: terms[row[2]] for row in vanished if row[2] in terms}
            again = Chunk(vanished, part, tally(part))
            inserted = await insert(connection, tables, scope, again, DEDUP, found, counts)
            held.update((key, memory_id) for memory_id, key in inserted)


async def add_alone(
    connection: Connection, tables: Tables, scope: int, row: Row, now: str
) -> str | None:
    """Add one memory to scope number ``scope``; return its memory id, or ``None`` to run again.

    On a connection in autocommit mode each statement is its own transaction: one round trip
    and one commit, two when the store holds an expired memory. The first is a call of the
    schema's ``add_memory`` (migrations 5 and 6), whose statements the server plans once per
    session: it inserts ``row`` (:data:`DEDUP`) or reads its live holder and, in the same
    transaction, lets the holder live as long as ``row`` asks (as :func:`outlive`); it adds
    nothing while an expired memory awaits the purge. Then (:func:`_add_purging`) one
    statement moves the store's expired memories to the history and adds the row. ``None``
    when neither settled it: also when that statement found the content held, since the
    holder's expiry must move in the transaction that reads it (a later one may find it
    expired and purged); the next call of ``add_memory`` does both.
    """
    cursor = await connection.execute(
        f"SELECT {tables.schema}.add_memory(%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, "
        "%s::tsvector, %s, %s)",
        # The function predates world time: a row with some goes through add() instead.
        [tables.store, scope, *row[:RETIRED], now],
    )
    found = await cursor.fetchone()
    if found is not None and found[0] is not None:
        return str(found[0])
    added = await _add_purging(connection, tables, scope, row, now)
    return added if added == row[0] else None


async def _add_purging(
    connection: Connection, tables: Tables, scope: int, row: Row, now: str
) -> str | None:
    """Purge the store's expired memories and add one memory, in one statement; return its id.

    It moves the store's expired memories to the history, then inserts ``row``
    (:data:`DEDUP`) and, when its content was held, reads the holder's id as the statement's
    snapshot shows it. ``None`` when the snapshot does not show it (it was committed after the
    statement began, and maybe deleted since): running the statement again then either
    inserts the row or reads the holder, as the next snapshot shows it.
    """
    cursor = await connection.execute(
        f"WITH gone AS (DELETE FROM {tables.memories} AS m WHERE {_EXPIRED} RETURNING m.*), "
        f"kept AS ({_KEEP.format(history=tables.history)} RETURNING 1), "
        f"added AS (INSERT INTO {tables.memories} (store, scope, {COLUMNS}) "
        "SELECT %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s::tsvector, %s, %s, %s, %s, %s "
        # Reading the purge first: an expired copy of the content is gone before the insert.
        f"WHERE (SELECT count(*) FROM kept) >= 0 {DEDUP} RETURNING id) "
        f"SELECT id FROM added UNION ALL SELECT id FROM {tables.memories} "
        "WHERE scope = %s AND content_hash = %s AND invalidated_at IS NULL "
        "AND NOT EXISTS (SELECT FROM added)",
        [tables.store, now, now, "expire", None, tables.store, scope, *row, scope, row[2]],
    )
    found = await cursor.fetchone()
    return None if found is None else str(found[0])


async def _built(new: NewMemories) -> AsyncIterator[Chunk]:
    """Yield the rows of ``new`` a chunk of :data:`CHUNK` at a time."""
    total = len(new.items)
    if not new.bulk:
        yield new.rows(0, total)
        return
    async for chunk in built(pieces(0, total), new.rows):
        yield chunk


def pieces(start: int, stop: int) -> list[tuple[int, int]]:
    """Return ``start:stop`` cut into chunks, each up to three times the one before.

    The first has :data:`FIRST_CHUNK` items, the largest :data:`CHUNK`.
    """
    bounds: list[tuple[int, int]] = []
    size = FIRST_CHUNK
    while start < stop:
        bounds.append((start, min(start + size, stop)))
        start, size = start + size, min(3 * size, CHUNK)
    return bounds


async def built(
    parts: Sequence[tuple[int, int]], build: Callable[[int, int], Chunk]
) -> AsyncIterator[Chunk]:
    """Yield ``build(start, stop)`` of each part, in order, each built in a thread meanwhile.

    The next part is built while the caller uses the one before (inserting it), so the
    client's work overlaps the server's.
    """
    if not parts:
        return
    pending = asyncio.ensure_future(asyncio.to_thread(build, *parts[0]))
    try:
        for following in [*parts[1:], None]:
            chunk = await pending
            if following is not None:
                pending = asyncio.ensure_future(asyncio.to_thread(build, *following))
            yield chunk
    finally:
        if not pending.done():
            # A failed insert leaves the next chunk building: wait for it, whatever it raises.
            await asyncio.gather(pending, return_exceptions=True)


async def insert(
    connection: Connection,
    tables: Tables,
    scope: int,
    chunk: Chunk,
    conflict: str,
    found: dict[str, str] | None = None,
    counts: TermCounts | None = None,
) -> list[tuple[str, bytes]]:
    """Insert ``chunk``'s rows into scope number ``scope``, in order; return new ``(id, hash)``.

    ``conflict`` (:data:`DEDUP` or :data:`SKIP_HELD`) says which rows are skipped. With
    ``found`` (each content's vector), each new memory's vector goes in too. With ``counts``
    (a bulk write), the rows are copied in (straight into the table when they have no vectors,
    see :func:`_copied_directly`) and the writer counts the new memories' terms (the chunk's
    ``terms``), not the trigger.
    """
    rows = chunk.rows
    target = f"INSERT INTO {tables.memories} (store, scope, {COLUMNS}) "
    returning = f"{conflict} RETURNING seq, id, content_hash"
    if found is not None:
        returning += ", content"
    if counts is None:
        arrays = [list(column) for column in zip(*rows, strict=True)] if rows else []
        casts = ", ".join(f"%s::{kind}[]" for kind in _TYPES)
        cursor = await connection.execute(
            f"{target} SELECT %s, %s, {COLUMNS} FROM unnest({casts}) "
            f"WITH ORDINALITY AS t ({COLUMNS}, n) ORDER BY n {returning}",
            [tables.store, scope, *arrays],
        )
    else:
        if found is None:
            by_id = conflict == SKIP_HELD
            direct = await _copied_directly(connection, tables, scope, rows, by_id)
            if direct is not None:
                counts.add(chunk.terms, chunk.tallied, [key for _, key in direct])
                return direct
        cursor = await _copied(connection, target, returning, tables, scope, rows)
    new = await cursor.fetchall()
    if found is not None:
        await vectors.store_new(connection, tables, [(row[0], row[3]) for row in new], found)
    added = [(row[1], bytes(row[2])) for row in new]
    if counts is not None:
        counts.add(chunk.terms, chunk.tallied, [key for _, key in added])
    return added


async def _copied_directly(
    connection: Connection, tables: Tables, scope: int, rows: Sequence[Row], by_id: bool
) -> list[tuple[str, bytes]] | None:
    """Copy the rows of contents not held straight into the memories; return new ``(id, hash)``.

    Held contents, and with ``by_id`` taken ids, are read first and left out, as are a row's
    later repeats. ``COPY`` has no ``ON CONFLICT``, so a row that a concurrent writer
    committed meanwhile (or a taken id that is not to be skipped) fails it: the copy is then
    undone, to its savepoint, and ``None`` says the rows must go in through :func:`_copied`,
    whose insert decides every conflict. Straight in, the server stores rows as they arrive
    while the client builds the next chunk, and skips the staging table and the speculative
    insertion of ``ON CONFLICT``.
    """
    held, taken = await _held(connection, tables, scope, rows, by_id)
    fresh: list[Row] = []
    for row in rows:
        current = row[RETIRED] is None  # a retired row takes no part in dedup
        if (current and row[2] in held) or row[0] in taken:
            continue
        if current:
            held.add(row[2])
        if by_id:
            taken.add(row[0])
        fresh.append(row)
    try:
        async with connection.transaction():
            async with connection.cursor().copy(
                f"COPY {tables.memories} (store, scope, {COLUMNS}) FROM STDIN"
            ) as copy:
                for row in fresh:
                    await copy.write_row((tables.store, scope, *row))
    except errors.UniqueViolation:
        return None
    return [(row[0], row[2]) for row in fresh]


async def _held(
    connection: Connection, tables: Tables, scope: int, rows: Sequence[Row], by_id: bool
) -> tuple[set[bytes], set[str]]:
    """Return which of the rows' contents scope number ``scope`` holds, and (``by_id``) taken ids.

    The keys travel as one text each (hex digests, a JSON list of ids), not as lists, which
    psycopg adapts element by element in Python.
    """
    keys = " ".join(row[2].hex() for row in rows)
    query = (
        f"SELECT content_hash, NULL FROM {tables.memories} WHERE scope = %s "
        "AND invalidated_at IS NULL AND content_hash "
        "= ANY(ARRAY(SELECT decode(h, 'hex') FROM unnest(string_to_array(%s, ' ')) AS h))"
    )
    params: list[object] = [scope, keys]
    if by_id:
        query += (
            f" UNION ALL SELECT NULL, id FROM {tables.memories} WHERE store = %s "
            "AND id = ANY(ARRAY(SELECT jsonb_array_elements_text(%s::jsonb)))"
        )
        params += [tables.store, json.dumps([row[0] for row in rows])]
    cursor = await connection.execute(query, params)
    found = await cursor.fetchall()
    held = {bytes(key) for key, _ in found if key is not None}
    return held, {memory_id for _, memory_id in found if memory_id is not None}


async def _copied(
    connection: Connection,
    target: str,
    returning: str,
    tables: Tables,
    scope: int,
    rows: Sequence[Row],
) -> Any:
    """Copy ``rows`` into the staging table, then insert them; return the insert's cursor.

    The insert empties the staging table as it reads it, so the next chunk of the same
    transaction finds only its own rows there.
    """
    await connection.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS agentrecall_staging (n bigint, "
        f"{', '.join(f'{c} {t}' for c, t in zip(COLUMNS.split(', '), _TYPES, strict=True))}"
        ") ON COMMIT DELETE ROWS"
    )
    async with connection.cursor().copy(
        f"COPY agentrecall_staging (n, {COLUMNS}) FROM STDIN"
    ) as copy:
        for n, row in enumerate(rows):
            await copy.write_row((n, *row))
    return await connection.execute(
        f"WITH batch AS (DELETE FROM agentrecall_staging RETURNING *) "
        f"{target} SELECT %s, %s, {COLUMNS} FROM batch ORDER BY n {returning}",
        [tables.store, scope],
    )


async def scope_number(
    connection: Connection, tables: Tables, scope: Scope, known: dict[Scope, int] | None = None
) -> int:
    """Return the number of ``scope`` in the store's scopes, adding its row the first time.

    ``known`` caches the numbers of scopes whose row was already committed: a scope's row is
    never deleted nor renumbered, so a cached number stays right. A row this transaction adds
    is not cached, since the transaction may still roll back.
    """
    if known is not None and scope in known:
        return known[scope]
    ids = list(scope.columns().values())
    cursor = await connection.execute(
        f"INSERT INTO {tables.scopes} (store, user_id, agent_id, session_id) "
        "VALUES (%s, %s, %s, %s) ON CONFLICT (store, coalesce(user_id, ''), "
        "coalesce(agent_id, ''), coalesce(session_id, '')) DO NOTHING RETURNING scope",
        [tables.store, *ids],
    )
    row = await cursor.fetchone()
    if row is None:
        cursor = await connection.execute(
            f"SELECT scope FROM {tables.scopes} WHERE store = %s AND coalesce(user_id, '') = %s "
            "AND coalesce(agent_id, '') = %s AND coalesce(session_id, '') = %s",
            [tables.store, *(value or "" for value in ids)],
        )
        row = await cursor.fetchone()
        assert row is not None, "a scope row exists once its insert conflicted"
        if known is not None:
            known[scope] = int(row[0])
    return int(row[0])


async def update(
    connection: Connection,
    tables: Tables,
    scope: Scope,
    memory_id: str,
    change: Change,
    found: dict[str, str] | None = None,
) -> MemoryRecord | None:
    """Replace a memory's content and/or metadata, keeping the old version in its history.

    New content loses its old vector; with ``found`` (its vector) it gets its new one.
    """
    content, metadata, reason = change.content, change.metadata, change.reason
    now = utc_timestamp()
    await purge_expired(connection, tables, now)
    where, params = tables.scope_where(scope, "m")
    cursor = await connection.execute(
        f"SELECT m.seq, m.content, m.metadata::text FROM {tables.memories} AS m "
        f"WHERE m.id = %s AND {where} AND m.invalidated_at IS NULL FOR UPDATE",
        [memory_id, *params],
    )
    current = await cursor.fetchone()
    if current is None:
        return None
    seq = current[0]
    await keep_versions(connection, tables, "m.seq = %s", [seq], now, "update", reason)
    sets = ["updated_at = %s"]
    values: list[object] = [now]
    if content is not None:
        text, key, _, terms, length = new_row(content, None, "")
        sets += ["content = %s", "content_hash = %s", "terms = %s::tsvector", "length = %s"]
        values += [text, key, terms, length]
    if metadata is not None:
        sets.append("metadata = %s::jsonb")
        values.append(new_row("x", metadata, "")[2])
    try:
        async with connection.transaction():
            await connection.execute(
                f"UPDATE {tables.memories} SET {', '.join(sets)} WHERE seq = %s", [*values, seq]
            )
    except errors.UniqueViolation:
        raise InvalidArgumentError(
            "another memory of this scope already has that content; update would duplicate it"
        ) from None
    if content is not None:
        await connection.execute(f"DELETE FROM {tables.schema}.vectors WHERE seq = %s", [seq])
        if found is not None:
            await vectors.store_new(connection, tables, [(seq, content)], found)
    cursor = await connection.execute(
        f"SELECT {RECORD_COLUMNS} FROM {tables.records} WHERE m.seq = %s", [seq]
    )
    return record(await cursor.fetchone())


async def remove(
    connection: Connection,
    tables: Tables,
    scope: Scope,
    ids: Sequence[str] | None,
    reason: str | None,
) -> int:
    """Move ``scope``'s memories with ``ids`` (or all, for ``None``) to the history; count them."""
    now = utc_timestamp()
    await purge_expired(connection, tables, now)
    where, params = tables.scope_where(scope, "m")
    if ids is not None:
        where += " AND m.id = ANY(%s)"
        params.append(list(ids))
    return await keep_versions(connection, tables, where, params, now, "delete", reason, True)


async def purge_expired(connection: Connection, tables: Tables, now: str) -> None:
    """Move this store's memories expired at ``now`` to the history.

    Each becomes an ``expire`` version dated at its expiry (:data:`_KEEP`), the version
    ``history`` showed of it before this purge.
    """
    await keep_versions(
        connection,
        tables,
        _EXPIRED,
        [tables.store, now],
        now,
        "expire",
        None,
        True,
    )


async def keep_versions(
    connection: Connection,
    tables: Tables,
    condition: str,
    params: list[object],
    now: str,
    change: str,
    reason: str | None,
    delete: bool = False,
) -> int:
    """Copy the memories meeting ``condition`` (over ``m``) into the history; count them.

    With ``delete`` they are deleted in the same statement.
    """
    source = (
        f"DELETE FROM {tables.memories} AS m WHERE {condition} RETURNING m.*"
        if delete
        else f"SELECT m.* FROM {tables.memories} AS m WHERE {condition}"
    )
    cursor = await connection.execute(
        f"WITH gone AS ({source}) {_KEEP.format(history=tables.history)}",
        [*params, now, change, reason],
    )
    return cursor.rowcount
