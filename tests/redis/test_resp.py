"""Hand-packed commands against real Redis: the same bytes on the wire as redis-py's."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio as aioredis
from redis import exceptions as rexc
from redis.connection import Connection

from drasi_ray.streams import resp


@pytest.mark.parametrize(
    "args",
    [
        ("XACK", "stream", "group", "1-0", "2-5"),
        ("HSET", "h", "k", b"\x00\xffbinary\r\n", "é", b""),
        ("HINCRBY", "h", "n", 42),
        ("HINCRBY", "h", "n", -7),
    ],
)
def test_pack_matches_redis_py(args: tuple[resp.Arg, ...]) -> None:
    packed = Connection().pack_command(*args)  # type: ignore[no-untyped-call]
    assert resp.pack(args) == b"".join(packed)


def test_execute_packed_returns_every_reply_in_order(redis_url: str) -> None:
    async def run() -> list[object]:
        client = aioredis.Redis.from_url(redis_url)
        try:
            return await resp.execute_packed(
                client,
                [
                    resp.pack(("HSET", "h", "a", b"1", "b", b"2")),
                    resp.pack(("HINCRBY", "h", "a", "not a number")),  # an error reply
                    resp.pack(("HINCRBY", "h", "a", 5)),
                ],
            )
        finally:
            await client.aclose()

    created, refused, total = asyncio.run(run())
    assert created == 2 and total == 6
    assert isinstance(refused, rexc.ResponseError)
    with redis.Redis.from_url(redis_url) as client:
        assert client.hgetall("h") == {b"a": b"6", b"b": b"2"}


def test_execute_packed_blocking_returns_every_reply_in_order(redis_url: str) -> None:
    with redis.Redis.from_url(redis_url) as client:
        created, refused, total = resp.execute_packed_blocking(
            client,
            [
                resp.pack(("HSET", "hb", "a", b"1", "b", b"2")),
                resp.pack(("HINCRBY", "hb", "a", "not a number")),  # an error reply
                resp.pack(("HINCRBY", "hb", "a", 5)),
            ],
        )
        assert created == 2 and total == 6
        assert isinstance(refused, rexc.ResponseError)
        assert client.hgetall("hb") == {b"a": b"6", b"b": b"2"}
