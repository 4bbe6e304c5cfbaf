"""Quickstart: a continuous query over a Redis stream, results printed as they change.

    python examples/quickstart.py                       # private Redis + local Ray
    python examples/quickstart.py --redis-url redis://host:6379
    ray submit cluster.yaml examples/quickstart.py -- --redis-url redis://host:6379

It publishes a few sensor changes itself (as a producer would, with XADD), then prints the
result diffs of ``MATCH (s:Sensor) WHERE s.temperature > 70 RETURN ...``.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.embedded_redis import EmbeddedRedis

QUERY = "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS temperature"


@contextlib.contextmanager
def redis_at(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with EmbeddedRedis() as server:
        yield server.url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", help="Redis to use (default: start a private one)")
    parser.add_argument("--consumers", type=int, default=2)
    args = parser.parse_args()

    with redis_at(args.redis_url) as url:
        app = DrasiRay("quickstart")
        app.add_source(
            PlatformSource.builder("sensors")
            .with_redis_url(url)
            .with_stream_key("sensor-changes")
            .with_consumers(args.consumers)
            .build()
        )
        app.add_query(Query.cypher("hot-sensors").query(QUERY).from_source("sensors").build())
        with app, app.subscribe("hot-sensors") as results:
            readings = [
                ("sensor-1", 68.0),
                ("sensor-2", 75.5),
                ("sensor-1", 71.2),
                ("sensor-2", 69.9),
            ]
            events = [
                encode_cloud_event(
                    [
                        change_event(
                            Op.UPDATE, node(sid, ["Sensor"], {"id": sid, "temperature": t}), 0
                        )
                    ]
                )
                for sid, t in readings
            ]
            with Publisher.from_url(url) as publisher:
                publisher.publish("sensor-changes", events)
            app.wait_until_idle(timeout=60)
            for result in results.drain():
                for diff in result.results:
                    print(result.sequence, diff)
            print("current results:", app.results("hot-sensors"))


if __name__ == "__main__":
    main()
