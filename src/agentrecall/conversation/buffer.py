"""``BufferMemory``: each session's conversation, trimmed so it fits the model."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar, cast

from agentrecall._internal.checks import check_optional_text, seconds
from agentrecall._internal.text import check_text, has_surrogate
from agentrecall.conversation.postgres_sessions import PostgresSessions
from agentrecall.conversation.sessions import (
    MemorySessions,
    SessionBackend,
    SessionRecord,
    UnstorableMessage,
    freeze,
    thaw,
)
from agentrecall.conversation.sqlite_sessions import SQLiteSessions
from agentrecall.conversation.tokens import TokenCounter, estimate_tokens
from agentrecall.conversation.trim import fit_budget, keep_newest
from agentrecall.errors import InvalidArgumentError
from agentrecall.messages import Message, check_message, is_system

T = TypeVar("T")

DEFAULT_SESSION = "default"


@dataclass(frozen=True, slots=True)
class BufferMetadata:
    """What a buffer knows about a session besides its messages.

    Attributes:
        created_at: the session's first write (UTC).
        accessed_at: its last read or write (UTC).
        agent_name: the ``agent_name`` of the last write.
        tags: the ``tags`` of the last write.
        token_count: the stored messages' tokens, by the buffer's counter.
    """

    created_at: datetime
    accessed_at: datetime | None
    agent_name: str | None
    tags: dict[str, str] | None
    token_count: int | None


@dataclass(frozen=True, slots=True)
class BufferEntry:
    """One session as :meth:`BufferMemory.entries` returns it: a copy, safe to mutate."""

    id: str
    session_id: str
    messages: list[dict[str, Any]]
    metadata: BufferMetadata


class BufferMemory:
    """Per-session conversation history, trimmed by message count and token budget.

    An agent hands over the whole conversation after each run (:meth:`write`) and reads it
    back before the next (:meth:`read`). Sessions live in memory; in an SQLite file when
    ``path`` is given, where they survive restarts and are shared by every process that opens
    the file; or in a PostgreSQL table when ``dsn`` is given, shared by every machine that
    reaches the server, so a conversation continues wherever the next turn runs. All behave
    the same. With PostgreSQL, a server that cannot be reached, or a connection lost during a
    call, raises :class:`~agentrecall.errors.ServerUnavailableError`, which is safe to retry:
    a write replaces the session whole, so a repeated one stores nothing twice.

    Behaviour, and where it differs from AgentLIB's ``BufferMemory``:

    * ``write`` replaces the session's history with the conversation given. System (and
      developer) messages are not stored: the agent sends its system prompt again each run.
    * ``max_messages`` counts messages and drops the oldest first. When it cuts, the kept
      history starts at the next user message (never at an assistant or tool message) and keeps
      no tool result whose tool call was cut, so a model API accepts it. AgentLIB cuts at the
      exact count and can leave an orphaned tool result first.
    * ``read(limit=n)`` returns at most the newest ``n`` messages, cut by the same rule
      (AgentLIB ignores ``limit``). ``tags`` returns the history only if the session's last
      write carried all of them. ``query`` is accepted and ignored: a buffer returns the
      conversation in order, not by relevance.
    * ``max_tokens`` applies on read: system messages (from ``default_store``) first and always,
      then the newest messages that fit, with the same user-turn rule. A message's cost is the
      ``token_counter``'s, by default ceil(UTF-16 length / 4) + 4, the length taking in tool
      calls and results wherever the message holds them (AgentLIB leaves OpenAI-style
      ``toolCalls`` out).
    * ``max_messages`` and ``max_tokens`` below 1 are refused (AgentLIB treats 0 as unlimited);
      ``None`` means unlimited.
    * ``default_store`` seeds sessions: a seeded session is read as given (not trimmed by
      ``max_messages``, system messages kept) until it is first written, and has no entry until
      then. The mapping is copied; the buffer never changes the caller's objects.
    * ``read`` and ``entries`` return copies, and ``write`` stores a copy: mutating either side
      never changes the other (AgentLIB shares the objects).
    * A session id is a non-blank string: ``""`` (or only whitespace) is refused by every
      method with an :class:`~agentrecall.errors.InvalidArgumentError` naming ``session_id``
      (AgentLIB treats ``""`` as all sessions in ``clear`` and ``entries``; here only ``None``
      means every session, and in ``read`` and ``write`` the default one).
    * ``idle_ttl`` (seconds or a ``timedelta``) forgets sessions neither read nor written for
      that long; a write to a forgotten session starts a new one.

    Messages may be OpenAI-style (``role``, ``content`` string or parts, ``tool_calls``,
    ``tool_call_id``) or Strands-style (``content`` blocks with ``text``, ``toolUse``,
    ``toolResult``). A message without a known role or with content of the wrong type is a
    ``ValueError`` naming its index, and nothing of that write is stored. Text with a lone
    surrogate (such as U+D800, which UTF-8 cannot encode) is refused in session ids, message
    content, ``agent_name`` and ``tags``. A persisted buffer also needs messages that JSON can
    hold as UTF-8 text, which rules out a lone surrogate anywhere in a message, with one
    addition: bytes (a Strands image, document or redacted reasoning) are kept, and read back
    as ``bytes``. It refuses, for that reason, a message holding a JSON object whose one key is
    ``"$bytes"`` with a string value: that is how bytes are stored.

    Concurrency: a write replaces a session in one step, so concurrent writes to one session
    are serialized (the last one wins, whole); sessions never wait on each other beyond one
    database transaction.
    """

    type = "buffer"

    def __init__(
        self,
        max_messages: int | None = 20,
        max_tokens: int | None = None,
        default_store: Mapping[str, Sequence[Message]] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        dsn: str | None = None,
        schema: str = "agentrecall",
        table: str = "buffer_sessions",
        token_counter: TokenCounter | None = None,
        idle_ttl: float | timedelta | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Configure the buffer; a persisted one opens its file or connects on first use.

        Args:
            max_messages: messages kept per session at write time; ``None`` for no cap.
            max_tokens: token budget of what ``read`` returns; ``None`` for no budget.
            default_store: sessions to start from, by session id (copied).
            path: an SQLite file to keep sessions in (``~`` expanded; a relative path is
                taken from the working directory at construction); ``None`` keeps them in
                memory.
            dsn: a PostgreSQL connection string (``postgresql://user@host:5432/db``) to keep
                sessions in that database instead (needs ``agentrecall[postgres]``).
            schema: with ``dsn``, the schema of the sessions' table (created when absent).
            table: with ``dsn``, the table's name; buffers with different tables share a
                database without touching each other.
            token_counter: ``message -> tokens`` (a whole number, 0 or more); see
                :func:`agentrecall.tiktoken_counter`.
            idle_ttl: forget sessions untouched for this long (seconds or ``timedelta``).
            clock: the time source, Unix seconds (tests pass a fake one).

        Raises:
            InvalidArgumentError: an argument has an unusable value (also a ``ValueError``).
        """
        self.max_messages = _check_positive(max_messages, "max_messages")
        self.max_tokens = _check_positive(max_tokens, "max_tokens")
        if token_counter is not None and not callable(token_counter):
            raise InvalidArgumentError("token_counter must be a callable: message -> int")
        self._count_tokens: TokenCounter = (
            estimate_tokens if token_counter is None else _checked_counter(token_counter)
        )
        self._idle_ttl = seconds(idle_ttl, "idle_ttl")
        self._clock = clock
        self._seeds = _copy_seeds(default_store)
        self._backend = _backend(path, dsn, schema, table)

    @property
    def session_count(self) -> int:
        """How many sessions exist, seeded ones included.

        A persisted buffer asks its database here, a blocking call; async code can use
        :meth:`count_sessions` instead.
        """
        return self._session_count()

    async def count_sessions(self) -> int:
        """How many sessions exist, seeded ones included, without blocking the loop."""
        return await self._call(self._session_count)

    async def read(
        self,
        session_id: str | None = DEFAULT_SESSION,
        *,
        limit: int | None = None,
        query: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Return the session's history, oldest first, within ``limit`` and ``max_tokens``.

        An unknown session gives ``[]`` and creates nothing. ``None`` as ``session_id`` means
        ``"default"``. See the class docstring for the trimming rules. ``query`` is taken, as
        AgentLIB's memory interface passes one, and not used: a buffer gives back the
        conversation, not what matches a query (a store's ``search`` does that).
        """
        key = _session_key(session_id)
        _check_positive(limit, "limit")
        wanted = _check_tags(tags)
        return await self._call(self._read_blocking, key, limit, wanted)

    async def write(
        self,
        messages: Sequence[Message],
        session_id: str | None = DEFAULT_SESSION,
        *,
        agent_name: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> None:
        """Replace the session's history with ``messages`` (system messages left out).

        Raises:
            InvalidArgumentError: a message is unusable (the message names its index), or
                ``agent_name``/``tags`` have the wrong type. Nothing is stored then.
        """
        key = _session_key(session_id)
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
            raise InvalidArgumentError("messages must be a list of message mappings")
        for index, message in enumerate(messages):
            check_message(message, index)
        check_optional_text(agent_name, "agent_name")
        checked_tags = _check_tags(tags)
        kept = keep_newest([m for m in messages if not is_system(m)], self.max_messages)
        await self._call(self._write_blocking, key, messages, kept, agent_name, checked_tags)

    async def clear(self, session_id: str | None = None) -> None:
        """Forget one session (seeded ones included), or every session when omitted."""
        if session_id is None:
            self._seeds.clear()
        else:
            self._seeds.pop(_session_key(session_id), None)
        await self._call(self._backend.delete, session_id)

    async def entries(self, session_id: str | None = None) -> list[BufferEntry]:
        """Return one session's entry (or none), or every entry in order of first write.

        Seeded sessions have no entry until they are written.
        """
        key = None if session_id is None else _session_key(session_id)
        return await self._call(self._entries_blocking, key)

    async def aclose(self) -> None:
        """Close the database connection of a persisted buffer (reopened on next use)."""
        await self._call(self._backend.close)

    async def __aenter__(self) -> BufferMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        if self._backend.blocking:
            return await asyncio.to_thread(function, *args)
        return function(*args)

    def _idle_before(self, now: float) -> float | None:
        return None if self._idle_ttl is None else now - self._idle_ttl

    def _read_blocking(
        self, key: str, limit: int | None, tags: dict[str, str] | None
    ) -> list[dict[str, Any]]:
        now = self._clock()
        record = self._backend.access(key, now, self._idle_before(now))
        if record is None:
            seeded = self._seeds.get(key)
            if seeded is None or tags is not None:
                return []
            messages: list[dict[str, Any]] = thaw(seeded)
        else:
            if tags is not None and not tags.items() <= (record.tags or {}).items():
                return []
            messages = _as_dicts(record.messages)
        if limit is not None:
            # Seeded system messages are kept whatever the limit, as the budget keeps them.
            system = [m for m in messages if is_system(m)]
            messages = system + keep_newest([m for m in messages if not is_system(m)], limit)
        # Backends and seeds hand out fresh copies, so the window is the caller's to keep.
        return fit_budget(messages, self.max_tokens, self._count_tokens)

    def _write_blocking(
        self,
        key: str,
        given: Sequence[Message],
        kept: list[Message],
        agent_name: str | None,
        tags: dict[str, str] | None,
    ) -> None:
        now = self._clock()
        record = SessionRecord(
            session_id=key,
            entry_id=None,
            messages=kept,
            created_at=now,
            accessed_at=now,
            agent_name=agent_name,
            tags=tags,
            token_count=sum(self._count_tokens(m) for m in kept),
        )
        try:
            self._backend.put(record, self._idle_before(now))
        except UnstorableMessage as error:
            index = next(i for i, m in enumerate(given) if m is kept[error.position])
            raise InvalidArgumentError(
                f"messages[{index}] cannot be stored: {error.reason}"
            ) from error
        self._seeds.pop(key, None)

    def _entries_blocking(self, key: str | None) -> list[BufferEntry]:
        idle_before = self._idle_before(self._clock())
        if idle_before is not None:
            self._backend.purge_idle(idle_before)
        return [_entry(record) for record in self._backend.records(key)]

    def _session_count(self) -> int:
        idle_before = self._idle_before(self._clock())
        if idle_before is not None:
            self._backend.purge_idle(idle_before)
        return len(self._backend.session_ids() | set(self._seeds))


def _backend(
    path: str | os.PathLike[str] | None, dsn: str | None, schema: str, table: str
) -> SessionBackend:
    if path is not None and dsn is not None:
        raise InvalidArgumentError(
            "pass path= (an SQLite file) or dsn= (a PostgreSQL database), not both"
        )
    if dsn is not None:
        return PostgresSessions(dsn, schema=schema, table=table)
    if (schema, table) != ("agentrecall", "buffer_sessions"):
        raise InvalidArgumentError("schema= and table= name a PostgreSQL table: pass dsn= too")
    return MemorySessions() if path is None else SQLiteSessions(_file_path(path))


def _file_path(path: str | os.PathLike[str]) -> str:
    """Return ``path`` absolute, ``~`` expanded, as the stores take theirs."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"path must be a file path, got {path!r}")
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"path must name a file, got {path!r}")
    check_text(text, "path")
    return os.path.abspath(os.path.expanduser(text))


def _entry(record: SessionRecord) -> BufferEntry:
    assert record.entry_id is not None  # backends always return it
    return BufferEntry(
        id=record.entry_id,
        session_id=record.session_id,
        messages=_as_dicts(record.messages),
        metadata=BufferMetadata(
            created_at=_utc(record.created_at),
            accessed_at=_utc(record.accessed_at),
            agent_name=record.agent_name,
            tags=None if record.tags is None else dict(record.tags),
            token_count=record.token_count,
        ),
    )


def _as_dicts(messages: list[Message]) -> list[dict[str, Any]]:
    # Backends return messages rebuilt from pickle or JSON: always plain dicts.
    return cast(list[dict[str, Any]], messages)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def _session_key(session_id: str | None, argument: str = "session_id") -> str:
    """Return the session id to use, ``None`` standing for the default session.

    Raises:
        InvalidArgumentError: ``session_id`` is not a string, is blank (a write to ``""``
            would store a session no caller can have meant), or holds a lone surrogate.
    """
    if session_id is None:
        return DEFAULT_SESSION
    if not isinstance(session_id, str):
        raise InvalidArgumentError(f"{argument} must be a string, got {session_id!r}")
    if not session_id.strip():
        raise InvalidArgumentError(
            f"{argument} must be a non-blank string naming a session, got {session_id!r}"
        )
    check_text(session_id, argument)
    return session_id


def _check_positive(value: int | None, argument: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidArgumentError(
            f"{argument} must be a whole number of at least 1, or None for no limit; got {value!r}"
        )
    return value


def _checked_counter(counter: TokenCounter) -> TokenCounter:
    """Wrap a caller's counter so a count that is not a whole number is named, not summed."""

    def count(message: Message) -> int:
        tokens = counter(message)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise InvalidArgumentError(
                f"token_counter must return a whole number of tokens (0 or more), got {tokens!r}"
            )
        return tokens

    return count


def _check_tags(tags: Mapping[str, str] | None) -> dict[str, str] | None:
    if tags is None:
        return None
    if not isinstance(tags, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tags.items()
    ):
        raise InvalidArgumentError(f"tags must map strings to strings, got {tags!r}")
    for key, value in tags.items():
        if has_surrogate(key) or has_surrogate(value):
            check_text(key, "tags key")
            check_text(value, f"tags[{key!r}]")
    return dict(tags)


def _copy_seeds(default_store: Mapping[str, Sequence[Message]] | None) -> dict[str, bytes]:
    seeds: dict[str, bytes] = {}
    for session_id, messages in (default_store or {}).items():
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidArgumentError(f"default_store[{session_id!r}] must be a list of messages")
        for index, message in enumerate(messages):
            check_message(message, index, f"default_store[{session_id!r}]")
        try:
            seeds[_session_key(session_id, "a session id of default_store")] = freeze(
                list(messages)
            )
        except UnstorableMessage as error:
            raise InvalidArgumentError(
                f"default_store[{session_id!r}][{error.position}] cannot be stored: {error.reason}"
            ) from error
    return seeds
