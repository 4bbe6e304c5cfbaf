"""Curbside pickup: a continuous query joining two sources that share no relation.

    python examples/curbside/curbside.py                    # private Redis + local Ray
    python examples/curbside/curbside.py --redis-url redis://host:6379

The retail system writes orders to the stream ``retail-changes``; the parking-lot cameras write
cars to ``physical-changes``. Neither knows the other: the only thing they share is a licence
plate. The query declares the relation ``PICKED_UP_BY`` as a join on ``Order.plate =
Vehicle.plate`` (Drasi's synthetic join), and the camera feed's ``Car`` label becomes
``Vehicle`` through a ``relabel`` middleware on that source. The script plays a short story,
step by step, and prints every result diff the story causes (README.md beside it walks
through it).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.embedded_redis import EmbeddedRedis

READY_AT_CURB = """
MATCH (o:Order)-[:PICKED_UP_BY]->(v:Vehicle)
WHERE o.status = 'ready' AND v.location = 'curbside'
RETURN o.id AS order, o.customer AS customer, v.plate AS plate
"""

STORY: list[tuple[str, str, Op, str, list[str], dict[str, Any]]] = [
    ("Ann orders; the kitchen starts cooking", "retail-changes", Op.INSERT, "order-1",
     ["Order"], {"id": "order-1", "customer": "Ann", "plate": "ABC-123", "status": "cooking"}),
    ("Bob orders too", "retail-changes", Op.INSERT, "order-2",
     ["Order"], {"id": "order-2", "customer": "Bob", "plate": "XYZ-789", "status": "cooking"}),
    ("Ann's car enters the lot", "physical-changes", Op.INSERT, "car-1",
     ["Car"], {"plate": "ABC-123", "location": "parking"}),
    ("Ann's order is ready (her car is not at the curb yet)", "retail-changes", Op.UPDATE,
     "order-1", ["Order"], {"status": "ready"}),
    ("Ann drives to the curb: the order shows up", "physical-changes", Op.UPDATE, "car-1",
     ["Car"], {"location": "curbside"}),
    ("Bob's car is already at the curb", "physical-changes", Op.INSERT, "car-2",
     ["Car"], {"plate": "XYZ-789", "location": "curbside"}),
    ("Bob's order is ready: it shows up at once", "retail-changes", Op.UPDATE, "order-2",
     ["Order"], {"status": "ready"}),
    ("Ann's order is handed over", "retail-changes", Op.UPDATE, "order-1",
     ["Order"], {"status": "delivered"}),
    ("Bob's car turns out to be another plate: the join breaks", "physical-changes", Op.UPDATE,
     "car-2", ["Car"], {"plate": "XYZ-780"}),
]  # fmt: skip


@contextlib.contextmanager
def redis_at(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with EmbeddedRedis() as server:
        yield server.url


def build_app(url: str) -> DrasiRay:
    app = DrasiRay("curbside")
    for source_id, stream in (("retail", "retail-changes"), ("physical", "physical-changes")):
        app.add_source(
            PlatformSource.builder(source_id)
            .with_redis_url(url)
            .with_stream_key(stream)
            .with_block_ms(100)
            .build()
        )
    app.add_query(
        Query.cypher("ready-at-curb")
        .query(READY_AT_CURB)
        .from_source("retail")
        .from_source("physical", pipeline=["cars-are-vehicles"])
        .with_middleware("cars-are-vehicles", "relabel", {"labelMappings": {"Car": "Vehicle"}})
        .with_join("PICKED_UP_BY", ("Order", "plate"), ("Vehicle", "plate"))
        .build()
    )
    return app


def play(app: DrasiRay, publisher: Publisher) -> None:
    with app.subscribe("ready-at-curb") as results:
        for number, (what, stream, op, element_id, labels, properties) in enumerate(STORY, 1):
            element = node(element_id, labels, properties)
            event = change_event(op, element, number * 1_000_000_000)
            publisher.publish(stream, [encode_cloud_event([event])])
            app.wait_until_idle(timeout=60)
            print(f"{number}. {what}")
            for result in results.drain():
                for diff in result.results:
                    print(f"     {_describe(diff)}")
    print("ready at the curb now:", app.results("ready-at-curb"))


def _describe(diff: dict[str, Any]) -> str:
    if diff["type"] == "UPDATE":
        return f"UPDATE {diff['before']} -> {diff['after']}"
    return f"{diff['type']} {diff['data']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", help="Redis to use (default: start a private one)")
    args = parser.parse_args()
    with redis_at(args.redis_url) as url:
        app = build_app(url)
        with app, Publisher.from_url(url) as publisher:
            play(app, publisher)


if __name__ == "__main__":
    main()
