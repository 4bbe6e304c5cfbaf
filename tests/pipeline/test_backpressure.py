"""Backpressure: a slow subscriber slows consumption instead of growing memory.

The query's subscriber buffer is tiny and drained slowly (CHANNEL mode: a full buffer blocks
the query, which blocks the coordinator, which blocks the consumers). While 50,000 changes
flow, unacked entries stay within the consumers' ``max_in_flight`` and consumer memory stays
flat; nothing is lost. In BROADCAST mode the same slow subscriber never blocks the pipeline:
its buffer drops the oldest results and counts the drops.
"""

from __future__ import annotations

import time
import uuid

import redis

from drasi_ray import DispatchMode, DrasiRay
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app

CHANGES = 50_000
MAX_IN_FLIGHT = 200
CONSUMERS = 2
QUERY = "MATCH (t:Tick) RETURN t.id AS id, t.n AS n"


def _payloads() -> list[bytes]:
    return [
        encode_cloud_event(
            [change_event(Op.UPDATE, node(f"t{i % 500}", ["Tick"], {"id": i % 500, "n": i}), 0)]
        )
        for i in range(CHANGES)
    ]


def _app(url: str, stream: str, mode: DispatchMode) -> DrasiRay:
    return one_source_app(
        url,
        stream,
        {"ticks": QUERY},
        source_id="ticks",
        prefix="backpressure",
        dispatch_mode=mode,
        dispatch_buffer_capacity=50,
        consumers=CONSUMERS,
        batch_size=100,
        max_in_flight=MAX_IN_FLIGHT,
    )


def test_slow_subscriber_bounds_unacked_and_memory(ray_session: None, redis_url: str) -> None:
    stream = f"ticks-{uuid.uuid4().hex[:8]}"
    app = _app(redis_url, stream, DispatchMode.CHANNEL)
    app.start()
    client = redis.Redis.from_url(redis_url)
    try:
        subscription = app.subscribe("ticks")
        with Publisher(client) as publisher:
            publisher.publish(stream, _payloads())
        received, max_pending, rss = 0, 0, list[int]()
        deadline = time.monotonic() + 300
        emitted = CHANGES  # until the pending entries are all acked (below)
        while received < emitted:
            assert time.monotonic() < deadline, f"only {received} of {emitted} results arrived"
            received += len(subscription.next(timeout=0.05))
            pending = client.xpending(stream, keys.consumer_group(app.app_id))["pending"]
            max_pending = max(max_pending, pending)
            if len(rss) < 1000 and received % 5000 < 60:
                rss.append(sum(c.rss_bytes for c in app.status().consumers("ticks")))
            if received > CHANGES - 500 and pending == 0:
                # With two consumers an older change of an element can arrive after a newer
                # one and be (rightly) ignored: what the query emitted is its last sequence.
                emitted = app.status().query("ticks").sequence
            time.sleep(0.002)  # a deliberately slow subscriber
        app.wait_until_idle(timeout=60)
        received += len(subscription.drain())
        assert received == app.status().query("ticks").sequence  # channel mode: none dropped
        assert received > CHANGES - 500
        assert max_pending <= CONSUMERS * MAX_IN_FLIGHT
        assert max(rss) - min(rss) < 64 * 2**20, f"consumer memory grew: {rss}"
    finally:
        app.stop()


def test_broadcast_mode_never_blocks_and_counts_drops(ray_session: None, redis_url: str) -> None:
    stream = f"ticks-{uuid.uuid4().hex[:8]}"
    app = _app(redis_url, stream, DispatchMode.BROADCAST)
    app.start()
    try:
        subscription = app.subscribe("ticks")  # never drained while the changes flow
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream, _payloads()[:5_000])
        app.wait_until_idle(timeout=120)
        kept = subscription.drain()
        info = app.status().query("ticks")
        (buffer,) = info.subscribers.values()
        # With two consumers an older change can arrive after a newer one of the same element
        # and be (rightly) ignored, so count what the query emitted: its last sequence.
        emitted = info.sequence
        assert emitted > 2_500
        assert len(kept) == 50
        assert buffer.dropped == emitted - 50  # every result was either kept or counted
        assert [r.sequence for r in kept] == list(range(emitted - 49, emitted + 1))
    finally:
        app.stop()
