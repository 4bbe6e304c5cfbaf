"""Spark analytics beside a continuous query: the change log handed to Spark through RayDP.

    python examples/spark_analytics.py                    # private Redis + local Ray + Spark
    python examples/spark_analytics.py --sensors 50 --readings 20000
    python examples/spark_analytics.py --redis-url redis://host:6379

It publishes a sensor workload (inserts, temperature and humidity readings spread over a few
simulated minutes, some sensors retired), runs ``hot-sensors`` on it, and prints the query's
result next to Spark's change counts per minute, property statistics and latest state; then it
exports the change log as Parquet partitioned by date. Spark needs Java 17 (see docs/operations.md).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import tempfile
from collections.abc import Iterator

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import AnalyticsConfig
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.embedded_redis import EmbeddedRedis

QUERY = "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS temperature"
STREAM = "sensor-changes"
START_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z


@contextlib.contextmanager
def redis_at(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with EmbeddedRedis() as server:
        yield server.url


def workload(sensors: int, readings: int, seed: int = 11) -> Iterator[bytes]:
    """Insert the sensors, stream readings over ~5 simulated minutes, retire every tenth."""
    rng = random.Random(seed)
    ids = [f"sensor-{i}" for i in range(sensors)]
    for index, sensor_id in enumerate(ids):
        yield _event(Op.INSERT, sensor_id, 65.0 + index % 10, 40.0, START_NS)
    step_ns = 300 * 1_000_000_000 // max(1, readings)
    for reading in range(readings):
        sensor_id = rng.choice(ids)
        temperature = round(rng.gauss(68.0, 4.0), 1)
        humidity = round(rng.uniform(30.0, 60.0), 1)
        yield _event(Op.UPDATE, sensor_id, temperature, humidity, START_NS + reading * step_ns)
    for sensor_id in ids[::10]:
        yield _event(Op.DELETE, sensor_id, 0.0, 0.0, START_NS + 300 * 1_000_000_000)


def _event(op: Op, sensor_id: str, temperature: float, humidity: float, ts_ns: int) -> bytes:
    properties = {"id": sensor_id, "temperature": temperature, "humidity": humidity}
    element = node(sensor_id, ["Sensor"], properties)
    return encode_cloud_event([change_event(op, element, ts_ns, db="sensors")])


def build_app(url: str, consumers: int) -> DrasiRay:
    app = DrasiRay("spark-analytics", analytics_config=AnalyticsConfig(enabled=True))
    app.add_source(
        PlatformSource.builder("sensors")
        .with_redis_url(url)
        .with_stream_key(STREAM)
        .with_consumers(consumers)
        .with_batch_size(1000)
        .build()
    )
    app.add_query(Query.cypher("hot-sensors").query(QUERY).from_source("sensors").build())
    return app


def report(app: DrasiRay) -> None:
    analytics = app.analytics
    print(f"hot sensors (continuous query): {len(app.results('hot-sensors'))} rows")
    print(f"change log: {analytics.flush()} changes; {analytics.stats()['bytes_in_store']} bytes")
    print("\nchanges per minute x label x op (Spark):")
    analytics.change_counts("1 minute").show(truncate=False)
    print("numeric properties of Sensor (Spark):")
    analytics.property_stats("Sensor").show(truncate=False)
    latest = analytics.latest_state()
    print(f"latest state: {latest.count()} sensors (element store: {len(app.elements('sensors'))})")
    latest.select("element_id", "prop_temperature", "prop_humidity").orderBy("element_id").show(5)
    with tempfile.TemporaryDirectory() as directory:
        exported = analytics.export_parquet(f"{directory}/changes")
        print(f"exported {exported.files} Parquet file(s) for dates {list(exported.dates)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", help="Redis to use (default: start a private one)")
    parser.add_argument("--sensors", type=int, default=20)
    parser.add_argument("--readings", type=int, default=5000)
    parser.add_argument("--consumers", type=int, default=2)
    args = parser.parse_args()

    with redis_at(args.redis_url) as url:
        app = build_app(url, args.consumers)
        with app:
            with Publisher.from_url(url) as publisher:
                publisher.publish(STREAM, workload(args.sensors, args.readings))
            app.wait_until_idle(timeout=120)
            report(app)


if __name__ == "__main__":
    main()
