"""The PostgreSQL stored-procedure reaction's endpoint: a procedure call per diff.

:class:`StoredProcEndpoint` is the :class:`~drasi_ray.reactions.relay.Endpoint` a
:class:`~drasi_ray.reactions.relay.StreamRelay` delivers to (the order, positions, retries and
dead letters are the relay's). Each command (:class:`~drasi_ray.model.reaction_specs.
PostgresStoredProcReaction`) is compiled once into SQL with ``%s`` where its ``@`` names were
and the list of what fills them (:class:`Command`), so a value is always bound by libpq and
never becomes SQL text. The calls run on one thread of their own with one connection (psycopg2
blocks): the actor's event loop never waits on the database.

Verdicts: a call committed is delivered; a lost or refused connection, a statement timeout, a
deadlock or a serialization failure is worth retrying (on a new connection); any other error of
the call (an unknown procedure, a wrong type, the procedure raising) is refused: retrying the
same call will not change it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg2
import psycopg2.extras

from drasi_ray.model.errors import ConfigError
from drasi_ray.model.reaction_specs import CHANGE_KINDS, PostgresStoredProcReaction
from drasi_ray.reactions.feed import kind_of
from drasi_ray.reactions.http import Token, read_secret
from drasi_ray.reactions.relay import Call, Outcome, RendersEachDiff, Verdict

_NAME = re.compile(r"@([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?")
_CALL = re.compile(r"^\s*call\s", re.IGNORECASE)
SPECIAL = ("key", "queryId", "sequence")
"""What ``@drasi.<name>`` may name."""
_REASON_CHARS = 300


@dataclass(frozen=True, slots=True)
class Command:
    """A compiled command: SQL with ``%s`` placeholders, and per placeholder where its value
    comes from (``("after", column)``, ``("before", column)`` or ``("drasi", name)``)."""

    text: str
    sql: str
    sources: tuple[tuple[str, str], ...]

    def parameters(self, context: Mapping[str, Any]) -> list[Any]:
        values = []
        for root, name in self.sources:
            holder = context.get(root)
            value = holder.get(name) if isinstance(holder, Mapping) else None
            values.append(psycopg2.extras.Json(value) if isinstance(value, (dict, list)) else value)
        return values


def compile_command(text: str, kind: str) -> Command:
    """Compile ``text`` for change ``kind``: ``@field`` reads the row after the change (before
    it for ``deleted``). ConfigError for a ``@`` name of another form."""
    row = "before" if kind == "deleted" else "after"
    sql = text if _CALL.match(text) else f"CALL {text.strip()}"
    sources: list[tuple[str, str]] = []
    parts: list[str] = []
    position = 0
    for match in _NAME.finditer(sql):
        parts.append(sql[position : match.start()].replace("%", "%%"))
        first, second = match.group(1), match.group(2)
        if second is None:
            sources.append((row, first))
        elif first in ("after", "before", "drasi"):
            sources.append((first, second))
        else:
            raise ConfigError(
                f"{match.group(0)}: write @field, @after.field, @before.field or @drasi.key"
            )
        parts.append("%s")
        position = match.end()
    parts.append(sql[position:].replace("%", "%%"))
    return Command(text, "".join(parts), tuple(sources))


def check_commands(
    spec: PostgresStoredProcReaction, query_id: str, columns: Sequence[str]
) -> dict[str, Command | None]:
    """The compiled commands of ``query_id`` by kind; ConfigError (one line) for a name its
    rows do not have."""
    commands = spec.commands(query_id)
    compiled: dict[str, Command | None] = {}
    for kind in CHANGE_KINDS:
        where = f"reaction {spec.id!r}, query {query_id!r}, {kind}_command"
        text = commands.command(kind)
        try:
            command = None if text is None else compile_command(text, kind)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        for root, name in () if command is None else command.sources:
            _check_source(where, kind, root, name, columns)
        compiled[kind] = command
    return compiled


def _check_source(where: str, kind: str, root: str, name: str, columns: Sequence[str]) -> None:
    if root == "drasi":
        if name not in SPECIAL:
            raise ConfigError(
                f"{where}: @drasi.{name} is not one of @drasi.{', @drasi.'.join(SPECIAL)}"
            )
        return
    if (root, kind) in (("before", "added"), ("after", "deleted")):
        raise ConfigError(
            f"{where}: @{root}.{name} names a field of '{root}', which is null in {kind} diffs"
        )
    if name not in columns:
        raise ConfigError(
            f"{where}: @{name} names field {name!r}, which the query does not return "
            f"(its fields: {', '.join(columns)})"
        )


def connect_options(spec: PostgresStoredProcReaction, password: Token | None) -> dict[str, Any]:
    """The keyword arguments of ``psycopg2.connect`` for the reaction's database."""
    options: dict[str, Any] = {
        "host": spec.host,
        "port": spec.port,
        "dbname": spec.database,
        "user": spec.user,
        "sslmode": spec.ssl_mode,
        "connect_timeout": spec.connect_timeout_s,
        "application_name": f"drasi_ray:reaction:{spec.id}"[:63],
        "options": f"-c statement_timeout={spec.command_timeout_ms}",
    }
    if password is not None:
        options["password"] = password.reveal()
    return options


def read_password(spec: PostgresStoredProcReaction) -> Token | None:
    """A stored-procedure reaction's password (None: libpq's own ways, or none asked)."""
    owner = f"reaction {spec.id!r}"
    return read_secret(owner, "password", spec.password_env, spec.password_file)


def where(spec: PostgresStoredProcReaction) -> str:
    """``database 'shop' at db:5432 as 'drasi'``: what the errors name."""
    return f"database {spec.database!r} at {spec.host}:{spec.port} as {spec.user!r}"


def check_login(spec: PostgresStoredProcReaction, password: Token | None) -> None:
    """Connect once (the app starting): ConfigError, one line, when the server refuses."""
    try:
        connection = psycopg2.connect(**connect_options(spec, password))
    except psycopg2.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ConfigError(
            f"reaction {spec.id!r}: cannot connect to {where(spec)}: {reason}"
        ) from None
    connection.close()


class StoredProcEndpoint(RendersEachDiff):
    """Calls the procedures of a :class:`PostgresStoredProcReaction` (module docstring)."""

    batch_size = 1

    def __init__(
        self,
        spec: PostgresStoredProcReaction,
        password: Token | None,
        columns: Mapping[str, Sequence[str]],
    ) -> None:
        self.spec = spec
        self._options = connect_options(spec, password)
        self._plans = {query: check_commands(spec, query, columns[query]) for query in columns}
        self._connection: Any = None
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=spec.id)

    def render(
        self, query_id: str, sequence: int, index: int, diff: Mapping[str, Any], source_time_ms: int
    ) -> Call:
        kind, before, after = kind_of(diff)
        key = f"{query_id}:{sequence}:{index}"
        command = self._plans[query_id][kind]
        payload = None
        if command is not None:
            drasi = {"key": key, "queryId": query_id, "sequence": sequence}
            context = {"after": after, "before": before, "drasi": drasi}
            payload = (command, command.parameters(context))
        return Call(key, query_id, sequence, kind, diff, payload, source_time_ms=source_time_ms)

    async def send(self, calls: Sequence[Call]) -> Outcome:
        command, parameters = calls[0].payload
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._call, command.sql, parameters)

    def _call(self, sql: str, parameters: list[Any]) -> Outcome:
        """Run one call in its own transaction (on the endpoint's thread)."""
        try:
            if self._connection is None or self._connection.closed:
                self._connection = psycopg2.connect(**self._options)
            with self._connection, self._connection.cursor() as cursor:
                cursor.execute(sql, parameters)
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            self._reset()
            return Outcome(Verdict.RETRY, _reason(exc))
        except psycopg2.Error as exc:
            return Outcome(Verdict.REFUSED, _reason(exc))
        return Outcome(Verdict.DELIVERED)

    def _reset(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(psycopg2.Error):
                connection.close()

    def describe(self, call: Call) -> str:
        command, _parameters = call.payload
        return f"{command.sql} on {where(self.spec)}"

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._thread, self._reset)
        self._thread.shutdown(wait=False)


def _reason(exc: psycopg2.Error) -> str:
    code = getattr(exc, "pgcode", None)
    text = " ".join(str(exc).split())[:_REASON_CHARS] or type(exc).__name__
    return f"{type(exc).__name__}" + (f" [{code}]" if code else "") + f": {text}"
