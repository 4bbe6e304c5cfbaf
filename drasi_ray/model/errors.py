"""The one error tree of drasi_ray.

Every error the package raises on purpose derives from :class:`DrasiRayError`, so callers can
catch the whole family with one ``except``. Errors from redis-py and Ray are translated at the
boundary where they happen (the stream backend, the actor wrappers) and keep the original as
``__cause__``.
"""

from __future__ import annotations


class DrasiRayError(Exception):
    """Base of every error raised by drasi_ray."""


class ConfigError(DrasiRayError):
    """A setting is missing, unknown or out of range. The message names the setting."""


class DecodeError(DrasiRayError):
    """A stream entry is malformed. ``reason`` names the offending field.

    The consumer dead-letters the entry with this reason and its raw fields, then acks it.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MiddlewareError(DrasiRayError):
    """A source middleware could not process a change (``reason`` says which and why).

    The coordinator skips that change for the query whose pipeline failed and the consumer
    dead-letters the entry with the reason; the source and every other query go on.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class QueryError(DrasiRayError):
    """A continuous query cannot be registered or evaluated."""


class QuerySyntaxError(QueryError):
    """The query text does not parse, or uses a feature outside the supported subset.

    ``line`` and ``column`` are 1-based positions in the query text.
    """

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{message} (line {line}, column {column})")
        self.message = message
        self.line = line
        self.column = column


class UnsupportedQueryError(QuerySyntaxError):
    """The query is valid Cypher but uses a feature drasi_ray does not support."""


class QueryEvaluationError(QueryError):
    """An expression cannot be evaluated (wrong argument types, unknown function...)."""


class StreamError(DrasiRayError):
    """A Redis Streams operation failed. The message never contains credentials."""


class RedisUnavailableError(StreamError):
    """Redis cannot be reached (connection refused, reset, timed out)."""


class RedisRejectedError(StreamError):
    """Redis answered with an error that retrying will not fix (OOM, READONLY, NOAUTH...)."""


class StaleDeliveryError(DrasiRayError):
    """A store shard's delivery on a link to a query host that a newer link replaced (the
    shard or the host restarted).

    It is never applied: its changes are in the bootstrap parts the newer link carries.
    """


class ShardMapChangedError(DrasiRayError):
    """A consumer sent a batch for a shard count the store shards no longer have (they are
    being, or were, rescaled). The consumer takes the new shard map and sends the batch again.
    """


class RayUnavailableError(DrasiRayError):
    """The configured Ray cluster cannot be reached (the message names its address)."""


class ComponentUnavailableError(DrasiRayError):
    """An actor of the app did not answer within the deadline (it is restarting and did not
    come back, or it is gone). The message names the actor and the deadline."""


class SubscriptionLostError(DrasiRayError):
    """A subscription's buffer is gone: its query's host restarted and nothing knew the
    subscription any more (the coordinator restarted too, without durable state), or its
    query was removed. Read the query's results (``app.results``) and subscribe again."""


class PostgresSourceError(DrasiRayError):
    """A PostgreSQL source cannot read its database as configured: wrong credentials, no
    publication, no replication permission, a table it cannot key. The message names the
    source and the database, and says what to fix; it never contains a password."""


class NotRunningError(DrasiRayError):
    """The operation needs a started app (``DrasiRay.start()``)."""


class ControlError(DrasiRayError):
    """A running app refused or failed a command of ``drasi-ray`` (``apply``, ``delete``...),
    or did not answer it in time; the message says which and why."""


class UnknownComponentError(DrasiRayError, KeyError):
    """A source or query id that was never added."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the plain message
        return str(self.args[0]) if self.args else ""


class GroupMissingError(StreamError):
    """The consumer group (or its stream) does not exist: Redis answered ``NOGROUP``.

    Happens after ``XGROUP DESTROY``, a ``FLUSHALL`` or a Redis restart without persistence.
    The caller recreates the group (``ensure_group``) and reads on; it must not hot-loop.
    ``stream`` and ``group`` name what is missing.
    """

    def __init__(self, message: str, stream: str, group: str) -> None:
        super().__init__(message)
        self.stream = stream
        self.group = group

    def __reduce__(self) -> tuple[type[GroupMissingError], tuple[str, str, str]]:
        # crosses Ray process boundaries: rebuild with every constructor argument
        return (type(self), (str(self), self.stream, self.group))


class AckError(StreamError):
    """Some ids of an ``XACK`` batch could not be acknowledged, even one by one.

    ``acked`` counts the ids Redis did acknowledge; ``failed`` maps each failed id to the
    reason Redis gave. The failed entries stay pending and are redelivered later.
    """

    def __init__(self, message: str, acked: int, failed: dict[str, str]) -> None:
        super().__init__(message)
        self.acked = acked
        self.failed = failed

    def __reduce__(self) -> tuple[type[AckError], tuple[str, int, dict[str, str]]]:
        return (type(self), (str(self), self.acked, self.failed))
