"""drasi_ray.streams.admin against a real Redis 6.2: the rules read one way, sync and async."""

from __future__ import annotations

import asyncio
import dataclasses

import redis

from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.streams import admin
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.streams.records import GroupProgress

GROUP = "drasi_ray"


def test_progress_lag_and_drained_follow_the_group(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    config = PlatformSourceConfig(redis_url=redis_url, stream_keys=("s",), start_id="0")
    assert admin.last_generated_id(client, "s") == admin.NO_ID  # no stream yet
    assert admin.group_progress(client, "s", GROUP) is None
    ids = [client.xadd("s", {"n": str(n)}).decode() for n in range(3)]
    assert admin.ensure_group(client, config) and not admin.ensure_group(client, config)
    progress = admin.group_progress(client, "s", GROUP)
    assert progress is not None and progress.last_delivered_id == admin.NO_ID
    assert admin.lag(client, "s", progress, cap=2) == (2, True)  # 6.2: counted, capped
    assert admin.lag(client, "s", progress, cap=10) == (3, False)
    client.xreadgroup(GROUP, "c-0", {"s": ">"}, count=2)
    progress = admin.group_progress(client, "s", GROUP)
    assert progress is not None and progress.pending == 2
    assert [(c.name, c.pending) for c in progress.consumers] == [("c-0", 2)]
    assert admin.lag(client, "s", progress, cap=10) == (1, False)
    assert not admin.drained(client, config, {"s": ids[1]})  # delivered, not acked
    client.xack("s", GROUP, *ids[:2])
    assert admin.drained(client, config, {"s": ids[1]})
    assert not admin.drained(client, config, {"s": ids[2]})
    assert admin.last_generated_id(client, "s") == ids[-1]


def test_the_asyncio_backend_reads_the_same_progress(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.xadd("s", {"n": "1"})
    client.xgroup_create("s", GROUP, id="0")
    client.xreadgroup(GROUP, "c-0", {"s": ">"})

    async def read() -> tuple[GroupProgress, str | None]:
        backend = RedisStreamBackend.from_url(redis_url)
        try:
            return await backend.group_progress("s", GROUP), await backend.stream_last_id("s")
        finally:
            await backend.close()

    progress, last_id = asyncio.run(read())
    synchronous = admin.group_progress(client, "s", GROUP)
    assert synchronous is not None
    # the same reading, but for the consumers' idle time, which moves on between the two
    assert dataclasses.replace(progress, consumers=()) == dataclasses.replace(
        synchronous, consumers=()
    )
    assert [(c.name, c.pending) for c in progress.consumers] == [
        (c.name, c.pending) for c in synchronous.consumers
    ]
    assert last_id == admin.last_generated_id(client, "s")
