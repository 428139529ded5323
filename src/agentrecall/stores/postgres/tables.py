"""SQL pieces every ``PostgresStore`` statement shares: table names, scope and read conditions.

Identifiers come from the store's schema name, quoted once by psycopg; every value travels as
a bound parameter (``%s``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection, sql

from agentrecall._internal.postgres_schema import MAX_IDENTIFIER
from agentrecall._internal.text import check_text
from agentrecall.errors import InvalidArgumentError
from agentrecall.stores.front import Conditions
from agentrecall.stores.postgres.filters import to_postgres
from agentrecall.stores.scopes import Scope

Params = list[object]
Connection = AsyncConnection[Any]


def check_schema(schema: object) -> str:
    """Return ``schema`` once it can name the store's own schema, or refuse it.

    Any text PostgreSQL keeps apart from every other name is accepted (names are quoted, so
    case and spaces count), except:

    * more than :data:`MAX_IDENTIFIER` bytes of UTF-8: the server cuts a longer name without a
      word, so two long names sharing their first 63 bytes would share one set of tables;
    * ``$``: the migrations write the quoted name inside ``$$``-quoted function bodies;
    * a ``pg_`` prefix, which PostgreSQL keeps for its own schemas, and U+0000.

    Raises:
        InvalidArgumentError: naming ``schema`` and what is expected.
    """
    if not isinstance(schema, str) or not schema.strip():
        raise InvalidArgumentError(f"schema must be a non-blank string, got {schema!r}")
    check_text(schema, "schema")
    size = len(schema.encode())
    if size > MAX_IDENTIFIER or "$" in schema or "\0" in schema or schema.startswith("pg_"):
        raise InvalidArgumentError(
            f"schema must be a PostgreSQL name of at most {MAX_IDENTIFIER} bytes in UTF-8, "
            f"without '$' or NUL and not starting with 'pg_'; got {schema!r} ({size} bytes)"
        )
    return schema


@dataclass(frozen=True, slots=True)
class Tables:
    """The quoted names of one schema's tables, and the store's number in ``stores``.

    Attributes:
        schema: the quoted schema, such as ``"agentrecall"``.
        store: the store's number, the same for all its scope views.
    """

    schema: str
    store: int

    @classmethod
    def of(cls, schema: str, store: int) -> Tables:
        """Return the tables of ``schema`` (unquoted) for store number ``store``."""
        return cls(sql.Identifier(schema).as_string(None), store)

    @property
    def memories(self) -> str:
        """The memories table."""
        return f"{self.schema}.memories"

    @property
    def scopes(self) -> str:
        """The scopes table."""
        return f"{self.schema}.scopes"

    @property
    def history(self) -> str:
        """The history table."""
        return f"{self.schema}.history"

    @property
    def records(self) -> str:
        """The memories with their scope's ids, as alias ``m`` and ``s``."""
        return f"{self.memories} AS m JOIN {self.scopes} AS s ON s.scope = m.scope"

    @property
    def versions(self) -> str:
        """The replaced versions with their scope's ids, as alias ``h`` and ``s``."""
        return f"{self.history} AS h JOIN {self.scopes} AS s ON s.scope = h.scope"

    def scope_where(self, scope: Scope, alias: str) -> tuple[str, Params]:
        """Return a condition selecting this store's rows of ``alias`` that ``scope`` sees."""
        parts = [f"{alias}.store = %s"]
        params: Params = [self.store]
        ids = [(column, value) for column, value in scope.columns().items() if value is not None]
        if ids:
            tests = " AND ".join(f"{column} = %s" for column, _ in ids)
            parts.append(
                f"{alias}.scope IN (SELECT scope FROM {self.scopes} WHERE store = %s AND {tests})"
            )
            params += [self.store, *(value for _, value in ids)]
        return " AND ".join(parts), params

    def where(self, found: Conditions, now: str) -> tuple[str, Params]:
        """Return the conditions every read applies over ``m``: scope, expiry, filter, bounds.

        Also the three moments: by default only current memories (``invalidated_at IS
        NULL``: one more test of a row the read fetches anyway, so plans do not change);
        with ``as_of``, the live part of the store at that moment (:meth:`live_at`).
        """
        parts, params = self.common(found)
        if found.as_of is not None:
            live, values = live_at(found.as_of)
            return " AND ".join([*parts, live]), [*params, *values]
        parts.append("(m.expires_at IS NULL OR m.expires_at > %s)")
        params.append(now)
        if not found.include_superseded:
            parts.append("m.invalidated_at IS NULL")
        return " AND ".join(parts), params

    def common(self, found: Conditions) -> tuple[list[str], Params]:
        """Return the conditions over ``m`` that hold for rows and versions alike.

        The scope, the filter, the time bounds, ``valid_at``, and with ``as_of`` the test of
        retirement at that moment (unless ``include_superseded``); not expiry.
        """
        where, params = self.scope_where(found.scope, "m")
        more, values = found.filter_and_bounds(_metadata_filter, "%s")
        parts = [where, *more]
        params += values
        if found.valid_at is not None:
            parts.append(
                "(m.valid_from IS NULL OR m.valid_from <= %s) "
                "AND (m.valid_until IS NULL OR m.valid_until > %s)"
            )
            params += [found.valid_at, found.valid_at]
        if found.as_of is not None and not found.include_superseded:
            parts.append("(m.invalidated_at IS NULL OR m.invalidated_at > %s)")
            params.append(found.as_of)
        return parts, params


def live_at(moment: str, alias: str = "m") -> tuple[str, Params]:
    """Return the test over ``alias`` of a row of ``memories`` holding its state at ``moment``.

    Created by then, not updated since (an update after it left that state in the history),
    not expired by then. A row retired after ``moment`` still has its content of then.
    """
    return (
        f"{alias}.created_at <= %s AND ({alias}.updated_at IS NULL OR {alias}.updated_at <= %s) "
        f"AND ({alias}.expires_at IS NULL OR {alias}.expires_at > %s)",
        [moment, moment, moment],
    )


RECORD_COLUMNS = (
    "m.id, m.content, m.metadata::text, m.created_at, m.updated_at, m.expires_at, "
    "s.user_id, s.agent_id, s.session_id, m.invalidated_at, m.superseded_by, m.valid_from, "
    "m.valid_until"
)
"""The columns :func:`agentrecall.stores.records.record` reads, over ``Tables.records``."""

VERSION_COLUMNS = (
    "h.content, h.metadata::text, h.changed_at, h.change, h.reason, h.id, "
    "s.user_id, s.agent_id, s.session_id, h.created_at, h.invalidated_at, h.superseded_by, "
    "h.valid_from, h.valid_until"
)
"""The columns :func:`agentrecall.stores.records.version` reads, over ``Tables.versions``."""


def _metadata_filter(filter: Mapping[str, Any]) -> tuple[str, Params]:
    return to_postgres(filter, "m.metadata")
