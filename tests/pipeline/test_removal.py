"""Removing a query and a source from a running app: nothing of them is left behind (actors,
routing, elements, durable state), the rest of the app goes on, and the ids can be used
again."""

from __future__ import annotations

import pytest
import ray
import redis

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.actors import names
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import ScalingConfig
from drasi_ray.model.errors import ConfigError, SubscriptionLostError, UnknownComponentError
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app

HOT = "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id"
# A stateful function (function state) and a past function (element history).
REMEMBERS = (
    "MATCH (s:Sensor) RETURN s.id AS id, drasi.previousValue(s.temperature) AS before, "
    "drasi.getVersionsByTimeRange(s, 0, 9999999999999) AS versions"
)


def _sensor(sensor_id: str, temperature: float, op: Op = Op.INSERT) -> bytes:
    element = node(sensor_id, ["Sensor"], {"id": sensor_id, "temperature": temperature})
    return encode_cloud_event([change_event(op, element, 1_000_000_000)])


def _keys_naming(client: redis.Redis, app: DrasiRay, name: str) -> list[str]:
    found = client.scan_iter(match=f"{keys.NAMESPACE}:{app.app_id}:*")
    return sorted(key.decode() for key in found if key.decode().endswith(f":{name}"))


def test_a_removed_query_stops_and_leaves_nothing_behind(ray_session: None, redis_url: str) -> None:
    app = one_source_app(redis_url, "temps", {"hot": HOT, "remembers": REMEMBERS}, prefix="rmq")
    client = redis.Redis.from_url(redis_url)
    with app, Publisher.from_url(redis_url) as publisher:
        hot = app.subscribe("hot")
        removed = app.subscribe("remembers")
        publisher.publish("temps", [_sensor("s1", 75.0)])
        app.wait_until_idle(30)
        assert removed.drain(), "the query ran before its removal"
        kinds = {key.split(":")[2] for key in _keys_naming(client, app, "remembers")}
        assert {"seq-lease", "functions", "history"} <= kinds  # "seq" is written in a while
        assert client.hexists(keys.query_registry(app.app_id), "remembers")

        app.remove_query("remembers")

        with pytest.raises(SubscriptionLostError):
            removed.drain()
        assert _keys_naming(client, app, "remembers") == []
        assert not client.hexists(keys.query_registry(app.app_id), "remembers")
        assert not client.hexists(keys.history_limits(app.app_id), "remembers")
        assert app.query_ids == ["hot"]
        assert list(app.status().queries) == ["hot"]
        assert app.status().totals.queries == ["hot"]
        with pytest.raises(UnknownComponentError):
            app.results("remembers")
        with pytest.raises(UnknownComponentError):
            app.remove_query("remembers")

        publisher.publish("temps", [_sensor("s2", 80.0)])
        app.wait_until_idle(30)
        assert [list(r.results) for r in hot.drain()] == [
            [{"type": "ADD", "data": {"id": "s1"}}],
            [{"type": "ADD", "data": {"id": "s2"}}],
        ]
        with pytest.raises(SubscriptionLostError):
            removed.drain()

        # The id is free again: a query added under it starts from the graph of now.
        app.add_query(Query.cypher("remembers").query(HOT).from_source("source").build())
        app.wait_until_idle(30)
        assert sorted(row["id"] for row in app.results("remembers")) == ["s1", "s2"]


def test_a_removed_source_stops_its_consumers_and_drops_its_graph(
    ray_session: None, redis_url: str
) -> None:
    app = one_source_app(
        redis_url,
        "first",
        {"hot": HOT},
        prefix="rms",
        consumers=2,
        scaling_config=ScalingConfig(shards=2, query_hosts=1),
    )
    app.add_source(
        PlatformSource.builder("other")
        .with_redis_url(redis_url)
        .with_stream_key("second")
        .with_block_ms(100)
        .build()
    )
    app.add_query(Query.cypher("other_hot").query(HOT).from_source("other").build())
    client = redis.Redis.from_url(redis_url)
    with app, Publisher.from_url(redis_url) as publisher:
        for stream in ("first", "second"):
            publisher.publish(stream, [_sensor(f"s{i}", 75.0) for i in range(6)])
        app.wait_until_idle(30)
        shards = app.status().shards
        assert all(shard.elements.get("source") for shard in shards), "spread over 2 shards"

        with pytest.raises(ConfigError, match="hot"):
            app.remove_source("source")
        app.remove_query("hot")
        app.remove_source("source")

        for index in range(2):
            with pytest.raises(ValueError):
                ray.get_actor(names.consumer_actor("source", index), namespace=app.namespace)
        assert app.source_ids == ["other"]
        assert all("source" not in shard.elements for shard in app.status().shards)
        assert not client.exists(keys.element_store(app.app_id, "source"))
        assert not client.exists(keys.coordinator_stats(app.app_id, "source"))
        assert len(app.elements("other")) == 6
        with pytest.raises(UnknownComponentError):
            app.remove_source("source")

        # Added again under its id (on a new stream): fresh consumers, an empty graph.
        app.add_source(
            PlatformSource.builder("source")
            .with_redis_url(redis_url)
            .with_stream_key("third")
            .with_consumers(2)
            .with_block_ms(100)
            .build()
        )
        app.add_query(Query.cypher("hot").query(HOT).from_source("source").build())
        publisher.publish("third", [_sensor("s9", 90.0)])
        app.wait_until_idle(30)
        assert app.results("hot") == [{"id": "s9"}]
        assert [element.id for element in app.elements("source")] == ["s9"]
