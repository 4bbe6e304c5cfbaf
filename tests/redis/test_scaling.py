"""Scaling down hands a retired consumer's pending entries to consumer 0 (real Redis)."""

from __future__ import annotations

import redis

from drasi_ray.actors import scaling
from drasi_ray.model.config import PlatformSourceConfig


def test_hand_over_moves_every_pending_entry_and_removes_the_consumer(redis_url: str) -> None:
    config = PlatformSourceConfig(redis_url=redis_url, stream_keys=("s",), claim_idle_ms=5000)
    client = redis.Redis.from_url(redis_url)
    client.xgroup_create("s", config.consumer_group, id="0", mkstream=True)
    ids = [client.xadd("s", {"data": f"{i}"}) for i in range(scaling.PENDING_PAGE + 5)]
    client.xreadgroup(config.consumer_group, "src-1", {"s": ">"})  # read, never acked
    client.xreadgroup(config.consumer_group, "src-0", {"s": "0"})  # the heir exists

    moved = scaling.hand_over(client, config, "src-1", "src-0")

    assert moved == len(ids)  # more than one page
    pending = client.xpending_range("s", config.consumer_group, "-", "+", len(ids) + 1)
    assert [p["message_id"] for p in pending] == ids
    assert {p["consumer"] for p in pending} == {b"src-0"}
    assert {p["times_delivered"] for p in pending} == {1}  # JUSTID: not a re-delivery
    assert min(int(p["time_since_delivered"]) for p in pending) >= config.claim_idle_ms
    consumers = client.xinfo_consumers("s", config.consumer_group)
    assert [c["name"] for c in consumers] == [b"src-0"]


def test_hand_over_of_a_consumer_with_nothing_pending_only_removes_it(redis_url: str) -> None:
    config = PlatformSourceConfig(redis_url=redis_url, stream_keys=("s",))
    client = redis.Redis.from_url(redis_url)
    client.xgroup_create("s", config.consumer_group, id="$", mkstream=True)
    client.xreadgroup(config.consumer_group, "src-1", {"s": ">"})
    assert scaling.hand_over(client, config, "src-1", "src-0") == 0
    assert client.xinfo_consumers("s", config.consumer_group) == []


def test_hand_over_covers_every_stream_of_a_partitioned_source(redis_url: str) -> None:
    streams = ["p-0", "p-1", "p-2"]
    config = PlatformSourceConfig(redis_url=redis_url, stream_keys=streams)
    client = redis.Redis.from_url(redis_url)
    for number, stream in enumerate(streams):
        client.xgroup_create(stream, config.consumer_group, id="0", mkstream=True)
        for i in range(number + 1):
            client.xadd(stream, {"data": f"{i}"})
        client.xreadgroup(config.consumer_group, "src-1", {stream: ">"})  # never acked

    assert scaling.hand_over(client, config, "src-1", "src-0") == 1 + 2 + 3

    for number, stream in enumerate(streams):
        pending = client.xpending_range(stream, config.consumer_group, "-", "+", 10)
        assert [p["consumer"] for p in pending] == [b"src-0"] * (number + 1)
        names = [c["name"] for c in client.xinfo_consumers(stream, config.consumer_group)]
        assert names == [b"src-0"]
