"""Query chaining through the public API, on real Redis and Ray, with restarts.

``hot`` reads a Redis source; ``hot_rows`` and ``hot_total`` read ``hot``'s results (nodes
labelled ``hot``). Mid-stream the upstream query actor, the coordinator and a downstream query
actor are killed (Ray restarts them); at the end the downstream results must be exactly what
the upstream results say: no row lost, none doubled, and the chain's row hash holds one node
per upstream row.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import ray
import redis

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher

ITEMS = 120
ROUNDS = 4


def _payloads(round_number: int) -> list[bytes]:
    op = Op.INSERT if round_number == 0 else Op.UPDATE
    return [
        encode_cloud_event(
            [
                change_event(
                    op,
                    node(
                        f"item-{item}",
                        ["Item"],
                        {"id": item, "value": (item * 7 + round_number * 13) % 100},
                    ),
                    1_000_000 * (round_number + 1),
                )
            ]
        )
        for item in range(ITEMS)
    ]


def wait_until(condition: Callable[[], bool], timeout: float) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def _final_rows() -> list[tuple[int, int]]:
    """``hot``'s rows after the last round: the items whose last value is at least 50."""
    last = ROUNDS - 1
    values = ((item, (item * 7 + last * 13) % 100) for item in range(ITEMS))
    return sorted((item, value) for item, value in values if value >= 50)


def _rows_match(app: DrasiRay, query_id: str, rows: list[tuple[int, int]]) -> bool:
    """Whether the query holds exactly ``rows`` (False while its actor restarts)."""
    try:
        return _by_id(app.results(query_id)) == rows
    except ray.exceptions.RayActorError:
        return False


def _app(url: str, stream: str) -> DrasiRay:
    app = DrasiRay(f"chain-{uuid.uuid4().hex[:8]}")
    app.add_source(
        PlatformSource.builder("items")
        .with_redis_url(url)
        .with_stream_key(stream)
        .with_consumers(2)
        .with_batch_size(40)
        .with_block_ms(100)
        .with_claim_idle_ms(1_000)
        .with_reclaim_interval_ms(200)
        .with_dispatch_buffer_capacity(1_000_000)
        .build()
    )
    hot = "MATCH (i:Item) WHERE i.value >= 50 RETURN i.id AS id, i.value AS value"
    app.add_query(Query.cypher("hot").query(hot).from_source("items").build())
    rows = "MATCH (h:hot) RETURN h.id AS id, h.value AS value"
    app.add_query(Query.cypher("hot_rows").query(rows).from_query("hot").build())
    total = "MATCH (h:hot) RETURN count(h) AS n, sum(h.value) AS total"
    app.add_query(Query.cypher("hot_total").query(total).from_query("hot").build())
    return app


def _by_id(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((row["id"], row["value"]) for row in rows)


def _killer(app: DrasiRay, victim: str) -> Callable[[], None]:
    def kill() -> None:
        if victim in ("upstream", "all"):
            ray.kill(app.query_actor("hot"), no_restart=False)
        if victim in ("coordinator", "all"):
            ray.kill(app.coordinator_actor(), no_restart=False)
        if victim in ("downstream", "all"):
            ray.kill(app.query_actor("hot_rows"), no_restart=False)

    return kill


@pytest.mark.parametrize("victim", ["upstream", "downstream", "all"])
def test_a_query_reads_another_querys_results_through_restarts(
    ray_session: None, redis_url: str, victim: str
) -> None:
    stream = f"items-{uuid.uuid4().hex[:8]}"
    app = _app(redis_url, stream)
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream, _payloads(0))
            app.wait_until_idle(timeout=120)
            assert _by_id(app.results("hot_rows")) == _by_id(app.results("hot"))
            publisher.publish(stream, _payloads(1))
            wait_until(lambda: len(app.results("hot_rows")) > 0, timeout=60)
            _killer(app, victim)()
            for round_number in range(2, ROUNDS):
                publisher.publish(stream, _payloads(round_number))
        app.wait_until_idle(timeout=180)
        # An actor killed after its last delivery restarts unseen by wait_until_idle; it
        # re-registers and catches up from the store (and the chain stream): wait for that.
        upstream = _final_rows()
        wait_until(lambda: _rows_match(app, "hot", upstream), timeout=120)
        wait_until(lambda: _rows_match(app, "hot_rows", upstream), timeout=120)
        (total,) = app.results("hot_total")
        assert total["n"] == len(upstream)
        assert total["total"] == sum(value for _id, value in upstream)
        client = redis.Redis.from_url(redis_url)
        assert client.hlen(keys.chain_rows(app.app_id, "hot")) == len(upstream)
    finally:
        app.stop()
