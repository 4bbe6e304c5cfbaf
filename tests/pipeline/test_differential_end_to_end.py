"""The differential test end to end: Drasi's final results against the whole app's.

The changes of a generated case (tests/differential/generator.py) are published to a Redis
stream as Drasi's platform source reads them (one CloudEvent per change), read by three
consumer actors, applied by the store shards and evaluated by the queries on their hosts (one
shard and one host, or three shards and two hosts); once the app is idle, each query's result
set must be the one drasi-lib ends with for the same changes.

Three consumers apply changes out of stream order; the versioned store makes the final graph
the in-order one, so the final result sets compare. The queries are chosen so that out-of-order
application cannot leave a trace Drasi's in-order run would not have (no group that a
transient state could create and empty: global aggregates and row queries); a ``collect`` list
compares as a multiset, since its order is the order of application.
"""

from __future__ import annotations

import uuid

import pytest

from drasi_ray.model.config import ScalingConfig
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app
from tests.differential.catalogue import CATALOGUE
from tests.differential.compare import same_multiset
from tests.differential.generator import generate_case
from tests.oracle.cases import run_oracle
from tests.oracle.model import Case

QUERY_IDS = (
    "node_properties",
    "where_and_or",
    "two_hops",
    "relation_inline_map",
    "with_projection",
    "min_max",
    "count_values",
    "aggregate_no_group",
)
QUERIES = tuple(query for query in CATALOGUE if query.id in QUERY_IDS)
LAYOUTS = [
    pytest.param(ScalingConfig(shards=1, query_hosts=1), id="K1-M1"),
    pytest.param(ScalingConfig(shards=3, query_hosts=2), id="K3-M2"),
]
SEEDS = (7, 8)
CHANGES = 60
CONSUMERS = 3


def _app_results(
    case: Case, redis_url: str, scaling: ScalingConfig
) -> dict[str, list[dict[str, object]]]:
    stream = f"differential-{case.name}-{uuid.uuid4().hex[:8]}"
    app = one_source_app(
        redis_url,
        stream,
        {query.id: query.text for query in QUERIES},
        prefix="differential",
        scaling_config=scaling,
        consumers=CONSUMERS,
        batch_size=10,
    )
    app.start()
    try:
        assert len(app.consumer_actors("source")) == CONSUMERS
        with Publisher.from_url(redis_url) as publisher:
            entries = [encode_cloud_event([change.platform_event()]) for change in case.changes]
            publisher.publish(stream, entries)
        app.wait_until_idle(60)
        return {query.id: app.results(query.id) for query in QUERIES}
    finally:
        app.stop()


@pytest.mark.parametrize("scaling", LAYOUTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_three_consumers_end_with_drasis_results(
    ray_session: None, redis_url: str, seed: int, scaling: ScalingConfig
) -> None:
    assert len(QUERIES) == len(QUERY_IDS)
    case = generate_case(seed, CHANGES)
    drasi = run_oracle([case], QUERIES)[case.name]
    ours = _app_results(case, redis_url, scaling)
    for query in QUERIES:
        theirs = drasi.queries[query.id]
        assert theirs.failure is None, theirs.failure
        assert same_multiset(theirs.results, ours[query.id], False, loose_lists=True), (
            f"{query.id}: drasi {theirs.results}\n drasi_ray {ours[query.id]}"
        )
