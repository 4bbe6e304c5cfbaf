"""drasi_ray.streams.resp.Pipe (the hot path's own connection) and the XACK that rides on a read,
against a real Redis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import redis
import redis.asyncio as aioredis
from redis import exceptions as rexc

from drasi_ray.model.errors import GroupMissingError, StreamError
from drasi_ray.streams import resp
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.testing.embedded_redis import EmbeddedRedis
from tests.redis.test_streams import run

T = TypeVar("T")


def with_pipe(url: str, body: Callable[[resp.Pipe], Awaitable[T]], **options: Any) -> T:
    async def main() -> T:
        client = aioredis.Redis.from_url(url, **options)
        pipe = resp.Pipe(client)
        try:
            return await body(pipe)
        finally:
            pipe.close()
            await client.aclose()

    return asyncio.run(main())


def test_replies_come_in_order_and_error_replies_are_values(redis_url: str) -> None:
    async def body(pipe: resp.Pipe) -> list[Any]:
        return await pipe.execute(
            [
                resp.pack(("SET", "k", "v")),
                resp.pack(("INCR", "k")),  # not an integer: an error reply
                resp.pack(("GET", "k")),
            ]
        )

    ok, error, value = with_pipe(redis_url, body)
    assert ok == b"OK" and value == b"v"
    assert isinstance(error, rexc.ResponseError) and "not an integer" in str(error)


def test_each_reply_is_handed_over_before_a_later_command_blocks(redis_url: str) -> None:
    seen: list[tuple[int, Any, float]] = []

    async def body(pipe: resp.Pipe) -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await pipe.execute(
            [resp.pack(("PING",)), resp.pack(("BLPOP", "nothing-here", "0.3"))],
            lambda index, reply: seen.append((index, reply, loop.time() - started)),
        )
        return loop.time() - started

    took = with_pipe(redis_url, body)
    (first, pong, at), (second, nothing, _) = seen
    assert (first, pong, second, nothing) == (0, b"PONG", 1, None)
    assert at < 0.2 <= took  # the PING's reply came while BLPOP still blocked


def test_a_dropped_connection_fails_the_call_and_the_next_call_reconnects(redis_url: str) -> None:
    admin = redis.Redis.from_url(redis_url)

    async def body(pipe: resp.Pipe) -> list[Any]:
        await pipe.execute([resp.pack(("CLIENT", "SETNAME", "pipe-under-test"))])
        blocked = asyncio.ensure_future(pipe.execute([resp.pack(("BLPOP", "nothing", "5"))]))
        await asyncio.sleep(0.2)
        admin.client_kill_filter(_type="normal", skipme=True)
        with pytest.raises(rexc.ConnectionError):
            await blocked
        return await pipe.execute([resp.pack(("PING",))])

    assert with_pipe(redis_url, body) == [b"PONG"]


def test_replies_later_than_the_socket_timeout_fail_with_a_timeout(redis_url: str) -> None:
    async def body(pipe: resp.Pipe) -> list[Any]:
        with pytest.raises(rexc.TimeoutError):
            await pipe.execute([resp.pack(("BLPOP", "nothing", "2"))])
        return await pipe.execute([resp.pack(("PING",))])

    assert with_pipe(redis_url, body, socket_timeout=0.3) == [b"PONG"]


def test_each_call_gets_the_whole_socket_timeout_whatever_came_before(redis_url: str) -> None:
    """One watchdog timer per connection: armed for a fast call's deadline, it finds the
    later call still within its own and waits for that one, which then times out."""

    async def body(pipe: resp.Pipe) -> list[Any]:
        await pipe.execute([resp.pack(("PING",))])  # arms the watchdog for its deadline
        await asyncio.sleep(0.2)
        started = time.monotonic()
        with pytest.raises(rexc.TimeoutError):
            await pipe.execute([resp.pack(("BLPOP", "nothing", "2"))])
        waited = time.monotonic() - started
        assert 0.28 <= waited < 1.5, waited
        return await pipe.execute([resp.pack(("PING",))])

    assert with_pipe(redis_url, body, socket_timeout=0.3) == [b"PONG"]


def test_password_and_database_of_the_url_are_used() -> None:
    with EmbeddedRedis() as server:
        url = server.url
        redis.Redis.from_url(url).config_set("requirepass", "s3cret")
        authed = url.replace("redis://", "redis://:s3cret@") + "/3"
        redis.Redis.from_url(authed).set("where", "db3")

        async def body(pipe: resp.Pipe) -> list[Any]:
            return await pipe.execute([resp.pack(("GET", "where"))])

        assert with_pipe(authed, body) == [b"db3"]
        with pytest.raises(rexc.ResponseError, match=r"NOAUTH|WRONGPASS|invalid"):
            with_pipe(url.replace("redis://", "redis://:wrong@"), body)


def test_an_ack_rides_on_a_read_and_is_reported_before_the_read_returns(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    first = client.xadd("rides", {"n": "1"}).decode()
    client.xgroup_create("rides", "g", id="0")
    outcomes: list[int | StreamError] = []

    async def body(backend: RedisStreamBackend) -> tuple[list[str], list[str]]:
        (entry,) = await backend.read_new("rides", "g", "c", 10)
        second = await asyncio.to_thread(lambda: client.xadd("rides", {"n": "2"}).decode())
        entries = await backend.read_new(
            "rides", "g", "c", 10, block_ms=100, ack=[entry.id], acked=outcomes.append
        )
        return [entry.id, second], [e.id for e in entries]

    (read_first, second), read_next = run(redis_url, body)
    assert read_first == first and read_next == [second] and outcomes == [1]
    pending = client.xpending_range("rides", "g", "-", "+", 10)
    assert [p["message_id"].decode() for p in pending] == [second]  # the first was acked


def test_a_read_whose_group_is_gone_raises_after_the_ack_is_reported(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.xadd("gone", {"n": "1"})
    client.xgroup_create("gone", "g", id="0")
    outcomes: list[int | StreamError] = []

    async def body(backend: RedisStreamBackend) -> None:
        (entry,) = await backend.read_new("gone", "g", "c", 10)
        client.xgroup_destroy("gone", "g")
        await backend.read_new("gone", "g", "c", 10, ack=[entry.id], acked=outcomes.append)

    with pytest.raises(GroupMissingError):
        run(redis_url, body)
    assert outcomes == [0]  # Redis answers 0 for a missing group's XACK
