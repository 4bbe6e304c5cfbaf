"""Issue #33's report, as a user ran it: a chain over an aggregating query (public API, Ray and
Redis, 2 consumers, no faults).

``a`` filters sensors, ``b`` groups ``a``'s rows by room, ``c`` keeps ``b``'s groups of at least
three. An aggregating query's diffs update one group's row, so ``b``'s chained nodes are one
per group, updated in place: ``c`` must hold ``b``'s rows filtered, one per room, where it used
to hold a row for every aggregation diff ``b`` ever emitted.
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from typing import Any

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher

ROOMS = 12
SENSORS = 200
CHANGES = 600
BASE_NS = 1_700_000_000_000_000_000


def _changes(seed: int) -> tuple[list[bytes], dict[str, dict[str, Any]]]:
    """``CHANGES`` random inserts, updates and deletes of sensors, and the sensors at the end."""
    rng = random.Random(seed)
    live: dict[str, dict[str, Any]] = {}
    payloads = []
    for number in range(CHANGES):
        sensor = f"s{rng.randrange(SENSORS)}"
        properties = {"id": sensor, "room": f"r{rng.randrange(ROOMS)}", "t": rng.randrange(101)}
        if sensor in live and rng.random() < 0.15:
            op, properties = Op.DELETE, live.pop(sensor)
        else:
            op = Op.INSERT if sensor not in live else Op.UPDATE
            live[sensor] = properties
        event = change_event(op, node(sensor, ["Sensor"], properties), BASE_NS + number * 10**9)
        payloads.append(encode_cloud_event([event]))
    return payloads, live


def _grouped(sensors: dict[str, dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """``a`` grouped by room: room -> (count, max t)."""
    rooms: defaultdict[str, list[int]] = defaultdict(list)
    for sensor in sensors.values():
        if sensor["t"] > 50:
            rooms[sensor["room"]].append(sensor["t"])
    return {room: (len(ts), max(ts)) for room, ts in rooms.items()}


def test_a_chain_over_an_aggregating_query_holds_one_node_per_group(
    ray_session: None, redis_url: str
) -> None:
    stream = f"sensors-{uuid.uuid4().hex[:8]}"
    app = DrasiRay(f"issue33-{uuid.uuid4().hex[:8]}")
    app.add_source(
        PlatformSource.builder("sensors")
        .with_redis_url(redis_url)
        .with_stream_key(stream)
        .with_consumers(2)
        .with_block_ms(100)
        .build()
    )
    a = "MATCH (s:Sensor) WHERE s.t > 50 RETURN s.id AS id, s.room AS room, s.t AS t"
    b = "MATCH (r:a) RETURN r.room AS room, count(r) AS n, max(r.t) AS top"
    c = "MATCH (g:b) WHERE g.n >= 3 RETURN g.room AS room, g.n AS n"
    app.add_query(Query.cypher("a").query(a).from_source("sensors").build())
    app.add_query(Query.cypher("b").query(b).from_query("a").build())
    app.add_query(Query.cypher("c").query(c).from_query("b").build())
    payloads, sensors = _changes(seed=33)
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream, payloads)
        app.wait_until_idle(timeout=120)
        expected = _grouped(sensors)
        assert len(expected) == ROOMS
        rows_b = {row["room"]: (row["n"], row["top"]) for row in app.results("b")}
        assert rows_b == expected
        rows_c = sorted((row["room"], row["n"]) for row in app.results("c"))
        assert rows_c == sorted((room, n) for room, (n, _top) in expected.items() if n >= 3)
        assert len(rows_c) == ROOMS
    finally:
        app.stop()
