"""SequenceKeeper against real Redis: leased numbering, restarts, the background write."""

from __future__ import annotations

import asyncio

import redis
import redis.asyncio as aioredis

from drasi_ray.model import keys
from drasi_ray.shards.state import SequenceKeeper, StateStore
from drasi_ray.testing.embedded_redis import EmbeddedRedis


def _keeper(url: str, lease: int) -> SequenceKeeper:
    return SequenceKeeper(StateStore.from_url(url, "app"), "q", lease=lease)


def test_reserving_writes_the_ceiling_once_per_lease(redis_url: str) -> None:
    async def run() -> list[int]:
        keeper = _keeper(redis_url, lease=100)
        sequence = await keeper.start()
        ceilings = []
        with redis.Redis.from_url(redis_url) as client:
            for _ in range(250):  # 250 results of one number each
                await keeper.reserve(sequence, 1)
                sequence += 1
                ceilings.append(int(client.get(keys.result_sequence_lease("app", "q")) or 0))
        return ceilings

    ceilings = asyncio.run(run())
    assert sorted(set(ceilings)) == [100, 200, 300]  # three writes for 250 numbers
    assert all(number <= ceiling for number, ceiling in enumerate(ceilings, start=1))


def test_a_restart_numbers_above_everything_emitted(redis_url: str) -> None:
    async def first_life() -> int:
        keeper = _keeper(redis_url, lease=50)
        sequence = await keeper.start()
        await keeper.reserve(sequence, 30)
        sequence += 30
        keeper.note(sequence)  # the crash comes before this write: nothing is flushed
        return sequence

    async def second_life() -> int:
        return await _keeper(redis_url, lease=50).start()

    emitted = asyncio.run(first_life())
    assert asyncio.run(second_life()) >= emitted


def test_the_last_sequence_is_written_in_the_background(redis_url: str) -> None:
    async def run() -> None:
        keeper = _keeper(redis_url, lease=1000)
        sequence = await keeper.start()
        for _ in range(20):
            await keeper.reserve(sequence, 3)
            sequence += 3
            keeper.note(sequence)
        await keeper.flush()

    asyncio.run(run())
    with redis.Redis.from_url(redis_url) as client:
        assert int(client.get(keys.result_sequence("app", "q")) or 0) == 60
        assert int(client.get(keys.result_sequence_lease("app", "q")) or 0) == 1000


def test_a_lease_waits_out_a_redis_outage() -> None:
    """The delivery holding the lease must not fail (its deltas would be dropped): it waits."""
    with EmbeddedRedis() as server:
        keeper = _keeper(server.url, lease=100)

        async def run() -> int:
            sequence = await keeper.start()
            server.kill()
            reserving = asyncio.get_running_loop().create_task(keeper.reserve(sequence, 1))
            await asyncio.sleep(0.5)
            assert not reserving.done()  # still retrying, not failed
            await asyncio.to_thread(server.start)
            await asyncio.wait_for(reserving, 15)
            return sequence

        asyncio.run(run())
        with redis.Redis.from_url(server.url) as client:
            assert int(client.get(keys.result_sequence_lease("app", "q")) or 0) == 100


class _CountingState(StateStore):
    def __init__(self, url: str) -> None:
        super().__init__(aioredis.Redis.from_url(url), "app")
        self.sequence_writes = 0

    async def save_sequence(self, query_id: str, sequence: int) -> None:
        self.sequence_writes += 1
        await super().save_sequence(query_id, sequence)


def test_the_last_sequence_is_written_once_per_interval_not_per_delivery(redis_url: str) -> None:
    state = _CountingState(redis_url)

    async def run() -> None:
        keeper = SequenceKeeper(state, "q", lease=1000)
        sequence = await keeper.start()
        for _ in range(100):  # 100 deliveries within ~0.1 s, well inside one interval
            await keeper.reserve(sequence, 1)
            sequence += 1
            keeper.note(sequence)
            await asyncio.sleep(0.001)
        await keeper.flush()  # flush writes at once, without waiting the interval out

    asyncio.run(run())
    assert state.sequence_writes == 1
    with redis.Redis.from_url(redis_url) as client:
        assert int(client.get(keys.result_sequence("app", "q")) or 0) == 100


def test_the_last_sequence_written_during_a_redis_outage_lands_once_redis_is_back() -> None:
    """A sequence noted while Redis is down is written when it returns, not given up: the
    stored sequence then matches the result stream (``drasi-ray status`` after a Redis
    restart, issue #27 item 8)."""
    with EmbeddedRedis() as server:

        async def run() -> tuple[bool, bool]:
            keeper = SequenceKeeper(StateStore.from_url(server.url, "app"), "q", lease=1000)
            sequence = await keeper.start()
            await keeper.reserve(sequence, 6)
            server.stop()
            keeper.note(sequence + 6)
            during = await keeper.flush(timeout_s=1.0)  # Redis is down: not written yet
            server.start()
            return during, await keeper.flush(timeout_s=15.0)

        during, after = asyncio.run(run())
        assert (during, after) == (False, True)
        with redis.Redis.from_url(server.url) as client:
            assert int(client.get(keys.result_sequence("app", "q")) or 0) == 6
