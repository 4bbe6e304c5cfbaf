"""Crash recovery with real processes: nothing lost, nothing applied twice.

Each test publishes a known workload, breaks something for real mid-stream (kills an actor's
process, restarts the Redis server, deletes the group, injects a change whose handling always
crashes), then asserts exact accounting: the final results equal the in-order result, the
dead-letter stream holds exactly the bad entries, nothing is left pending, and result
sequences stay strictly increasing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import ray
import redis

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.actors.subscription import Subscription
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.model.results import ControlResult, ControlSignal, QueryResult
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from drasi_ray.testing.failpoints import Failpoints
from drasi_ray.testing.waiting import wait_until

ITEMS = 200
VERSIONS = 5
QUERY = "MATCH (i:Item) RETURN i.id AS id, i.value AS value"
COUNT_QUERY = "MATCH (i:Item) RETURN i.bucket AS bucket, count(i) AS items, sum(i.value) AS total"


def _payload(item: int, version: int) -> bytes:
    op = Op.INSERT if version == 0 else Op.UPDATE
    properties = {"id": item, "value": version * ITEMS + item, "bucket": item % 4}
    element = node(f"item-{item}", ["Item"], properties)
    return encode_cloud_event([change_event(op, element, 1_000_000 * (version + 1))])


def _workload() -> list[bytes]:
    return [_payload(item, version) for version in range(VERSIONS) for item in range(ITEMS)]


def _expected_rows() -> list[dict[str, int]]:
    last = VERSIONS - 1
    return [{"id": item, "value": last * ITEMS + item} for item in range(ITEMS)]


def _app(url: str, stream: str, consumers: int = 2, **options: Any) -> DrasiRay:
    return one_source_app(
        url,
        stream,
        {"items": QUERY, "buckets": COUNT_QUERY},
        source_id="items",
        prefix="recovery",
        dispatch_buffer_capacity=1_000_000,
        consumers=consumers,
        batch_size=50,
        claim_idle_ms=1_000,
        reclaim_interval_ms=200,
        **options,
    )


def _publish_half(url: str, stream: str, first: bool) -> None:
    """Publish the first or the second half of :func:`_workload`."""
    payloads = _workload()
    half = len(payloads) // 2
    with Publisher.from_url(url) as publisher:
        publisher.publish(stream, payloads[:half] if first else payloads[half:])


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: row["id"])


def _assert_sequences_increase(subscription: Subscription, survives: bool = False) -> None:
    """The drained results' sequences strictly increase; ``survives`` (a subscription with
    control signals, made before a kill): and it received the new bootstrap round's signals,
    so it outlived the restart."""
    drained = subscription.drain()
    sequences = [item.sequence for item in drained if isinstance(item, QueryResult)]
    assert sequences == sorted(set(sequences)), "result sequences must strictly increase"
    signals = [item.signal for item in drained if isinstance(item, ControlResult)]
    assert ControlSignal.BOOTSTRAP_COMPLETED in signals or not survives, (
        f"the subscription received no new bootstrap after the restart: {signals}"
    )


@pytest.fixture
def stream() -> Iterator[str]:
    yield f"items-{uuid.uuid4().hex[:8]}"


def _bucket_totals() -> list[dict[str, float]]:
    last = VERSIONS - 1
    return [
        {
            "bucket": bucket,
            "items": ITEMS // 4,
            "total": float(sum(last * ITEMS + i for i in range(bucket, ITEMS, 4))),
        }
        for bucket in range(4)
    ]


def _applied(app: DrasiRay) -> int:
    """Changes the coordinator applied so far (mid-stream kills wait for some)."""
    applied: int = ray.get(app.coordinator_actor().stats.remote()).applied
    return applied


def _pid(handle: Any) -> int | None:
    """The actor's process id, or None while it is down or restarting."""
    try:
        pid: int = ray.get(handle.pid.remote(), timeout=5)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return None
    return pid


def _check_final(app: DrasiRay, url: str, stream: str) -> None:
    assert _sorted(app.results("items")) == _expected_rows()
    buckets = sorted(app.results("buckets"), key=lambda row: row["bucket"])
    assert buckets == _bucket_totals()
    group = keys.consumer_group(app.app_id)
    assert redis.Redis.from_url(url).xpending(stream, group)["pending"] == 0


@pytest.mark.parametrize("victim", ["coordinator", "query", "both"])
def test_killed_coordinator_or_query_actor_recovers(
    ray_session: None, redis_url: str, stream: str, victim: str
) -> None:
    app = _app(redis_url, stream)
    app.start()
    try:
        subscription = app.subscribe("items", include_control=True)
        payloads = _workload()
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream, payloads[: len(payloads) // 3])
            wait_until(lambda: _applied(app) > 0, what="a first batch applied")
            # "both": the restarted coordinator re-links a query actor that is restarting too
            # (a chaos run once left the coordinator's recovery failed on it for good).
            if victim in ("query", "both"):
                ray.kill(app.query_actor("items"), no_restart=False)
            if victim in ("coordinator", "both"):
                ray.kill(app.coordinator_actor(), no_restart=False)
            publisher.publish(stream, payloads[len(payloads) // 3 :])
        app.wait_until_idle(timeout=120)
        _check_final(app, redis_url, stream)
        # A host and the coordinator lost together keep the host's subscriptions too (the
        # coordinator reloads them from Redis: docs/operations.md, "Subscriptions").
        _assert_sequences_increase(subscription, survives=True)
    finally:
        app.stop()


def test_change_whose_handling_always_crashes_is_dead_lettered(
    ray_session: None, redis_url: str, stream: str
) -> None:
    app = _app(redis_url, stream, consumers=1, failpoints=Failpoints(frozenset({"poison"})))
    app.start()
    try:
        poison = encode_cloud_event(
            [change_event(Op.INSERT, node("poison", ["Item"], {"id": -1, "value": 0}), 0)]
        )
        payloads = _workload()
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream, payloads[:100])
            (poison_id,) = publisher.publish(stream, [poison])
            publisher.publish(stream, payloads[100:])
        app.wait_until_idle(timeout=180)
        dead: Any = redis.Redis.from_url(redis_url).xrange(f"{stream}:dlq")
        assert [fields[b"entry_id"].decode() for _, fields in dead] == [poison_id]
        assert b"max_deliveries (5)" in dead[0][1][b"reason"]
        _check_final(app, redis_url, stream)
    finally:
        app.stop()


def test_redis_restart_mid_stream_loses_nothing(ray_session: None, stream: str) -> None:
    with EmbeddedRedis(appendonly=True, appendfsync="always") as server:
        app = _app(server.url, stream)
        app.start()
        try:
            _publish_half(server.url, stream, first=True)
            server.restart()
            _publish_half(server.url, stream, first=False)
            app.wait_until_idle(timeout=120)
            _check_final(app, server.url, stream)
            status = app.status()
            errors = sum(consumer.stats.errors for consumer in status.consumers("items"))
            assert errors >= 1, "the outage shows in the consumers' status"
        finally:
            app.stop()


@pytest.mark.parametrize("victim", ["coordinator", "query"])
def test_actor_restarted_during_a_redis_outage_recovers_when_redis_returns(
    ray_session: None, stream: str, victim: str
) -> None:
    """The restarted actor's state load meets a dead Redis: it must wait, not fail for good."""
    with EmbeddedRedis(appendonly=True, appendfsync="always") as server:
        app = _app(server.url, stream)
        app.start()
        try:
            _publish_half(server.url, stream, first=True)
            app.wait_until_idle(timeout=120)
            handle = (
                app.coordinator_actor() if victim == "coordinator" else app.query_actor("items")
            )
            old_pid = _pid(handle)
            server.kill()
            ray.kill(handle, no_restart=False)
            # The actor restarts (a new process) and starts loading its state from the dead
            # Redis: its recovery waits it out.
            wait_until(lambda: _pid(handle) not in (None, old_pid), what="the actor's restart")
            server.start()
            _publish_half(server.url, stream, first=False)
            app.wait_until_idle(timeout=120)
            _check_final(app, server.url, stream)
        finally:
            app.stop()


def test_deleted_group_is_recreated_and_replayed(
    ray_session: None, redis_url: str, stream: str
) -> None:
    app = _app(redis_url, stream)
    app.start()
    try:
        payloads = _workload()
        client = redis.Redis.from_url(redis_url)
        with Publisher(client) as publisher:
            publisher.publish(stream, payloads[:ITEMS])
            app.wait_until_idle(timeout=60)
            client.xgroup_destroy(stream, keys.consumer_group(app.app_id))
            publisher.publish(stream, payloads[ITEMS:])
        app.wait_until_idle(timeout=60)
        # Recreated at recreate_start_id "0": the retained stream is replayed, and the
        # versioned store turns what was already applied into no-ops.
        _check_final(app, redis_url, stream)
        recreated = sum(c.stats.group_recreated for c in app.status().consumers("items"))
        assert recreated >= 1
    finally:
        app.stop()


def test_duplicate_xadd_of_the_same_event_changes_nothing(
    ray_session: None, redis_url: str, stream: str
) -> None:
    # One consumer: changes apply in stream order, so every original change gives exactly one
    # diff (with several consumers an older change may arrive after a newer one and rightly
    # give none), and the retried batch must give none at all.
    app = _app(redis_url, stream, consumers=1)
    app.start()
    try:
        subscription = app.subscribe("items")
        payloads = _workload()
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream, payloads)
            publisher.publish(stream, payloads[-ITEMS:])  # the producer retried its last batch
        app.wait_until_idle(timeout=60)
        _check_final(app, redis_url, stream)
        diffs = [diff for result in subscription.drain() for diff in result.results]
        assert len(diffs) == ITEMS * VERSIONS  # one ADD or UPDATE per change, none for retries
        assert app.status().totals.duplicates == ITEMS
    finally:
        app.stop()


def _churn(item: int, round_: int) -> bytes:
    """Round ``round_`` of ``item`` in the churn workload: rounds 3, 8, ... delete the item,
    the round after re-inserts it, the others update it."""
    properties = {"id": item, "value": round_ * ITEMS + item, "bucket": item % 4}
    element = node(f"item-{item}", ["Item"], properties)
    op = Op.INSERT if round_ % 5 in (0, 4) else Op.DELETE if round_ % 5 == 3 else Op.UPDATE
    return encode_cloud_event([change_event(op, element, 1_000_000 * (round_ + 1))])


def test_forgetting_tombstones_under_churn_and_a_coordinator_kill_loses_nothing(
    ray_session: None, redis_url: str, stream: str
) -> None:
    """Deletes and re-inserts, two consumers, retention and an aggressive tombstone sweep
    (no age margin, every 100 ms) while the coordinator is killed: exact final results (a
    tombstone forgotten too early would let a redelivered older change bring an element
    back), and in the end every tombstone forgotten."""
    rounds = 13  # round 12 updates every item; round 13 deletes the even ones
    payloads = [_churn(item, r) for r in range(rounds) for item in range(ITEMS)]
    payloads += [_churn(item, rounds) for item in range(0, ITEMS, 2)]
    app = DrasiRay(f"recovery-{uuid.uuid4().hex[:8]}")
    app.add_source(
        PlatformSource.builder("items")
        .with_redis_url(redis_url)
        .with_stream_key(stream)
        .with_consumers(2)
        .with_batch_size(50)
        .with_block_ms(100)
        .with_claim_idle_ms(1_000)
        .with_reclaim_interval_ms(200)
        .with_trim_acked(True, interval_ms=100)
        .with_tombstone_ttl(0, sweep_ms=100)
        .build()
    )
    app.add_query(Query.cypher("items").query(QUERY).from_source("items").build())
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            for start in range(0, len(payloads), 400):
                publisher.publish(stream, payloads[start : start + 400])
                if start == 1200:
                    ray.kill(app.coordinator_actor(), no_restart=False)
                time.sleep(0.05)
        app.wait_until_idle(timeout=120)
        last = rounds - 1
        expected = [{"id": item, "value": last * ITEMS + item} for item in range(1, ITEMS, 2)]
        assert _sorted(app.results("items")) == expected
        wait_until(
            lambda: app.status().totals.tombstones == {"items": 0},
            what="every tombstone forgotten",
        )
        assert app.status().totals.elements == {"items": ITEMS // 2}
        client = redis.Redis.from_url(redis_url)
        assert client.hlen(keys.element_store(app.app_id, "items")) == ITEMS // 2
    finally:
        app.stop()
