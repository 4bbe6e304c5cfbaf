"""Metrics through ``ray.util.metrics``, exported by Ray's Prometheus endpoint.

Every metric object is created inside the actor that records it (:class:`ConsumerMetrics` in a
consumer actor, :class:`QueryMetrics` in a query actor): module globals filled at import would
not exist in the actor processes. Ray prefixes names with ``ray_`` and suffixes counters with
``_total``; the names below are as Prometheus shows them.

===========================================  =========  =======================================
metric                                       type       tags
===========================================  =========  =======================================
``ray_drasi_changes_consumed_total``         counter    source, consumer: entries read
``ray_drasi_changes_applied_total``          counter    source, consumer: changes that altered
                                                        the graph (duplicates excluded)
``ray_drasi_changes_dead_lettered_total``    counter    source, consumer
``ray_drasi_changes_reclaimed_total``        counter    source, consumer: taken from an idle
                                                        peer (XAUTOCLAIM)
``ray_drasi_changes_redelivered_total``      counter    source, consumer: read again (own
                                                        pending after a restart, or reclaimed)
``ray_drasi_batch_size``                     histogram  source, consumer: entries per batch
                                                        (sampled: see below)
``ray_drasi_group_lag``                      gauge      source: entries not yet delivered
``ray_drasi_group_pending``                  gauge      source: delivered, not yet acked
``ray_drasi_consumer_pending``               gauge      source, consumer
``ray_drasi_diffs_emitted_total``            counter    query
``ray_drasi_results_emitted_total``          counter    query: QueryResults (one per change)
``ray_drasi_result_latency_ms``              histogram  query: from the change's source time
                                                        (``ts_ns``) to its result
===========================================  =========  =======================================

What is recorded per batch costs the batch little: counters are added up in the process and
handed to Ray within :data:`FLUSH_S`, and the two histograms observe the batches of at most one
instant per :data:`SAMPLE_EVERY_S` (a sample of the distribution; their counts are not the
batch counts, which the counters give).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ray.util import metrics

from drasi_ray.model.results import QueryResult, now_ms
from drasi_ray.streams import admin
from drasi_ray.streams.backend import RedisStreamBackend

BATCH_BOUNDARIES: list[float] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000]
LATENCY_BOUNDARIES_MS: list[float] = [
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1000,
    2000,
    5000,
    10000,
    60000,
]
CONSUMER_TAGS = ("source", "consumer")
LATENCY_SAMPLES_PER_DELIVERY = 10
FLUSH_S = 1.0
"""Counters per batch are added up in the process and handed to Ray once this long after the
first: one Ray metric call costs several microseconds, as much as a small batch's own work."""
SAMPLE_EVERY_S = 0.02
"""Histograms per batch are observed at most once per this interval (a time sample)."""
LAG_COUNT_CAP = 1_000  # on 6.2 lag costs an XRANGE of whole entries: keep it small
"""On Redis 6.2 lag is counted entry by entry, up to this many."""


class Deferred:
    """Calls ``flush`` :data:`FLUSH_S` after the first :meth:`note` since the last flush (at
    once outside an event loop), so what is noted per batch reaches Ray about once a second."""

    def __init__(self, flush: Callable[[], None]) -> None:
        self._flush = flush
        self._timer: asyncio.TimerHandle | None = None

    def note(self) -> None:
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._flush()
            return
        self._timer = loop.call_later(FLUSH_S, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._flush()


class Sampler:
    """True at most once per :data:`SAMPLE_EVERY_S`: which batches a histogram observes."""

    def __init__(self) -> None:
        self._next = 0.0

    def due(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + SAMPLE_EVERY_S
        return True


class ConsumerMetrics:
    """The metrics one consumer actor records. Create inside the actor."""

    def __init__(self, source_id: str, consumer: str) -> None:
        self.tags = {"source": source_id, "consumer": consumer}
        self._source_tags = {"source": source_id}
        self._counters = {
            name: metrics.Counter(f"drasi_changes_{name}", description, tag_keys=CONSUMER_TAGS)
            for name, description in (
                ("consumed", "stream entries read by the consumer"),
                ("applied", "changes that altered the element store"),
                ("dead_lettered", "entries written to the dead-letter stream"),
                ("reclaimed", "entries claimed from idle peers (XAUTOCLAIM)"),
                ("redelivered", "entries read again after a restart or a reclaim"),
            )
        }
        self._batch = metrics.Histogram(
            "drasi_batch_size",
            "entries per consumer batch",
            boundaries=BATCH_BOUNDARIES,
            tag_keys=CONSUMER_TAGS,
        )
        self._lag = metrics.Gauge("drasi_group_lag", "entries not yet delivered", ("source",))
        self._pending = metrics.Gauge("drasi_group_pending", "entries unacked", ("source",))
        self._own_pending = metrics.Gauge(
            "drasi_consumer_pending", "entries pending on this consumer", CONSUMER_TAGS
        )
        self._seen: dict[str, int] = {}
        self._applied = 0
        self._applied_later = Deferred(self._flush_applied)
        self._sampler = Sampler()

    def sync_counters(self, stats: dict[str, Any]) -> None:
        """Add what the consumer's cumulative stats grew by since the last call."""
        self._add("consumed", int(stats.get("read", 0)))
        self._add("dead_lettered", int(stats.get("dead_lettered", 0)))
        self._add("reclaimed", int(stats.get("reclaimed", 0)))
        self._add("redelivered", int(stats.get("redelivered", 0)))

    def _add(self, counter: str, total: int) -> None:
        grown = total - self._seen.get(counter, 0)
        self._seen[counter] = total
        if grown > 0:
            self._counters[counter].inc(grown, tags=self.tags)

    def batch(self, size: int, applied: int) -> None:
        """Record one dispatched batch: how many changes it applied (handed to Ray within
        :data:`FLUSH_S`) and, if the sampler says so, its size."""
        if self._sampler.due():
            self._batch.observe(size, tags=self.tags)
        if applied > 0:
            self._applied += applied
            self._applied_later.note()

    def _flush_applied(self) -> None:
        applied, self._applied = self._applied, 0
        if applied > 0:
            self._counters["applied"].inc(applied, tags=self.tags)

    def group(self, lag: int, pending: int, own_pending: int) -> None:
        self._lag.set(lag, tags=self._source_tags)
        self._pending.set(pending, tags=self._source_tags)
        self._own_pending.set(own_pending, tags=self.tags)


class QueryMetrics:
    """The metrics one query actor records. Create inside the actor; use as a result observer."""

    def __init__(self, query_id: str) -> None:
        self.tags = {"query": query_id}
        self._diffs = metrics.Counter(
            "drasi_diffs_emitted", "result diffs emitted", tag_keys=("query",)
        )
        self._results = metrics.Counter(
            "drasi_results_emitted", "QueryResults emitted", tag_keys=("query",)
        )
        self._latency = metrics.Histogram(
            "drasi_result_latency_ms",
            "from a change's source time to the result it caused, in ms",
            boundaries=LATENCY_BOUNDARIES_MS,
            tag_keys=("query",),
        )
        self._counts = [0, 0]  # results, diffs: not yet handed to Ray
        self._later = Deferred(self._flush)
        self._sampler = Sampler()

    def observe(self, items: list[Any]) -> None:
        """Count the results of one delivery (control signals are ignored).

        Called once per delivery, not per result, and the counts reach Ray within
        :data:`FLUSH_S`: each Ray metric call costs more than evaluating a simple query.
        Latency is observed for deliveries the sampler picks, for at most
        :data:`LATENCY_SAMPLES_PER_DELIVERY` results of each, evenly spaced.
        """
        results = [item for item in items if isinstance(item, QueryResult)]
        if not results:
            return
        counts = self._counts
        counts[0] += len(results)
        counts[1] += sum(len(result.results) for result in results)
        self._later.note()
        if not self._sampler.due():
            return
        step = max(1, len(results) // LATENCY_SAMPLES_PER_DELIVERY)
        now = now_ms()
        for result in results[::step]:
            if result.source_time_ms > 0:
                self._latency.observe(max(0, now - result.source_time_ms), tags=self.tags)

    def _flush(self) -> None:
        (results, diffs), self._counts = self._counts, [0, 0]
        if results:
            self._results.inc(results, tags=self.tags)
            self._diffs.inc(diffs, tags=self.tags)


async def group_gauges(
    backend: RedisStreamBackend, stream: str, group: str, consumer: str
) -> tuple[int, int, int]:
    """(group lag, group pending, this consumer's pending) of ``group`` on ``stream``.

    Lag by :mod:`drasi_ray.streams.admin`'s rule; where it must be counted (Redis 6.2), up to
    :data:`LAG_COUNT_CAP` entries.
    """
    progress = await backend.group_progress(stream, group)
    own = next((c.pending for c in progress.consumers if c.name == consumer), 0)
    lag = admin.known_lag(progress, await backend.stream_last_id(stream) or admin.NO_ID)
    if lag is None:
        after = "(" + progress.last_delivered_id
        entries: Any = await backend.client.xrange(stream, after, "+", count=LAG_COUNT_CAP)
        lag = len(entries)
    return lag, progress.pending, own
