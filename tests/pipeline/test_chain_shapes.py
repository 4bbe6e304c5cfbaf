"""Chains of three and a diamond (issue #33, item 3), through the public API on Ray and Redis.

``a`` reads a Redis source (rows of equal values included); ``b`` groups ``a``'s rows and ``c``
filters ``b``'s groups (a -> b -> c); ``b2`` filters ``a``'s rows and ``c2`` counts them by name,
both reading ``a``, and ``d`` reads both, joined on the name (a diamond: ``d`` reads two
chained queries, under their graph ids). Over a random change stream every query equals
itself run in process over a graph built from the rows its upstreams' chains hold, and every
chain holds its query's results.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any, cast

import pytest
import redis

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model import keys
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.waiting import wait_until
from tests.differential.composition import (
    mismatches,
    oracle_results,
    row_mismatches,
    upstream_rows,
)
from tests.differential.generator import generate_case
from tests.oracle.model import QuerySpec

SAME = {
    "id": "SAME",
    "keys": [{"label": "b2", "property": "name"}, {"label": "c2", "property": "name"}],
}
QUERIES = (
    QuerySpec("a", "MATCH (n:A) RETURN n.name AS name, n.x AS x, n.flag AS flag", sources=("s",)),
    QuerySpec(
        "b",
        "MATCH (r:a) RETURN r.flag AS flag, count(r) AS n, sum(r.x) AS total, "
        "collect(r.name) AS names",
        sources=("a",),
    ),
    QuerySpec(
        "c", "MATCH (g:b) WHERE g.n > 1 RETURN g.flag AS flag, g.total AS total", sources=("b",)
    ),
    QuerySpec("b2", "MATCH (r:a) WHERE r.x > 1 RETURN r.name AS name, r.x AS x", sources=("a",)),
    QuerySpec("c2", "MATCH (r:a) RETURN r.name AS name, count(r) AS n", sources=("a",)),
    QuerySpec(
        "d",
        "MATCH (p:b2)-[:SAME]->(q:c2) "
        "RETURN elementId(p) AS p, elementId(q) AS q, p.x AS x, q.n AS n",
        (SAME,),
        sources=("b2", "c2"),
    ),
)


@pytest.mark.slow
def test_chains_of_three_and_a_diamond_equal_their_compositions(
    ray_session: None, redis_url: str
) -> None:
    stream = f"shapes-{uuid.uuid4().hex[:8]}"
    app = DrasiRay(f"shapes-{uuid.uuid4().hex[:8]}")
    app.add_source(
        PlatformSource.builder("s")
        .with_redis_url(redis_url)
        .with_stream_key(stream)
        .with_consumers(2)
        .with_block_ms(100)
        .build()
    )
    for spec in QUERIES:
        builder = Query.cypher(spec.id).query(spec.text)
        for source in spec.sources:
            builder.from_source(source)
        for join in spec.joins:
            builder.with_join(join["id"], *((k["label"], k["property"]) for k in join["keys"]))
        app.add_query(builder.build())
    case = generate_case(3330, 300, node_pool=14)
    app.start()
    try:
        payloads = [encode_cloud_event([change.platform_event()]) for change in case.changes]
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish(stream, payloads)
        app.wait_until_idle(timeout=180)
        problems: list[str] = []

        def composed() -> bool:
            problems[:] = _problems(app, redis_url)
            return not problems

        with contextlib.suppress(TimeoutError):  # the assertion below says what differs
            wait_until(composed, 60, what="every level equals its composition", poll_s=0.5)
        assert not problems, "\n".join(problems)
        sizes = {spec.id: len(app.results(spec.id)) for spec in QUERIES}
        assert all(sizes.values()), sizes  # every level holds rows: the check compared some
    finally:
        app.stop()


def _problems(app: DrasiRay, url: str) -> list[str]:
    client = redis.Redis.from_url(url)
    chained = {source for spec in QUERIES for source in spec.sources} - {"s"}
    rows = {
        query_id: upstream_rows(cast(Any, client.hgetall(keys.chain_rows(app.app_id, query_id))))
        for query_id in chained
    }
    found = []
    for spec in QUERIES:
        results = app.results(spec.id)
        if spec.id in rows:
            problem = row_mismatches(spec.id, results, list(rows[spec.id].values()))
            if problem:
                found.append(f"chain: {problem}")
        if spec.sources != ("s",):
            expected = oracle_results(spec, {source: rows[source] for source in spec.sources})
            problem = mismatches(spec, expected, results)
            if problem:
                found.append(f"composition: {problem}")
    return found
