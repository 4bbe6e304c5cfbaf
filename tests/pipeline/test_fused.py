"""The fused layout (docs/architecture.md, "The fused layout"): with the default scaling and
durable state the coordinator, the shared query host and consumer 0 of each source run in one
actor process, and everything an operator does with the app works as with separate actors:
status, a second consumer, scaling consumers and shards from another process, SIGKILLs.

The chaos run (``tests/pipeline/test_chaos.py``, ``fused``), the conformance suite and the
end-to-end differential run cover it too.
"""

from __future__ import annotations

import time
import uuid

import pytest
import ray
import redis

from drasi_ray import DrasiRay
from drasi_ray.actors import names
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.query.definition import Query
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.source.platform import PlatformSource
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.drills import sigkill
from drasi_ray.testing.waiting import wait_until

QUERY = "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS t"


def _event(sensor: str, temperature: float, op: Op = Op.UPDATE) -> bytes:
    element = node(sensor, ["Sensor"], {"id": sensor, "temperature": temperature})
    return encode_cloud_event([change_event(op, element, 1_000_000_000)])


def _app(app_id: str, redis_url: str, consumers: int = 2) -> DrasiRay:
    """Two sources, ``a`` (``consumers`` consumers) and ``b`` (one), a query on each."""
    app = DrasiRay(app_id)
    for source_id, count in (("a", consumers), ("b", 1)):
        app.add_source(
            PlatformSource.builder(source_id)
            .with_redis_url(redis_url)
            .with_stream_key(f"fused-{source_id}")
            .with_consumers(count)
            .with_block_ms(100)
            .build()
        )
        app.add_query(Query.cypher(f"hot-{source_id}").query(QUERY).from_source(source_id).build())
    return app


def _pids(actors: list[object]) -> list[int]:
    return list(ray.get([actor.pid.remote() for actor in actors]))  # type: ignore[attr-defined]


def _rows(app: DrasiRay, query_id: str) -> list[tuple[str, float]]:
    return sorted((row["id"], row["t"]) for row in app.results(query_id))


def test_default_scaling_runs_fused_and_scales_from_another_process(
    ray_session: None, redis_url: str
) -> None:
    app_id = f"fused-{uuid.uuid4().hex[:6]}"
    app = _app(app_id, redis_url)
    app.start()
    try:
        (fused,) = _pids([app.coordinator_actor()])
        consumers_a = _pids(app.consumer_actors("a"))
        assert _pids([app.query_actor("hot-a"), app.query_actor("hot-b")]) == [fused, fused]
        assert consumers_a[0] == fused != consumers_a[1]  # consumer 1 is an actor of its own
        assert _pids(app.consumer_actors("b")) == [fused]
        assert app.host_of("hot-a") == names.COORDINATOR
        assert set(app.placement_plan()) == {names.COORDINATOR, names.consumer_actor("a", 1)}
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish("fused-a", [_event(f"a{i}", 70.0 + i) for i in range(6)])
            publisher.publish("fused-b", [_event(f"b{i}", 68.0 + i) for i in range(6)])
        app.wait_until_idle(60)
        assert _rows(app, "hot-a") == [(f"a{i}", 70.0 + i) for i in range(1, 6)]
        assert _rows(app, "hot-b") == [(f"b{i}", 68.0 + i) for i in range(3, 6)]
        status = app.status()
        assert set(status.hosts) == {names.COORDINATOR}
        assert status.host(names.COORDINATOR).queries == ["hot-a", "hot-b"]
        assert [c.name for c in status.consumers("a")] == ["a-0", "a-1"]
        assert sum(c.stats.acked for c in status.consumers("a")) == 6

        # What `drasi-ray scale` does: another DrasiRay object of the same app, not started.
        operator = _app(app_id, redis_url)
        assert operator.scale("a", 1) == 2  # consumer 1 retired; consumer 0 is the fused one
        assert operator.scale_shards(2) == 1  # the fused actor stays shard 0 and the host
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish("fused-a", [_event(f"a{i}", 80.0 + i) for i in range(6)])
        app.wait_until_idle(60)
        assert _rows(app, "hot-a") == [(f"a{i}", 80.0 + i) for i in range(6)]
        assert len(app.status().shards) == 2
        assert operator.scale_shards(1) == 2
        assert operator.scale("a", 2) == 1
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish("fused-a", [_event(f"a{i}", 90.0 + i) for i in range(6)])
        app.wait_until_idle(60)
        assert _rows(app, "hot-a") == [(f"a{i}", 90.0 + i) for i in range(6)]
        assert len(app.elements("a")) == 6
    finally:
        app.stop()


@pytest.mark.slow
def test_the_fused_actor_sigkilled_at_any_gap_loses_nothing(
    ray_session: None, redis_url: str
) -> None:
    """Every part restarts at once (shard 0 reloads, the host re-hosts its queries and their
    subscriptions, consumer 0 re-reads its pending entries): the rows and the store are the
    stream's, nothing stays pending, and the subscription gets each result of what is
    published after the restart once. (What the lost buffer held, and changes applied before
    the new bootstrap, are in the rebuilt rows without a diff: docs/semantics.md.)"""
    app = _app(f"fused-{uuid.uuid4().hex[:6]}", redis_url, consumers=1)
    app.start()
    client = redis.Redis.from_url(redis_url)
    try:
        subscription = app.subscribe("hot-a")
        added: list[str] = []
        for gap in (0.0, 0.3, 1.5):
            with Publisher.from_url(redis_url) as publisher:
                publisher.publish("fused-a", [_event(f"k{gap}-{i}", 80.0) for i in range(20)])
                time.sleep(gap)  # the kill lands before, during or after their batches
                assert sigkill(app.coordinator_actor()) is not None
                assert len(app.results("hot-a")) >= 0  # waits until it is bootstrapped again
                publisher.publish("fused-a", [_event(f"l{gap}-{i}", 80.0) for i in range(20)])
            app.wait_until_idle(120)
            after = {f"l{gap}-{i}" for i in range(20)}

            def arrived(after: set[str] = after) -> bool:
                for result in subscription.next(timeout=0.5):
                    added.extend(d["data"]["id"] for d in result.results if d["type"] == "ADD")
                return after <= set(added)

            wait_until(arrived, 60, what=f"the results published after kill {gap}")
        rows = [row["id"] for row in app.results("hot-a")]
        stored = len(app.elements("a"))
        group = keys.consumer_group(app.app_id)
        pending = int(client.xpending("fused-a", group)["pending"])
    finally:
        app.stop()
    assert len(rows) == 120 == len(set(rows)) == stored
    assert set(added) <= set(rows)
    late = [sensor for sensor in added if sensor.startswith("l")]
    assert len(late) == len(set(late)) == 60  # each result after a restart once
    assert pending == 0


def test_a_source_added_while_running_is_read_in_the_fused_actor_and_after_its_restart(
    ray_session: None, redis_url: str
) -> None:
    """Consumer 0 of a source added to the running app runs in the fused actor too (no
    process of its own), its consumer 1 in an actor; a removed source's consumer stops there.
    Which consumers it runs is kept in Redis: SIGKILLed, the fused actor comes back reading
    the added source, and not the removed one."""
    app = _app(f"fused-{uuid.uuid4().hex[:6]}", redis_url, consumers=1)
    app.start()
    client = redis.Redis.from_url(redis_url)
    try:
        (fused,) = _pids([app.coordinator_actor()])
        for source_id, count in (("c", 2), ("d", 1)):
            app.add_source(
                PlatformSource.builder(source_id)
                .with_redis_url(redis_url)
                .with_stream_key(f"fused-{source_id}-{app.app_id}")
                .with_consumers(count)
                .with_block_ms(100)
                .build()
            )
            query_id = f"hot-{source_id}"
            app.add_query(Query.cypher(query_id).query(QUERY).from_source(source_id).build())
        consumers_c = _pids(app.consumer_actors("c"))
        assert consumers_c[0] == fused != consumers_c[1]
        assert _pids(app.consumer_actors("d")) == [fused]
        app.remove_query("hot-d")
        app.remove_source("d")
        assert ray.get(app.coordinator_actor().consumes.remote()) == ["a", "b", "c"]
        stored = client.hkeys(keys.fused_consumers(app.app_id))
        assert sorted(stored) == [b"a", b"b", b"c"]

        stream_c = f"fused-c-{app.app_id}"
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream_c, [_event(f"c{i}", 70.0 + i) for i in range(6)])
        app.wait_until_idle(60)
        assert _rows(app, "hot-c") == [(f"c{i}", 70.0 + i) for i in range(1, 6)]

        assert sigkill(app.coordinator_actor()) == fused
        assert len(app.results("hot-c")) >= 0  # waits until it is bootstrapped again
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream_c, [_event(f"c{i}", 80.0 + i) for i in range(6)])
            publisher.publish("fused-a", [_event("a0", 90.0)])
        app.wait_until_idle(120)
        assert _rows(app, "hot-c") == [(f"c{i}", 80.0 + i) for i in range(6)]
        assert _rows(app, "hot-a") == [("a0", 90.0)]
        assert ray.get(app.coordinator_actor().consumes.remote()) == ["a", "b", "c"]
        assert [c.name for c in app.status().consumers("c")] == ["c-0", "c-1"]
        assert int(client.xpending(stream_c, keys.consumer_group(app.app_id))["pending"]) == 0
    finally:
        app.stop()
