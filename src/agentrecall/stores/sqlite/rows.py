"""The columns of ``memories`` and ``memory_history`` rows, in the order records decode them.

The decoding itself is shared with the other SQL backends (:mod:`agentrecall.stores.records`).
"""

from __future__ import annotations

RECORD_COLUMNS = (
    "m.id, m.content, m.metadata, m.created_at, m.updated_at, m.expires_at, "
    "s.user_id, s.agent_id, s.session_id, m.invalidated_at, m.superseded_by, m.valid_from, "
    "m.valid_until"
)
"""The columns :func:`~agentrecall.stores.records.record` reads, over :data:`RECORDS`."""

RECORDS = "memories AS m CROSS JOIN memory_scopes AS s ON s.scope = m.scope"
"""The memories with their scope's ids, as alias ``m`` and ``s``.

``CROSS JOIN`` keeps ``memories`` the outer loop, so a query plans as it would on
``memories`` alone and looks each row's scope up by its number (every memory's scope has a
row, and scope rows are never deleted).
"""

VERSION_COLUMNS = (
    "h.content, h.metadata, h.changed_at, h.change, h.reason, h.id, "
    "s.user_id, s.agent_id, s.session_id, h.created_at, h.invalidated_at, h.superseded_by, "
    "h.valid_from, h.valid_until"
)
"""The columns :func:`~agentrecall.stores.records.version` reads, over :data:`VERSIONS`."""

VERSIONS = "memory_history AS h CROSS JOIN memory_scopes AS s ON s.scope = h.scope"
"""The replaced versions with their scope's ids, as alias ``h`` and ``s``."""

CURRENT = "invalidated_at IS NULL"
"""The memories no newer one retired (``supersede``), which reads return by default and which
alone dedup: the condition of the partial index ``memories_dedup``, which a query must state
as it is for SQLite to use that index."""

ROW_FIELDS = "created_at, invalidated_at, superseded_by, valid_from, valid_until"
"""The fields of a memory's row that each of its history rows records too, after its own."""

EXPIRED = "m.expires_at IS NOT NULL AND m.expires_at <= ?"
"""The memories that expired by the time bound to its one parameter, over alias ``m``."""

EXPIRED_AT = "max(m.expires_at, coalesce(m.updated_at, m.created_at))"
"""When an expired memory's last version was replaced, over alias ``m``: at its (final)
expiry, or when it was last written if it was given a time already past. Whether the next
write has moved it to the history yet or not, this is its ``changed_at``, so the two agree
(:data:`~agentrecall.stores.records.EXPIRED_SEQ`)."""

EXPIRY_VERSION_COLUMNS = (
    f"m.content, m.metadata, {EXPIRED_AT}, 'expire', NULL, m.id, "
    "s.user_id, s.agent_id, s.session_id, m.created_at, m.invalidated_at, m.superseded_by, "
    "m.valid_from, m.valid_until"
)
"""The columns of the version expiry makes of a memory, as :data:`VERSION_COLUMNS` has them,
over :data:`RECORDS`: what :meth:`SQLiteStore.history` shows of an expired memory that no
write has moved to the history yet."""
