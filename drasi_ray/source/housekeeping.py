"""A lane's housekeeping: reclaiming idle peers' entries, trimming, sweeping tombstones.

Three timers beside the consume loop, each failure of which is counted and logged while
consuming goes on:

- reclaim, every ``reclaim_interval_ms`` and only while new entries are read and no ack is on
  its way: ``XAUTOCLAIM`` of entries idle past ``claim_idle_ms`` (a peer died), handled as a
  batch of this consumer (screened, dispatched, acked); entries whose data was deleted are
  acked at once;
- trim (``trim_acked``), every ``trim_interval_ms``: ``XTRIM MINID`` below what every group
  acked;
- sweep (a one-stream source with ``tombstone_ttl_ms``), every ``tombstone_sweep_ms``: tell the
  element store the stream position below which no change can come again, so its tombstones
  can go (:class:`~drasi_ray.source.lanes.ConsumerLanes` sweeps for several streams).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from drasi_ray.source.acker import Acker
from drasi_ray.source.lane import LaneState
from drasi_ray.streams.records import StreamEntry

logger = logging.getLogger("drasi_ray.consumer")

ForgetTombstones = Callable[[tuple[int, int]], Awaitable[int]]
"""Tells the element store the stream position below which tombstones can go (a count back)."""


class Housekeeping:
    """The timers of one lane (module docstring)."""

    def __init__(
        self,
        lane: LaneState,
        acker: Acker,
        handle: Callable[[Sequence[StreamEntry]], Awaitable[None]],
        may_reclaim: Callable[[], bool],
        ready: Callable[[], bool],
    ) -> None:
        """``handle``: screen, dispatch and ack reclaimed entries as a batch;
        ``may_reclaim``: whether every own pending entry is accounted for now (new entries are
        read and no ack is on its way); ``ready``: whether the group exists."""
        self._lane = lane
        self._acker = acker
        self._handle = handle
        self._may_reclaim = may_reclaim
        self._ready = ready
        self.stopping = False

    def tasks(self, forget: ForgetTombstones | None) -> list[asyncio.Task[None]]:
        """Start the timers the settings ask for, as tasks of the running loop."""
        lane, loop = self._lane, asyncio.get_running_loop()
        settings = lane.settings
        tasks = [loop.create_task(self._reclaim_loop(), name=f"reclaim:{lane.name}")]
        if settings.trim_acked:
            trim = self._every("retention trim", settings.trim_interval_ms, self._trim_once)
            tasks.append(loop.create_task(trim, name=f"trim:{lane.name}"))
        if forget is not None and (ttl_ms := settings.tombstone_ttl_ms) is not None:
            sweep = self._every(
                "tombstone sweep",
                settings.tombstone_sweep_ms,
                lambda: self._sweep_once(forget, ttl_ms),
            )
            tasks.append(loop.create_task(sweep, name=f"sweep:{lane.name}"))
        return tasks

    async def _every(
        self, what: str, interval_ms: int, work: Callable[[], Awaitable[None]]
    ) -> None:
        """Run ``work`` every ``interval_ms``; a failure is noted and the next period tries
        again (consuming goes on)."""
        while not self.stopping:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await work()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._lane.note_side_error(what, exc)

    async def _trim_once(self) -> None:
        """Opt-in retention: every consumer trims (XTRIM MINID is idempotent and cheap)."""
        lane = self._lane
        lane.stats.trimmed += await lane.backend.trim_acked(lane.stream)

    async def _sweep_once(self, forget: ForgetTombstones, ttl_ms: int) -> None:
        """Tell the store which tombstones can go (idempotent: every consumer sweeps), once
        the group is ready."""
        if not self._ready():
            return
        lane = self._lane
        bound = await lane.backend.tombstone_bound(lane.stream, lane.group, ttl_ms)
        if bound is not None:
            lane.stats.tombstones_forgotten += await forget(bound)

    async def _reclaim_loop(self) -> None:
        interval = self._lane.settings.reclaim_interval_ms / 1000
        while not self.stopping:
            await asyncio.sleep(interval)
            if not self._may_reclaim():
                continue
            try:
                await self._reclaim_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._lane.note_error(exc)

    async def _reclaim_once(self) -> None:
        """Claim peers' entries idle past ``claim_idle_ms``; they count against max_in_flight."""
        lane = self._lane
        settings, in_flight = lane.settings, lane.in_flight
        granted = await in_flight.reserve(settings.batch_size)
        try:
            claim = await lane.backend.autoclaim(
                lane.stream, lane.group, lane.name, settings.claim_idle_ms, granted
            )
        except BaseException:
            in_flight.release(granted)
            raise
        in_flight.release(granted - len(claim.entries))
        if claim.deleted_ids:
            await self._acker.ack(claim.deleted_ids)
            lane.stats.deleted_acked += len(claim.deleted_ids)
        if claim.entries:
            lane.stats.reclaimed += len(claim.entries)
            lane.stats.redelivered += len(claim.entries)
            logger.info("consumer %s reclaimed %d idle entries", lane.name, len(claim.entries))
            await self._handle(list(claim.entries))
