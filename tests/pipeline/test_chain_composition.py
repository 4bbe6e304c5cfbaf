"""Query chaining's composition test end to end (issue #33): catalogue pairs on Ray and Redis.

One pair per upstream kind (aggregating grouped and global, an aggregating WITH, OPTIONAL
MATCH with and without aggregation, a future function, a join, middleware, plain rows) in one
app (tests/pipeline/chain_app.py), over a random two-source change stream: with 1 and with 3
consumers per source, every downstream equals itself run over the upstream's final rows, the
chain holds the upstream's results and the downstream's diffs rebuild its results; and with
the upstreams' query host, the downstreams' query host and the coordinator SIGKILLed
mid-stream, the chains still converge to the same. The in-process test with every catalogue
upstream is tests/differential/test_chain_composition.py.
"""

from __future__ import annotations

import pytest

from drasi_ray.testing.drills import sigkill
from tests.differential.composition import Pair, draw_pairs
from tests.differential.generator import generate_two_source_case
from tests.pipeline.chain_app import ChainApp

UPSTREAMS = (
    "u_count_by_flag",
    "u_aggregate_no_group",
    "u_aggregating_with_where",
    "u_optional_aggregating",
    "u_optional_match",
    "u_true_for_grouped",
    "u_join_count",
    "u_unwind",
    "u_node_properties",
)
CHANGES = 160


def _pairs(seed: int) -> list[Pair]:
    pairs = [p for p in draw_pairs(seed, per_upstream=1) if p.upstream.id in UPSTREAMS]
    assert len(pairs) == len(UPSTREAMS)
    return pairs


@pytest.mark.slow
@pytest.mark.parametrize("consumers", [1, 3])
def test_chained_queries_equal_their_composition_end_to_end(
    ray_session: None, redis_url: str, consumers: int
) -> None:
    seed = 3310 + consumers
    run = ChainApp(_pairs(seed), redis_url, consumers)
    run.start()
    try:
        run.publish(generate_two_source_case(seed, CHANGES, node_pool=12))
        outcome = run.verify()
    finally:
        run.stop()
    assert outcome.changes == CHANGES and outcome.chain_entries > 20, outcome
    assert outcome.downstream_diffs > 20, outcome
    assert not outcome.errors, "\n".join(outcome.errors[:10])


@pytest.mark.slow
def test_chains_converge_through_kills_of_both_hosts_and_the_coordinator(
    ray_session: None, redis_url: str
) -> None:
    seed = 3320
    run = ChainApp(_pairs(seed), redis_url, consumers=2)
    run.start()
    victims = {
        0: ("the upstreams' host", run.upstream_host),
        1: ("the downstreams' host", run.downstream_host),
        2: ("the coordinator", run.app.coordinator_actor),
    }

    def kill(chunk: int) -> None:
        if chunk in victims:
            name, actor = victims[chunk]
            pid = sigkill(actor())
            assert pid is not None, f"{name} did not answer"
            run.outcome.kills.append(f"{name} (pid {pid}) after chunk {chunk}")

    try:
        run.publish(generate_two_source_case(seed, CHANGES, node_pool=12), between=kill)
        outcome = run.verify(replay=False)
    finally:
        run.stop()
    assert len(outcome.kills) == 3, outcome.kills
    assert not outcome.errors, "\n".join(outcome.kills + outcome.errors[:10])
