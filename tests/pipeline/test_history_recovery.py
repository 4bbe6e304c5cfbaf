"""A query calling Drasi's past functions keeps its element history across actor restarts.

The history lives with the coordinator and in Redis (drasi_ray.model.history), so a restarted
query actor gets it back with its bootstrap, and a restarted coordinator reloads it: after a
kill the query answers from versions it received before the kill as if nothing happened.
"""

from __future__ import annotations

import uuid

import pytest
import ray

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher

ITEMS = 12
VERSIONS = 6
KILLED_AFTER = 3
"""Rounds published before the kill (each round: one new version of every item)."""
QUERY = (
    "MATCH (i:Item) RETURN i.id AS id,"
    " [v IN drasi.getVersionsByTimeRange(i, 0, 100000) | v.value] AS history,"
    " drasi.getVersionByTimestamp(i, 2500).value AS at_2500"
)


def _round(version: int) -> list[bytes]:
    """Version ``version`` of every item, at (version + 1) seconds."""
    op = Op.INSERT if version == 0 else Op.UPDATE
    return [
        encode_cloud_event(
            [
                change_event(
                    op,
                    node(f"item-{item}", ["Item"], {"id": item, "value": version}),
                    (version + 1) * 1_000_000_000,
                )
            ]
        )
        for item in range(ITEMS)
    ]


def _expected(max_versions: int) -> list[dict[str, object]]:
    kept = list(range(VERSIONS))[-max_versions:]
    return [{"id": item, "history": kept, "at_2500": 1} for item in range(ITEMS)]


@pytest.mark.parametrize("victim", ["query", "coordinator"])
def test_history_survives_a_restart(ray_session: None, redis_url: str, victim: str) -> None:
    stream = f"history-{uuid.uuid4().hex[:8]}"
    app = DrasiRay(f"history-{uuid.uuid4().hex[:8]}")
    app.add_source(
        PlatformSource.builder("items")
        .with_redis_url(redis_url)
        .with_stream_key(stream)
        .with_consumers(3)
        .with_batch_size(5)
        .with_block_ms(100)
        .build()
    )
    query = Query.cypher("past").query(QUERY).from_source("items").with_history(max_versions=5)
    app.add_query(query.build())
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            for version in range(VERSIONS):
                if version == KILLED_AFTER:
                    handle = app.query_actor("past") if victim == "query" else None
                    ray.kill(handle or app.coordinator_actor(), no_restart=False)
                # one round at a time: each element's versions arrive in order on any consumer
                publisher.publish(stream, _round(version))
                app.wait_until_idle(timeout=120)
        rows = sorted(app.results("past"), key=lambda row: row["id"])
        assert rows == _expected(max_versions=5)
    finally:
        app.stop()
