"""The columns of ``memories`` and ``memory_history`` rows, in the order records decode them.

The decoding itself is shared with the other SQL backends (:mod:`agentrecall.stores.records`).
"""

from __future__ import annotations

RECORD_COLUMNS = (
    "m.id, m.content, m.metadata, m.created_at, m.updated_at, m.expires_at, "
    "s.user_id, s.agent_id, s.session_id"
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
    "s.user_id, s.agent_id, s.session_id"
)
"""The columns :func:`~agentrecall.stores.records.version` reads, over :data:`VERSIONS`."""

VERSIONS = "memory_history AS h CROSS JOIN memory_scopes AS s ON s.scope = h.scope"
"""The replaced versions with their scope's ids, as alias ``h`` and ``s``."""
