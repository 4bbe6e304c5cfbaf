"""Query chaining's composition test, in process (issue #33; tests/differential/composition.py).

Every upstream of the catalogue (aggregating, WITH, OPTIONAL MATCH, joins, middleware, future
functions, plain) paired with two catalogue downstreams that read its columns, over random
two-source change streams, with upstreams rebuilt mid-stream: after every change the chain
holds the upstream's result set by row id, the downstream's store holds those nodes and its
diffs rebuild its result set; at the end each downstream equals itself run over a graph built
from the upstream's final rows. The end-to-end runs are tests/pipeline/test_chain_composition.py;
``python -m bench.chain_composition`` runs this at length.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest

from tests.differential.catalogue import CATALOGUE
from tests.differential.composition import InProcessChain, Pair, draw_pairs
from tests.differential.generator import generate_two_source_case
from tests.oracle.model import QuerySpec

SEEDS = range(3300, 3306)
CHANGES = 70
RESTARTS = 3


def test_the_pairs_cover_every_kind_of_upstream() -> None:
    pairs = draw_pairs(SEEDS[0])
    kinds = Counter(kind for pair in pairs for kind in pair.kinds)
    assert len(pairs) >= 30
    for kind in ("aggregating", "with", "optional", "future", "join", "middleware", "plain"):
        assert kinds[kind] >= 2, kinds
    catalogue = {spec.id for spec in CATALOGUE}
    assert all(pair.downstream.id.split("__")[1] in catalogue for pair in pairs)


class _NodePerDiff(InProcessChain):
    """The chain as it was before issue #33: an aggregation's update of a group whose before
    does not read as the row published is a new node (here: every row change of a group)."""

    def _publish(self, query_id: str, changes: Mapping[str, dict | None], time_ms: int) -> None:
        renamed = {
            f"{node_id}#{self.report.changes}" if row is not None else node_id: row
            for node_id, row in changes.items()
        }
        super()._publish(query_id, renamed, time_ms)


def test_the_check_sees_a_chain_that_keeps_a_node_per_change() -> None:
    upstream = next(p.upstream for p in draw_pairs(SEEDS[0]) if p.upstream.id == "u_count_by_flag")
    text = "MATCH (g:u_count_by_flag) RETURN count(g) AS groups, sum(g.n) AS nodes"
    pair = Pair(upstream, QuerySpec("d_groups", text, sources=(upstream.id,)), frozenset())
    report = _NodePerDiff([pair]).run(generate_two_source_case(SEEDS[0], 30))
    assert any("the chain does not hold the results" in e for e in report.errors)
    assert any(e.startswith("composition:") for e in report.errors)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_chained_query_equals_its_composition(seed: int) -> None:
    pairs: list[Pair] = draw_pairs(seed)
    case = generate_two_source_case(seed, CHANGES)
    report = InProcessChain(pairs).run(case, restarts=RESTARTS, seed=seed)
    assert report.changes == CHANGES and report.restarts == RESTARTS
    assert report.node_changes > 100 and report.downstream_diffs > 100
    assert not report.errors, "\n".join(report.errors[:10])
