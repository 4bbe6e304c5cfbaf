"""Consumer actors: ``drasi/<source>/consumer-<i>``, one named Redis consumer each.

An async Ray actor (``max_restarts=-1``) whose ``__init__`` starts, for every stream of the
source, the consume loop and the reclaim timer as asyncio tasks of the actor's event loop
(:class:`~drasi_ray.source.lanes.ConsumerLanes`), with ``redis.asyncio`` clients created inside
the actor (clients do not pickle; the actor gets settings). Its Redis consumer name is stable
and the same on every stream, so a restarted actor re-reads its own pending entries first.

The loops stay in the default concurrency group: each Ray concurrency group has its own thread
and event loop, and the loops share the actor's state. Each stream's lane has its own
:class:`~drasi_ray.shards.dispatch.ShardDispatcher` (its batches numbered apart), reaching the
shards over direct lines (:class:`~drasi_ray.actors.handles.ShardLine`).

What a consumer is, apart from its actor, is a :class:`ConsumerRole`: the fused actor
(:mod:`drasi_ray.actors.fused`) runs consumer 0 of its sources as roles of its own, their
dispatchers reaching store shard 0 and the control plane in the same process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Protocol

import psutil
import ray

from drasi_ray.actors.handles import GONE, CoordinatorHandle, shard_line
from drasi_ray.actors.metrics import ConsumerMetrics, group_gauges
from drasi_ray.actors.runtime import PIPELINE_NICENESS, tune_for_latency, tune_gc, was_restarted
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.shards.dispatch import DispatchControl, ShardConnection, ShardDispatcher
from drasi_ray.shards.reports import BatchReport
from drasi_ray.source.consumer import ConsumerReport
from drasi_ray.source.dispatcher import Dispatch
from drasi_ray.source.lanes import ConsumerLanes

METRICS_INTERVAL_S = 5.0


class ConsumerControl(DispatchControl, Protocol):
    """What a consumer asks the control plane: its dispatchers' questions, and its tombstone
    sweep's (the coordinator actor's handle, or the control plane of the same process)."""

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int: ...


class ConsumerRole:
    """One named consumer of a source (:class:`ConsumerLanes`) dispatching each batch to the
    store shards (:class:`~drasi_ray.shards.dispatch.ShardDispatcher`), with its metrics.
    Create it in the event loop it runs in; :meth:`start` starts reading."""

    def __init__(
        self,
        source_id: str,
        settings: PlatformSourceConfig,
        consumer_name: str,
        control: ConsumerControl,
        connect: Callable[[int], ShardConnection],
        restarted: bool = False,
    ) -> None:
        """``control``: the control plane; ``connect(index)``: a connection to store shard
        ``index``; ``restarted``: this consumer is a restart (its status says so)."""
        self._control = control
        self._metrics = ConsumerMetrics(source_id, consumer_name)
        several = len(settings.stream_keys) > 1
        self._shards = {
            stream: ShardDispatcher(
                f"{consumer_name}@{stream}" if several else consumer_name,
                control,
                connect,
                GONE,
                self._observe,
            )
            for stream in settings.stream_keys
        }
        self._source_id = source_id
        self._consumer = ConsumerLanes(
            source_id, settings, consumer_name, self._dispatch_for, self._forget_tombstones
        )
        self._restarted = restarted
        self._metrics_task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start reading (every lane) and recording metrics (once)."""
        if self._metrics_task is not None:
            return
        self._consumer.start()
        self._metrics_task = asyncio.get_event_loop().create_task(self._record_metrics())

    @property
    def started(self) -> bool:
        return self._metrics_task is not None

    def _dispatch_for(self, stream: str) -> Dispatch:
        """The dispatch of ``stream``'s lane: one call per shard per batch, never per event."""
        return functools.partial(self._shards[stream].dispatch, self._source_id)

    def _observe(self, entries: int, report: BatchReport) -> None:
        self._metrics.batch(entries, report.applied)

    async def _forget_tombstones(self, bound: tuple[int, int]) -> int:
        return await self._control.forget_tombstones(self._source_id, bound)

    async def _record_metrics(self) -> None:
        """Every few seconds: counters from the consumer's stats, group lag and pending."""
        settings = self._consumer.settings
        while True:
            await asyncio.sleep(METRICS_INTERVAL_S)
            stats = dataclasses.asdict(self._consumer.stats)
            self._metrics.sync_counters(stats)
            try:
                per_stream = [
                    await group_gauges(
                        self._consumer.backend, stream, settings.consumer_group, self._consumer.name
                    )
                    for stream in settings.stream_keys
                ]
            except Exception:  # the consume loop reports Redis trouble; metrics just skip
                continue
            lag, pending, own = (sum(column) for column in zip(*per_stream, strict=True))
            self._metrics.group(lag, pending, own)

    async def ready(self, timeout_s: float = 60.0) -> str:
        """Return the consumer name once the group exists and own pending entries are done."""
        await asyncio.wait_for(self._consumer.wait_ready(), timeout_s)
        return self._consumer.name

    async def stop(self) -> None:
        if self._metrics_task is not None:
            self._metrics_task.cancel()
            await self._consumer.stop()
        for shards in self._shards.values():
            shards.close()

    async def pause(self) -> None:
        """Stop handing batches to the shards (the batches in hand finish); for a rescale."""
        await asyncio.gather(*(shards.pause() for shards in self._shards.values()))

    async def resume(self) -> None:
        """Hand batches to the shards again, split for the shard count of now."""
        for shards in self._shards.values():
            shards.resume()

    def stats(self) -> ConsumerReport:
        return ConsumerReport(
            stats=self._consumer.stats,
            name=self._consumer.name,
            restarted=self._restarted,
            in_flight=self._consumer.in_flight,
            rss_bytes=psutil.Process().memory_info().rss,
            streams=self._consumer.stream_stats(),
        )


@ray.remote
class ConsumerActor:
    """A consumer actor: the Ray shell of one :class:`ConsumerRole`, reaching the shards over
    direct lines and the coordinator through Ray. It reads once told (:meth:`ready`), so an
    app can start its process early; a restarted one reads again at once."""

    def __init__(
        self,
        source_id: str,
        settings: PlatformSourceConfig,
        consumer_name: str,
        namespace: str,
        niceness: int | None = PIPELINE_NICENESS,
    ) -> None:
        tune_for_latency(niceness)
        tune_gc()
        control = CoordinatorHandle(namespace, f"consumer {consumer_name}")
        restarted = was_restarted()
        self._role = ConsumerRole(
            source_id, settings, consumer_name, control, shard_line(namespace), restarted
        )
        if restarted:  # the app had told it to read (or was about to)
            self._role.start()

    async def ready(self, timeout_s: float = 60.0) -> str:
        """Start reading (once); return the consumer name once the group exists and own
        pending entries are done."""
        self._role.start()
        return await self._role.ready(timeout_s)

    async def stop(self) -> None:
        await self._role.stop()

    async def pause(self) -> None:
        """Stop handing batches to the shards (the batches in hand finish); for a rescale."""
        await self._role.pause()

    async def resume(self) -> None:
        """Hand batches to the shards again, split for the shard count of now."""
        await self._role.resume()

    def pid(self) -> int:
        """The actor's process id (chaos tests SIGKILL it)."""
        return os.getpid()

    def stats(self) -> ConsumerReport:
        return self._role.stats()
