"""The change clocks (``datetime.transaction()``, ``.realtime()``) over several changes,
against Drasi itself.

The rows a change adds agree. The *before* rows of UPDATE and DELETE diffs differ by design:
drasi_ray's before row is the row it emitted earlier, while Drasi evaluates it again with its
"before clock" (transaction: the changed element's previous effective_from; realtime: this
change's time), which can give a row Drasi never emitted (docs/conformance.md).
"""

from __future__ import annotations

from tests.oracle.engines import run_drasi, run_engine
from tests.oracle.model import GraphChange

CHANGES = [
    GraphChange("insert", "a", ("A",), {"x": 1}, 1000),
    GraphChange("update", "a", ("A",), {"x": 2}, 2000),
    GraphChange("insert", "b", ("B",), {"y": 1}, 2500),
    GraphChange("insert", "r", ("R",), {}, 2600, "a", "b"),
    GraphChange("update", "b", ("B",), {"y": 2}, 3000),
    GraphChange("delete", "a", ("A",), {}, 5000),
]
SINGLE = (
    "MATCH (a:A) RETURN a.x AS x, datetime.transaction().epochMillis AS t,"
    " datetime.realtime().epochMillis AS rt"
)
PAIR = "MATCH (a:A)-[:R]->(b:B) RETURN b.y AS y, datetime.transaction().epochMillis AS t"


def test_rows_added_carry_the_changes_clock_in_both() -> None:
    queries = {"single": SINGLE, "pair": PAIR}
    drasi = run_drasi(queries, CHANGES)
    ours = run_engine(queries, CHANGES)
    added = {"type": "ADD", "data": {"x": 1, "t": 1000, "rt": 1000}}
    assert drasi.steps["single"][0] == ours.steps["single"][0] == [added]
    pair_added = {"type": "ADD", "data": {"y": 1, "t": 2600}}
    assert drasi.steps["pair"][3] == ours.steps["pair"][3] == [pair_added]


def test_before_rows_are_what_was_emitted_where_drasi_reevaluates_them() -> None:
    queries = {"single": SINGLE, "pair": PAIR}
    drasi = run_drasi(queries, CHANGES)
    ours = run_engine(queries, CHANGES)
    # the update of a at 2000: Drasi's before row has realtime 2000, a row it never emitted
    assert drasi.steps["single"][1][0]["before"] == {"x": 1, "t": 1000, "rt": 2000}
    assert ours.steps["single"][1][0]["before"] == {"x": 1, "t": 1000, "rt": 1000}
    # the update of b at 3000: Drasi's before row takes b's previous time, 2500, while the
    # row was emitted at 2600 (the relation's insert)
    assert drasi.steps["pair"][4][0]["before"] == {"y": 1, "t": 2500}
    assert ours.steps["pair"][4][0]["before"] == {"y": 1, "t": 2600}
    # the delete at 5000 removes the row emitted at 3000; Drasi's has a's time, 2000
    assert drasi.steps["pair"][5] == [{"type": "DELETE", "data": {"y": 2, "t": 2000}}]
    assert ours.steps["pair"][5] == [{"type": "DELETE", "data": {"y": 2, "t": 3000}}]
