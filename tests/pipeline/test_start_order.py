"""What ``start(sources=False)`` promises, in both layouts: the queries start, the consumers
do not read (their processes may already run), so a subscription made before
``start_sources()`` gets the results of everything the stream held, as diffs."""

from __future__ import annotations

import time
import uuid

import pytest
import redis

from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import ScalingConfig
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.waiting import wait_until

HOT = "MATCH (s:Sensor) WHERE s.t > 70 RETURN s.id AS id"


def _event(sensor: str, t: float) -> bytes:
    return encode_cloud_event(
        [change_event(Op.INSERT, node(sensor, ["Sensor"], {"id": sensor, "t": t}), 1_000_000_000)]
    )


@pytest.mark.parametrize("shards", [1, 2], ids=["fused", "actors"])
def test_no_consumer_reads_before_start_sources(
    ray_session: None, redis_url: str, shards: int
) -> None:
    stream = f"start-order-{uuid.uuid4().hex[:8]}"
    scaling = ScalingConfig() if shards == 1 else ScalingConfig(shards=shards)
    app = one_source_app(
        redis_url, stream, {"hot": HOT}, consumers=2, start_id="0", scaling_config=scaling
    )
    with Publisher.from_url(redis_url) as publisher:
        publisher.publish(stream, [_event(f"s{i}", 68.0 + i) for i in range(6)])
    client = redis.Redis.from_url(redis_url)
    app.start(sources=False)
    try:
        subscription = app.subscribe("hot")
        time.sleep(1.0)  # a consumer that read too early would have done so by now
        assert not client.xinfo_groups(stream)  # no consumer has even created the group
        assert app.elements("source") == []
        app.start_sources()
        group = keys.consumer_group(app.app_id)
        assert [g["name"].decode() for g in client.xinfo_groups(stream)] == [group]
        added: list[str] = []

        def all_added() -> bool:
            for result in subscription.next(timeout=0.5):
                added.extend(d["data"]["id"] for d in result.results if d["type"] == "ADD")
            return sorted(added) == ["s3", "s4", "s5"]

        wait_until(all_added, 60, what="the backlog's results, as diffs")
        assert len(app.status().consumers("source")) == 2
    finally:
        app.stop()
