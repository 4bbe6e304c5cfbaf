"""Query parts against Drasi itself, where a query of several parts must behave as Drasi's
evaluator does, which reads a row's previous state through every part again."""

from __future__ import annotations

from tests.oracle.engines import run_drasi, run_engine
from tests.oracle.model import GraphChange
from tests.oracle.values import same_diffs

_ROW = "MATCH (a:A) WITH a.name AS name, a.x * 2 AS x2 "
QUERIES = {
    "one_with": _ROW + "WHERE x2 > 2 RETURN name, x2",
    "two_withs": _ROW + "WITH name, x2 WHERE x2 > 2 RETURN name, x2",
    "three_withs": _ROW + "WITH name, x2 WITH name, x2 RETURN name, x2",
}
CHANGES = [
    GraphChange("insert", "a1", ("A",), {"name": "a", "x": 2.0}, 1000),
    GraphChange("update", "a1", ("A",), {"x": 2}, 2000),  # no value changes: 2.0 = 2
    GraphChange("update", "a1", ("A",), {"x": 10}, 3000),
]
EXPECTED = [
    [{"type": "ADD", "data": {"name": "a", "x2": 4.0}}],
    [],
    [{"type": "UPDATE", "before": {"name": "a", "x2": 4}, "after": {"name": "a", "x2": 20}}],
]


def test_every_part_reads_a_row_as_it_now_is_after_a_change_of_no_value() -> None:
    """No part reports 2.0 -> 2, but the next change's before is the row as it now is (x2 an
    Integer), in every part: a later part does not keep the row it last reported."""
    drasi, ours = run_drasi(QUERIES, CHANGES), run_engine(QUERIES, CHANGES)
    for query_id in QUERIES:
        for step, expected in enumerate(EXPECTED):
            assert same_diffs(drasi.steps[query_id][step], expected), (query_id, step, "Drasi")
            assert same_diffs(ours.steps[query_id][step], expected), (query_id, step)


def test_a_group_emptied_of_a_value_given_as_2_and_taken_back_as_2_0_sums_to_zero() -> None:
    """The update 2 -> 2.0 changes no value, so the group keeps the 2 it was given, and takes
    the row back as it now is (2.0) when the relation goes: nothing is left to sum."""
    query = (
        "MATCH (a:A)-[r:R]->(b) WITH b.name AS target, r.w AS w "
        "RETURN target, count(w) AS n, sum(w) AS total"
    )
    changes = [
        GraphChange("insert", "a1", ("A",), {}, 1000),
        GraphChange("insert", "b1", ("B",), {"name": "b"}, 1000),
        GraphChange("insert", "r1", ("R",), {"w": 2}, 2000, "a1", "b1"),
        GraphChange("update", "r1", ("R",), {"w": 2.0}, 3000, "a1", "b1"),
        GraphChange("delete", "r1", ("R",), {}, 4000, "a1", "b1"),
    ]
    emptied = [
        {
            "type": "aggregation",
            "before": {"target": "b", "n": 1, "total": 2.0},
            "after": {"target": "b", "n": 0, "total": 0.0},
        }
    ]
    drasi, ours = run_drasi({"q": query}, changes), run_engine({"q": query}, changes)
    assert same_diffs(drasi.steps["q"][4], emptied), drasi.steps["q"][4]
    assert same_diffs(ours.steps["q"][4], emptied), ours.steps["q"][4]
