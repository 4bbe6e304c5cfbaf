"""``retainHistory(...)`` against Drasi itself: an aggregate inside it never takes a value
back, so rows that leave or change leave their values in it."""

from __future__ import annotations

import pytest

from tests.oracle.engines import Outcome, run_drasi, run_engine
from tests.oracle.model import GraphChange
from tests.oracle.values import same_diffs


def _insert(point: str, group: str, x: int) -> GraphChange:
    return GraphChange("insert", point, ("P",), {"g": group, "x": x}, 1000)


def _update(point: str, group: str, x: int) -> GraphChange:
    return GraphChange("update", point, ("P",), {"g": group, "x": x}, 2000)


CHANGES = [
    _insert("p1", "a", 5),
    _insert("p2", "a", 3),
    _update("p1", "a", 1),
    GraphChange("delete", "p2", ("P",), {}, 3000),
    _update("p1", "b", 2),
    GraphChange("delete", "p1", ("P",), {}, 3000),
    _insert("p3", "a", 4),
    _insert("pz", "z", 100),
]

QUERIES = {
    "max": "MATCH (p:P) RETURN retainHistory(max(p.x)) AS v",
    "collect": "MATCH (p:P) RETURN retainHistory(collect(p.x)) AS v",
    "count": "MATCH (p:P) RETURN retainHistory(count(p)) AS v",
    "grouped_sum": "MATCH (p:P) RETURN p.g AS g, retainHistory(sum(p.x)) AS v",
    "not_an_aggregate": "MATCH (p:P) RETURN p.g AS g, retainHistory(p.x) AS v",
    "no_argument": "MATCH (p:P) RETURN p.g AS g, retainHistory() AS v",
    "in_an_expression": "MATCH (p:P) RETURN retainHistory(max(p.x)) + 1 AS v",
    "inside_an_aggregate": "MATCH (p:P) RETURN max(retainHistory(p.x)) AS v",
    "beside_an_aggregate": "MATCH (p:P) RETURN retainHistory(max(p.x)) AS v, min(p.x) AS w",
}

BY_VALUE = {"max", "in_an_expression", "inside_an_aggregate", "beside_an_aggregate"}
"""Queries over min/max, whose "before" Drasi writes as an Integer where its "after" is a
Float (the snapshot keeps the input's type): an aggregate divergence the parity work aligns,
not retainHistory's; their numbers are compared by value."""


@pytest.fixture(scope="module")
def outcomes() -> tuple[Outcome, Outcome]:
    return run_drasi(QUERIES, CHANGES), run_engine(QUERIES, CHANGES)


@pytest.mark.parametrize("query_id", sorted(QUERIES))
def test_retain_history_diffs_equal_drasis(
    outcomes: tuple[Outcome, Outcome], query_id: str
) -> None:
    drasi, ours = outcomes
    assert drasi.answered(query_id) and ours.answered(query_id)
    for step, change in enumerate(CHANGES):
        theirs, mine = drasi.steps[query_id][step], ours.steps[query_id][step]
        assert same_diffs(mine, theirs, by_value=query_id in BY_VALUE), (step, change, theirs)
