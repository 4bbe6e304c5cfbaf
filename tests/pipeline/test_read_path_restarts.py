"""The app's read path while actors restart (issue #27, items 8 and 9).

A subscription outlives its query's host and the coordinator killed one after the other at any
gap (0 to 4 s), each result once; ``results``, ``status`` and ``subscribe`` wait for an actor
that is restarting; one that does not come back is the package's own error within the deadline;
without durable state a subscription its host and the coordinator both forgot raises on its next
read, never silence.
"""

from __future__ import annotations

import time
import uuid

import pytest
import ray

from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import ScalingConfig, StateConfig
from drasi_ray.model.errors import ComponentUnavailableError, SubscriptionLostError
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.waiting import wait_until

pytestmark = pytest.mark.slow

QUERY = "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id"


def _publish(redis_url: str, stream: str, sensor: str) -> None:
    element = node(sensor, ["Sensor"], {"id": sensor, "temperature": 80.0})
    with Publisher.from_url(redis_url) as publisher:
        publisher.publish(stream, [encode_cloud_event([change_event(Op.INSERT, element, 1)])])


def _app(redis_url: str, stream: str, durable: bool = True):  # type: ignore[no-untyped-def]
    return one_source_app(
        redis_url,
        stream,
        {"hot": QUERY},
        prefix="reads",
        scaling_config=ScalingConfig(shards=1, query_hosts=1),
        state_config=StateConfig(durable=durable),
    )


def test_a_subscription_outlives_its_host_and_the_coordinator_killed_at_any_gap(
    ray_session: None, redis_url: str
) -> None:
    stream = f"reads-{uuid.uuid4().hex[:6]}"
    app = _app(redis_url, stream)
    app.start()
    try:
        subscription = app.subscribe("hot")
        added: list[str] = []
        for gap in (0, 1, 2, 3, 4):
            ray.kill(app.query_actor("hot"), no_restart=False)
            time.sleep(gap)  # the scenario: the coordinator dies this long after the host
            ray.kill(app.coordinator_actor(), no_restart=False)
            assert {"id": f"s{gap - 1}"} in app.results("hot") or gap == 0  # waits for both
            assert app.status().running
            _publish(redis_url, stream, f"s{gap}")
            app.wait_until_idle(120)

            def arrived(sensor: str = f"s{gap}") -> bool:
                for result in subscription.next(timeout=0.5):
                    added.extend(d["data"]["id"] for d in result.results if d["type"] == "ADD")
                return sensor in added

            wait_until(arrived, 60, what=f"s{gap}'s result on the subscription")
        assert sorted(added) == ["s0", "s1", "s2", "s3", "s4"]  # each once, none missed
        extra = app.subscribe("hot")  # while the coordinator is up again, a new one works
        extra.close()

        host = app.query_actor("hot")
        ray.kill(host, no_restart=True)  # gone for good (once Ray has carried the kill out)
        wait_until(lambda: _dead(host), 30, what="the host to be dead")
        started = time.monotonic()
        with pytest.raises(ComponentUnavailableError, match="the host of query 'hot'"):
            app.results("hot", timeout=3)
        subscription.restart_deadline_s = 3
        with pytest.raises(ComponentUnavailableError, match="did not come back within 3s"):
            subscription.next(timeout=0.1)
        assert time.monotonic() - started < 20
    finally:
        app.stop()


def _dead(actor: object) -> bool:
    try:
        ray.get(actor.pid.remote(), timeout=5)  # type: ignore[attr-defined]
    except ray.exceptions.RayActorError:
        return True
    return False


def test_without_durable_state_a_forgotten_subscription_raises_on_its_next_read(
    ray_session: None, redis_url: str
) -> None:
    stream = f"reads-{uuid.uuid4().hex[:6]}"
    app = _app(redis_url, stream, durable=False)
    app.start()
    try:
        subscription = app.subscribe("hot")
        ray.kill(app.query_actor("hot"), no_restart=False)
        ray.kill(app.coordinator_actor(), no_restart=False)
        _publish(redis_url, stream, "s0")

        def read() -> bool:
            return bool(subscription.next(timeout=0.5))

        with pytest.raises(SubscriptionLostError, match="subscribe again"):
            wait_until(read, 60, what="a result or the error")
    finally:
        app.stop()
