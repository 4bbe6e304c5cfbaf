"""One named consumer of a source over all its streams: a lane per stream.

A platform source may read several streams, one per partition (``stream_keys``). Each consumer
actor of the source is then the same named consumer (``<base>-<i>``) of the source's group on
every stream, and :class:`ConsumerLanes` runs one :class:`~drasi_ray.source.consumer.
StreamConsumer` (a *lane*) per stream: its own group creation, own-pending drain, reads, one
dispatch at a time, acks and reclaim timer, all on that stream. So each stream is applied in its
order, exactly as a one-stream source's, and what the consumer contract says of the stream
(resume from own pending entries, reclaim, dead letters, acks after the work) holds per stream.

Why lanes rather than one ``XREADGROUP`` over every key: the batches of a lane hold entries of
one stream only, so every entry id of a batch is unique (two streams may both hold ``1-0``),
acks, claim renewals and delivery counts need no per-entry routing, and a stream that is slow
or poisoned holds back no other. The lanes dispatch side by side, as several consumers do; the
store converges for that reason (docs/semantics.md §2), given the producer contract of
:mod:`drasi_ray.model.partitions` (one element, one stream).

Dead letters of every lane go to the source's one dead-letter stream, each naming its stream.
Tombstones are swept once for all lanes: below the LOWEST bound of the streams, since the store
does not know which stream an element came from.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable

from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.source.consumer import StreamConsumer, backend_for
from drasi_ray.source.dispatcher import Dispatch
from drasi_ray.source.housekeeping import ForgetTombstones
from drasi_ray.source.lane import ConsumerStats
from drasi_ray.streams.backend import RedisStreamBackend

logger = logging.getLogger("drasi_ray.consumer")

_STATE_RANK = {"recovering": 0, "starting": 1, "running": 2, "stopped": 3}


def combine_stats(parts: list[ConsumerStats]) -> ConsumerStats:
    """The counters of several lanes added up; the state the least healthy lane's, the last
    error the first lane's that has one."""
    total = ConsumerStats()
    for field in dataclasses.fields(ConsumerStats):
        if isinstance(getattr(total, field.name), int):  # the counters (state, error: no)
            setattr(total, field.name, sum(getattr(part, field.name) for part in parts))
    total.state = min((part.state for part in parts), key=lambda s: _STATE_RANK.get(s, 0))
    total.last_error = next((p.last_error for p in parts if p.last_error is not None), None)
    for part in parts:
        for name, count in part.extra.items():
            total.extra[name] = total.extra.get(name, 0) + count
    return total


class ConsumerLanes:
    """The lanes of one named consumer (module docstring); the consumer actor's state."""

    def __init__(
        self,
        source_id: str,
        settings: PlatformSourceConfig,
        consumer_name: str,
        dispatch_for: Callable[[str], Dispatch],
        forget_tombstones: ForgetTombstones | None = None,
        backend_of: Callable[[PlatformSourceConfig], RedisStreamBackend] = backend_for,
    ) -> None:
        """``dispatch_for(stream)`` is the dispatch of the lane of ``stream`` (each lane its
        own, so their batches are numbered apart); ``forget_tombstones`` as for a
        :class:`StreamConsumer`, called with the lowest bound of every stream.
        ``backend_of`` makes each lane's backend, and one for the sweep and the gauges."""
        self.settings = settings
        self.name = consumer_name
        self.backend = backend_of(settings)
        self._forget = forget_tombstones
        self.lanes = [
            StreamConsumer(
                source_id,
                settings,
                consumer_name,
                backend_of(settings),
                dispatch_for(stream),
                stream=stream,
            )
            for stream in settings.stream_keys
        ]
        self._sweeper: asyncio.Task[None] | None = None
        self.tombstones_forgotten = 0

    @property
    def in_flight(self) -> int:
        """Entries read and not yet acked, on every stream."""
        return sum(lane.in_flight for lane in self.lanes)

    @property
    def stats(self) -> ConsumerStats:
        """Every lane's counters added up (a copy)."""
        total = combine_stats([lane.stats for lane in self.lanes])
        total.tombstones_forgotten += self.tombstones_forgotten
        return total

    def stream_stats(self) -> dict[str, ConsumerStats]:
        """Each stream's lane counters (copies)."""
        return {
            lane.stream: dataclasses.replace(lane.stats, extra=dict(lane.stats.extra))
            for lane in self.lanes
        }

    def start(self) -> None:
        """Start every lane, and the tombstone sweep over all of them."""
        for lane in self.lanes:
            lane.start()
        ttl_ms = self.settings.tombstone_ttl_ms
        if self._forget is not None and ttl_ms is not None:
            self._sweeper = asyncio.get_running_loop().create_task(
                self._sweep_forever(self._forget, ttl_ms), name=f"sweep:{self.name}"
            )

    async def wait_ready(self) -> None:
        """Return once every lane is ready (its group exists, its own pending drained)."""
        await asyncio.gather(*(lane.wait_ready() for lane in self.lanes))

    async def stop(self) -> None:
        """Stop every lane (their batches in hand finish and are acked), then the sweep."""
        await asyncio.gather(*(lane.stop() for lane in self.lanes))
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self.backend.close()

    async def _sweep_forever(self, forget: ForgetTombstones, ttl_ms: int) -> None:
        """Every ``tombstone_sweep_ms``: forget the tombstones below every stream's bound. A
        failure is logged and the next period tries again."""
        while True:
            await asyncio.sleep(self.settings.tombstone_sweep_ms / 1000)
            try:
                bound = await self.tombstone_bound(ttl_ms)
                if bound is not None:
                    self.tombstones_forgotten += await forget(bound)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("consumer %s: tombstone sweep: %s", self.name, exc)

    async def tombstone_bound(self, ttl_ms: int) -> tuple[int, int] | None:
        """The lowest of the streams' tombstone bounds
        (:meth:`RedisStreamBackend.tombstone_bound`); None until every lane is ready or while
        a stream or its group is missing."""
        if not all(lane.ready for lane in self.lanes):
            return None
        bounds = []
        for lane in self.lanes:
            bound = await self.backend.tombstone_bound(
                lane.stream, self.settings.consumer_group, ttl_ms
            )
            if bound is None:
                return None
            bounds.append(bound)
        return min(bounds)
