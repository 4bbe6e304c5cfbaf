"""The HTTP reaction's relay against a real Redis and a real HTTP server (no Ray): order,
idempotency keys, resuming from the recorded position, 500s, timeouts, refusals, the server
going away, the lag bound and unreadable entries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import orjson
import pytest
import redis

from drasi_ray.model import encoding, keys
from drasi_ray.model.reaction_specs import HttpCall, HttpQueryCalls, HttpReaction
from drasi_ray.model.results import QueryResult, platform_change_event
from drasi_ray.reactions.http import HttpEndpoint
from drasi_ray.reactions.relay import Position, RelaySettings, StreamRelay
from drasi_ray.testing.http_sink import HttpSink
from drasi_ray.testing.waiting import wait_until_async

APP = "relay-test"
STREAM = keys.result_stream("hot")


@pytest.fixture(scope="module")
def sink() -> Iterator[HttpSink]:
    with HttpSink() as server:
        yield server


@pytest.fixture
def fresh_sink(sink: HttpSink) -> HttpSink:
    sink.clear()
    return sink


def _spec(url: str, **options: Any) -> HttpReaction:
    calls = HttpQueryCalls(
        added=HttpCall(url="/sensors/{{after.id}}", method="PUT", body='{"t": {{json after.t}}}'),
        updated=HttpCall(url="/sensors/{{after.id}}", method="PATCH", body='{"t": {{after.t}}}'),
        deleted=HttpCall(url="/sensors/{{before.id}}", method="DELETE"),
    )
    return HttpReaction(id="hooks", base_url=url, queries={"hot": calls}, **options)


def _publish(client: redis.Redis, sequence: int, *diffs: dict[str, Any]) -> None:
    result = QueryResult("hot", sequence, 0, 0, tuple(diffs))
    client.xadd(STREAM, {"data": encoding.dumps(platform_change_event(result))})


def _add(row_id: str, t: float = 71.0) -> dict[str, Any]:
    return {"type": "ADD", "data": {"id": row_id, "t": t}}


def _relay(redis_url: str, spec: HttpReaction) -> StreamRelay:
    settings = RelaySettings(
        reaction_id=spec.id,
        kind="http",
        app_id=APP,
        redis_url=redis_url,
        streams={"hot": STREAM},
        max_attempts=spec.max_attempts,
        retry_initial_ms=spec.retry_initial_ms,
        retry_max_ms=spec.retry_max_ms,
        max_lag=spec.max_lag,
        block_ms=50,
    )
    return StreamRelay(settings, HttpEndpoint(spec, None))


def _run(redis_url: str, spec: HttpReaction, body: Callable[[StreamRelay], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        relay = _relay(redis_url, spec)
        relay.start()
        try:
            await wait_until_async(lambda: relay.progress["hot"].position is not None)
            return await body(relay)
        finally:
            await relay.stop()

    return asyncio.run(main())


async def _flushed(relay: StreamRelay) -> None:
    assert await relay.flush(20.0), relay.report()


def _keyed(sink: HttpSink, key: str) -> list[Any]:
    return [item for item in sink.received if item.key == key]


def _dead_letters(client: redis.Redis) -> list[dict[str, str]]:
    entries = client.xrange(keys.reaction_dead_letters(APP, "hooks"))
    return [{k.decode(): v.decode() for k, v in fields.items()} for _id, fields in entries]


def test_diffs_arrive_in_order_with_their_keys_and_a_restart_resumes_without_repeats(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)
    _publish(client, 1, _add("before-start"))  # in the stream before the reaction began
    spec = _spec(fresh_sink.url)

    async def first(relay: StreamRelay) -> None:
        _publish(client, 2, _add("s1", 70.5))
        update = {
            "type": "UPDATE",
            "before": {"id": "s1", "t": 70.5},
            "after": {"id": "s1", "t": 72},
        }
        _publish(client, 3, update, {"type": "DELETE", "data": {"id": "s0", "t": 1}})
        await _flushed(relay)

    _run(redis_url, spec, first)
    _publish(client, 4, _add("while-down"))

    _run(redis_url, spec, _flushed)
    got = [(r.method, r.path, r.body, r.key) for r in fresh_sink.received]
    assert got == [
        ("PUT", "/sensors/s1", b'{"t": 70.5}', "hot:2:0"),
        ("PATCH", "/sensors/s1", b'{"t": 72}', "hot:3:0"),
        ("DELETE", "/sensors/s0", b"", "hot:3:1"),
        ("PUT", "/sensors/while-down", b'{"t": 71.0}', "hot:4:0"),
    ]
    raw = client.hget(keys.reaction_positions(APP, "hooks"), "hot")
    assert Position.loads(raw).sequence == 4  # type: ignore[arg-type]


def test_a_restart_inside_a_result_sends_only_what_was_not_done(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)
    _publish(client, 1, _add("a"), _add("b"), _add("c"))
    entries: Any = client.xrange(STREAM)
    entry_id = entries[0][0].decode()
    position = Position(entry_id, 1, done=1, total=3)  # died after sending "a"
    client.hset(keys.reaction_positions(APP, "hooks"), "hot", position.dumps())
    _run(redis_url, _spec(fresh_sink.url), _flushed)
    assert [r.key for r in fresh_sink.received] == ["hot:1:1", "hot:1:2"]


def test_500s_and_timeouts_are_retried_and_delivered_in_order(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)
    spec = _spec(fresh_sink.url, timeout_ms=300, retry_initial_ms=10, retry_max_ms=50)

    async def body(relay: StreamRelay) -> dict[str, Any]:
        fresh_sink.fail(2, 503)
        _publish(client, 1, _add("a"))
        await _flushed(relay)
        fresh_sink.stall(1, 0.6)  # answered after the client gave up: a timeout
        _publish(client, 2, _add("b"))
        _publish(client, 3, _add("c"))
        await _flushed(relay)
        # the stalled request is recorded once its answer is out: wait for it here, not later
        await wait_until_async(lambda: len(_keyed(fresh_sink, "hot:2:0")) == 2)
        return relay.report().as_dict()

    report = _run(redis_url, spec, body)
    assert [r.key for r in fresh_sink.first_receipts()] == ["hot:1:0", "hot:2:0", "hot:3:0"]
    statuses = [r.status for r in fresh_sink.received if r.key == "hot:1:0"]
    assert statuses == [503, 503, 200]
    assert report["failures"] == 3
    assert report["dead_lettered"] == 0
    assert "timed out after 300 ms" in report["last_error"]


def test_a_refused_call_and_one_out_of_attempts_are_dead_lettered_and_delivery_goes_on(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)
    spec = _spec(fresh_sink.url, max_attempts=2, retry_initial_ms=10, retry_max_ms=20)

    async def body(relay: StreamRelay) -> None:
        fresh_sink.fail(1, 400)
        _publish(client, 1, _add("refused"))
        await _flushed(relay)
        fresh_sink.fail(2, 500)
        _publish(client, 2, _add("exhausted"))
        _publish(client, 3, _add("fine"))
        await _flushed(relay)

    _run(redis_url, spec, body)
    assert [r.key for r in fresh_sink.delivered()] == ["hot:3:0"]
    letters = _dead_letters(client)
    assert [(d["key"], d["attempts"], d["request"]) for d in letters] == [
        ("hot:1:0", "1", f"PUT {fresh_sink.url}/sensors/refused"),
        ("hot:2:0", "2", f"PUT {fresh_sink.url}/sensors/exhausted"),
    ]
    assert letters[0]["reason"] == "HTTP 400: sink says no"
    assert letters[1]["reason"] == "HTTP 500: sink says no"
    assert orjson.loads(letters[0]["diff"]) == _add("refused")


def test_a_server_that_goes_away_gets_everything_in_order_when_it_comes_back(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)
    spec = _spec(fresh_sink.url, max_attempts=1000, retry_initial_ms=10, retry_max_ms=100)

    async def body(relay: StreamRelay) -> dict[str, Any]:
        fresh_sink.go_away()
        try:
            for sequence in range(1, 6):
                _publish(client, sequence, _add(f"s{sequence}"))
            await wait_until_async(lambda: relay.progress["hot"].failures >= 3)
            report = relay.report().as_dict()
        finally:
            fresh_sink.come_back()
        await _flushed(relay)
        return report

    while_away = _run(redis_url, spec, body)
    assert while_away["state"] == "retrying"
    assert while_away["lag"] == 5
    assert "ClientConnectorError" in while_away["last_error"]
    assert [r.key for r in fresh_sink.received] == [f"hot:{n}:0" for n in range(1, 6)]


def test_results_beyond_max_lag_go_to_the_dead_letters_unsent(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)
    spec = _spec(fresh_sink.url, max_attempts=1000, retry_initial_ms=10, retry_max_ms=20, max_lag=3)

    async def body(relay: StreamRelay) -> None:
        fresh_sink.go_away()
        try:
            _publish(client, 1, _add("s1"))
            await wait_until_async(lambda: relay.progress["hot"].failures >= 1)
            for sequence in range(2, 9):
                _publish(client, sequence, _add(f"s{sequence}"))
            await wait_until_async(lambda: relay.progress["hot"].dead_lettered >= 4)
        finally:
            fresh_sink.come_back()
        await _flushed(relay)

    _run(redis_url, spec, body)
    letters = _dead_letters(client)
    assert [d["key"] for d in letters] == [f"hot:{n}:0" for n in range(1, 5)]
    assert all("max_lag (3)" in d["reason"] for d in letters)
    assert [r.key for r in fresh_sink.delivered()] == [f"hot:{n}:0" for n in range(5, 9)]


def test_an_unreadable_result_entry_is_dead_lettered_with_its_reason(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)

    async def body(relay: StreamRelay) -> None:
        client.xadd(STREAM, {"data": b"{not json"})
        _publish(client, 2, _add("next"))
        await _flushed(relay)

    _run(redis_url, _spec(fresh_sink.url), body)
    (letter,) = _dead_letters(client)
    assert letter["reason"].startswith("unreadable result entry (JSONDecodeError")
    assert letter["orig:data"] == "{not json"
    assert [r.key for r in fresh_sink.received] == ["hot:2:0"]


def test_with_batch_path_diffs_of_several_results_go_together_in_order(
    redis_url: str, fresh_sink: HttpSink
) -> None:
    client = redis.Redis.from_url(redis_url)
    spec = _spec(
        fresh_sink.url,
        batch_path="/batch",
        max_batch=3,
        max_attempts=1000,
        retry_initial_ms=10,
        retry_max_ms=20,
    )

    async def body(relay: StreamRelay) -> None:
        fresh_sink.go_away()
        try:
            for sequence in range(1, 5):
                _publish(client, sequence, _add(f"s{sequence}"))
            _publish(client, 5, _add("s5"), {"type": "DELETE", "data": {"id": "s1", "t": 1}})
            await wait_until_async(lambda: relay.progress["hot"].latest_sequence == 5)
        finally:
            fresh_sink.come_back()
        await _flushed(relay)

    _run(redis_url, spec, body)
    batches = [[diff["idempotencyKey"] for diff in r.json()] for r in fresh_sink.delivered()]
    assert {r.path for r in fresh_sink.delivered()} == {"/batch"}
    keys = ["hot:1:0", "hot:2:0", "hot:3:0", "hot:4:0", "hot:5:0", "hot:5:1"]
    assert [key for batch in batches for key in batch] == keys
    assert max(len(batch) for batch in batches) == 3  # several results' diffs, up to max_batch
    assert fresh_sink.delivered()[-1].json()[-1] == {
        "queryId": "hot",
        "sequence": 5,
        "kind": "deleted",
        "before": {"id": "s1", "t": 1},
        "after": None,
        "idempotencyKey": "hot:5:1",
    }
