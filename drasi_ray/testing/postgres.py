"""``EmbeddedPostgres``: a private, throwaway PostgreSQL server with logical replication on.

Machine fact: no PostgreSQL is installed on the development machines or in CI. The server
binaries come from the pip package ``pgserver`` (a dev dependency), which ships PostgreSQL 16
inside the package (``pgserver/pginstall/bin``), with the ``pgoutput`` plugin built in (the
``test_decoding`` plugin is not). This module runs those binaries itself rather than through
``pgserver.get_server`` (a Unix socket only, trust authentication): the server here listens on
127.0.0.1 on a free port, starts with ``wal_level=logical`` (no restart needed), and asks TCP
clients for a password (SCRAM), so a test can give wrong credentials and see them refused.

As root (the CI machines), PostgreSQL refuses to run: the data directory and the processes
belong to the system user ``pgserver``, created if need be (pgserver does the same).

:meth:`EmbeddedPostgres.restart` keeps the port and the data directory (a fast shutdown, or an
immediate one that makes the server recover its WAL at the next start, as after a crash), so a
chaos run can take the database away under a reader and bring it back. No process outlives the
Python process: an ``atexit`` hook stops a server still running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from drasi_ray.model.errors import DrasiRayError
from drasi_ray.testing.server_process import ServerProcess

ShutdownMode = Literal["fast", "immediate"]

SYSTEM_USER = "pgserver"
"""The system user the server runs as when this process is root (pgserver's own choice)."""

SUPERUSER = "postgres"

_SETTINGS: dict[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "fsync": "off",  # a test server: WAL reaches the OS, which survives any process crash
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "60",
    "log_min_messages": "warning",
    "wal_sender_timeout": "30s",
}


class EmbeddedPostgresError(DrasiRayError):
    """The embedded PostgreSQL server could not be found, started or stopped."""


def bin_dir() -> Path:
    """The directory of the PostgreSQL binaries inside the ``pgserver`` package."""
    try:
        with warnings.catch_warnings():  # pgserver warns of XDG_RUNTIME_DIR at import
            warnings.simplefilter("ignore")
            from pgserver import _commands
    except ImportError as exc:  # pragma: no cover - a dev dependency
        raise EmbeddedPostgresError(
            "no PostgreSQL binaries: install the dev dependency `pgserver` "
            '(python -m pip install -c constraints.txt -e ".[dev]")'
        ) from exc
    path = Path(_commands.POSTGRES_BIN_PATH)
    if not (path / "postgres").is_file():
        raise EmbeddedPostgresError(f"no postgres binary in {path}")
    return path


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _prepare_root_user(data_dir: Path) -> None:
    """As root: the system user exists, can reach the binaries and owns the data dir."""
    import pwd

    bin_dir()  # imports pgserver quietly first
    from pgserver import utils

    utils.ensure_user_exists(SYSTEM_USER)
    binaries = bin_dir()
    utils.ensure_prefix_permissions(binaries)
    utils.ensure_prefix_permissions(data_dir)
    entry = pwd.getpwnam(SYSTEM_USER)
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)


class EmbeddedPostgres(ServerProcess):
    """One private PostgreSQL server. Use as a context manager, or ``start()``/``close()``.

    ``stop()`` ends the server but keeps the data directory (``start()`` again resumes from
    it); ``close()`` stops it and removes a temp data directory this object created. The
    superuser is ``postgres`` with :attr:`password`; ``dsn(database)`` gives a libpq
    connection string over TCP.
    """

    program = "postgres"
    error = EmbeddedPostgresError
    dir_prefix = "drasi-postgres-"
    log_name = "postgres.log"

    def __init__(
        self,
        *,
        data_dir: str | Path | None = None,
        port: int | None = None,
        password: str = "drasi-test",
        settings: dict[str, str] | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        super().__init__(data_dir=data_dir, port=port, startup_timeout=startup_timeout)
        self.password = password
        self._settings = {**_SETTINGS, **(settings or {})}

    @property
    def password_file(self) -> str:
        """A file holding the superuser's password (what a source's ``password_file`` names:
        the reader reads it in its own process)."""
        path = self.data_dir / "password"
        if not path.exists():
            path.write_text(self.password + "\n")
            path.chmod(0o600)
        return str(path)

    def dsn(
        self, database: str = "postgres", user: str = SUPERUSER, password: str | None = None
    ) -> str:
        """A libpq connection string for ``database`` over TCP (the superuser by default)."""
        secret = self.password if password is None else password
        return (
            f"host={self.host} port={self.port} dbname={database} user={user} "
            f"password={secret} connect_timeout=5"
        )

    # -- lifecycle -----------------------------------------------------------------------

    def _prepare(self) -> None:
        """Create the cluster if need be."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not (self.cluster_dir / "PG_VERSION").exists():
            self._initdb()

    @property
    def cluster_dir(self) -> Path:
        """PGDATA: a subdirectory, so the data dir can also hold the log and the socket."""
        return self.data_dir / "pgdata"

    def _run_as(self) -> dict[str, Any]:
        return {"user": SYSTEM_USER} if _as_root() else {}

    def _initdb(self) -> None:
        pwfile = self.data_dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        if _as_root():
            _prepare_root_user(self.data_dir)
        command = [
            str(bin_dir() / "initdb"),
            "-D", str(self.cluster_dir),
            "-U", SUPERUSER,
            "--pwfile", str(pwfile),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--no-sync",
        ]  # fmt: skip
        try:
            subprocess.run(command, check=True, capture_output=True, **self._run_as())
        except subprocess.CalledProcessError as exc:
            raise EmbeddedPostgresError(
                f"initdb failed: {exc.stderr.decode(errors='replace')[-2000:]}"
            ) from exc
        finally:
            pwfile.unlink(missing_ok=True)

    def _command(self) -> list[str]:
        options = {
            **self._settings,
            "listen_addresses": self.host,
            "port": str(self.port),
            "unix_socket_directories": str(self.data_dir),
        }
        command = [str(bin_dir() / "postgres"), "-D", str(self.cluster_dir)]
        for name, value in options.items():
            command += ["-c", f"{name}={value}"]
        return command

    def _spawn(self) -> subprocess.Popen[bytes]:
        log = self._log_path.open("ab")
        try:  # its own session: a terminal's hang-up spares it
            return subprocess.Popen(
                self._command(), stdout=log, stderr=log, start_new_session=True, **self._run_as()
            )
        finally:
            log.close()

    def _abort(self) -> None:
        self._signal(signal.SIGQUIT, 5.0, then=signal.SIGQUIT)

    def _ready(self) -> bool:
        """True once a login succeeds."""
        import psycopg2

        try:
            psycopg2.connect(self.dsn()).close()
        except psycopg2.Error:
            return False
        return True

    def stop(self, mode: ShutdownMode = "fast", timeout: float = 30.0) -> None:
        """Stop the server: ``fast`` (SIGINT: sessions are ended, a checkpoint written) or
        ``immediate`` (SIGQUIT: no checkpoint; the next start replays the WAL, as after a
        crash). An immediate stop follows a fast one that overran ``timeout``."""
        signum = signal.SIGINT if mode == "fast" else signal.SIGQUIT
        self._signal(signum, timeout, then=signal.SIGQUIT)

    def restart(self, mode: ShutdownMode = "fast") -> EmbeddedPostgres:
        """``stop(mode)`` then ``start()``: same port, same data."""
        self.stop(mode)
        return self.start()

    def detach(self) -> None:
        """Leave the server running after this process ends (an example's background
        server); :func:`stop_detached` stops it later from its data directory."""
        self._proc = None
        self._owns_dir = False
        self._forget_atexit()

    # -- conveniences for tests, examples and drills -------------------------------------

    @contextlib.contextmanager
    def connect(self, database: str = "postgres", autocommit: bool = True) -> Iterator[Any]:
        """A psycopg2 connection to ``database`` as the superuser, closed on exit."""
        import psycopg2

        connection = psycopg2.connect(self.dsn(database))
        connection.autocommit = autocommit
        try:
            yield connection
        finally:
            connection.close()

    def execute(self, sql: str, database: str = "postgres", params: Sequence[Any] = ()) -> None:
        """Run ``sql`` (one or several statements) in ``database``, autocommit."""
        with self.connect(database) as connection, connection.cursor() as cursor:
            cursor.execute(sql, tuple(params) or None)

    def query(
        self, sql: str, database: str = "postgres", params: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]:
        """The rows ``sql`` returns in ``database``."""
        with self.connect(database) as connection, connection.cursor() as cursor:
            cursor.execute(sql, tuple(params) or None)
            return list(cursor.fetchall())

    def create_database(self, name: str) -> str:
        """Create an empty database ``name`` (dropping one of that name first, with its
        replication slots); returns the name."""
        for (slot,) in self.query(
            "SELECT slot_name FROM pg_replication_slots WHERE database = %s", params=[name]
        ):
            self.execute("SELECT pg_drop_replication_slot(%s)", params=[slot])
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.execute(f'CREATE DATABASE "{name}"')
        return name


def source_builder(
    server: EmbeddedPostgres, database: str, redis_url: str, source_id: str = "shop"
) -> Any:
    """A :class:`~drasi_ray.source.postgres.definition.PostgresSourceBuilder` for ``database``
    on ``server`` (the superuser, its password from :attr:`EmbeddedPostgres.password_file`),
    writing to ``redis_url``, consumers reading with a short block, a slot named after the
    database (slot names are the server's, not the database's); add tables and build."""
    from drasi_ray.source.postgres.definition import PostgresSource

    return (
        PostgresSource.builder(source_id)
        .with_host(server.host)
        .with_port(server.port)
        .with_database(database)
        .with_user(SUPERUSER)
        .with_password_file(server.password_file)
        .with_ssl_mode("disable")
        .with_slot_name(f"slot_{database}"[:63].lower())
        .with_redis_url(redis_url)
        .with_consumer_settings(block_ms=100)
    )


def stop_detached(data_dir: str | Path, timeout_s: float = 30.0) -> bool:
    """Stop (fast shutdown) the server a :meth:`EmbeddedPostgres.detach` left running in
    ``data_dir``; False if none runs there."""
    pid_file = Path(data_dir) / "pgdata" / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
        os.kill(pid, signal.SIGINT)
    except (OSError, ValueError, IndexError):
        return False
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return True
        time.sleep(0.1)
    return False
