"""Reactions through the public API, against real Redis and a local Ray."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

from drasi_ray import (
    CallbackReaction,
    DrasiRay,
    JsonLinesReaction,
    LogReaction,
    PlatformReaction,
    PlatformSource,
    Query,
)
from drasi_ray.model.changes import Op, node
from drasi_ray.model.results import diffs_from_platform_event
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.conformance import diffs_match, load_scenario
from drasi_ray.testing.waiting import wait_until

SCENARIOS = Path(__file__).parent.parent / "scenarios"
CLOUD_EVENT_KEYS = {
    "id",
    "source",
    "type",
    "specversion",
    "time",
    "topic",
    "datacontenttype",
    "data",
}
SENSOR_QUERY = "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS t"


def _events(client: redis.Redis, stream: str) -> list[dict[str, Any]]:
    entries: Any = client.xrange(stream)
    return [orjson.loads(fields[b"data"]) for _, fields in entries]


def _app(redis_url: str, stream: str, source_id: str = "source") -> DrasiRay:
    app = DrasiRay(f"ops-{uuid.uuid4().hex[:8]}")
    app.add_source(
        PlatformSource.builder(source_id)
        .with_redis_url(redis_url)
        .with_stream_key(stream)
        .with_block_ms(100)
        .build()
    )
    return app


@pytest.mark.parametrize("scenario_file", ["min_value.json", "building_comfort_rooms.json"])
def test_result_stream_holds_exactly_the_drasi_cloud_events(
    ray_session: None, redis_url: str, scenario_file: str
) -> None:
    scenario = load_scenario(SCENARIOS / scenario_file)
    case = scenario["cases"][0]
    stream = f"changes-{uuid.uuid4().hex[:6]}"
    app = _app(redis_url, stream, scenario.get("source_id") or "source")
    for query_id in case["queries"]:
        app.add_query(
            Query.cypher(query_id)
            .query(scenario["queries"][query_id])
            .from_source(app.source_ids[0])
            .with_reaction(PlatformReaction())
            .build()
        )
    client = redis.Redis.from_url(redis_url)
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            bootstrap = [encode_cloud_event([event]) for event in case.get("bootstrap", [])]
            if bootstrap:
                publisher.publish(stream, bootstrap)
            app.wait_until_idle(30)
            app.flush_reactions(30)
            seen = {q: len(_events(client, f"{q}-results")) for q in case["queries"]}
            for step in case["steps"]:
                publisher.publish(stream, [encode_cloud_event([step["event"]])])
                app.wait_until_idle(30)
                app.flush_reactions(30)
                for query_id in case["queries"]:
                    events = _events(client, f"{query_id}-results")[seen[query_id] :]
                    seen[query_id] += len(events)
                    actual = [d for event in events for d in diffs_from_platform_event(event)]
                    assert diffs_match(step["expect"].get(query_id, []), actual), (query_id, actual)
    finally:
        app.stop()
    for query_id in case["queries"]:
        _check_stream(_events(client, f"{query_id}-results"), query_id)


def _check_stream(events: list[dict[str, Any]], query_id: str) -> None:
    """Drasi's envelope on every entry; change sequences strictly increase; the control
    signals frame the stream (bootstrap first, stopped last)."""
    for event in events:
        assert set(event) == CLOUD_EVENT_KEYS
        assert event["source"] == "drasi-ray"
        assert event["type"] == "com.dapr.event.sent"
        assert event["specversion"] == "1.0"
        assert event["topic"] == f"{query_id}-results"
        assert event["datacontenttype"] == "application/json"
        assert event["data"]["queryId"] == query_id
    controls = [
        e["data"]["controlSignal"]["kind"] for e in events if e["data"]["kind"] == "control"
    ]
    assert controls == ["bootstrapStarted", "bootstrapCompleted", "running", "stopped"]
    changes = [e["data"] for e in events if e["data"]["kind"] == "change"]
    sequences = [data["sequence"] for data in changes]
    assert sequences == sorted(set(sequences)) and sequences, sequences
    for data in changes:
        assert set(data) == {
            "kind", "queryId", "sequence", "sourceTimeMs",
            "addedResults", "updatedResults", "deletedResults",
        }  # fmt: skip


def _sensor(sensor_id: str, temperature: float, ts_ns: int = 1_000_000_000) -> bytes:
    element = node(sensor_id, ["Sensor"], {"id": sensor_id, "temperature": temperature})
    return encode_cloud_event([change_event(Op.UPDATE, element, ts_ns)])


def _always_fails(result: object) -> None:
    raise RuntimeError("downstream is down")


def test_a_failing_reaction_blocks_neither_the_query_nor_the_others(
    ray_session: None, redis_url: str, tmp_path: Path
) -> None:
    stream = "sensor-changes"
    app = _app(redis_url, stream, "sensors")
    jsonl = tmp_path / "hot.jsonl"
    app.add_query(
        Query.cypher("hot")
        .query(SENSOR_QUERY)
        .from_source("sensors")
        .with_reaction(CallbackReaction(function=_always_fails, queue_capacity=3))
        .with_reaction(PlatformReaction(redis_url="redis://127.0.0.1:1/0", retry_max_ms=200))
        .build()
    )
    app.add_reaction("hot", PlatformReaction())
    app.add_reaction("hot", LogReaction())
    app.start()
    app.add_reaction("hot", JsonLinesReaction(path=str(jsonl), include_control=False))
    try:
        with app.subscribe("hot") as subscription:
            with Publisher.from_url(redis_url) as publisher:
                publisher.publish(stream, [_sensor(f"s{i}", 70.0 + i) for i in range(1, 11)])
            app.wait_until_idle(30)
            assert len(subscription.drain()) == 10
        statuses = _wait_for_failures(app)
    finally:
        app.stop()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for status in statuses:
        by_kind.setdefault(status["kind"], []).append(status)
    failing_callback = by_kind["callback"][0]
    assert (
        failing_callback["failures"] >= 1 and "downstream is down" in failing_callback["last_error"]
    )
    assert failing_callback["dropped"] > 0  # queue of 3 could not hold 10 results
    unreachable, reachable = by_kind["platform"]
    assert unreachable["state"] == "retrying" and unreachable["delivered"] == 0
    assert reachable["delivered"] >= 10 and reachable["failures"] == 0
    client = redis.Redis.from_url(redis_url)
    changes = [e for e in _events(client, "hot-results") if e["data"]["kind"] == "change"]
    assert [e["data"]["sequence"] for e in changes] == list(range(1, 11))
    lines = [orjson.loads(line) for line in jsonl.read_bytes().splitlines()]
    assert [line["sequence"] for line in lines] == list(range(1, 11))
    assert lines[0]["results"] == [{"type": "ADD", "data": {"id": "s1", "t": 71.0}}]


def _wait_for_failures(app: DrasiRay) -> list[dict[str, Any]]:
    """Reaction statuses once every healthy reaction caught up and the failing ones failed."""

    def settled() -> list[dict[str, Any]] | None:
        statuses: list[dict[str, Any]] = app.status().query("hot").reactions
        healthy = [s for s in statuses if s["state"] == "running"]
        failing = [s for s in statuses if s["failures"] > 0]
        caught_up = all(s["delivered"] >= 10 for s in healthy if s["kind"] != "log")
        return statuses if len(failing) == 2 and caught_up else None

    found: list[dict[str, Any]] = wait_until(settled, what="healthy reactions caught up")
    return found


def test_sequences_continue_above_the_result_stream_after_a_restart(
    ray_session: None, redis_url: str
) -> None:
    """A new app (fresh actors, no state) numbers above what the result stream holds."""
    client = redis.Redis.from_url(redis_url)
    for round_number in (1, 2):
        app = _app(redis_url, "sensor-changes", "sensors")
        app.add_query(
            Query.cypher("hot")
            .query(SENSOR_QUERY)
            .from_source("sensors")
            .with_reaction(PlatformReaction())
            .build()
        )
        app.start()
        try:
            with Publisher.from_url(redis_url) as publisher:
                publisher.publish("sensor-changes", [_sensor(f"r{round_number}", 90.0)])
            app.wait_until_idle(30)
            app.flush_reactions(30)
        finally:
            app.stop()
    changes = [e["data"] for e in _events(client, "hot-results") if e["data"]["kind"] == "change"]
    assert [data["sequence"] for data in changes] == [1, 2]
