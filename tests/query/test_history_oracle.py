"""Drasi's past functions against Drasi itself (drasi-lib with its archive index on).

What a change adds agrees: the rows added, and the rows after an update. Three things differ
by design (docs/conformance.md), each shown with both outputs below: the row *before* an
update (Drasi evaluates it again, with the new version already archived), an element deleted
and created again (Drasi's archive keeps the old incarnation's versions), and an aggregate over
a history-dependent value (Drasi takes back the re-evaluated value, so its sum drifts).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.engines import Outcome, run_drasi, run_engine
from tests.oracle.model import GraphChange, Op
from tests.oracle.values import same_typed


def _version(element_id: str, value: int, time: int, op: Op = "update") -> GraphChange:
    return GraphChange(op, element_id, ("Thing",), {"Value": value}, time)


CHANGES = [
    _version("t1", 0, 0, "insert"),
    _version("t1", 1, 1000),
    _version("t1", 2, 2000),
    _version("t1", 3, 3000),
    GraphChange("update", "t1", ("Thing",), {"Other": 9}, 3000),  # same time: replaces that version
    _version("t2", 7, 500, "insert"),
    _version("t1", 4, 2500),  # an older time than the newest version
    GraphChange("delete", "t2", ("Thing",), {}, 4000),
]
RECREATED = _version("t2", 8, 4500, "insert")

QUERIES = {
    "at": (
        "MATCH (t:Thing) RETURN t.Value AS now,"
        " drasi.getVersionByTimestamp(t, 999).Value AS v0,"
        " drasi.getVersionByTimestamp(t, 1000).Value AS v1,"
        " drasi.getVersionByTimestamp(t, 1001).Value AS v1_1,"
        " drasi.getVersionByTimestamp(t, 2001).Value AS v2"
    ),
    "range": (
        "MATCH (t:Thing) RETURN t.Value AS now,"
        " [x IN drasi.getVersionsByTimeRange(t, 1000, 2001) | x.Value] AS r"
    ),
    "range_from_previous": (
        "MATCH (t:Thing) RETURN t.Value AS now,"
        " [x IN drasi.getVersionsByTimeRange(t, 1500, 2600, true) | x.Value] AS r"
    ),
    "range_before_any": (
        "MATCH (t:Thing) RETURN t.Value AS now,"
        " [x IN drasi.getVersionsByTimeRange(t, 0, 100, true) | [x.Value, x.Other]] AS r"
    ),
    "temporal_timestamps": (
        "MATCH (t:Thing) RETURN t.Value AS now,"
        " drasi.getVersionByTimestamp(t, datetime({epochMillis: 2500})).Value AS a,"
        " drasi.getVersionByTimestamp(t, date('1970-01-01')).Value AS b,"
        " drasi.getVersionByTimestamp(t, localdatetime('1970-01-01T00:00:01')).Value AS c"
    ),
    "count": (
        "MATCH (t:Thing) RETURN t.Value AS now,"
        " size(drasi.getVersionsByTimeRange(t, 0, 100000)) AS n"
    ),
}


@pytest.fixture(scope="module")
def outcomes() -> tuple[Outcome, Outcome]:
    changes = [*CHANGES, RECREATED]
    return run_drasi(QUERIES, changes, archive=True), run_engine(QUERIES, changes)


def _added_side(diffs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the diffs say the result holds now: ADD data and UPDATE after (a DELETE's row,
    the row before an update, is the old one)."""
    return [
        {"type": diff["type"], "row": diff["after"] if diff["type"] == "UPDATE" else diff["data"]}
        for diff in diffs
    ]


@pytest.mark.parametrize("query_id", sorted(QUERIES))
def test_what_each_change_adds_equals_drasis(
    outcomes: tuple[Outcome, Outcome], query_id: str
) -> None:
    drasi, ours = outcomes
    assert drasi.answered(query_id) and ours.answered(query_id)
    for step, change in enumerate(CHANGES):
        theirs, mine = drasi.steps[query_id][step], ours.steps[query_id][step]
        assert same_typed(_added_side(mine), _added_side(theirs)), (step, change, theirs, mine)


def test_rows_before_an_update_are_what_was_emitted(outcomes: tuple[Outcome, Outcome]) -> None:
    drasi, ours = outcomes
    (theirs,), (mine,) = drasi.steps["at"][1], ours.steps["at"][1]  # the version of 1000
    assert theirs["before"] == {"now": 0, "v0": 0, "v1": 1, "v1_1": 1, "v2": 1}
    assert mine["before"] == {"now": 0, "v0": 0, "v1": 0, "v1_1": 0, "v2": 0}
    assert mine["before"] == ours.steps["at"][0][0]["data"]  # the row the insert added


def test_a_recreated_element_starts_a_new_history(outcomes: tuple[Outcome, Outcome]) -> None:
    drasi, ours = outcomes
    recreated = len(CHANGES)
    assert drasi.steps["at"][recreated] == [
        {"type": "ADD", "data": {"now": 8, "v0": 7, "v1": 7, "v1_1": 7, "v2": 7}}
    ]
    assert ours.steps["at"][recreated] == [
        {"type": "ADD", "data": {"now": 8, "v0": None, "v1": None, "v1_1": None, "v2": None}}
    ]


def test_an_aggregate_over_history_takes_back_what_it_was_given() -> None:
    query = {"q": "MATCH (t:Thing) RETURN sum(size(drasi.getVersionsByTimeRange(t, 0, 9999))) AS n"}
    changes = [*CHANGES[:4], _version("t9", 0, 5000, "insert")]
    drasi = run_drasi(query, changes, archive=True)
    ours = run_engine(query, changes)
    # Drasi reverts each update's old row re-evaluated with the new version archived (the
    # same size as the new row's): its sum stays 1 while t1 gains versions.
    assert [step[0]["after"]["n"] if step else None for step in drasi.steps["q"]] == [
        1.0,
        None,
        None,
        None,
        2.0,
    ]
    assert [step[0]["after"]["n"] for step in ours.steps["q"]] == [1.0, 2.0, 3.0, 4.0, 5.0]
