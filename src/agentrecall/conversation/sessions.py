"""Where a buffer keeps its sessions: the record it stores and the in-memory backend."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Protocol

from agentrecall.messages import Message


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One stored session. Times are Unix seconds; ``messages`` belong to the backend."""

    session_id: str
    entry_id: str
    messages: list[Message]
    created_at: float
    accessed_at: float
    agent_name: str | None
    tags: dict[str, str] | None
    token_count: int


class SessionBackend(Protocol):
    """Synchronous session storage; a buffer calls it off the event loop when it blocks.

    ``put`` keeps an existing session's ``entry_id`` and ``created_at`` and its place in the
    listing order (order of first write); every method is atomic on its own.
    """

    blocking: bool

    def get(self, session_id: str) -> SessionRecord | None:
        """Return the session, or ``None``."""
        ...

    def put(self, record: SessionRecord, idle_before: float | None) -> SessionRecord:
        """Store ``record``, replacing the session's messages and metadata; return what is stored.

        A stored session last accessed before ``idle_before`` is treated as absent, so the write
        starts a new session (new id and creation time).
        """
        ...

    def touch(self, session_id: str, when: float) -> None:
        """Set the session's access time."""
        ...

    def delete(self, session_id: str | None) -> None:
        """Remove one session, or all when ``session_id`` is ``None``."""
        ...

    def records(self, session_id: str | None) -> list[SessionRecord]:
        """Return one session's record (or none), or all in order of first write."""
        ...

    def session_ids(self) -> set[str]:
        """Return the ids of every stored session."""
        ...

    def purge_idle(self, idle_before: float) -> None:
        """Remove sessions last accessed before ``idle_before``."""
        ...

    def close(self) -> None:
        """Release resources; the backend reopens on next use."""
        ...


class MemorySessions:
    """Sessions in a dict of this process; thread-safe."""

    blocking = False

    def __init__(self) -> None:
        self._sessions: dict[str, SessionRecord] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> SessionRecord | None:
        """Return the session, or ``None``."""
        return self._sessions.get(session_id)

    def put(self, record: SessionRecord, idle_before: float | None) -> SessionRecord:
        """Store ``record`` (see :class:`SessionBackend`)."""
        with self._lock:
            previous = self._sessions.get(record.session_id)
            if previous is not None and not _idle(previous, idle_before):
                record = replace(record, entry_id=previous.entry_id, created_at=previous.created_at)
            else:
                # A restarted session goes to the end of the listing, like a new one.
                self._sessions.pop(record.session_id, None)
            self._sessions[record.session_id] = record
            return record

    def touch(self, session_id: str, when: float) -> None:
        """Set the session's access time."""
        with self._lock:
            record = self._sessions.get(session_id)
            if record is not None:
                self._sessions[session_id] = replace(record, accessed_at=when)

    def delete(self, session_id: str | None) -> None:
        """Remove one session, or all."""
        with self._lock:
            if session_id is None:
                self._sessions.clear()
            else:
                self._sessions.pop(session_id, None)

    def records(self, session_id: str | None) -> list[SessionRecord]:
        """Return one session's record (or none), or all in order of first write."""
        if session_id is None:
            return list(self._sessions.values())
        record = self._sessions.get(session_id)
        return [] if record is None else [record]

    def session_ids(self) -> set[str]:
        """Return the ids of every stored session."""
        return set(self._sessions)

    def purge_idle(self, idle_before: float) -> None:
        """Remove sessions last accessed before ``idle_before``."""
        with self._lock:
            for key in [k for k, r in self._sessions.items() if _idle(r, idle_before)]:
                del self._sessions[key]

    def close(self) -> None:
        """Nothing to release."""


def _idle(record: SessionRecord, idle_before: float | None) -> bool:
    return idle_before is not None and record.accessed_at < idle_before
