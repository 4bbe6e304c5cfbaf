"""``drasi.linearGradient`` and ``drasi.last`` against Drasi itself.

drasi-lib does not count these two among the aggregates when it classifies a projection (its
query manager lists count, sum, min, max, avg and collect only), so in drasi-lib a RETURN of
``drasi.linearGradient(p.x, p.y)`` is a per-row item fed by one accumulator for the whole
query: each new row is an ADD carrying the accumulator's value after that row, a removed row a
DELETE carrying its value after the revert, an updated row an UPDATE from the value before to
the value after. drasi-core's own tests (linear_regression) build queries where they are
aggregates, reported as aggregation diffs, and drasi_ray follows drasi-core there
(docs/conformance.md). The *values* are the same accumulator's either way, so a query with a
single group checks drasi_ray's aggregation ``before``/``after`` against drasi-lib's rows.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.oracle.engines import Outcome, run_drasi, run_engine
from tests.oracle.model import GraphChange, Op
from tests.oracle.values import same_diffs, same_typed

QUERIES = {
    "gradient": "MATCH (p:P) RETURN drasi.linearGradient(p.x, p.y) AS v",
    "last": "MATCH (p:P) RETURN drasi.last(p.y) AS v",
    "gradient_of_durations": (
        "MATCH (p:P) RETURN drasi.linearGradient(duration({seconds: p.s}), p.y) AS v"
    ),
    "gradient_of_dates": (
        "MATCH (p:P) RETURN drasi.linearGradient(date({year: 2024, month: 1, day: p.s % 28 + 1}),"
        " p.y) AS v"
    ),
    "gradient_of_datetimes": (
        "MATCH (p:P) RETURN drasi.linearGradient(datetime({epochSeconds: p.s}), p.y) AS v"
    ),
    "gradient_of_times": (
        "MATCH (p:P) RETURN drasi.linearGradient(localtime({hour: p.s % 24, minute: 30}), p.y) AS v"
    ),
}
SEED = 5
POINTS = 3


def _random_changes(seed: int, count: int) -> list[GraphChange]:
    """Inserts, updates and deletes of ``POINTS`` points with random coordinates."""
    chooser = random.Random(seed)
    alive: set[str] = set()
    changes = []
    for step in range(count):
        point = f"p{chooser.randrange(POINTS)}"
        time_ms = 1000 * (step + 1)
        if point in alive and chooser.random() < 0.3:
            alive.discard(point)
            changes.append(GraphChange("delete", point, ("P",), {}, time_ms))
            continue
        properties = {
            "x": chooser.choice([chooser.randrange(-5, 20), round(chooser.uniform(-3, 9), 3)]),
            "y": round(chooser.uniform(-50, 50), 2),
            "s": chooser.randrange(0, 100),
        }
        op: Op = "update" if point in alive else "insert"
        alive.add(point)
        changes.append(GraphChange(op, point, ("P",), properties, time_ms))
    return changes


BARRIER = GraphChange("insert", "barrier", ("P",), {"x": 1000, "y": 1, "s": 1000}, 10**9)
"""A last change that moves every query's value: the runs end on a step both report."""

CHANGES = [*_random_changes(SEED, 60), BARRIER]


@pytest.fixture(scope="module")
def outcomes() -> tuple[Outcome, Outcome]:
    return run_drasi(QUERIES, CHANGES), run_engine(QUERIES, CHANGES)


def _expected_diffs(drasi_diffs: list[dict[str, Any]], current: Any) -> list[dict[str, Any]]:
    """The aggregation diff drasi-core reports for the step whose drasi-lib row diffs are
    ``drasi_diffs``, ``current`` being the value before the step: the same values, but a
    removal that leaves the value as it was reports nothing (drasi-core drops an aggregation
    whose before equals its after unless a row was added)."""
    if not drasi_diffs:
        return []
    (diff,) = drasi_diffs
    if diff["type"] == "UPDATE":
        before, after = diff["before"]["v"], diff["after"]["v"]
    else:
        before, after = current, diff["data"]["v"]
        if diff["type"] == "DELETE" and same_typed(before, after):
            return []
    return [{"type": "aggregation", "before": {"v": before}, "after": {"v": after}}]


@pytest.mark.parametrize("query_id", sorted(QUERIES))
def test_values_step_by_step_equal_drasis(outcomes: tuple[Outcome, Outcome], query_id: str) -> None:
    drasi, ours = outcomes
    assert drasi.answered(query_id), drasi.statuses[query_id]
    assert ours.answered(query_id), ours.errors[query_id]
    current = None
    for step, change in enumerate(CHANGES):
        expected = _expected_diffs(drasi.steps[query_id][step], current)
        actual = ours.steps[query_id][step]
        assert same_diffs(actual, expected), (step, change, expected, actual)
        if actual:
            current = actual[-1]["after"]["v"]


def test_the_random_changes_reach_every_case() -> None:
    """The seed's sequence empties the group, refills it and updates points in place."""
    ops = [change.op for change in CHANGES]
    assert {"insert", "update", "delete"} <= set(ops)
    alive: set[str] = set()
    emptied = False
    for change in CHANGES:
        (alive.discard if change.op == "delete" else alive.add)(change.id)
        emptied = emptied or not alive
    assert emptied


# --------------------------------------------------------------------------- deviations


def _point(point: str, x: Any, y: Any) -> GraphChange:
    return GraphChange("insert", point, ("P",), {"x": x, "y": y})


def test_drasi_lib_reports_a_gradient_per_row_where_drasi_ray_aggregates() -> None:
    query = {"q": "MATCH (p:P) RETURN drasi.linearGradient(p.x, p.y) AS v"}
    changes = [_point("p1", 1, 6), _point("p2", 2, 7), _point("p3", 4, 8)]
    drasi, ours = run_drasi(query, changes), run_engine(query, changes)
    assert drasi.steps["q"] == [
        [{"type": "ADD", "data": {"v": None}}],
        [{"type": "ADD", "data": {"v": 1.0}}],
        [{"type": "ADD", "data": {"v": 0.6428571428571429}}],
    ]
    assert ours.steps["q"] == [
        [{"type": "aggregation", "before": {"v": None}, "after": {"v": None}}],
        [{"type": "aggregation", "before": {"v": None}, "after": {"v": 1.0}}],
        [{"type": "aggregation", "before": {"v": 1.0}, "after": {"v": 0.6428571428571429}}],
    ]


def test_a_point_with_a_null_coordinate_leaves_the_gradient_where_drasi_reports_null() -> None:
    query = {"q": "MATCH (p:P) RETURN drasi.linearGradient(p.x, p.y) AS v"}
    changes = [_point("p1", 1, 1), _point("p2", 2, 3), _point("p3", None, 5), _point("p4", 3, 5)]
    drasi, ours = run_drasi(query, changes), run_engine(query, changes)
    # drasi-lib: null for the row, then the next row's "before" (in drasi-core's aggregate
    # form) is 2.0 again: its diffs do not chain.
    assert [step[0]["data"]["v"] for step in drasi.steps["q"]] == [None, 2.0, None, 2.0]
    assert [(step[0]["before"]["v"], step[0]["after"]["v"]) for step in ours.steps["q"]] == [
        (None, None),
        (None, 2.0),
        (2.0, 2.0),
        (2.0, 2.0),
    ]


@pytest.mark.parametrize(
    ("query", "properties"),
    [
        ("MATCH (p:P) RETURN drasi.linearGradient(p.x, p.y) AS v", {"x": "s", "y": 1}),
        ("MATCH (p:P) RETURN drasi.linearGradient(p.x, p.y) AS v", {"x": True, "y": 1}),
        ("MATCH (p:P) RETURN drasi.last(date(p.d)) AS v", {"d": "2024-01-02"}),
        ("MATCH (p:P) RETURN drasi.last(localtime(p.d)) AS v", {"d": "10:00"}),
        ("MATCH (p:P) RETURN drasi.last(CASE WHEN p.x IS NULL THEN p ELSE p.x END) AS v", {}),
    ],
)
def test_an_argument_drasi_refuses_stops_its_query_and_refuses_our_row(
    query: str, properties: dict[str, Any]
) -> None:
    changes = [GraphChange("insert", "p1", ("P",), properties), _point("p2", 1, 1)]
    drasi = run_drasi({"q": query}, changes)
    ours = run_engine({"q": query}, changes)
    assert drasi.statuses["q"] == "Error"
    assert ours.steps["q"][0] == [] and ours.errors["q"]
    assert ours.steps["q"][1] != []  # the query goes on
