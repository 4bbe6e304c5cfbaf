"""What the stages of one consumer on one stream share: :class:`LaneState`.

A :class:`~drasi_ray.source.consumer.StreamConsumer` (a *lane*, one per stream of the source in
each consumer actor: :mod:`drasi_ray.source.lanes`) is four stages over one stream and group:
the reader (:mod:`drasi_ray.source.reader`), the dispatcher
(:mod:`drasi_ray.source.dispatcher`), the acker (:mod:`drasi_ray.source.acker`) and the
housekeeping (:mod:`drasi_ray.source.housekeeping`). They share the lane's identity, backend and
counters (:class:`ConsumerStats`), the bound on entries held unacked (:class:`InFlight`), the
count of batches in hand (a batch is in hand from its screening to its ack, which ``stop``
waits out) and how dead letters are written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import StreamError
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.streams.records import DeadLetter, StreamEntry

logger = logging.getLogger("drasi_ray.consumer")


@dataclass(slots=True)
class ConsumerStats:
    """Counters of one consumer, reported by ``status()``."""

    read: int = 0
    batches: int = 0
    dispatched: int = 0
    dead_lettered: int = 0
    acked: int = 0
    reclaimed: int = 0
    redelivered: int = 0
    deleted_acked: int = 0
    errors: int = 0
    group_recreated: int = 0
    claims_renewed: int = 0
    trimmed: int = 0
    tombstones_forgotten: int = 0
    state: str = "starting"
    last_error: str | None = None
    extra: dict[str, int] = field(default_factory=dict)


class InFlight:
    """Bounds the entries a consumer holds unacked; readers reserve room before reading.

    Releasing is synchronous (a reply's callback may release), reserving waits for room."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._room = asyncio.Event()
        self._room.set()

    async def reserve(self, wanted: int) -> int:
        """Wait for room, then hold up to ``wanted`` entries; returns how many were granted."""
        while self.held >= self.limit:
            await self._room.wait()
        granted = min(wanted, self.limit - self.held)
        self.held += granted
        if self.held >= self.limit:
            self._room.clear()
        return granted

    def release(self, count: int) -> None:
        if count <= 0:
            return
        self.held -= count
        if self.held < self.limit:
            self._room.set()


class LaneState:
    """One lane's identity, backend, counters, in-flight bound and batches in hand."""

    def __init__(
        self,
        source_id: str,
        settings: PlatformSourceConfig,
        name: str,
        stream: str,
        backend: RedisStreamBackend,
    ) -> None:
        self.source_id = source_id
        self.settings = settings
        self.name = name
        self.stream = stream
        self.group = settings.consumer_group
        self.backend = backend
        self.stats = ConsumerStats()
        self.in_flight = InFlight(max(settings.max_in_flight, 1))
        self._active = 0
        self.idle = asyncio.Event()
        """Set while no batch is in hand."""
        self.idle.set()

    def begin_batch(self) -> None:
        """A batch is in hand (screened, to be dispatched and acked)."""
        self._active += 1
        self.idle.clear()

    def end_batch(self, count: int) -> None:
        """A batch of ``count`` entries is done with (acked, or left pending)."""
        self.in_flight.release(count)
        self._active -= 1
        if self._active == 0:
            self.idle.set()

    def letter(self, entry: StreamEntry, reason: str, deliveries: int) -> DeadLetter:
        """The dead letter of ``entry``, naming this lane's stream and consumer."""
        return DeadLetter(
            entry_id=entry.id,
            reason=reason,
            fields=entry.fields,
            source_stream=self.stream,
            consumer=self.name,
            delivery_count=deliveries,
        )

    async def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        """Write ``letters`` to the source's dead-letter stream (and count them)."""
        await self.backend.dead_letter(
            self.settings.dead_letter_key, letters, self.settings.dead_letter_maxlen
        )
        self.stats.dead_lettered += len(letters)

    def note_error(self, exc: BaseException) -> None:
        """A failure of reading or a batch: counted, logged; the lane is recovering."""
        self.stats.errors += 1
        self.stats.last_error = f"{type(exc).__name__}: {exc}"
        self.stats.state = "recovering"
        level = logging.WARNING if isinstance(exc, StreamError) else logging.ERROR
        logger.log(level, "consumer %s: %s", self.name, self.stats.last_error)

    def note_side_error(self, what: str, exc: BaseException) -> None:
        """A failure of housekeeping (trim, sweep): counted and logged; consuming goes on, so
        the state is left alone. The next period tries again."""
        self.stats.errors += 1
        self.stats.last_error = f"{what}: {type(exc).__name__}: {exc}"
        logger.warning("consumer %s: %s", self.name, self.stats.last_error)
