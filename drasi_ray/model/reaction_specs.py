"""Reaction settings: where a query's results go, as small validated models.

A reaction spec is plain configuration (pydantic, unknown keys rejected); the query actor turns
it into a running :class:`~drasi_ray.reactions.base.Reaction` when it starts. In YAML each query
has a ``reactions:`` list whose items pick their kind with ``kind``::

    queries:
      - id: hot-sensors
        ...
        reactions:
          - kind: platform          # Drasi platform reaction: stream <queryId>-results
            maxlen: 100000
          - kind: jsonl
            path: /var/log/hot-sensors.jsonl
          - kind: log
          - kind: callback
            function: my_package.hooks:on_result

In Python, pass the same models to ``Query.cypher(id)...with_reaction(...)`` or
``DrasiRay.add_reaction(query_id, ...)``. A :class:`CallbackReaction` also takes a callable.

Reactions that leave the process are the app's, each an actor of its own over the result
streams of the queries it names (``DrasiRay.add_reaction(spec)``; YAML ``reactions:`` at the
top level): :class:`HttpReaction` (Drasi's ``http``) and :class:`SseReaction` (Server-Sent
Events and the dashboard page)::

    reactions:
      - kind: http
        id: hooks
        base_url: https://api.example.com
        token_env: HOOKS_TOKEN
        queries:
          hot-sensors:
            added: {url: "/sensors/{{after.id}}", method: PUT, body: '{"t": {{json after.t}}}'}
            deleted: {url: "/sensors/{{before.id}}", method: DELETE}
      - kind: sse
        port: 8080

This module imports nothing from the rest of drasi_ray, so ``config`` can use it.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Callable
from typing import Annotated, Any, Literal

import cloudpickle
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

_PICKLED = "pickle:"
"""Starts a callable written to JSON: its cloudpickle follows in base64."""


class _ReactionSpec(BaseModel):
    """Options every reaction has: its delivery queue and retry policy."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    queue_capacity: int = Field(
        10_000, ge=1, description="results buffered for the reaction; beyond it they are dropped"
    )
    max_batch: int = Field(500, ge=1, description="results handed to the reaction per write")
    retry_initial_ms: int = Field(100, ge=1, description="first retry delay after a failure")
    retry_max_ms: int = Field(10_000, ge=1, description="cap of the exponential retry delay")
    include_control: bool = Field(
        True, description="also deliver control signals (bootstrapStarted, running, stopped...)"
    )
    name: str | None = Field(
        None,
        min_length=1,
        description="the Reaction resource of a Drasi file it belongs to (one per query the "
        "resource names), which `drasi-ray delete reaction NAME` removes; none: the query's own",
    )


class PlatformReaction(_ReactionSpec):
    """Drasi's platform reaction: CloudEvents on the Redis stream ``<queryId>-results``.

    Field ``data`` of each entry holds one CloudEvent exactly as Drasi writes it
    (docs/semantics.md §4). ``redis_url`` defaults to the state Redis (else the query's first
    source's); ``stream`` to ``<queryId>-results``. ``maxlen`` trims with ``MAXLEN ~``.
    """

    kind: Literal["platform"] = Field("platform", description="picks this reaction")
    redis_url: str | None = Field(None, description="default: the app's state / source Redis")
    stream: str | None = Field(None, min_length=1, description="default: '<queryId>-results'")
    maxlen: int | None = Field(None, ge=1, description="approximate MAXLEN; None: unbounded")

    @field_validator("redis_url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value


class JsonLinesReaction(_ReactionSpec):
    """Appends one JSON object per result (or control signal) to a file, one per line.

    Lines are ``{"kind": "change", "queryId", "sequence", "timestampMs", "sourceTimeMs",
    "results": [diff, ...]}`` or ``{"kind": "control", "queryId", "sequence", "signal"}``.
    The path is on the node where the query actor runs.
    """

    kind: Literal["jsonl"] = Field("jsonl", description="picks this reaction")
    path: str = Field(min_length=1, description="file to append to (created if missing)")


class LogReaction(_ReactionSpec):
    """Writes each result as one JSON line where the user sees it: the query host's standard
    output by default, which Ray forwards to the driver (``drasi-ray run``'s terminal, or the
    job's logs), prefixed with the actor's name; ``stderr`` likewise; ``logger`` through the
    ``drasi_ray.reaction.<query id>`` logger at ``level`` (the actor's log file, shown only
    where logging is set up)."""

    kind: Literal["log"] = Field("log", description="picks this reaction")
    to: Literal["stdout", "stderr", "logger"] = Field(
        "stdout", description="where the lines go (Ray forwards a host's stdout and stderr)"
    )
    level: Literal["debug", "info", "warning"] = Field(
        "info", description="log level, with to: logger"
    )


class CallbackReaction(_ReactionSpec):
    """Calls ``function(result)`` for every result, inside the query actor's process.

    ``function`` is a callable or, in YAML, ``"package.module:attribute"``. It is shipped to
    the query's host and kept in the control plane's durable state with the query's settings,
    so it must pickle with cloudpickle (as Ray ships functions: lambdas and closures work, but
    not ones that capture locks, open files or clients); in JSON a callable is written as
    ``"pickle:"`` and its cloudpickle in base64. It
    runs on the actor's event loop: a slow function delays only this reaction's queue, but
    should not block for long; an ``async def`` function is awaited. Control signals reach it
    only with ``include_control: true`` (the default here is false).
    """

    kind: Literal["callback"] = Field("callback", description="picks this reaction")
    function: Callable[..., Any] | str = Field(
        description="a callable, or 'package.module:attribute' (YAML)"
    )
    include_control: bool = Field(False, description="also call it with control signals")

    @field_validator("function")
    @classmethod
    def _check_function(cls, value: Callable[..., Any] | str) -> Callable[..., Any] | str:
        if isinstance(value, str) and value.startswith(_PICKLED):
            function: Callable[..., Any] = cloudpickle.loads(
                base64.b64decode(value.removeprefix(_PICKLED))
            )
            return function
        if isinstance(value, str):
            module, _, attribute = value.partition(":")
            if not module or not attribute:
                raise ValueError("must be 'package.module:attribute'")
        return value

    @field_serializer("function", when_used="json")
    def _write_function(self, value: Callable[..., Any] | str) -> str:
        if isinstance(value, str):
            return value
        return _PICKLED + base64.b64encode(cloudpickle.dumps(value)).decode("ascii")

    def resolve(self) -> Callable[..., Any]:
        """The callable (imports ``module:attribute`` strings)."""
        if not isinstance(self.function, str):
            return self.function
        module, _, attribute = self.function.partition(":")
        target: Any = importlib.import_module(module)
        for part in attribute.split("."):
            target = getattr(target, part)
        if not callable(target):
            raise TypeError(f"{self.function} is not callable")
        return target  # type: ignore[no-any-return]


ReactionSpec = Annotated[
    PlatformReaction | JsonLinesReaction | LogReaction | CallbackReaction,
    Field(discriminator="kind"),
]
"""Any reaction's settings; YAML picks the model with ``kind``."""

AnyReaction = PlatformReaction | JsonLinesReaction | LogReaction | CallbackReaction


# -- reactions of the app: actors of their own over several queries' result streams ------

_REACTION_ID = r"^[A-Za-z0-9_.-]+$"
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
CHANGE_KINDS = ("added", "updated", "deleted")

DEFAULT_BODY = (
    '{"queryId": {{json queryId}}, "sequence": {{json sequence}}, "kind": {{json kind}}, '
    '"before": {{json before}}, "after": {{json after}}}'
)
"""The body of a query's calls when its entry names no change kind: the diff as JSON."""


class HttpCall(BaseModel):
    """One HTTP call made per diff of one change kind (Drasi's ``added``/``updated``/
    ``deleted`` entry): ``url`` is appended to the reaction's ``base_url``.

    ``url``, ``body`` and header values are templates over the diff: ``{{after.<column>}}``
    and ``{{before.<column>}}`` (the row after and before the change), ``{{queryId}}``,
    ``{{sequence}}``, ``{{kind}}`` and ``{{sourceTimeMs}}``; ``{{json <name>}}`` writes the
    value as JSON (``{{json after}}``: the whole row). In ``url`` a value is percent-encoded;
    in ``body`` it is escaped for a JSON string (``"{{after.name}}"`` stays valid JSON); null
    is written as nothing (``{{json ...}}``: ``null``). A template naming a column the query
    does not return is refused when the reaction or the query is added.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field("", description="path (and query string) appended to base_url; template")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = Field(
        "POST", description="the HTTP method"
    )
    body: str | None = Field(None, description="request body template; none: no body")
    headers: dict[str, str] = Field(
        default_factory=dict, description="headers of this call (values are templates)"
    )


DEFAULT_CALL = HttpCall(
    url="/changes/{{queryId}}",
    body=DEFAULT_BODY,
    headers={"Content-Type": "application/json"},
)
"""What a query with no change kinds configured sends for every diff."""


class HttpQueryCalls(BaseModel):
    """A query's calls by change kind. A kind left out sends nothing; a query given with no
    kind at all (``hot-sensors: {}``) sends :data:`DEFAULT_CALL` for every diff.

    An aggregating query's diffs are ``updated`` (``before`` is null when the group row is
    new to the results)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    added: HttpCall | None = Field(None, description="a row entered the results")
    updated: HttpCall | None = Field(None, description="a row changed (and aggregation diffs)")
    deleted: HttpCall | None = Field(None, description="a row left the results")

    def call(self, kind: str) -> HttpCall | None:
        """The call for change ``kind`` (``added``/``updated``/``deleted``)."""
        if self.added is None and self.updated is None and self.deleted is None:
            return DEFAULT_CALL
        found: HttpCall | None = getattr(self, kind)
        return found


class _AppReactionSpec(BaseModel):
    """What every reaction of the app has: an id naming its actor and its Redis keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(
        min_length=1,
        pattern=_REACTION_ID,
        description="names its actor 'drasi/reaction/<id>' and Redis keys",
    )


class _RelaySpec(_AppReactionSpec):
    """What every reaction that delivers each diff somewhere has (:data:`RelayedReaction`):
    retries with backoff, then the reaction's dead-letter stream; a bound on how far behind
    the newest result it may fall."""

    max_attempts: int = Field(5, ge=1, description="attempts per call before dead-lettering")
    retry_initial_ms: int = Field(200, ge=1, description="first retry delay (then doubling)")
    retry_max_ms: int = Field(5000, ge=1, description="cap of the retry delay")
    max_lag: int = Field(
        10_000, ge=1, description="results behind the newest beyond which they are dead-lettered"
    )
    dead_letter_maxlen: int = Field(
        100_000, ge=1, description="approximate cap of the dead-letter stream"
    )


class HttpReaction(_RelaySpec):
    """Drasi's ``http`` reaction: an HTTP call per result diff of the queries it names.

    Runs in an actor of its own (``drasi/reaction/<id>``) that reads each query's result
    stream (``<queryId>-results``: the query gets a platform reaction if it has none), in
    order per query, and records how far it got in Redis: a restarted actor goes on from
    there. Delivery is at least once: every request carries the header ``Idempotency-Key:
    <queryId>:<sequence>:<index of the diff in its result>``, unique per diff and the same
    on every retry, so a receiver drops the repeat a crash can cause. A call answered with a
    5xx, 408 or 429, or that times out or cannot connect, is retried with backoff, up to
    ``max_attempts``; then, as at once for another 4xx, the diff goes to the reaction's
    dead-letter stream ``drasi:<app>:reaction:<id>:dlq`` with the reason, and delivery goes
    on. Results more than ``max_lag`` behind the newest are dead-lettered unsent (a dead
    endpoint costs memory nowhere and the reaction catches up once it is back).

    ``token_env`` / ``token_file`` name where the bearer token is (``Authorization: Bearer
    ...``); it is read when the reaction starts, by the process starting the app, and never
    stored or logged. With ``batch_path``, the diffs are POSTed together instead, up to
    ``max_batch`` per request, as a JSON array of the default body's objects each with its
    ``idempotencyKey``.
    """

    kind: Literal["http"] = Field("http", description="picks this reaction")
    base_url: str = Field(description="http(s)://host[:port][/prefix] every call's url follows")
    queries: dict[str, HttpQueryCalls | None] = Field(
        min_length=1, description="query id -> its calls per change kind (null: the default)"
    )
    headers: dict[str, str] = Field(default_factory=dict, description="sent with every call")
    token_env: str | None = Field(None, min_length=1, description="env variable holding the token")
    token_file: str | None = Field(None, min_length=1, description="file holding the token")
    timeout_ms: int = Field(5000, ge=1, description="per request, connecting included")
    batch_path: str | None = Field(
        None, description="POST diffs in batches to base_url + this path instead"
    )
    max_batch: int = Field(100, ge=1, description="diffs per batch request (with batch_path)")

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _one_token_source(self) -> HttpReaction:
        if self.token_env is not None and self.token_file is not None:
            raise ValueError("set token_env or token_file, not both")
        return self

    def calls(self, query_id: str) -> HttpQueryCalls:
        """The calls of ``query_id`` (every kind the default call when given as null)."""
        return self.queries.get(query_id) or HttpQueryCalls()


class SseReaction(_AppReactionSpec):
    """Server-Sent Events of query results, and the live dashboard page.

    An actor of its own (``drasi/reaction/<id>``) runs an HTTP server on ``host``:``port``
    (127.0.0.1 unless configured; port 0 picks a free one). ``GET /events?query=<id>`` (the
    parameter repeated, or left out for every query) streams, per query, its current result
    set (event ``snapshot``) and then its changes (event ``diff``), each event's ``id`` the
    position reached; a client reconnecting with ``Last-Event-ID`` gets the changes it missed,
    or a fresh snapshot when they are no longer kept, never a gap. ``GET /api/queries`` lists
    the queries; with ``dashboard`` the page at ``/`` shows them live. The server reads each
    query's result stream (the query gets a platform reaction if it has none).
    """

    kind: Literal["sse"] = Field("sse", description="picks this reaction")
    id: str = Field("dashboard", min_length=1, pattern=_REACTION_ID, description="names its actor")
    host: str = Field("127.0.0.1", min_length=1, description="bind address")
    port: int = Field(8080, ge=0, le=65535, description="TCP port (0: any free port)")
    queries: tuple[str, ...] | None = Field(
        None, description="the query ids served (none: every query of the app)"
    )
    dashboard: bool = Field(True, description="serve the dashboard page at /")
    history: int = Field(
        1000, ge=0, description="changes kept per query for clients that reconnect"
    )
    client_buffer: int = Field(
        10_000, ge=1, description="events queued per client; a client further behind is cut off"
    )

    def serves(self, query_id: str) -> bool:
        return self.queries is None or query_id in self.queries


class StoredProcCommands(BaseModel):
    """A query's procedure calls by change kind (Drasi's ``addedResultCommand`` ...). A kind
    left out calls nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    added_command: str | None = Field(None, description="e.g. 'CALL upsert_item(@id, @name)'")
    updated_command: str | None = Field(None, description="called for an updated row")
    deleted_command: str | None = Field(None, description="e.g. 'CALL delete_item(@id)'")

    def command(self, kind: str) -> str | None:
        found: str | None = getattr(self, f"{kind}_command")
        return found


class PostgresStoredProcReaction(_RelaySpec):
    """Drasi's ``storedproc-postgres`` reaction: a PostgreSQL procedure call per result diff.

    Per change kind a command, ``CALL proc(@field, ...)`` (``CALL`` may be left out, as in
    Drasi): ``@field`` is a field of the row (after the change for ``added`` and ``updated``,
    before it for ``deleted``), ``@after.field`` and ``@before.field`` name the row, and
    ``@drasi.key`` is the diff's idempotency key (``<queryId>:<sequence>:<index>``),
    ``@drasi.queryId`` and ``@drasi.sequence`` the result's. Values are bound as parameters,
    never written into the SQL (a list or map as JSON). Each call is its own transaction.

    Runs as an actor over the queries' result streams like :class:`HttpReaction`, with the
    same order, positions, retries and dead-letter stream: connection losses, timeouts
    (``command_timeout_ms``), deadlocks and serialization failures are retried; an error of
    the call itself (an unknown procedure, a value of the wrong type, the procedure raising)
    is dead-lettered at once. Delivery is at least once: a call can be made again after a
    crash, so write procedures that do the same the second time (an upsert, a delete by key,
    or a table of the ``@drasi.key`` values seen). The password (``password_env`` or
    ``password_file``) is read, and a connection tried, when the reaction starts: a wrong
    one is a one-line error then.
    """

    kind: Literal["storedproc-postgres"] = Field(
        "storedproc-postgres", description="picks this reaction"
    )
    host: str = Field("localhost", min_length=1, description="the server's host")
    port: int = Field(5432, ge=1, le=65535, description="the server's port")
    database: str = Field(min_length=1, description="the database holding the procedures")
    user: str = Field(min_length=1, description="the role that calls them")
    password_env: str | None = Field(None, min_length=1, description="env variable: password")
    password_file: str | None = Field(None, min_length=1, description="file: password")
    ssl_mode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] = Field(
        "prefer", description="libpq sslmode"
    )
    connect_timeout_s: int = Field(10, ge=1, description="to connect")
    added_command: str | None = Field(None, description="called for an added row")
    updated_command: str | None = Field(None, description="for an updated row (aggregations)")
    deleted_command: str | None = Field(None, description="called for a deleted row")
    queries: dict[str, StoredProcCommands | None] = Field(
        min_length=1, description="query id -> its own commands (null: the ones above)"
    )
    command_timeout_ms: int = Field(30_000, ge=1, description="statement_timeout of a call")

    @model_validator(mode="after")
    def _one_password_source(self) -> PostgresStoredProcReaction:
        if self.password_env is not None and self.password_file is not None:
            raise ValueError("set password_env or password_file, not both")
        return self

    def commands(self, query_id: str) -> StoredProcCommands:
        """The commands of ``query_id`` (the reaction's own when it names none)."""
        return self.queries.get(query_id) or StoredProcCommands(
            added_command=self.added_command,
            updated_command=self.updated_command,
            deleted_command=self.deleted_command,
        )


AppReactionSpec = Annotated[
    HttpReaction | SseReaction | PostgresStoredProcReaction, Field(discriminator="kind")
]
"""A reaction of the app (YAML ``reactions:`` at the top level); ``kind`` picks the model."""

AnyAppReaction = HttpReaction | SseReaction | PostgresStoredProcReaction
RelayedReaction = HttpReaction | PostgresStoredProcReaction
"""The reactions of the app that deliver each diff somewhere (a relay with positions)."""
