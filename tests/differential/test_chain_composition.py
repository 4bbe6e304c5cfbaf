"""Query chaining's composition test, in process (issue #33; tests/differential/composition.py).

Every upstream of the catalogue (aggregating, WITH, OPTIONAL MATCH, joins, middleware, future
functions, plain; the GQL catalogue's too in one case) paired with two catalogue downstreams
that read its columns, over random two-source change streams, with upstreams rebuilt
mid-stream: after every change the chain holds the upstream's result set by row id, the
downstream's store holds those nodes and its diffs rebuild its result set; at the end each
downstream equals itself run over a graph built from the upstream's final rows (or what
drasi-lib gives over the chain's changes, where Drasi's result owes to its history). The
end-to-end runs are tests/pipeline/test_chain_composition.py; the long run is
``python -m bench.chain_composition``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from drasi_ray.reactions.chain import NodeChange, entry_payloads
from tests.differential.catalogue import CATALOGUE
from tests.differential.composition import (
    HISTORY,
    InProcessChain,
    Pair,
    compose,
    draw_pairs,
    judge,
    mismatches,
    oracle_results,
)
from tests.differential.generator import generate_two_source_case
from tests.differential.subject import DrasiRaySubject
from tests.oracle.model import QuerySpec

SEEDS = range(3300, 3304)
CHANGES = 70
RESTARTS = 3


def test_the_pairs_cover_every_kind_of_upstream() -> None:
    pairs = draw_pairs(SEEDS[0], gql=True)
    kinds = Counter(kind for pair in pairs for kind in pair.kinds)
    assert len(pairs) >= 30
    kinds_wanted = ("aggregating", "with", "optional", "future", "join", "middleware", "gql")
    for kind in (*kinds_wanted, "plain"):
        assert kinds[kind] >= 2, kinds
    catalogue = {spec.id for spec in CATALOGUE}
    assert all(pair.downstream.id.split("__")[1] in catalogue for pair in pairs)


class _NodePerDiff(InProcessChain):
    """The chain as it was before issue #33: an aggregation's update of a group whose before
    does not read as the row published is a new node (here: every row change of a group)."""

    def _publish(
        self, query_id: str, changes: Mapping[str, dict[str, Any] | None], time_ms: int
    ) -> None:
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


def _node(op: str, node_id: str, n: int, y: float, step: int) -> NodeChange:
    return NodeChange(op, node_id, {"n": n, "y": y}, 1_700_000_000_000 + step)


HISTORY_CHANGES = [
    _node("i", "a", 1, 3, 0),
    _node("i", "b", 1, 1, 1),
    _node("i", "c", 1, -2, 2),
    _node("u", "b", 0, 1, 3),
    _node("i", "d", 1, 1.5, 4),
    _node("u", "d", 0, 1.5, 5),
    _node("u", "a", 0, 3, 6),
    _node("u", "b", 1, 1, 7),
]
"""Node changes after which group 0's ``min`` reads ``1.0`` in Drasi (drasi-lib) and in
drasi_ray, where a graph of the final nodes gives ``1.5``: the last change moves ``b`` out of
group 0, and neither engine reports the group there, so it keeps its old row
(tests/differential/composition.py, :func:`judge`)."""


def test_a_result_that_owes_to_drasis_history_is_judged_by_drasi_over_the_changes() -> None:
    down = QuerySpec(
        "d", "MATCH (g:u) RETURN g.n AS n, min(g.y) AS lo, max(g.y) AS hi", sources=("u",)
    )
    subject = DrasiRaySubject([down])
    for number, change in enumerate(HISTORY_CHANGES):
        (payload,) = entry_payloads("u", [change])
        subject.apply_payload(f"{number + 1}-0", payload, "u")
    actual = subject.results("d")
    rows = {"u": compose(HISTORY_CHANGES)}
    assert mismatches(down, oracle_results(down, rows), actual)  # lo 1.0 where 1.5 is left
    assert judge(down, rows, actual, lambda: HISTORY_CHANGES) == HISTORY
    wrong = [{**row, "lo": -9.0} for row in actual]
    assert "Drasi over the chain's changes" in judge(down, rows, wrong, lambda: HISTORY_CHANGES)
    extra = [*HISTORY_CHANGES, _node("i", "ghost", 0, 0, 8)]
    assert "do not compose" in judge(down, rows, actual, lambda: extra)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_chained_query_equals_its_composition(seed: int) -> None:
    pairs: list[Pair] = draw_pairs(seed, gql=seed == SEEDS[-1])  # GQL upstreams in one case
    case = generate_two_source_case(seed, CHANGES)
    report = InProcessChain(pairs).run(case, restarts=RESTARTS, seed=seed)
    assert report.changes == CHANGES and report.restarts == RESTARTS
    assert report.node_changes > 100 and report.downstream_diffs > 100
    assert not report.errors, "\n".join(report.errors[:10])
