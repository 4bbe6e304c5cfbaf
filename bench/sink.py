"""Benchmark support: the real consumer actor with a counting sink in the coordinator's place.

:class:`drasi_ray.actors.consumer.ConsumerActor` finds its downstream by name
(``drasi/coordinator`` in the app's Ray namespace: shard 0 and the control plane), asks it the
shard count and calls ``apply_batch(source_id, entries, tag, shards)`` once per batch.
:class:`CountingSink` registers under that name in a private namespace, says there is one shard
and only counts, so the unchanged consumer actor (read, decode, validate, one Ray call per
batch, ack) is measured without the coordinator's work. No hook in the package is needed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ray

from drasi_ray.actors.consumer import ConsumerActor
from drasi_ray.actors.line import LineAddress, LineServer
from drasi_ray.actors.names import COORDINATOR, consumer_actor
from drasi_ray.actors.runtime import tune_for_latency
from drasi_ray.model.changes import DecodedEntry
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.shards import BatchTag
from drasi_ray.model.wire import EntryPacket
from drasi_ray.shards.calls import ShardCalls
from drasi_ray.shards.reports import BatchReport

SOURCE_ID = "bench"


class _Counts:
    """What the sink serves on its line, as shard 0 serves :class:`ShardCalls`: it counts."""

    def __init__(self) -> None:
        self.entries = 0
        self.changes = 0
        self.batches = 0

    async def apply_batch(
        self, source_id: str, entries: Sequence[DecodedEntry], tag: BatchTag | None, shards: int
    ) -> BatchReport:
        """Count the batch's entries and changes (unpacked as the coordinator receives it);
        reported as applied, as shard 0 reports a batch it applied."""
        changes = sum(len(entry.changes) for entry in entries)
        self.batches += 1
        self.entries += len(entries)
        self.changes += changes
        return BatchReport(changes=changes, applied=changes)


@ray.remote
class CountingSink:
    """Stands in for the coordinator: counts entries and changes per batch, nothing else.

    Async, like the coordinator, so the consumer's call takes the same path through Ray.
    """

    def __init__(self) -> None:
        tune_for_latency()  # as the coordinator
        self._counts = _Counts()
        self._line_server = LineServer[ShardCalls](self._counts, ShardCalls)  # as shard 0's

    async def line_address(self) -> LineAddress | None:
        return await self._line_server.address()

    async def shard_count(self) -> int:
        """The only store shard (the consumer's dispatcher asks the coordinator)."""
        return 1

    async def ping(self) -> bool:
        return True

    async def forget_tombstones(self, source_id: str, bound: tuple[int, int]) -> int:
        """The consumer's periodic hint after trimming: no store here, nothing forgotten."""
        return 0

    @ray.method(enable_task_events=False)  # as the coordinator's
    async def apply_batch(
        self, source_id: str, entries: EntryPacket, tag: BatchTag | None = None, shards: int = 1
    ) -> BatchReport:
        return await self._counts.apply_batch(source_id, entries, tag, shards)

    def counts(self) -> dict[str, int]:
        return {
            "batches": self._counts.batches,
            "entries": self._counts.entries,
            "changes": self._counts.changes,
            "line_calls": self._line_server.served,
        }

    def pid(self) -> int:
        return os.getpid()


@dataclass
class ConsumerUnderTest:
    """A running consumer actor, its counting sink, and their process ids (for profilers)."""

    consumer: Any
    sink: Any
    consumer_pid: int
    sink_pid: int

    def stats(self) -> dict[str, Any]:
        """The consumer's :class:`~drasi_ray.source.consumer.ConsumerStats` and the sink's
        counts."""
        stats: dict[str, Any] = ray.get(self.consumer.stats.remote()).as_dict()
        stats["sink"] = ray.get(self.sink.counts.remote())
        return stats

    def stop(self) -> None:
        ray.get(self.consumer.stop.remote(), timeout=30)
        ray.kill(self.consumer)
        ray.kill(self.sink)


def start_consumer(config: PlatformSourceConfig) -> ConsumerUnderTest:
    """Start a sink and ONE real consumer actor on ``config``; return once it is reading."""
    namespace = f"bench.ingest.{uuid.uuid4().hex[:8]}"
    sink = CountingSink.options(  # type: ignore[attr-defined]
        name=COORDINATOR, namespace=namespace, num_cpus=0
    ).remote()
    sink_pid = ray.get(sink.pid.remote())
    consumer_name = config.consumer_names(SOURCE_ID)[0]
    consumer = ConsumerActor.options(  # type: ignore[attr-defined]
        name=consumer_actor(SOURCE_ID, 0), namespace=namespace, num_cpus=0
    ).remote(SOURCE_ID, config, consumer_name, namespace)
    ray.get(consumer.ready.remote())
    consumer_pid = ray.get(consumer.__ray_call__.remote(lambda _self: os.getpid()))
    return ConsumerUnderTest(consumer, sink, consumer_pid, sink_pid)
