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
