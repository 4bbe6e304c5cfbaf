"""Connecting to the source's database, and its errors in words that say what to fix.

The password is read here, in the reader's process, when it connects: from the environment
variable ``password_env`` names or the file ``password_file`` names (its first line). It goes
to libpq and nowhere else: not into a setting, a log line, an error or Redis.

Every session of the reader runs with the same settings (:data:`SESSION_OPTIONS`), so the text
of a value (:mod:`.values`) does not depend on the server's defaults. An error is *fatal* when
waiting will not fix it (credentials, permissions, configuration: :class:`PostgresSourceError`
naming the database and the fix), else *transient* (the server restarting or unreachable): the
reader retries those with backoff once it has started.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.extensions
import psycopg2.extras

from drasi_ray.model.errors import PostgresSourceError
from drasi_ray.model.postgres_specs import PostgresSourceConfig

SESSION_OPTIONS = (
    "-c DateStyle=ISO -c TimeZone=UTC -c extra_float_digits=3 -c bytea_output=hex "
    "-c IntervalStyle=iso_8601"
)

_FATAL_AT_LOGIN = {
    "password authentication failed": "the password is wrong (password_env / password_file)",
    "no password supplied": "the server asks for a password: set password_env or password_file",
    "does not exist": "",
    "no pg_hba.conf entry": "the server's pg_hba.conf lets this role not connect from here"
    " (a replication connection needs its own 'replication' line)",
    "authentication failed": "the server refused the credentials",
    "SSL": "check ssl_mode against the server's SSL setup",
    "could not translate host name": "check host",
}

_FATAL_CODES = {
    "42501": "the role lacks a privilege",
    "55000": "the server is not set up for logical replication",
    "42704": "",
    "3D000": "",
    "28000": "",
    "28P01": "",
}
"""SQLSTATEs that waiting will not fix: insufficient privilege, wal_level, missing object,
missing database, authentication."""


def where(settings: PostgresSourceConfig) -> str:
    """``database 'shop' at db.example.com:5432 as 'drasi'``: what every error names."""
    return f"database {settings.database!r} at {settings.host}:{settings.port} as {settings.user!r}"


def read_password(source_id: str, settings: PostgresSourceConfig) -> str | None:
    """The password from ``password_env`` or ``password_file``; None when neither is set.
    A variable that is not set, or a file that cannot be read, is a PostgresSourceError."""
    if settings.password_env is not None:
        value = os.environ.get(settings.password_env)
        if value is None:
            raise PostgresSourceError(
                f"PostgreSQL source {source_id!r}: password_env names "
                f"{settings.password_env}, which is not set in the reader's process (set it "
                "where Ray runs the reader: in the environment of `ray start`, or in the job's "
                "runtime_env env_vars)"
            )
        return value
    if settings.password_file is not None:
        try:
            lines = Path(settings.password_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise PostgresSourceError(
                f"PostgreSQL source {source_id!r}: cannot read password_file "
                f"{settings.password_file}: {exc.strerror}"
            ) from None
        return lines[0] if lines else ""
    return None


def connect_options(
    source_id: str, settings: PostgresSourceConfig, password: str | None
) -> dict[str, Any]:
    """The keyword arguments of ``psycopg2.connect`` for the source's database."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "dbname": settings.database,
        "user": settings.user,
        "sslmode": settings.ssl_mode.value,
        "connect_timeout": settings.connect_timeout_s,
        "application_name": f"drasi_ray:{source_id}"[:63],
        "options": SESSION_OPTIONS,
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
    }
    if password is not None:
        options["password"] = password
    return options


def connect(
    source_id: str,
    settings: PostgresSourceConfig,
    password: str | None,
    *,
    replication: bool = False,
) -> Any:
    """A connection (autocommit), or a logical replication connection. Raises
    PostgresSourceError when waiting will not help, psycopg2.Error otherwise."""
    options = connect_options(source_id, settings, password)
    if replication:
        options["connection_factory"] = psycopg2.extras.LogicalReplicationConnection
    try:
        connection = psycopg2.connect(**options)
    except psycopg2.Error as exc:
        raise fatal_or(exc, source_id, settings) from None
    if not replication:
        connection.autocommit = True
    return connection


def fatal_or(exc: BaseException, source_id: str, settings: PostgresSourceConfig) -> BaseException:
    """``exc`` as a PostgresSourceError naming the database when waiting will not fix it,
    else ``exc`` itself (transient)."""
    message = error_text(exc)
    code = getattr(exc, "pgcode", None)
    hint = None
    if code in _FATAL_CODES:
        hint = _FATAL_CODES[code]
    elif code is None:
        hint = next((fix for marker, fix in _FATAL_AT_LOGIN.items() if marker in message), None)
    if hint is None:
        return exc
    suffix = f" ({hint})" if hint else ""
    return PostgresSourceError(
        f"PostgreSQL source {source_id!r}: {where(settings)}: {message}{suffix}"
    )


def error_text(exc: BaseException) -> str:
    """A psycopg2 error's server message on one line (libpq's, without its noise)."""
    text = getattr(exc, "pgerror", None) or str(exc)
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return "; ".join(line.removeprefix("FATAL:").removeprefix("ERROR:").strip() for line in lines)


def is_connection_error(exc: BaseException) -> bool:
    """True for the errors of a lost or refused connection (the server restarting)."""
    return isinstance(exc, (psycopg2.OperationalError, psycopg2.InterfaceError))
