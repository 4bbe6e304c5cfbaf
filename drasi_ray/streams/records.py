"""Plain values the stream layer hands out: entries, claim results, dead letters, progress.

Pure data, no Redis client: the consumer and tests build and inspect these without a server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

Fields = Mapping[bytes, bytes]
"""An entry's field/value pairs, raw bytes as Redis stores them."""


class StreamEntry(msgspec.Struct, frozen=True, gc=False):
    """One stream entry as read from Redis.

    ``fields is None`` means the entry is still pending in the group but its data was deleted
    (``XDEL``, or ``MAXLEN`` trimming): there is nothing to process, and the caller should ack
    it (or dead-letter it) so it leaves the pending list. ``fields`` is a fresh mapping owned by
    this entry; treat it as read-only.
    """

    id: str
    fields: Fields | None

    @property
    def deleted(self) -> bool:
        return self.fields is None


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What one ``XAUTOCLAIM`` step moved to the calling consumer.

    ``entries`` have data and are now pending on the caller. ``deleted_ids`` were pending, got
    claimed too, but their data is gone: ack them. (Redis 7 names them in the reply; on 6.2 the
    backend finds them among the caller's own pending entries, see ``RedisStreamBackend``.)
    """

    entries: tuple[StreamEntry, ...]
    deleted_ids: tuple[str, ...]


DEAD_LETTER_ORIGINAL_PREFIX = b"orig:"
"""Original fields are copied into a dead letter as ``orig:<name>`` -> value."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """An entry the pipeline after the consumer refused (a source middleware failed on it):
    the consumer dead-letters it with ``reason`` before acking it."""

    entry_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An entry given up on, with why, as written to ``<stream>:dlq``.

    Wire format (one stream entry per dead letter; every value is a Redis string):

    - ``reason``: why it was dead-lettered (UTF-8 text, e.g. a ``DecodeError`` reason);
    - ``entry_id``: the original entry id; ``stream``: the source stream it came from;
    - ``consumer``: the consumer that gave up; ``delivery_count``: deliveries so far (decimal);
    - ``failed_at_ms``: milliseconds since the epoch when it was written (decimal);
    - ``orig:<name>`` -> value for every original field, copied byte for byte. Redis strings are
      binary-safe in field names and values alike, so this round-trips any bytes losslessly
      with no base64 and stays readable in ``redis-cli``. An entry whose data was deleted has
      no ``orig:`` fields at all (a live entry always has at least one field).

    :meth:`to_fields` and :meth:`from_fields` are inverse: ``from_fields(to_fields(d, t))``
    equals ``d`` with ``failed_at_ms=t``.
    """

    entry_id: str
    reason: str
    fields: Fields | None
    source_stream: str
    consumer: str
    delivery_count: int
    failed_at_ms: int | None = None

    def to_fields(self, now_ms: int) -> dict[bytes, bytes]:
        """The dead-letter entry's fields; ``failed_at_ms`` defaults to ``now_ms``."""
        failed_at = self.failed_at_ms if self.failed_at_ms is not None else now_ms
        out: dict[bytes, bytes] = {
            b"reason": self.reason.encode(),
            b"entry_id": self.entry_id.encode(),
            b"stream": self.source_stream.encode(),
            b"consumer": self.consumer.encode(),
            b"delivery_count": str(self.delivery_count).encode(),
            b"failed_at_ms": str(failed_at).encode(),
        }
        if self.fields is not None:
            for name, value in self.fields.items():
                out[DEAD_LETTER_ORIGINAL_PREFIX + name] = value
        return out

    @classmethod
    def from_fields(cls, fields: Fields) -> DeadLetter:
        """Parse a dead-letter entry's fields back. Raises KeyError/ValueError if malformed."""
        skip = len(DEAD_LETTER_ORIGINAL_PREFIX)
        original = {
            name[skip:]: value
            for name, value in fields.items()
            if name.startswith(DEAD_LETTER_ORIGINAL_PREFIX)
        }
        return cls(
            entry_id=fields[b"entry_id"].decode(),
            reason=fields[b"reason"].decode(),
            fields=original or None,
            source_stream=fields[b"stream"].decode(),
            consumer=fields[b"consumer"].decode(),
            delivery_count=int(fields[b"delivery_count"]),
            failed_at_ms=int(fields[b"failed_at_ms"]),
        )


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """One consumer of a group (``XINFO CONSUMERS``): pending count and idle time."""

    name: str
    pending: int
    idle_ms: int


@dataclass(frozen=True, slots=True)
class GroupProgress:
    """Where a consumer group stands (``XINFO GROUPS`` + ``XINFO CONSUMERS``).

    ``entries_read`` and ``lag`` exist from Redis 7.0 on; they are None on 6.2 (and ``lag`` is
    None on 7.x too when Redis cannot compute it). Use ``last_delivered_id`` against
    ``stream_last_id`` plus ``pending`` to decide "drained" portably.
    """

    group: str
    last_delivered_id: str
    pending: int
    consumers: tuple[ConsumerInfo, ...]
    entries_read: int | None = None
    lag: int | None = None
