"""A part after an aggregating WITH, where a group's grouping value reads as an Integer for one
member and as the equal Float for another (found by the chaining composition test, issue #33).

Drasi reconciles a group's rows by a signature that reads the grouping values by value, so the
group that ``3.0`` opened and ``3`` joined is taken back and applied once; drasi_ray compared
them strictly and counted the group's old row twice (``sum(n)`` 3 for two nodes). Both engines
run the same changes here, per change and at the end (drasi_ray/query/parts.py,
``_Signatures``).
"""

from __future__ import annotations

import pytest

from tests.differential.compare import compare_runs
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle
from tests.oracle.model import Case, GraphChange, QuerySpec

T0 = 1_700_000_000_000
QUERIES = (
    QuerySpec(
        "sum_of_counts",
        "MATCH (a:A) WITH a.y AS s, count(a) AS n RETURN sum(n) AS total, count(s) AS groups",
    ),
    QuerySpec("projected", "MATCH (a:A) WITH a.y AS s, count(a) AS n RETURN s, n"),
)


@pytest.mark.parametrize("second", [3, 3.0], ids=["integer-joins-float", "float-joins-float"])
def test_a_group_joined_by_an_equal_value_of_another_kind_agrees_with_drasi(second: float) -> None:
    changes = (
        GraphChange("insert", "n1", ("A",), {"y": 3.0}, T0),
        GraphChange("insert", "n2", ("A",), {"y": second}, T0 + 1000),
        GraphChange("update", "n1", ("A",), {"y": 4}, T0 + 2000),
        GraphChange("delete", "n2", ("A",), {}, T0 + 3000),
        GraphChange("delete", "n1", ("A",), {}, T0 + 4000),
    )
    case = Case("regrouped", changes)
    drasi = run_oracle([case], QUERIES)
    ours = {case.name: run_drasi_ray(case, QUERIES)}
    outcome = compare_runs(drasi, ours, {q.id: q.text for q in QUERIES})
    assert not outcome.skipped, [s.reason for s in outcome.skipped]
    assert outcome.compared_steps == len(QUERIES) * len(changes)
    assert not outcome.divergences, "\n".join(d.describe() for d in outcome.divergences)
