"""A source over several streams (one per partition), on real Ray and Redis.

- 3 streams read by 2 consumers give exactly what the same changes on one stream give (every
  query's rows and the element store), and a malformed entry on the 2nd stream is
  dead-lettered to the source's one dead-letter stream naming that stream;
- a consumer killed for good while it holds entries of every stream: the surviving consumer's
  reclaim timer takes them on every stream, and nothing is lost.

The producer contract (every change of an element on one stream) is kept by publishing through
``drasi-ray publish``'s partitioner (:func:`drasi_ray.model.partitions.stream_for`).
"""

from __future__ import annotations

import uuid
from typing import Any

import ray
import redis

from drasi_ray.app import DrasiRay
from drasi_ray.model import keys
from drasi_ray.ops.publish import publish_lines
from drasi_ray.streams.publisher import Publisher
from drasi_ray.streams.records import DeadLetter
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.chaos import QUERIES, ChaosSettings, Oracle, workload
from drasi_ray.testing.drills import row_mismatches
from drasi_ray.testing.waiting import wait_until

SOURCE = "plant"
SETTINGS = ChaosSettings(changes=2_000, sensors=200, zones=10, malformed_rate=0.0)
MALFORMED = [b"{not json", b'{"data": "not a list"}']


def _streams(count: int) -> list[str]:
    base = f"part-{uuid.uuid4().hex[:8]}"
    return [f"{base}-{index}" for index in range(count)]


def _app(redis_url: str, streams: list[str], consumers: int, **options: Any) -> DrasiRay:
    return one_source_app(
        redis_url,
        streams,
        QUERIES,
        source_id=SOURCE,
        prefix="partitions",
        consumers=consumers,
        batch_size=50,
        start_id="0",
        **options,
    )


def _outcome(app: DrasiRay) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    rows = {query_id: app.results(query_id) for query_id in QUERIES}
    elements = {e.id: (e.labels, dict(e.properties)) for e in app.elements(SOURCE)}
    return rows, elements


def test_three_streams_two_consumers_give_the_one_stream_results(
    ray_session: None, redis_url: str
) -> None:
    payloads = list(workload(SETTINGS))
    (one,) = _streams(1)
    single = _app(redis_url, [one], consumers=1)
    single.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(one, payloads)
        single.wait_until_idle(timeout=60)
        expected_rows, expected_store = _outcome(single)
    finally:
        single.stop()

    streams = _streams(3)
    app = _app(redis_url, streams, consumers=2)
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            half = len(payloads) // 2
            publish_lines(publisher, streams, payloads[:half], batch=100)
            bad_ids = publisher.publish(streams[1], MALFORMED)
            publish_lines(publisher, streams, payloads[half:], batch=100)
        app.wait_until_idle(timeout=60)
        rows, store = _outcome(app)
        consumers = app.status().consumers(SOURCE)
    finally:
        app.stop()

    oracle = Oracle.replay({f"{n + 1}-0": {b"data": p} for n, p in enumerate(payloads)})
    for query_id in QUERIES:
        assert row_mismatches(oracle.results(query_id), expected_rows[query_id]) == 0
        assert row_mismatches(expected_rows[query_id], rows[query_id]) == 0, query_id
    assert store == expected_store
    with redis.Redis.from_url(redis_url) as client:
        lengths = [int(client.xlen(stream)) for stream in streams]
        dead = [DeadLetter.from_fields(f) for _, f in client.xrange(f"{streams[0]}:dlq")]
        assert [
            int(client.xpending(s, keys.consumer_group(app.app_id))["pending"]) for s in streams
        ] == [0, 0, 0]
    assert sum(lengths) == len(payloads) + len(MALFORMED) and min(lengths) > len(payloads) / 5
    assert sorted((d.source_stream, d.entry_id) for d in dead) == [(streams[1], i) for i in bad_ids]
    assert all(d.fields is not None and d.fields[b"data"] in MALFORMED for d in dead)
    # Every consumer read every stream (a lane each), and reports each stream apart.
    assert all(set(consumer.streams) == set(streams) for consumer in consumers)
    assert sum(c.streams[streams[1]].dead_lettered for c in consumers) == len(MALFORMED)
    assert sum(c.stats.acked for c in consumers) >= len(payloads) + len(MALFORMED)


def _pending_of(client: redis.Redis, stream: str, consumer: str, group: str) -> int:
    found: Any = client.xpending_range(stream, group, "-", "+", 1000, consumer)
    return len(found)


def test_a_killed_consumer_has_its_entries_reclaimed_on_every_stream(
    ray_session: None, redis_url: str
) -> None:
    streams = _streams(3)
    app = _app(redis_url, streams, consumers=2, claim_idle_ms=1_000, reclaim_interval_ms=200)
    payloads = list(workload(SETTINGS))
    app.start()
    try:
        survivor, victim = app.consumer_actors(SOURCE)
        ray.get(victim.pause.remote())  # it reads, but holds what it read: pending on it
        client = redis.Redis.from_url(redis_url)
        sent = 0
        with Publisher.from_url(redis_url) as publisher:

            def victim_holds_every_stream() -> bool:
                nonlocal sent
                if all(
                    _pending_of(client, s, f"{SOURCE}-1", keys.consumer_group(app.app_id))
                    for s in streams
                ):
                    return True
                publish_lines(publisher, streams, payloads[sent : sent + 60], batch=60)
                sent += 60
                return False

            wait_until(victim_holds_every_stream, 30, what="the victim holding every stream")
            held = {
                s: _pending_of(client, s, f"{SOURCE}-1", keys.consumer_group(app.app_id))
                for s in streams
            }
            ray.kill(victim, no_restart=True)
            publish_lines(publisher, streams, payloads[sent:], batch=200)
        app.wait_until_idle(timeout=60)
        rows, _store = _outcome(app)
        reclaimed = ray.get(survivor.stats.remote()).streams
    finally:
        app.stop()

    oracle = Oracle.replay({f"{n + 1}-0": {b"data": p} for n, p in enumerate(payloads)})
    for query_id in QUERIES:
        assert row_mismatches(oracle.results(query_id), rows[query_id]) == 0, query_id
    assert all(count > 0 for count in held.values())
    assert [
        _pending_of(client, s, f"{SOURCE}-1", keys.consumer_group(app.app_id)) for s in streams
    ] == [0, 0, 0]
    assert all(reclaimed[s].reclaimed >= held[s] for s in streams), (held, reclaimed)
