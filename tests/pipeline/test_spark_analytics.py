"""Analytics through the public API: real Redis, local Ray, Spark on RayDP (one session)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from statistics import mean
from typing import Any

import orjson
import pyarrow.dataset as pads
import pytest
import redis
from pyspark.sql import SparkSession

from drasi_ray import DrasiRay, PlatformSource
from drasi_ray.analytics.jobs import ExportProgress
from drasi_ray.model import keys
from drasi_ray.model.changes import Element, Op, node, relation
from drasi_ray.model.config import AnalyticsConfig
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher

pytestmark = pytest.mark.slow

STREAM = "graph-changes"
MINUTE_NS = 60 * 1_000_000_000
T0_NS = 1_700_000_040 * 1_000_000_000  # 2023-11-14T22:14:00Z, a minute boundary


def _event(op: Op, element: Element, ts_ns: int) -> bytes:
    return encode_cloud_event([change_event(op, element, ts_ns)])


def workload() -> list[tuple[Op, Element, int]]:
    """Sensors and rooms over three minutes: inserts, updates, a relation, deletes."""
    events: list[tuple[Op, Element, int]] = []
    for i in range(6):
        sensor = node(f"s{i}", ["Sensor"], {"id": f"s{i}", "temperature": 60.0 + i})
        events.append((Op.INSERT, sensor, T0_NS + i))
    events.append((Op.INSERT, node("r1", ["Room", "Space"], {"floor": 1}), T0_NS + 10))
    events.append((Op.INSERT, relation("in1", ["IN"], "s0", "r1", {"since": 2020}), T0_NS + 11))
    for step in range(12):
        sensor_id = f"s{step % 6}"
        reading = node(sensor_id, ["Sensor"], {"temperature": 70.0 + step, "humidity": 40 + step})
        events.append((Op.UPDATE, reading, T0_NS + MINUTE_NS + step))
    events.append((Op.DELETE, node("s5", ["Sensor"], {}), T0_NS + 2 * MINUTE_NS))
    events.append((Op.DELETE, relation("in1", ["IN"], "s0", "r1", {}), T0_NS + 2 * MINUTE_NS + 1))
    return events


def expected_counts(events: list[tuple[Op, Element, int]]) -> Counter[tuple[int, str, str]]:
    """(minute, label, op) -> changes, counted the way change_counts does."""
    names = {Op.INSERT: "insert", Op.UPDATE: "update", Op.DELETE: "delete"}
    counts: Counter[tuple[int, str, str]] = Counter()
    for op, element, ts_ns in events:
        for label in element.labels:
            counts[(ts_ns // MINUTE_NS * 60, label, names[op])] += 1
    return counts


def make_app(redis_url: str, **analytics: Any) -> DrasiRay:
    config = AnalyticsConfig(enabled=True, **analytics)
    app = DrasiRay(f"analytics-{uuid.uuid4().hex[:8]}", analytics_config=config)
    app.add_source(
        PlatformSource.builder("graph")
        .with_redis_url(redis_url)
        .with_stream_key(STREAM)
        .with_block_ms(100)
        .build()
    )
    return app


@pytest.fixture
def app(spark_session: SparkSession, redis_url: str) -> Iterator[DrasiRay]:
    app = make_app(redis_url)
    app.start()
    yield app
    app.stop()


def publish(redis_url: str, events: list[tuple[Op, Element, int]]) -> None:
    with Publisher.from_url(redis_url) as publisher:
        publisher.publish(STREAM, [_event(op, element, ts) for op, element, ts in events])


def counts_of(app: DrasiRay) -> Counter[tuple[int, str, str]]:
    rows = app.analytics.change_counts("1 minute").collect()
    return Counter({(int(r.window_start.timestamp()), r.label, r.op): r["count"] for r in rows})


def state_of(elements: list[Element]) -> dict[str, tuple[Any, ...]]:
    return {
        e.id: (e.kind.value, tuple(e.labels), dict(e.properties), e.start_id, e.end_id)
        for e in elements
    }


def latest_of(app: DrasiRay, as_of_ms: int | None = None) -> dict[str, tuple[Any, ...]]:
    rows = app.analytics.latest_state(as_of_ms).collect()
    return {
        r.element_id: (r.kind, tuple(r.labels), orjson.loads(r.properties), r.start_id, r.end_id)
        for r in rows
    }


def test_counts_per_window_label_and_op_match_what_was_published(
    app: DrasiRay, redis_url: str
) -> None:
    events = workload()
    publish(redis_url, events)
    app.wait_until_idle(60)
    assert counts_of(app) == expected_counts(events)
    assert app.analytics.stats()["rows"] == len(events)


def test_duplicates_and_redeliveries_are_not_counted_twice(app: DrasiRay, redis_url: str) -> None:
    events = workload()
    # The first five events XADDed twice: new entries (newer versions), the same content.
    publish(redis_url, events[:5] + events[:5] + events[5:])
    app.wait_until_idle(60)
    client = redis.Redis.from_url(redis_url)
    client.xgroup_setid(STREAM, keys.consumer_group(app.app_id), "0")  # all delivered again
    app.wait_until_idle(60)
    totals = app.status().totals
    assert totals.duplicates >= len(events) + 5  # they did reach the coordinator
    assert counts_of(app) == expected_counts(events)
    assert app.analytics.flush() == len(events)


def test_latest_state_equals_the_element_store(app: DrasiRay, redis_url: str) -> None:
    publish(redis_url, workload())
    app.wait_until_idle(60)
    store = state_of(app.elements("graph"))
    assert latest_of(app) == store
    assert (
        "s5" not in store
        and "in1" not in store
        and store["s0"][2]
        == {
            "id": "s0",
            "temperature": 76.0,
            "humidity": 46,
        }
    )


def test_latest_state_as_of_a_time_is_the_state_then(app: DrasiRay, redis_url: str) -> None:
    publish(redis_url, workload())
    app.wait_until_idle(60)
    before_updates = latest_of(app, as_of_ms=(T0_NS + MINUTE_NS) // 1_000_000 - 1)
    assert sorted(before_updates) == ["in1", "r1", "s0", "s1", "s2", "s3", "s4", "s5"]
    assert before_updates["s3"][2] == {"id": "s3", "temperature": 63.0}
    assert latest_of(app, as_of_ms=T0_NS // 1_000_000 - 1) == {}


def test_property_stats_per_label(app: DrasiRay, redis_url: str) -> None:
    events = workload()
    publish(redis_url, events)
    app.wait_until_idle(60)
    stats = {row.property: row for row in app.analytics.property_stats("Sensor").collect()}
    assert sorted(stats) == ["humidity", "temperature"]  # "id" is a string: no statistics
    temperatures = [60.0 + i for i in range(6)] + [70.0 + step for step in range(12)]
    temperature = stats["temperature"]
    assert temperature["count"] == len(temperatures)
    assert temperature["mean"] == pytest.approx(mean(temperatures))
    assert (temperature["min"], temperature["max"]) == (60.0, 81.0)
    assert temperature["p50"] in temperatures and temperature["stddev"] > 0
    assert stats["humidity"]["count"] == 12
    assert app.analytics.property_stats("Nobody").collect() == []


def test_parquet_export_round_trips(app: DrasiRay, redis_url: str, tmp_path: Path) -> None:
    events = workload()
    publish(redis_url, events)
    app.wait_until_idle(60)
    seen: list[ExportProgress] = []
    result = app.analytics.export_parquet(str(tmp_path / "export"), progress=seen.append)
    assert result.dates == ("2023-11-14",) and result.files >= 1
    assert seen and seen[-1].done_tasks == seen[-1].total_tasks > 0
    exported = pads.dataset(result.path, format="parquet", partitioning="hive").to_table()
    logged = app.analytics.dataframe().collect()
    assert exported.num_rows == len(logged) == len(events)
    key = ("stream_id", "change_index", "op", "element_id", "properties")
    assert sorted(tuple(row[k] for k in key) for row in exported.to_pylist()) == sorted(
        tuple(row[k] for k in key) for row in logged
    )


def test_spilled_changes_still_reach_spark(
    spark_session: SparkSession, redis_url: str, tmp_path: Path
) -> None:
    # Every sealed block exceeds one byte: each seal spills, whatever the batching.
    app = make_app(redis_url, spill_bytes=1, flush_every_changes=5, spill_dir=str(tmp_path))
    app.start()
    try:
        events = workload()
        publish(redis_url, events)
        app.wait_until_idle(60)
        app.analytics.flush()
        stats = app.analytics.stats()
        assert stats["spilled_files"] >= 1 and stats["bytes_in_store"] == 0
        assert counts_of(app) == expected_counts(events)
        assert latest_of(app) == state_of(app.elements("graph"))
    finally:
        app.stop()
    assert not any(tmp_path.rglob("*.parquet"))  # spilled files go with the app
