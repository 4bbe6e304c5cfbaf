"""A consumer of a CDC tool's stream against a real Redis, without Ray: the entries Debezium
Server's and DeltaForge's Redis sinks write are decoded at the boundary, tombstones and schema
changes are acked without a change, malformed envelopes are dead-lettered with the reason
naming the field and their raw fields, and every entry is acked."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import redis

from drasi_ray.model.changes import DecodedEntry, Op
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.source.consumer import StreamConsumer
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.streams.records import DeadLetter
from drasi_ray.testing.cdc import (
    RowChange,
    debezium_fields,
    debezium_tombstone,
    deltaforge_fields,
)
from drasi_ray.testing.waiting import wait_until_async

STREAM = "dbserver1.public.customers"
TS = 1_700_000_000_000
ROW = {"id": 7, "name": "Ada"}


def _consume(url: str, entries: int, **settings: Any) -> tuple[list[DecodedEntry], Any]:
    """Run one consumer of ``STREAM`` until ``entries`` are acked: the decoded entries it
    dispatched, and its stats."""
    config = PlatformSourceConfig(
        redis_url=url, stream_keys=(STREAM,), start_id="0", block_ms=50, batch_size=10, **settings
    )
    dispatched: list[DecodedEntry] = []

    async def dispatch(batch: tuple[DecodedEntry, ...]) -> object:
        dispatched.extend(batch)
        return None

    async def main() -> Any:
        backend = RedisStreamBackend.from_url(url)
        consumer = StreamConsumer("shop", config, "shop-0", backend, dispatch)
        consumer.start()
        try:
            await wait_until_async(lambda: consumer.stats.acked == entries)
        finally:
            await consumer.stop()
        return consumer.stats

    return dispatched, asyncio.run(main())


def _xadd(client: redis.Redis, fields: Mapping[bytes, bytes]) -> Any:
    """XADD ``fields`` to ``STREAM`` (redis-py types the fields as a dict of its own unions)."""
    added: Any = client.xadd(STREAM, dict[Any, Any](fields))
    return added


def _dead_letters(client: redis.Redis) -> list[DeadLetter]:
    letters: Any = client.xrange(f"{STREAM}:dlq")
    return [DeadLetter.from_fields(fields) for _, fields in letters]


def test_debezium_entries_decode_and_bad_ones_are_dead_lettered(redis_url: str) -> None:
    created = RowChange("c", "customers", None, ROW, TS, lsn=1000)
    deleted = RowChange("d", "customers", ROW, None, TS + 5, lsn=2000)
    bad_type = {b'{"id":7}': b'{"op": "c", "after": {"id": 7}, "source": {"table": ["x"]}}'}
    truncated = RowChange("t", "customers", None, ROW, TS + 9, lsn=3000)
    client = redis.Redis.from_url(redis_url)
    ids = [
        _xadd(client, debezium_fields(created)),
        _xadd(client, bad_type),
        _xadd(client, debezium_fields(deleted, extended=True)),
        _xadd(client, debezium_tombstone(deleted, extended=True)),
        _xadd(client, debezium_fields(truncated, schemas=False)),
    ]
    dispatched, stats = _consume(redis_url, len(ids), format="debezium")

    assert [(e.changes[0].op, e.changes[0].element.id) for e in dispatched if e.changes] == [
        (Op.INSERT, "customers:7"),
        (Op.DELETE, "customers:7"),
    ]
    assert [e.entry_id for e in dispatched if not e.changes] == [ids[3].decode()]  # tombstone
    dead = _dead_letters(client)
    assert [d.entry_id for d in dead] == [ids[1].decode(), ids[4].decode()]
    assert "$.source.table" in dead[0].reason and "op 't' (truncate" in dead[1].reason
    assert dead[0].fields == bad_type and dead[0].source_stream == STREAM
    assert stats.dead_lettered == 2 and client.xpending(STREAM, "drasi_ray")["pending"] == 0


def test_deltaforge_entries_decode_with_duplicates_at_their_position(redis_url: str) -> None:
    updated = RowChange("u", "customers", None, ROW, TS, lsn=(0x16 << 32) | 0xB374D848)
    client = redis.Redis.from_url(redis_url)
    for fields in (
        deltaforge_fields(updated),
        {b"df-event": b'{"op": "u", "after": {"id": 7}, "source": {"table": "customers", '
                      b'"ts_ms": 1, "lsn": "not/an/lsn"}}'},
        deltaforge_fields(updated, envelope="debezium"),  # re-sent after a DeltaForge restart
    ):  # fmt: skip
        _xadd(client, fields)
    dispatched, _stats = _consume(
        redis_url, 3, format="deltaforge", cdc={"keys": {"customers": ["id"]}}
    )

    first, again = (entry.changes[0] for entry in dispatched)
    assert first.version == again.version == (1, updated.lsn, 0)  # the store applies it once
    assert first.element == again.element
    (dead,) = _dead_letters(client)
    assert dead.reason == "invalid 'source.lsn' value 'not/an/lsn'"
