"""Creating and upgrading agentrecall's tables in PostgreSQL: append-only migrations.

Each component (a store's tables, a buffer's table) keeps its schema version in one row of
``<schema>.agentrecall_versions``. :func:`migrate` brings a component up to date; it is
idempotent, and processes that start at once never collide: the changes run in one transaction
under an advisory lock taken per schema, and a process that finds the version current takes no
lock and changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentrecall.errors import InvalidArgumentError, StorageError

if TYPE_CHECKING:
    import psycopg

VERSION_TABLE = "agentrecall_versions"
"""The table, in each schema agentrecall uses, that holds every component's version."""

MAX_IDENTIFIER = 63
"""PostgreSQL's longest identifier, in bytes; longer ones are cut silently by the server."""

MAX_KEY_BYTES = 2_600
"""The most bytes (UTF-8) of text kept as a key of a B-tree index (a memory id, a scope's ids
together, a session id): PostgreSQL limits an index row to 2,704 bytes, and ids that do not
compress failed from about 2,680 bytes with an error naming the index."""


def keyable(text: str) -> bool:
    """Whether ``text`` can be such a key: no U+0000, at most :data:`MAX_KEY_BYTES` of UTF-8."""
    # No character takes more than four bytes: most texts are answered without encoding them.
    return "\0" not in text and (
        len(text) * 4 <= MAX_KEY_BYTES or len(text.encode()) <= MAX_KEY_BYTES
    )


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_identifier(value: object, argument: str, *, reserve: int = 0) -> str:
    """Return ``value`` once it can name a schema or a table, or refuse it.

    Accepted: ASCII letters, digits and underscores, not starting with a digit, at most
    ``MAX_IDENTIFIER - reserve`` characters (``reserve`` leaves room for a suffix the caller
    appends). Names are used quoted, so their case is kept.
    """
    longest = MAX_IDENTIFIER - reserve
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value) or len(value) > longest:
        raise InvalidArgumentError(
            f"{argument} must be 1 to {longest} ASCII letters, digits or underscores, not "
            f"starting with a digit; got {value!r}"
        )
    return value


def lock_key(schema: str) -> int:
    """Return the advisory lock key that guards the migrations of ``schema`` (a signed int64)."""
    digest = hashlib.sha256(f"agentrecall migrations {schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def migrate(
    connection: psycopg.Connection[Any],
    *,
    schema: str,
    component: str,
    migrations: Sequence[Any],
    what: str,
) -> None:
    """Bring ``component`` in ``schema`` to version ``len(migrations)``.

    Args:
        connection: an autocommit connection.
        schema: the schema holding the component's tables (created when absent).
        component: the component's key in the version table, e.g. ``"buffer:buffer_sessions"``.
        migrations: statements (strings or ``psycopg.sql`` objects); migration ``n`` brings
            version ``n`` to ``n + 1``. Append only: a released migration never changes.
        what: the component, as messages name it.

    Raises:
        StorageError: the stored version is newer than this agentrecall knows.
    """
    if _version(connection, schema, component) == len(migrations):
        return
    from psycopg import sql

    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema),))
        connection.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        connection.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} "
                "(component text PRIMARY KEY, version integer NOT NULL)"
            ).format(sql.Identifier(schema, VERSION_TABLE))
        )
        version = _version(connection, schema, component) or 0
        if version > len(migrations):
            raise StorageError(
                f"{what}: {schema}.{VERSION_TABLE} says '{component}' is at version {version}, "
                f"newer than this agentrecall knows ({len(migrations)}); upgrade agentrecall"
            )
        for statement in migrations[version:]:
            connection.execute(statement)
        connection.execute(
            sql.SQL(
                "INSERT INTO {} (component, version) VALUES (%s, %s) "
                "ON CONFLICT (component) DO UPDATE SET version = excluded.version"
            ).format(sql.Identifier(schema, VERSION_TABLE)),
            (component, len(migrations)),
        )


def _version(connection: psycopg.Connection[Any], schema: str, component: str) -> int | None:
    """The component's recorded version, ``None`` when nothing is recorded yet."""
    from psycopg import sql

    table = connection.execute(
        "SELECT to_regclass(%s)", (sql.Identifier(schema, VERSION_TABLE).as_string(connection),)
    ).fetchone()
    if table is None or table[0] is None:
        return None
    row = connection.execute(
        sql.SQL("SELECT version FROM {} WHERE component = %s").format(
            sql.Identifier(schema, VERSION_TABLE)
        ),
        (component,),
    ).fetchone()
    return None if row is None else int(row[0])
