"""The consume loop and reclaim timer against a real Redis, without Ray.

The dispatch is an in-test coroutine, so these tests pin the loop's contract: decode at the
boundary, dead-letter the malformed, one dispatch per batch, ack only after dispatch returned,
resume from own pending entries after a failure, recreate a missing group, reclaim a dead
peer's entries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis

from drasi_ray.model.changes import DecodedEntry, Op, node
from drasi_ray.model.config import PlatformSourceConfig
from drasi_ray.model.errors import RedisUnavailableError, StreamError
from drasi_ray.shards.reports import BatchReport
from drasi_ray.source.consumer import StreamConsumer, backend_for
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.source.dispatcher import Dispatcher
from drasi_ray.source.lane import LaneState
from drasi_ray.source.reader import Reader
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.streams.records import DeadLetter, Rejection, StreamEntry
from drasi_ray.testing.waiting import wait_until_async

STREAM = "changes"


def _event(element_id: str, value: int) -> bytes:
    element = node(element_id, ["Thing"], {"value": value})
    return encode_cloud_event([change_event(Op.UPDATE, element, 1_000_000)])


def _publish(url: str, count: int) -> redis.Redis:
    """XADD ``count`` updates of elements ``e0``, ``e1``, ...; the client, for checks."""
    client = redis.Redis.from_url(url)
    for i in range(count):
        client.xadd(STREAM, {"data": _event(f"e{i}", i)})
    return client


def _ids(entries: Sequence[DecodedEntry]) -> list[str]:
    """The element id of each entry's first change."""
    return [entry.changes[0].element.id for entry in entries]


def _settings(url: str, **overrides: Any) -> PlatformSourceConfig:
    values: dict[str, Any] = {
        "redis_url": url,
        "stream_key": STREAM,
        "start_id": "0",
        "block_ms": 50,
        "batch_size": 10,
        "reclaim_interval_ms": 50,
        "claim_idle_ms": 200,
    }
    values.update(overrides)
    return PlatformSourceConfig(**values)


def _run(
    url: str,
    body: Callable[[StreamConsumer, list[Sequence[DecodedEntry]]], Awaitable[None]],
    dispatch_error: Callable[[int], Exception | None] = lambda _n: None,
    **overrides: Any,
) -> None:
    async def main() -> None:
        batches: list[Sequence[DecodedEntry]] = []

        async def dispatch(entries: Sequence[DecodedEntry]) -> object:
            error = dispatch_error(len(batches))
            batches.append(entries)
            if error is not None:
                raise error
            return None

        consumer = StreamConsumer(
            "src", _settings(url, **overrides), "src-0", RedisStreamBackend.from_url(url), dispatch
        )
        consumer.start()
        await consumer.wait_ready()
        try:
            await body(consumer, batches)
        finally:
            await consumer.stop()

    asyncio.run(main())


def test_decodes_dispatches_in_batches_and_acks(redis_url: str) -> None:
    client = _publish(redis_url, 25)

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 25)
        ids = [entry.changes[0].element.id for batch in batches for entry in batch]
        assert ids == [f"e{i}" for i in range(25)]
        assert all(len(batch) <= 10 for batch in batches)
        assert client.xpending(STREAM, "drasi_ray")["pending"] == 0

    _run(redis_url, body, max_batch_size=10)


def test_reads_grow_with_a_backlog_and_shrink_when_drained(redis_url: str) -> None:
    client = _publish(redis_url, 150)

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 150)
        assert [len(batch) for batch in batches] == [10, 20, 40, 40, 40]  # limit 40
        # A read that finds the stream drained (here: blocks 50 ms and times out) is partial:
        # the next is batch_size again. MULTI/EXEC shows all 30 entries to the blocked read.
        await asyncio.sleep(0.3)
        with client.pipeline(transaction=True) as burst:
            for i in range(30):
                burst.xadd(STREAM, {"data": _event(f"late{i}", i)})
            burst.execute()
        await wait_until_async(lambda: consumer.stats.acked == 180)
        assert [len(batch) for batch in batches[5:]] == [10, 20]
        ids = [entry.changes[0].element.id for batch in batches for entry in batch]
        assert ids == [f"e{i}" for i in range(150)] + [f"late{i}" for i in range(30)]

    _run(redis_url, body, max_batch_size=40)


def test_malformed_entries_are_dead_lettered_then_acked(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.xadd(STREAM, {"data": _event("ok", 1)})
    bad = client.xadd(STREAM, {"data": b'{"data": [{"op": "q", "payload": {}}]}'}).decode()

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 2)
        assert [entry.changes[0].element.id for batch in batches for entry in batch] == ["ok"]
        dead: Any = client.xrange("changes:dlq")
        ((_, fields),) = dead
        assert fields[b"entry_id"].decode() == bad
        assert b"unknown operation type 'q'" in fields[b"reason"]
        assert fields[b"orig:data"] == b'{"data": [{"op": "q", "payload": {}}]}'
        assert consumer.stats.dead_lettered == 1

    _run(redis_url, body)


def test_failed_dispatch_is_not_acked_and_is_redelivered(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.xadd(STREAM, {"data": _event("e1", 1)})

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 1)
        assert len(batches) == 2  # the failed attempt, then the redelivery of its own pending
        assert batches[0][0].entry_id == batches[1][0].entry_id
        assert consumer.stats.errors == 1 and "coordinator down" in str(consumer.stats.last_error)

    _run(
        redis_url,
        body,
        dispatch_error=lambda n: RuntimeError("coordinator down") if n == 0 else None,
    )


def test_next_batch_is_read_during_a_dispatch_and_a_failure_keeps_stream_order(
    redis_url: str,
) -> None:
    client = _publish(redis_url, 45)
    applied: list[str] = []
    running = {"now": 0, "most": 0}

    async def main() -> None:
        release = asyncio.Event()
        calls = 0

        async def dispatch(entries: Sequence[DecodedEntry]) -> object:
            nonlocal calls
            calls += 1
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
            try:
                if calls == 1:  # the first batch fails, once the next one was prefetched
                    await release.wait()
                    raise RuntimeError("coordinator down")
                # Re-reading the 20 given-up entries singly takes longer than claim_idle_ms:
                # the reclaim timer must leave them to the drain, not apply them twice.
                await asyncio.sleep(0.03)
                applied.extend(_ids(entries))
            finally:
                running["now"] -= 1
            return None

        settings = _settings(redis_url, max_in_flight=20)
        consumer = StreamConsumer(
            "src", settings, "src-0", RedisStreamBackend.from_url(redis_url), dispatch
        )
        consumer.start()
        try:
            # batch 2 read while 1 dispatches
            await wait_until_async(lambda: consumer.in_flight == 20)
            assert calls == 1
            release.set()
            await wait_until_async(lambda: consumer.stats.acked == 45)
        finally:
            await consumer.stop()

    asyncio.run(main())
    assert applied == [f"e{i}" for i in range(45)]  # in stream order, failure or not, once
    assert running["most"] == 1  # one dispatch at a time
    assert client.xpending(STREAM, "drasi_ray")["pending"] == 0


def test_batch_prefetched_during_a_slow_dispatch_is_not_reclaimed(redis_url: str) -> None:
    """The batch read ahead waits for a dispatch slower than claim_idle_ms: its claim is
    renewed, so neither our reclaim timer nor a peer's takes it and it is applied once."""
    client = _publish(redis_url, 30)
    applied: list[str] = []
    peer_applied: list[str] = []

    async def main() -> None:
        calls = 0

        async def dispatch(entries: Sequence[DecodedEntry]) -> object:
            nonlocal calls
            calls += 1
            await asyncio.sleep(1.6 if calls == 1 else 0.001)  # 4 x claim_idle_ms
            applied.extend(_ids(entries))
            return None

        async def peer_dispatch(entries: Sequence[DecodedEntry]) -> object:
            peer_applied.extend(_ids(entries))
            return None

        settings = _settings(redis_url, max_in_flight=20, claim_idle_ms=400)
        consumer = StreamConsumer(
            "src", settings, "src-0", RedisStreamBackend.from_url(redis_url), dispatch
        )
        consumer.start()
        # batch 2 held while batch 1 dispatches
        await wait_until_async(lambda: consumer.in_flight == 20)
        # The peer joins now: it reads the 10 entries left, and would reclaim ours if they
        # looked idle.
        peer = StreamConsumer(
            "src",
            _settings(redis_url, max_in_flight=20, block_ms=20, claim_idle_ms=400),
            "src-1",
            RedisStreamBackend.from_url(redis_url),
            peer_dispatch,
        )
        client.xgroup_createconsumer(STREAM, "drasi_ray", "src-1")
        peer.start()
        try:
            await wait_until_async(lambda: consumer.stats.acked + peer.stats.acked >= 30)
            await asyncio.sleep(0.3)  # a late duplicate would show up by now
            assert consumer.stats.reclaimed == 0
            assert peer.stats.reclaimed == 0
        finally:
            await peer.stop()
            await consumer.stop()

    asyncio.run(main())
    assert applied + peer_applied == [f"e{i}" for i in range(30)]
    assert client.xpending(STREAM, "drasi_ray")["pending"] == 0


class _SlowAcks(RedisStreamBackend):
    """A backend whose acks are logged, and which can slow down or fail the first one."""

    log: list[str]
    delay_s: float
    fail: bool
    acks = 0

    async def ack(self, stream: str, group: str, ids: Sequence[str]) -> int:
        self.acks += 1
        number = self.acks
        if number == 1:
            await asyncio.sleep(self.delay_s)
            if self.fail:
                self.log.append("ack 1 failed")
                raise RedisUnavailableError("connection lost during XACK")
        count = await super().ack(stream, group, ids)
        self.log.append(f"ack {number}")
        return count


def _slow_ack_run(url: str, fail: bool) -> tuple[list[str], list[str], StreamConsumer]:
    """30 entries, batches of 10; the first ack takes 0.3 s, longer than claim_idle_ms (and
    fails, with ``fail``). The reclaim timer must not take back the entries being acked."""
    client = _publish(url, 30)
    log: list[str] = []
    applied: list[str] = []

    async def main() -> StreamConsumer:
        async def dispatch(entries: Sequence[DecodedEntry]) -> object:
            log.append(f"dispatch {entries[0].changes[0].element.id}")
            applied.extend(_ids(entries))
            return None

        backend = _SlowAcks.from_url(url)
        assert isinstance(backend, _SlowAcks)
        backend.log, backend.delay_s, backend.fail = log, 0.3, fail
        settings = _settings(url, max_in_flight=30)
        consumer = StreamConsumer("src", settings, "src-0", backend, dispatch)
        consumer.start()
        try:
            await consumer.wait_ready()
            await wait_until_async(
                lambda: (
                    len(set(applied)) == 30 and client.xpending(STREAM, "drasi_ray")["pending"] == 0
                )
            )
        finally:
            await consumer.stop()
        return consumer

    consumer = asyncio.run(main())
    return log, applied, consumer


def test_the_next_dispatch_overlaps_the_previous_ack_but_not_the_one_after(
    redis_url: str,
) -> None:
    log, applied, consumer = _slow_ack_run(redis_url, fail=False)
    assert applied == [f"e{i}" for i in range(30)]  # once each, in stream order
    # Batch 2 went out while batch 1's ack was still on its way; batch 3 waited for it.
    second, third = [i for i, line in enumerate(log) if line.startswith("dispatch")][1:3]
    assert second < log.index("ack 1") < third
    assert consumer.stats.reclaimed == 0


def test_a_failed_ack_stops_the_reading_and_the_entries_are_redelivered(redis_url: str) -> None:
    log, applied, consumer = _slow_ack_run(redis_url, fail=True)
    dispatches = [i for i, line in enumerate(log) if line.startswith("dispatch")]
    assert dispatches[1] < log.index("ack 1 failed") < dispatches[2]  # the third held back
    # Every entry applied, the first time in stream order; the unacked ones again (a re-read
    # of an applied entry is a no-op downstream, thanks to the versioned store).
    first_seen = list(dict.fromkeys(applied))
    assert first_seen == [f"e{i}" for i in range(30)]
    assert consumer.stats.errors == 1
    assert "connection lost during XACK" in str(consumer.stats.last_error)


def test_missing_group_is_recreated(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        client.xgroup_destroy(STREAM, "drasi_ray")
        await wait_until_async(lambda: consumer.stats.group_recreated == 1)
        client.xadd(STREAM, {"data": _event("after", 1)})
        await wait_until_async(lambda: consumer.stats.acked == 1)

    _run(redis_url, body)


def test_dead_peers_pending_entries_are_reclaimed(redis_url: str) -> None:
    client = _publish(redis_url, 15)
    client.xgroup_create(STREAM, "drasi_ray", id="0")
    # A peer reads everything and dies before acking.
    client.xreadgroup("drasi_ray", "src-9", {STREAM: ">"}, count=100)

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 15)
        assert consumer.stats.reclaimed == 15
        assert client.xpending(STREAM, "drasi_ray")["pending"] == 0

    _run(redis_url, body)


def test_oversized_entries_are_dead_lettered_unparsed(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    big = client.xadd(STREAM, {"data": b"x" * 5000}).decode()
    client.xadd(STREAM, {"data": _event("small", 1)})

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 2)
        dead: Any = client.xrange("changes:dlq")
        ((_, fields),) = dead
        assert fields[b"entry_id"].decode() == big
        assert b"exceeds max_payload_bytes (4096); not parsed" in fields[b"reason"]
        assert len(fields[b"orig:data"]) == 5000  # nothing lost
        assert [e.changes[0].element.id for b in batches for e in b] == ["small"]

    _run(redis_url, body, max_payload_bytes=4096)


def test_retention_trims_only_what_every_group_acked(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.xgroup_create(STREAM, "drasi_ray", id="0", mkstream=True)
    client.xgroup_create(STREAM, "laggard", id="0")
    ids = [client.xadd(STREAM, {"data": _event(f"e{i}", i)}).decode() for i in range(10)]
    client.xreadgroup("laggard", "slow", {STREAM: ">"}, count=4)
    client.xack(STREAM, "laggard", *ids[:2])  # laggard: 2 acked, 2 pending, 6 unread

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 10)
        await wait_until_async(lambda: consumer.stats.trimmed == 2)
        remaining = [entry_id.decode() for entry_id, _ in client.xrange(STREAM)]
        assert remaining == ids[2:]  # the laggard's oldest pending entry is kept

    _run(redis_url, body, trim_acked=True, trim_interval_ms=100)


def test_acl_user_works_and_password_never_shows(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.execute_command(  # type: ignore[no-untyped-call]
        "ACL", "SETUSER", "drasi", "on", ">s3cret-pw", "~*", "&*", "+@all"
    )
    host = redis_url.split("//", 1)[1]
    good = f"redis://drasi:s3cret-pw@{host}"
    client.xadd(STREAM, {"data": _event("e1", 1)})

    async def body(consumer: StreamConsumer, batches: list[Sequence[DecodedEntry]]) -> None:
        await wait_until_async(lambda: consumer.stats.acked == 1)

    _run(good, body)

    async def refused() -> str:
        bad = f"redis://drasi:wrong-pw@{host}"
        backend = RedisStreamBackend.from_url(bad)
        try:
            await backend.ensure_group(STREAM, "drasi_ray", "0")
        except Exception as exc:  # the translated error
            return f"{type(exc).__name__}: {exc}"
        finally:
            await backend.close()
        return "no error"

    message = asyncio.run(refused())
    assert message.startswith("RedisRejectedError")
    assert "wrong-pw" not in message and "s3cret" not in message
    client.execute_command("ACL", "DELUSER", "drasi")  # type: ignore[no-untyped-call]


def test_dead_lettering_is_idempotent(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    letter = DeadLetter("5-0", "bad", {b"data": b"x"}, STREAM, "src-0", 1)

    async def twice() -> list[list[str]]:
        backend = RedisStreamBackend.from_url(redis_url)
        try:
            return [await backend.dead_letter("changes:dlq", [letter]) for _ in range(2)]
        finally:
            await backend.close()

    first, second = asyncio.run(twice())
    assert len(first) == 1 and second == []  # a redelivered bad entry is dead-lettered once
    assert client.xlen("changes:dlq") == 1


def test_idle_read_with_drasi_default_block_ms_does_not_time_out(redis_url: str) -> None:
    """redis-py 8 sets a 5 s socket timeout by default: a BLOCK 5000+ read must not trip it."""
    settings = _settings(redis_url, block_ms=5_500)

    async def idle_read() -> list[object]:
        backend = backend_for(settings)
        try:
            await backend.ensure_group(STREAM, "drasi_ray", "0")
            return list(await backend.read_new(STREAM, "drasi_ray", "src-0", 10, 5_500))
        finally:
            await backend.close()

    assert asyncio.run(idle_read()) == []


class _FailingRide(RedisStreamBackend):
    """A backend whose first XACK riding on a read fails (the read itself succeeds)."""

    failed = False

    async def read_new(
        self,
        stream: str,
        group: str,
        consumer: str,
        count: int,
        block_ms: int | None = None,
        *,
        ack: Sequence[str] = (),
        acked: Callable[[int | StreamError], None] | None = None,
    ) -> list[StreamEntry]:
        if ack and acked is not None and not self.failed:
            self.failed = True
            entries = await super().read_new(stream, group, consumer, count, block_ms)
            acked(RedisUnavailableError("connection lost during a riding XACK"))
            return entries
        return await super().read_new(
            stream, group, consumer, count, block_ms, ack=ack, acked=acked
        )


def test_a_drained_streams_ack_rides_on_the_next_read_and_its_failure_redelivers(
    redis_url: str,
) -> None:
    client = redis.Redis.from_url(redis_url)
    applied: list[str] = []

    async def main() -> StreamConsumer:
        async def dispatch(entries: Sequence[DecodedEntry]) -> object:
            applied.extend(_ids(entries))
            return None

        backend = _FailingRide.from_url(redis_url)
        consumer = StreamConsumer("src", _settings(redis_url), "src-0", backend, dispatch)
        consumer.start()
        try:
            await consumer.wait_ready()
            client.xadd(STREAM, {"data": _event("first", 1)})  # a partial read: dispatched
            await wait_until_async(lambda: applied == ["first"])  # in the read loop, its
            client.xadd(STREAM, {"data": _event("second", 2)})  # XACK failing on the next read
            await wait_until_async(
                lambda: (
                    consumer.stats.acked >= 2
                    and client.xpending(STREAM, "drasi_ray")["pending"] == 0
                )
            )
        finally:
            await consumer.stop()
        return consumer

    consumer = asyncio.run(main())
    assert list(dict.fromkeys(applied)) == ["first", "second"]  # first seen in stream order
    assert applied.count("first") == 2  # read again from own pending after the failed XACK
    assert consumer.stats.errors == 1
    assert "riding XACK" in str(consumer.stats.last_error)


def test_an_applied_batch_keeps_only_its_ids_and_dead_letters_rejections_first(
    redis_url: str,
) -> None:
    """A batch in hand until its ack holds no payloads once applied; the entries the dispatch
    rejected were dead-lettered from them before."""
    client = _publish(redis_url, 3)
    settings = _settings(redis_url)

    async def main() -> None:
        backend = RedisStreamBackend.from_url(redis_url)
        lane = LaneState("src", settings, "src-0", STREAM, backend)
        reader = Reader(lane)
        try:
            await reader.ensure_group(recreating=False)
            entries, _full = await reader.read_new()
            screened = await reader.screen(entries, first_delivery=True)
            seen: list[Sequence[DecodedEntry]] = []

            async def dispatch(batch: Sequence[DecodedEntry]) -> object:
                seen.append(batch)
                return BatchReport(rejected=[Rejection(entries[1].id, "the pipeline failed")])

            await Dispatcher(lane, dispatch).dispatch(screened)
            assert _ids(seen[0]) == ["e0", "e1", "e2"]
            assert screened.applied.is_set()
            assert screened.ids == [entry.id for entry in entries]
            assert screened.batch is None and screened.entries == ()
            dead: Any = client.xrange(settings.dead_letter_key)
            ((_, fields),) = dead
            assert fields[b"entry_id"].decode() == entries[1].id
            assert fields[b"reason"] == b"the pipeline failed"
            published: Any = client.xrange(STREAM)
            assert fields[b"orig:data"] == published[1][1][b"data"]
        finally:
            await backend.close()

    asyncio.run(main())
