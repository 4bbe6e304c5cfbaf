"""A consumer over every stream of a partitioned source (lanes), against a real Redis, no Ray.

Pins what :class:`~drasi_ray.source.lanes.ConsumerLanes` adds to the one-stream consumer: the
group on every stream, each stream's entries dispatched by that stream's lane only (entry ids
of two streams meet), counters per stream, and the tombstone bound the lowest of the streams'.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
import redis

from drasi_ray.model.changes import DecodedEntry, Op, node
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import ConfigError
from drasi_ray.source.consumer import StreamConsumer, backend_for
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.source.dispatcher import Dispatch
from drasi_ray.source.lanes import ConsumerLanes
from drasi_ray.testing.waiting import wait_until_async

STREAMS = ("lanes-a", "lanes-b", "lanes-c")


def _event(element_id: str) -> bytes:
    element = node(element_id, ["Thing"], {"value": 1})
    return encode_cloud_event([change_event(Op.UPDATE, element, 1_000_000)])


def _settings(url: str, **overrides: Any) -> PlatformSourceConfig:
    values: dict[str, Any] = {
        "redis_url": url,
        "stream_keys": STREAMS,
        "start_id": "0",
        "block_ms": 50,
        "batch_size": 10,
        "reclaim_interval_ms": 50,
        "claim_idle_ms": 200,
    }
    values.update(overrides)
    return PlatformSourceConfig(**values)


def test_each_stream_is_read_and_acked_by_its_own_lane(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    published: dict[str, list[str]] = {stream: [] for stream in STREAMS}
    for index in range(30):
        stream = STREAMS[index % 3]
        published[stream].append(f"{stream}/{index}")
        client.xadd(stream, {"data": _event(f"{stream}/{index}")}, id=f"{index // 3 + 1}-0")
    client.xadd(STREAMS[1], {"data": b"{not json"}, id="99-0")
    seen: dict[str, list[str]] = {stream: [] for stream in STREAMS}

    def dispatch_for(stream: str) -> Dispatch:
        async def dispatch(entries: Sequence[DecodedEntry]) -> object:
            seen[stream] += [entry.changes[0].element.id for entry in entries]
            return None

        return dispatch

    async def main() -> None:
        lanes = ConsumerLanes("src", _settings(redis_url), "src-0", dispatch_for)
        lanes.start()
        await lanes.wait_ready()
        try:
            await wait_until_async(lambda: lanes.stats.acked == 31)
        finally:
            await lanes.stop()
        per_stream = lanes.stream_stats()
        assert {s: per_stream[s].acked for s in STREAMS} == {
            s: 10 + (s == STREAMS[1]) for s in STREAMS
        }
        assert per_stream[STREAMS[1]].dead_lettered == 1 == lanes.stats.dead_lettered

    asyncio.run(main())
    assert seen == published  # ids 1-0 .. 10-0 on every stream: no lane saw another's
    for stream in STREAMS:
        assert client.xpending(stream, "drasi_ray")["pending"] == 0
        assert [g["name"] for g in client.xinfo_groups(stream)] == [b"drasi_ray"]
    dead: Any = client.xrange(f"{STREAMS[0]}:dlq")
    assert [(f[b"stream"], f[b"entry_id"]) for _, f in dead] == [(STREAMS[1].encode(), b"99-0")]


def test_the_tombstone_bound_is_the_lowest_of_the_streams(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    for stream, first in zip(STREAMS, (500, 100, 300), strict=True):
        client.xadd(stream, {"data": _event(f"{stream}-x")}, id=f"{first}-0")
        client.xadd(stream, {"data": _event(f"{stream}-y")}, id=f"{first + 1}-0")

    async def dispatch(_entries: Sequence[DecodedEntry]) -> object:
        return None

    async def main() -> tuple[int, int] | None:
        lanes = ConsumerLanes("src", _settings(redis_url), "src-0", lambda _stream: dispatch)
        lanes.start()
        await lanes.wait_ready()
        try:
            await wait_until_async(lambda: lanes.stats.acked == 6)
            return await lanes.tombstone_bound(ttl_ms=0)
        finally:
            await lanes.stop()

    # Every entry acked: each stream's floor is past its last entry, but its oldest retained
    # entry (a recreated group replays from there) bounds it; the lowest stream's wins.
    assert asyncio.run(main()) == (100, 0)


def test_a_lane_must_name_one_of_the_source_streams(redis_url: str) -> None:
    async def dispatch(_entries: Sequence[DecodedEntry]) -> object:
        return None

    async def forget(_bound: tuple[int, int]) -> int:
        return 0

    settings = _settings(redis_url)
    with pytest.raises(ConfigError, match="name the consumer's one"):
        StreamConsumer("src", settings, "src-0", backend_for(settings), dispatch)
    with pytest.raises(ConfigError, match="not one of the source's"):
        StreamConsumer("src", settings, "src-0", backend_for(settings), dispatch, stream="x")
    with pytest.raises(ConfigError, match="cannot sweep tombstones alone"):
        StreamConsumer(
            "src", settings, "src-0", backend_for(settings), dispatch, forget, stream=STREAMS[0]
        )
