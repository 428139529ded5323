"""The PostgreSQL layer every PostgreSQL backend shares: the driver, DSNs, errors and pools.

* :func:`load_psycopg` imports the driver, or raises an ``ImportError`` that names the extra.
* :func:`parse_dsn` checks a connection string (URL or ``key=value`` form) without connecting
  and returns the :class:`ServerAddress` that messages name: host, port, database and user,
  never the password.
* :func:`translate` turns a psycopg failure into an agentrecall error naming the server and
  the database: :class:`~agentrecall.errors.ServerUnavailableError` (retryable) for a server
  that cannot be reached or a connection lost during a call, a plain
  :class:`~agentrecall.errors.StorageError` for everything else (wrong password, missing
  database, SQL errors).
* :class:`PostgresPool` and :class:`AsyncPostgresPool` are the sync and async twins of one
  connection pool. They open on first use, check each connection before lending it (so a
  server restart costs no failed call once the server is back: a round trip only for a
  connection whose socket has something to read, which a server ending the session always
  causes), wait at most ``timeout``
  seconds for a connection, and translate every failure.

Connections are in autocommit mode: each statement commits on its own, and a block that must
be atomic runs in ``with connection.transaction():``. No connection is ever left idle in a
transaction.

Statements are never prepared on the server (``prepare_threshold=None``): poolers in front of
managed clusters (PgBouncer in transaction mode before 1.21, Supavisor, RDS Proxy) route
consecutive statements to different server sessions, where a prepared statement does not
exist. Preparing saves the server a parse per statement, a few tens of microseconds for the
short statements agentrecall sends; a caller behind no pooler may pass a threshold.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import select
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentrecall._internal import forks, pool_logging
from agentrecall.errors import InvalidArgumentError, ServerUnavailableError, StorageError

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

INSTALL_HINT = "pip install 'agentrecall[postgres]'"
"""The command that installs the driver and the pool."""

DEFAULT_CONNECT_TIMEOUT = 10
"""Seconds to wait for a new connection (TCP, TLS and login) before giving up."""

DEFAULT_APPLICATION_NAME = "agentrecall"
"""How agentrecall's sessions show in ``pg_stat_activity``, unless the DSN names them."""

# SQLSTATEs of a server that cannot serve this connection now but may soon: connection
# exceptions (class 08), shut down by an administrator or a crash, starting up or in
# recovery, out of connection slots.
_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
_READ_ONLY_STATE = "25006"

# libpq reports a failed login as text only (no SQLSTATE reaches the client before the
# session exists); these phrases tell the causes retrying cannot fix.
_LOGIN_REFUSED = (
    "password authentication failed",
    "no password supplied",
    "authentication failed",
    "pg_hba.conf",
    "role ",
    "permission denied for database",
)
# libpq refusing a setting of the DSN before it connects ("invalid sslmode value").
_BAD_SETTING = ("invalid ", "unrecognized ")
# A server without the encryption the DSN requires (sslmode=require, gssencmode=require): the
# same answer however often it is asked.
_NO_ENCRYPTION = ("but SSL was required", "GSSAPI encryption required", "SSL is not enabled")
_NO_DATABASE = re.compile(r'database "(?:[^"]|"")*" does not exist')

# The libpq environment variable of each connection parameter this module reads.
_ENVIRONMENT = {
    "host": "PGHOST",
    "hostaddr": "PGHOSTADDR",
    "port": "PGPORT",
    "dbname": "PGDATABASE",
    "user": "PGUSER",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "application_name": "PGAPPNAME",
}

# Pools a forked child inherited: kept referenced forever, because freeing a connection sends
# the server a Terminate message on the socket the parent still uses.
_inherited: list[object] = []


def load_psycopg() -> None:
    """Import psycopg and psycopg_pool, or raise an ``ImportError`` saying how to install them."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"PostgreSQL support needs psycopg 3 and psycopg-pool: {INSTALL_HINT}"
        ) from error


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """Where a DSN points, for messages; it never holds the password.

    Attributes:
        host: the host name, address or socket directory (several, comma-separated, when the
            DSN lists fallbacks).
        port: the port of the first host.
        database: the database name.
        user: the login user.
    """

    host: str
    port: int
    database: str
    user: str

    def __str__(self) -> str:
        return f"database '{self.database}' on {self.host}:{self.port}"


def parse_dsn(dsn: object, argument: str = "dsn") -> ServerAddress:
    """Check a PostgreSQL connection string without connecting; return where it points.

    Accepts the URL form (``postgresql://user@host:5432/db``) and the ``key=value`` form.
    Whatever the DSN leaves out comes from the libpq environment variables (``PGHOST``,
    ``PGPORT``, ``PGDATABASE``, ``PGUSER``), then libpq's defaults.

    Raises:
        InvalidArgumentError: ``dsn`` is not a string, is empty, or cannot be parsed. The
            message never repeats the DSN's values (it may hold a password).
        ImportError: psycopg is not installed.
    """
    if not isinstance(dsn, str) or not dsn.strip():
        shown = "an empty string" if isinstance(dsn, str) else type(dsn).__name__
        raise InvalidArgumentError(
            f"{argument} must be a PostgreSQL connection string such as "
            f"'postgresql://user@host:5432/database', got {shown}"
        )
    load_psycopg()
    import psycopg

    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as error:
        # Quoted parts of libpq's message are pieces of the DSN, maybe of the password.
        detail = " ".join(re.sub(r'"[^"]*"', '"..."', str(error)).split())  # libpq ends in \n
        raise InvalidArgumentError(
            f"{argument} is not a valid PostgreSQL connection string ({detail}); expected "
            "'postgresql://user@host:5432/database' or 'host=... dbname=... user=...'"
        ) from None
    return _address(params)


def _address(params: dict[str, Any]) -> ServerAddress:
    user = _param(params, "user") or _os_user()
    ports = (_param(params, "port") or "").split(",")
    if not all(port.isdigit() and 0 < int(port) < 65536 for port in ports if port):
        raise InvalidArgumentError(
            f"dsn: the port must be a number from 1 to 65535, got {_param(params, 'port')!r}"
        )
    return ServerAddress(
        host=_param(params, "host") or _param(params, "hostaddr") or "localhost",
        port=int(ports[0] or 5432),
        database=_param(params, "dbname") or user,
        user=user,
    )


def _param(params: dict[str, Any], name: str) -> str | None:
    """A connection parameter as libpq sees it: the DSN's, else its environment variable's."""
    value = params.get(name)
    if value is None or value == "":
        value = os.environ.get(_ENVIRONMENT[name])
    return None if value is None or value == "" else str(value)


def _os_user() -> str:
    try:
        import getpass

        return getpass.getuser()
    except (ImportError, KeyError, OSError):
        return "postgres"


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    """How every connection of a pool is opened.

    The DSN's own ``connect_timeout`` and ``application_name`` win over these, as a user who
    wrote them there expects.

    Attributes:
        connect_timeout: seconds to wait for a new connection; whole seconds, at least 2
            (libpq's floor), rounded up.
        application_name: the name sessions show in ``pg_stat_activity``.
        prepare_threshold: executions of a statement before psycopg prepares it on the
            server; ``None`` never prepares (see the module docstring).
    """

    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    application_name: str = DEFAULT_APPLICATION_NAME
    prepare_threshold: int | None = None

    def __post_init__(self) -> None:
        timeout = self.connect_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise InvalidArgumentError(
                f"connect_timeout must be a number of seconds above 0, got {timeout!r}"
            )
        if not math.isfinite(timeout):
            raise InvalidArgumentError("connect_timeout must be finite")

    def kwargs(self, dsn: str) -> dict[str, Any]:
        """Return the keyword arguments of ``psycopg.connect`` for ``dsn``, autocommit on."""
        import psycopg

        params = psycopg.conninfo.conninfo_to_dict(dsn)
        extra: dict[str, Any] = {
            "autocommit": True,
            "prepare_threshold": self.prepare_threshold,
        }
        if _param(params, "connect_timeout") is None:
            extra["connect_timeout"] = max(2, math.ceil(self.connect_timeout))
        if _param(params, "application_name") is None:
            extra["application_name"] = self.application_name
        return extra

    def effective_timeout(self, dsn: str) -> int:
        """Return the seconds a connection attempt to ``dsn`` may take, as psycopg counts them."""
        import psycopg

        params = psycopg.conninfo.conninfo_to_dict(dsn)
        if _param(params, "connect_timeout") is None:
            params["connect_timeout"] = max(2, math.ceil(self.connect_timeout))
        return psycopg.conninfo.timeout_from_conninfo(params)


def is_unavailable(error: BaseException, *, broken: bool = False) -> bool:
    """Whether ``error`` means the server cannot be reached or the connection was lost.

    ``broken`` says the connection the error came from is now unusable, which psycopg reports
    for a lost connection even when the error carries no SQLSTATE.
    """
    import psycopg

    if not isinstance(error, psycopg.Error):
        return False
    state = error.sqlstate
    if state is not None:
        return state.startswith("08") or state in _UNAVAILABLE_STATES
    if broken:
        return True
    if not isinstance(error, psycopg.OperationalError):
        return False
    text = str(error)
    return not _NO_DATABASE.search(text) and not any(
        phrase in text for phrase in (*_LOGIN_REFUSED, *_BAD_SETTING, *_NO_ENCRYPTION)
    )


def translate(
    error: BaseException, address: ServerAddress, what: str, *, broken: bool = False
) -> StorageError:
    """Return ``error`` (a psycopg failure) as the agentrecall error to raise ``from`` it.

    Args:
        error: what psycopg raised.
        address: where the connection points, for the message.
        what: the component, for the message (``"PostgreSQL conversation store"``).
        broken: whether the connection is now unusable (``connection.broken``).
    """
    import psycopg

    detail = " ".join(str(error).split())
    if is_unavailable(error, broken=broken):
        if isinstance(error, psycopg.errors.ConnectionTimeout):
            cause = "no answer within the connection timeout"
        else:
            cause = detail
        return ServerUnavailableError(
            f"{what}: PostgreSQL server {address.host}:{address.port} (database "
            f"'{address.database}') is unavailable: {cause}; the call may be retried, "
            "the next one reconnects",
            host=address.host,
            port=address.port,
            database=address.database,
        )
    if _NO_DATABASE.search(detail):
        return StorageError(
            f"{what}: database '{address.database}' does not exist on {address.host}:"
            f"{address.port}; create it (CREATE DATABASE) or fix the DSN ({detail})"
        )
    state = getattr(error, "sqlstate", None)
    if state is None and any(phrase in detail for phrase in _BAD_SETTING):
        return StorageError(
            f"{what}: the DSN of {address} has a setting libpq refuses; fix the DSN ({detail})"
        )
    if any(phrase in detail for phrase in _NO_ENCRYPTION):
        return StorageError(
            f"{what}: {address.host}:{address.port} does not offer the encryption the DSN "
            f"requires; enable it on the server or change sslmode / gssencmode ({detail})"
        )
    if any(phrase in detail for phrase in _LOGIN_REFUSED) and isinstance(
        error, psycopg.OperationalError
    ):
        return StorageError(
            f"{what}: {address.host}:{address.port} refused the login of user "
            f"'{address.user}' to database '{address.database}'; check the user and password "
            f"in the DSN (or PGPASSWORD, ~/.pgpass) ({detail})"
        )
    if state == _READ_ONLY_STATE:
        return StorageError(
            f"{what}: {address} accepts only reads (a standby, or a read-only transaction); "
            f"point the DSN at the primary, e.g. with target_session_attrs=read-write ({detail})"
        )
    suffix = f" [SQLSTATE {state}]" if state else ""
    return StorageError(f"{what}: {address}: {detail}{suffix}")


def _unread(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether an idle connection looks alive: open, and nothing arrived since its last use.

    A server that ends a session (a restart, a crash, an administrator) sends its goodbye or
    closes the socket, and either makes the socket readable; a live idle session has nothing
    to say, unless a notification came. Costs no round trip.
    """
    if connection.closed or connection.broken:
        return False
    try:
        readable, _, _ = select.select([connection.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _check(connection: psycopg.Connection[Any]) -> None:
    """Check a connection before lending it: a round trip only when it does not look alive."""
    import psycopg_pool

    if not _unread(connection):
        psycopg_pool.ConnectionPool.check_connection(connection)


async def _check_async(connection: psycopg.AsyncConnection[Any]) -> None:
    """The asyncio twin of :func:`_check`."""
    import psycopg_pool

    if not _unread(connection):
        await psycopg_pool.AsyncConnectionPool.check_connection(connection)


class _PoolBase:
    """What both twins share: the checked configuration and the messages."""

    def __init__(
        self,
        dsn: str,
        *,
        what: str,
        min_size: int,
        max_size: int,
        timeout: float | None,
        options: ConnectionOptions | None,
    ) -> None:
        self.address = parse_dsn(dsn)
        for name, value, low in (("min_size", min_size, 0), ("max_size", max_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidArgumentError(f"{name} must be an integer >= {low}, got {value!r}")
        if max_size < min_size:
            raise InvalidArgumentError(f"max_size must be >= min_size, got {max_size} < {min_size}")
        self.options = options or ConnectionOptions()
        connect_timeout = self.options.effective_timeout(dsn)
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not 0 < timeout < math.inf
        ):
            raise InvalidArgumentError(
                f"timeout must be a number of seconds above 0, got {timeout!r}"
            )
        self.timeout = float(connect_timeout if timeout is None else timeout)
        self.what = what
        pool_logging.adopt(what)  # psycopg_pool names the pool after it in what it logs
        self._dsn = dsn
        self._kwargs = self.options.kwargs(dsn)
        self._min_size = min_size
        self._max_size = max_size

    def _pool_arguments(self) -> dict[str, Any]:
        return {
            "kwargs": self._kwargs,
            "min_size": self._min_size,
            "max_size": self._max_size,
            "timeout": self.timeout,
            "open": False,
            "name": self.what,
        }

    def _exhausted(self) -> ServerUnavailableError:
        return ServerUnavailableError(
            f"{self.what}: no connection to {self.address} became free within "
            f"{self.timeout:g} s: all {self._max_size} were busy; the call may be retried, or "
            "the pool made larger",
            host=self.address.host,
            port=self.address.port,
            database=self.address.database,
        )

    def _translate(self, error: BaseException, broken: bool = False) -> StorageError:
        """Return ``error`` translated for this pool's server."""
        return translate(error, self.address, self.what, broken=broken)


class PostgresPool(_PoolBase):
    """A pool of blocking psycopg connections to one database, opened on first use.

    Guarantees: every failure is a :class:`~agentrecall.errors.StorageError` naming the server
    and the database, :class:`~agentrecall.errors.ServerUnavailableError` when retrying may
    help. A connection is checked before each use, so after a server restart the pool drops
    its dead connections and the next call succeeds once the server accepts connections
    again. A call waits at most ``timeout`` seconds for a connection; when none came, one
    direct connection attempt (at most the connection timeout) finds out why, and when the
    server does answer, the call starts a fresh pool and waits ``timeout`` once more. So a
    call never hangs: it fails within twice ``timeout`` plus the connection timeout.
    Thread-safe. A forked child leaves the parent's connections alone and opens its own.

    Args:
        dsn: the connection string.
        what: the component, as messages name it.
        min_size: connections kept open.
        max_size: connections at most.
        timeout: seconds a call waits for a connection; default: the connection timeout.
        options: how connections are opened.
        configure: called with each new connection before first use (in autocommit mode).
    """

    def __init__(
        self,
        dsn: str,
        *,
        what: str,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float | None = None,
        options: ConnectionOptions | None = None,
        configure: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        super().__init__(
            dsn, what=what, min_size=min_size, max_size=max_size, timeout=timeout, options=options
        )
        self._configure = configure
        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._lock = threading.Lock()
        self._lent = 0
        forks.register(self, in_child=PostgresPool._forget)

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """Lend a connection for the block; failures leave as agentrecall errors.

        A psycopg error raised in the block is translated too; other errors pass unchanged.
        """
        import psycopg

        pool, connection = self._lend()
        try:
            yield connection
        except psycopg.Error as error:
            raise self._translate(error, connection.broken) from error
        finally:
            with self._lock:
                self._lent -= 1
            pool.putconn(connection)

    def close(self) -> None:
        """Close every connection; the next call opens the pool again."""
        with self._lock:
            self._pool = None
            finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()

    def _lend(
        self,
    ) -> tuple[psycopg_pool.ConnectionPool[psycopg.Connection[Any]], psycopg.Connection[Any]]:
        import psycopg_pool

        pool = self._opened()
        try:
            return pool, self._take(pool)
        except (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed) as error:
            waited: Exception = error
        self._probe()  # raises the cause when the server cannot be reached
        if self._lent >= self._max_size:
            raise self._exhausted() from waited
        # The server answers, yet the pool made no connection: after failed attempts it waits
        # out a growing backoff (up to minutes) before trying again. A fresh pool connects now.
        self._discard(pool)
        pool = self._opened()
        try:
            return pool, self._take(pool)
        except (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed) as error:
            raise self._exhausted() from error

    def _take(
        self, pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]]
    ) -> psycopg.Connection[Any]:
        connection = pool.getconn(timeout=self.timeout)
        with self._lock:
            self._lent += 1
        return connection

    def _opened(self) -> psycopg_pool.ConnectionPool[psycopg.Connection[Any]]:
        pool = self._pool
        if pool is not None:
            return pool
        with self._lock:
            if self._pool is None:
                # One direct connection first: a wrong password or a missing database fails
                # here at once and by name, where the pool would retry until its timeout.
                self._probe()
                pool = self._new_pool()
                pool.open(wait=False)
                # Closed when this object is dropped, in the thread that drops it: psycopg's
                # own cleanup of a forgotten pool fails when it runs in one of its workers.
                self._finalizer = weakref.finalize(self, pool.close)
                self._pool = pool
            return self._pool

    def _discard(self, stale: psycopg_pool.ConnectionPool[psycopg.Connection[Any]]) -> None:
        """Close ``stale`` unless another thread replaced it; its lent connections close later."""
        with self._lock:
            if self._pool is not stale:
                return
            self._pool = None
            finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()

    def _new_pool(self) -> psycopg_pool.ConnectionPool[psycopg.Connection[Any]]:
        import psycopg_pool

        return psycopg_pool.ConnectionPool(
            self._dsn,
            configure=self._configure,
            check=_check,
            **self._pool_arguments(),
        )

    def _probe(self) -> None:
        import psycopg

        try:
            psycopg.connect(self._dsn, **self._kwargs).close()
        except psycopg.Error as error:
            raise self._translate(error) from error

    def _forget(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
        _inherited.append(self._pool)
        self._pool, self._finalizer = None, None
        self._lock = threading.Lock()
        self._lent = 0


class AsyncPostgresPool(_PoolBase):
    """The asyncio twin of :class:`PostgresPool`, with the same guarantees.

    It belongs to the event loop that first uses it; close it with ``await close()``.

    Args:
        dsn: the connection string.
        what: the component, as messages name it.
        min_size: connections kept open.
        max_size: connections at most.
        timeout: seconds a call waits for a connection; default: the connection timeout.
        options: how connections are opened.
        configure: awaited with each new connection before first use (in autocommit mode).
    """

    def __init__(
        self,
        dsn: str,
        *,
        what: str,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float | None = None,
        options: ConnectionOptions | None = None,
        configure: Callable[[psycopg.AsyncConnection[Any]], Coroutine[Any, Any, None]]
        | None = None,
    ) -> None:
        super().__init__(
            dsn, what=what, min_size=min_size, max_size=max_size, timeout=timeout, options=options
        )
        self._configure = configure
        self._pool: psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None
        self._lock: asyncio.Lock | None = None
        self._lent = 0
        forks.register(self, in_child=AsyncPostgresPool._forget)

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """Lend a connection for the block; failures leave as agentrecall errors."""
        import psycopg

        pool, connection = await self._lend()
        try:
            yield connection
        except psycopg.Error as error:
            raise self._translate(error, connection.broken) from error
        finally:
            self._lent -= 1
            await pool.putconn(connection)

    async def close(self) -> None:
        """Close every connection; the next call opens the pool again."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _lend(
        self,
    ) -> tuple[
        psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[Any]],
        psycopg.AsyncConnection[Any],
    ]:
        import psycopg_pool

        pool = await self._opened()
        try:
            return pool, await self._take(pool)
        except (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed) as error:
            waited: Exception = error
        await self._probe()  # as in PostgresPool._lend
        if self._lent >= self._max_size:
            raise self._exhausted() from waited
        if self._pool is pool:
            self._pool = None
            await pool.close()
        pool = await self._opened()
        try:
            return pool, await self._take(pool)
        except (psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed) as error:
            raise self._exhausted() from error

    async def _take(
        self, pool: psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[Any]]
    ) -> psycopg.AsyncConnection[Any]:
        connection = await pool.getconn(timeout=self.timeout)
        self._lent += 1
        return connection

    async def _opened(self) -> psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        if self._pool is not None:
            return self._pool
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._pool is None:
                await self._probe()  # as in PostgresPool._opened
                pool = self._new_pool()
                await pool.open(wait=False)
                self._pool = pool
            return self._pool

    def _new_pool(self) -> psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        import psycopg_pool

        return psycopg_pool.AsyncConnectionPool(
            self._dsn,
            configure=self._configure,
            check=_check_async,
            **self._pool_arguments(),
        )

    async def _probe(self) -> None:
        import psycopg

        try:
            connection = await psycopg.AsyncConnection.connect(self._dsn, **self._kwargs)
            await connection.close()
        except psycopg.Error as error:
            raise self._translate(error) from error

    def _forget(self) -> None:
        _inherited.append(self._pool)
        self._pool = None
        self._lock = None
        self._lent = 0
