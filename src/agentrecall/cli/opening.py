"""Which store a command line names, and what is checked before it is opened.

Only a missing file means "no store yet": a path that cannot be looked at (no permission to
search a directory, a regular file where a directory should be) is an error, never an empty
store. ``--path`` and ``--db`` name a file that must exist, except for a command that creates
it, which creates the file but not its directory: a mistyped path fails instead of growing a
new tree. The default store's directory under ``$AGENTRECALL_HOME`` is ours to create.

``--dsn`` names a PostgreSQL database instead (:func:`open_postgres`); nothing connects until
the command's first call, which sets the store's tables up when the store is writable.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from agentrecall.cli.options import DEFAULT_SCHEMA, SCOPE_OPTIONS
from agentrecall.cli.report import UsageMistake, note
from agentrecall.embeddings.base import Embedder
from agentrecall.errors import InvalidArgumentError, StorageError
from agentrecall.stores.base import Capability, MemoryStore
from agentrecall.stores.sqlite import SQLiteStore

if TYPE_CHECKING:
    from agentrecall.stores.jsonfile import JsonFileStore
    from agentrecall.stores.postgres import PostgresStore


def open_store(
    args: argparse.Namespace,
    *,
    default: str,
    embedder: Embedder | None = None,
    writable: bool = True,
) -> MemoryStore:
    """Return the store the options name: ``--dsn``, ``--path``, ``--db``, else by name.

    ``--dsn`` is a PostgreSQL store (see :func:`open_postgres`), ``--path`` a JSON file,
    ``--db`` an SQLite file, and a name an SQLite store under ``$AGENTRECALL_HOME``.

    ``default`` is the name without ``--store``; an SQLite store gets ``embedder``. A command
    with ``args.creates`` (``add``) creates a missing ``--path`` or ``--db`` file (not its
    directory), and a missing store of a name with its directory; any other command needs the
    ``--path`` or ``--db`` file to exist, and reads a name's missing store as empty without
    creating it (as a read-only SQLite store: a command that writes finds nothing to change).
    A store opened with ``writable=False`` refuses every write; so does a PostgreSQL store
    opened for a command with ``args.reads_only``, which reads a store whose tables do not
    exist yet as empty.

    Raises:
        StorageError: a file that must exist is missing, a directory is missing, a path
            cannot be looked at, or ``--path`` or ``--db`` names a directory.
        UsageMistake: an option's value is unusable (a path that names no file), naming it.
    """
    if hasattr(args, "dsn"):
        # A command that only reads (``args.reads_only``) never sets tables up on the server:
        # it needs no more than read access, and a mistyped name creates nothing.
        writable = writable and not getattr(args, "reads_only", False)
        return open_postgres(args, default=default, embedder=embedder, writable=writable)
    creates = bool(getattr(args, "creates", False))
    for option, (opener, kind, example) in _FILE_OPENERS.items():
        if hasattr(args, option):
            given = getattr(args, option)
            try:
                store = opener(given, default, embedder, writable)
            except InvalidArgumentError as error:
                raise UsageMistake(f"--{option} '{given}': {error}") from error
            path = store.path or ""
            if os.path.isdir(path):
                raise StorageError(
                    f"--{option} '{path}' is a directory; name {kind} instead, such as "
                    f"'{os.path.join(path, example)}'"
                )
            size = creatable(path) if creates else existing(path)
            if isinstance(store, SQLiteStore):
                note_if_empty(path, size)
            return store
    name = getattr(args, "store", default)
    return _open_named(name, creates=creates, embedder=embedder, writable=writable)


def open_postgres(
    args: argparse.Namespace, *, default: str, embedder: Embedder | None, writable: bool
) -> PostgresStore:
    """Return the ``PostgresStore`` ``--dsn``, ``--pg-name`` and ``--pg-schema`` name.

    Raises:
        UsageMistake: the connection string cannot be parsed, or a name is blank (the
            message names the option and never repeats the password).
        ImportError: the ``postgres`` extra is not installed.
    """
    from agentrecall.stores.postgres import PostgresStore  # loaded only for a database

    name = getattr(args, "pg_name", default)
    schema = getattr(args, "pg_schema", DEFAULT_SCHEMA)
    try:
        return PostgresStore(
            args.dsn, name=name, schema=schema, embedder=embedder, writable=writable
        )
    except InvalidArgumentError as error:
        raise UsageMistake(_with_option(str(error))) from error


_ARGUMENT_OPTIONS = (("dsn", "--dsn"), ("schema", "--pg-schema"), ("name", "--pg-name"))
"""The ``PostgresStore`` arguments the options give, as its messages start with them."""


def _with_option(message: str) -> str:
    """Return a ``PostgresStore`` message about an argument, naming the option instead."""
    for argument, option in _ARGUMENT_OPTIONS:
        if message.startswith(argument + " ") or message.startswith(argument + ":"):
            return option + message[len(argument) :]
    return message


def shown(store: MemoryStore) -> str:
    """Return how output names ``store``: its file, or its database without the password."""
    path = getattr(store, "path", None)
    if path:
        return str(path)
    address = getattr(store, "address", None)
    if address is None:
        return f"the store '{store.name}'"
    schema = getattr(store, "schema", DEFAULT_SCHEMA)
    return f"the store '{store.name}' (schema {schema}) in {address}"


def quoted(store: MemoryStore) -> str:
    """Return :func:`shown` with a file's path in quotes, for a message around it."""
    path = getattr(store, "path", None)
    return f"'{path}'" if path else shown(store)


def named(store: MemoryStore) -> str:
    """Return how an error names ``store``: ``'/data/notes.json' (JsonFileStore)``.

    That is the file the user named (or the database), not the store's internal name, which
    they did not choose.
    """
    return f"{quoted(store)} ({type(store).__name__})"


def _json_file(
    path: str, name: str, embedder: Embedder | None, writable: bool
) -> JsonFileStore | SQLiteStore:
    from agentrecall.stores.jsonfile import JsonFileStore  # loaded only for a JSON store

    return JsonFileStore(name=name, path=path, writable=writable)


def _sqlite_file(
    path: str, name: str, embedder: Embedder | None, writable: bool
) -> JsonFileStore | SQLiteStore:
    return SQLiteStore(path, embedder=embedder, writable=writable)


_FILE_OPENERS = {
    "path": (_json_file, "the JSON store file", "memory.json"),
    "db": (_sqlite_file, "the SQLite store file", "memory.db"),
}
"""The options that name a store by its file: how each opens it, what the file is, and a file
name a message may suggest. A store that is not a file (a database server's URL) is chosen
before these, by its own option."""


def _open_named(
    name: str, *, creates: bool, embedder: Embedder | None, writable: bool
) -> MemoryStore:
    store = SQLiteStore(name=name, embedder=embedder, writable=writable)
    size = size_of(store.path)
    if size is None and not creates:
        # Reading a store that does not exist yet finds nothing and creates no file.
        return SQLiteStore(name=name, embedder=embedder, writable=False)
    note_if_empty(store.path, size)
    return store


def scoped(store: MemoryStore, args: argparse.Namespace) -> MemoryStore:
    """Return ``store``'s view of the scope the options name, or ``store`` without any.

    Raises:
        InvalidArgumentError: a scope was named and the store has no scopes (a JSON file).
    """
    ids = {
        flag: getattr(args, flag) for flag in SCOPE_OPTIONS if getattr(args, flag, None) is not None
    }
    if not ids:
        return store
    if Capability.SCOPE not in getattr(store, "capabilities", frozenset()):
        flag = "--" + next(iter(ids)).replace("_", "-")
        raise InvalidArgumentError(
            f"{flag}: {named(store)} has no scopes; "
            "use an SQLite store (--db FILE or --store NAME) or a PostgreSQL one (--dsn URL) "
            "for one user, agent or session"
        )
    view: MemoryStore = store.scope(**ids)  # type: ignore[attr-defined]
    return view


def size_of(path: str) -> int | None:
    """Return the size of the file at ``path``, or ``None`` when there is none.

    Raises:
        StorageError: ``path`` cannot be looked at (for example ``EACCES`` or ``ENOTDIR``).
    """
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StorageError(f"cannot use the store file '{path}': {error.strerror}") from error


def existing(path: str) -> int:
    """Return the size of the store file at ``path``, which must exist.

    Raises:
        StorageError: there is no file at ``path``, or it cannot be looked at.
    """
    size = size_of(path)
    if size is None:
        raise StorageError(
            f"no store at '{path}': the file does not exist (check the path; 'add' creates it)"
        )
    return size


def creatable(path: str) -> int | None:
    """Return the size of the file at ``path``, or ``None`` when it can be created there.

    Raises:
        StorageError: the file's directory does not exist, or ``path`` cannot be looked at.
    """
    size = size_of(path)
    if size is None:
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise StorageError(
                f"cannot create the store '{path}': the directory '{directory}' does not "
                "exist (create it first, or check the path)"
            )
    return size


def note_if_empty(path: str, size: int | None) -> None:
    """Say once on stderr that an SQLite file of zero bytes is taken as a new store."""
    if size == 0:
        note(f"'{path}' is empty (0 bytes); it is set up as a new, empty store")
