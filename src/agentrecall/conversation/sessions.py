"""Where a buffer keeps its sessions: the record it stores and the in-memory backend."""

from __future__ import annotations

import base64
import json
import pickle
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agentrecall._internal.ids import new_id
from agentrecall._internal.text import has_surrogate
from agentrecall.errors import InvalidArgumentError
from agentrecall.messages import Message


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One stored session. Times are Unix seconds.

    A record handed to ``put`` may leave ``entry_id`` ``None`` (the backend keeps the existing
    session's id or mints one); a record a backend returns always has it, and its ``messages``
    are a fresh copy that belongs to the caller.
    """

    session_id: str
    entry_id: str | None
    messages: list[Message]
    created_at: float
    accessed_at: float
    agent_name: str | None
    tags: dict[str, str] | None
    token_count: int


BYTES_KEY = "$bytes"
"""The one key of the JSON object that stands for a bytes value in a stored message: its value
is the bytes in base64 (Strands keeps images, documents and redacted reasoning as bytes)."""

COLUMNS = "session_id, entry_id, messages, created_at, accessed_at, agent_name, tags, token_count"
"""The columns of a stored session, in the order of :func:`row_from_record`, for the SQL
backends."""


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

    def access(
        self, session_id: str, when: float, idle_before: float | None
    ) -> SessionRecord | None:
        """Return the session with its access time set to ``when``, or ``None``.

        A session last accessed before ``idle_before`` is removed instead, and ``None`` comes
        back.
        """
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
    """Sessions in a dict of this process; thread-safe.

    Messages are kept pickled: storing them is the copy that protects them from the caller,
    and each read unpickles a fresh copy, both in C and several times faster than walking the
    messages in Python.
    """

    blocking = False

    def __init__(self) -> None:
        # Each session: its record (with no messages) and its messages, frozen.
        self._sessions: dict[str, tuple[SessionRecord, bytes]] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str) -> SessionRecord | None:
        """Return the session, or ``None``."""
        stored = self._sessions.get(session_id)
        return None if stored is None else _thawed(stored)

    def put(self, record: SessionRecord, idle_before: float | None) -> SessionRecord:
        """Store ``record`` (see :class:`SessionBackend`)."""
        frozen = freeze(record.messages)
        with self._lock:
            previous = self._sessions.get(record.session_id)
            if previous is not None and not _idle(previous[0], idle_before):
                entry_id, created_at = previous[0].entry_id, previous[0].created_at
            else:
                # A restarted session goes to the end of the listing, like a new one.
                self._sessions.pop(record.session_id, None)
                entry_id, created_at = record.entry_id or new_id(), record.created_at
            stored = replace(record, entry_id=entry_id, created_at=created_at, messages=[])
            self._sessions[record.session_id] = (stored, frozen)
        return replace(stored, messages=record.messages)

    def access(
        self, session_id: str, when: float, idle_before: float | None
    ) -> SessionRecord | None:
        """Return the session marked accessed at ``when`` (see :class:`SessionBackend`)."""
        with self._lock:
            stored = self._sessions.get(session_id)
            if stored is None:
                return None
            if _idle(stored[0], idle_before):
                del self._sessions[session_id]
                return None
            stored = (replace(stored[0], accessed_at=when), stored[1])
            self._sessions[session_id] = stored
        return _thawed(stored)

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
            return [_thawed(stored) for stored in list(self._sessions.values())]
        record = self.get(session_id)
        return [] if record is None else [record]

    def session_ids(self) -> set[str]:
        """Return the ids of every stored session."""
        return set(self._sessions)

    def purge_idle(self, idle_before: float) -> None:
        """Remove sessions last accessed before ``idle_before``."""
        with self._lock:
            for key in [k for k, (r, _) in self._sessions.items() if _idle(r, idle_before)]:
                del self._sessions[key]

    def close(self) -> None:
        """Nothing to release."""


class UnstorableMessage(InvalidArgumentError):
    """A message a backend cannot keep; ``position`` is its index in the list it was given."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"message {position} cannot be stored: {reason}")
        self.position = position
        self.reason = reason


def first_failure(messages: Sequence[Message], encode: Callable[[Any], object]) -> int:
    """Return the index of the first message ``encode`` raises on (0 when none does alone)."""
    for position, message in enumerate(messages):
        try:
            encode(message)
        except Exception:  # any failure marks the message we are looking for
            return position
    return 0


def plain(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Return the messages as plain dicts (other mappings converted, the top level only)."""
    return [m if type(m) is dict else dict(m) for m in messages]


def freeze(messages: list[Message]) -> bytes:
    """Return a private copy of ``messages`` as bytes.

    Raises:
        UnstorableMessage: a message holds an object that cannot be copied.
    """
    try:
        return pickle.dumps(plain(messages), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        position = first_failure(messages, pickle.dumps)
        raise UnstorableMessage(
            position, f"it holds an object that cannot be copied ({error})"
        ) from error


def thaw(frozen: bytes) -> list[Any]:
    """Return a fresh copy of messages kept by :func:`freeze`."""
    # Only bytes this module pickled are ever unpickled, never a caller's.
    messages: list[Any] = pickle.loads(frozen)
    return messages


def _thawed(stored: tuple[SessionRecord, bytes]) -> SessionRecord:
    return replace(stored[0], messages=thaw(stored[1]))


def _idle(record: SessionRecord, idle_before: float | None) -> bool:
    return idle_before is not None and record.accessed_at < idle_before


def row_from_record(record: SessionRecord, where: str) -> tuple[Any, ...]:
    """Return ``record`` as a database row of :data:`COLUMNS`: messages and tags as JSON text.

    Bytes anywhere in a message (a Strands image's ``bytes``, say) are written as
    ``{"$bytes": "<base64>"}`` and read back as ``bytes``. A record without ``entry_id`` gets a
    new one. ``where`` names the database in messages.

    Raises:
        UnstorableMessage: a message JSON cannot hold; one with a lone surrogate anywhere; or
            one holding an object of that bytes form itself, which would read back as bytes.
    """
    try:
        messages = messages_json(plain(record.messages))
    except (TypeError, ValueError) as error:
        position = first_failure(record.messages, _one_json)
        raise UnstorableMessage(
            position, f"{where} keeps messages as JSON and this one is not ({error})"
        ) from error
    if has_surrogate(messages):
        # Anywhere in a message (a tool call's arguments, say), not only in the text that
        # check_message reads: the databases take only text UTF-8 can encode.
        position = first_failure(record.messages, _utf8_json)
        raise UnstorableMessage(
            position, f"{where} keeps messages as UTF-8 text and this one holds a lone surrogate"
        )
    return (
        record.session_id,
        record.entry_id or new_id(),
        messages,
        record.created_at,
        record.accessed_at,
        record.agent_name,
        None if record.tags is None else json.dumps(record.tags, ensure_ascii=False),
        record.token_count,
    )


def record_from_row(row: Sequence[Any]) -> SessionRecord:
    """Return the record a row of :data:`COLUMNS` holds."""
    return SessionRecord(
        session_id=row[0],
        entry_id=row[1],
        messages=messages_from_json(row[2]),
        created_at=row[3],
        accessed_at=row[4],
        agent_name=row[5],
        tags=None if row[6] is None else json.loads(row[6]),
        token_count=row[7],
    )


def messages_json(messages: Any) -> str:
    """Return messages (or one message) as JSON text, bytes in the :data:`BYTES_KEY` form.

    Mappings must be dicts (see :func:`plain`), as for ``json.dumps``.

    Raises:
        TypeError: a value JSON cannot hold.
        ValueError: a value already has the bytes form, so it could not be told from bytes.
    """
    text = json.dumps(messages, ensure_ascii=False, default=_bytes_object)
    # The key's JSON string, quotes included, appears only where a key or a value is "$bytes"
    # exactly: inside a longer string the quotes would be escaped.
    if _BYTES_TOKEN in text and _holds_bytes_form(messages):
        raise ValueError(
            f"it holds an object of the one key {BYTES_KEY!r}, which is how bytes are stored"
        )
    return text


def messages_from_json(text: str) -> list[Any]:
    """Return the messages :func:`messages_json` wrote, with their bytes."""
    if _BYTES_TOKEN not in text:
        messages: list[Any] = json.loads(text)
        return messages
    restored: list[Any] = json.loads(text, object_hook=_bytes_value)
    return restored


_BYTES_TOKEN = json.dumps(BYTES_KEY)


def _bytes_object(value: object) -> dict[str, str]:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {BYTES_KEY: base64.b64encode(value).decode("ascii")}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _is_bytes_form(value: object) -> bool:
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get(BYTES_KEY), str)


def _bytes_value(value: dict[str, Any]) -> Any:
    return base64.b64decode(value[BYTES_KEY]) if _is_bytes_form(value) else value


def _holds_bytes_form(value: object) -> bool:
    if isinstance(value, Mapping):
        return _is_bytes_form(value) or any(_holds_bytes_form(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_bytes_form(item) for item in value)
    return False


def _one_json(message: Message) -> str:
    return messages_json(plain([message]))


def _utf8_json(message: Message) -> bytes:
    return _one_json(message).encode("utf-8")
