"""Where drasi_ray's future functions deliberately differ from Drasi: both outputs, pinned.

Each plan runs through drasi-lib and drasi_ray's engine (see tests/oracle/plans.py); the test
asserts what each produced, step by step, so a change on either side shows up here. The
deviations section of docs/conformance.md lists each (tests/differential/pinned.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.plans import (
    Observed,
    at,
    delete,
    insert,
    plan,
    relate,
    run_in_drasi,
    run_in_engine,
    update,
    wait,
)
from tests.query.support import same_multiset

PLANS: dict[str, dict[str, Any]] = {
    # drasi-lib fires every pending re-evaluation as soon as one is due.
    "early_fire": plan(
        "early_fire",
        {
            "q": "MATCH (a:A) RETURN a.id AS id, drasi.trueLater(true, a.d1) AS first, "
            "drasi.trueLater(true, a.d2) AS second"
        },
        insert(0, "a1", ["A"], id="a1", d1=at(1000), d2=at(2500)),
        wait(700),
        wait(1600),
        wait(2900),
    ),
    # The previous state of a row is re-evaluated without an anchor for an inserted element:
    # future functions there give null.
    "insert_update_becomes_add": plan(
        "insert_update_becomes_add",
        {
            "q": "MATCH (a:A) WITH a.g AS g, count(a) AS n "
            "WHERE drasi.trueUntil(n > 1, 0) RETURN g, n"
        },
        insert(0, "a1", ["A"], id="a1", g="x"),
        insert(100, "a2", ["A"], id="a2", g="x"),
        insert(200, "a3", ["A"], id="a3", g="x"),
        delete(300, "a1", ["A"]),
    ),
    "insert_delete_lost": plan(
        "insert_delete_lost",
        {
            "q": "MATCH (e:E)-[:HAS]->(v:V) WITH e, max(v.t) AS last "
            "WHERE drasi.trueLater(last < 5, 0) RETURN e.id AS id, last"
        },
        insert(0, "e1", ["E"], id="e1"),
        insert(50, "v1", ["V"], id="v1", t=1),
        relate(100, "r1", "HAS", "e1", "v1"),
        insert(150, "v2", ["V"], id="v2", t=9),
        relate(200, "r2", "HAS", "e1", "v2"),
    ),
    # An aggregate in a WHERE: Drasi adds every evaluation's value and never takes one back.
    "where_aggregate": plan(
        "where_aggregate",
        {
            "q": "MATCH (o:Order) WHERE o.status = 'ready' "
            "AND drasi.trueFor(sum(o.value) > 1, duration({seconds: 1})) "
            "RETURN sum(o.value) AS value"
        },
        insert(0, "o1", ["Order"], id="o1", status="ready", value=2),
        wait(700),
        wait(1400),
        insert(1500, "o2", ["Order"], id="o2", status="ready", value=1),
        update(1700, "o1", ["Order"], value=0),
        update(1900, "o2", ["Order"], value=1, note="again"),
    ),
}


def _add(**row: Any) -> dict[str, Any]:
    return {"type": "ADD", "data": row}


def _delete(**row: Any) -> dict[str, Any]:
    return {"type": "DELETE", "data": row}


def _update(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {"type": "UPDATE", "before": before, "after": after}


def _aggregation(before: float | None, after: float) -> dict[str, Any]:
    return {
        "type": "aggregation",
        "before": None if before is None else {"value": before},
        "after": {"value": after},
    }


AWAITING = "Awaiting"
ROW_0 = {"id": "a1", "first": AWAITING, "second": AWAITING}
ROW_1 = {"id": "a1", "first": True, "second": AWAITING}
ROW_2 = {"id": "a1", "first": True, "second": True}
X2, X3 = {"g": "x", "n": 2}, {"g": "x", "n": 3}

EXPECTED: dict[str, tuple[list[list[Any]], list[list[Any]]]] = {
    # (Drasi's windows of query q, drasi_ray's)
    "early_fire": (
        [[_add(**ROW_0)], [_update(ROW_0, ROW_1), _update(ROW_0, ROW_2)], [], []],
        [[_add(**ROW_0)], [_update(ROW_0, ROW_1)], [_update(ROW_1, ROW_2)], []],
    ),
    "insert_update_becomes_add": (
        [[], [_add(**X2)], [_add(**X3)], [_delete(**X3)]],
        [[], [_add(**X2)], [_update(X2, X3)], [_update(X3, X2)]],
    ),
    "insert_delete_lost": (
        [[], [], [_add(id="e1", last=1.0)], [], []],
        [[], [], [_add(id="e1", last=1.0)], [], [_delete(id="e1", last=1.0)]],
    ),
    "where_aggregate": (
        [[], [_aggregation(None, 2.0)], [], [_aggregation(2.0, 3.0)], [_aggregation(3.0, 1.0)], []],
        [
            [],
            [_aggregation(None, 2.0)],
            [],
            [_aggregation(2.0, 3.0)],
            [_aggregation(3.0, 1.0)],
            [_aggregation(1.0, 0.0)],
        ],
    ),
}


@pytest.fixture(scope="module")
def drasi_observed() -> dict[str, Observed]:
    names = list(PLANS)
    return dict(zip(names, run_in_drasi([PLANS[name] for name in names]), strict=True))


def _matches(observed: Observed, expected: list[list[Any]]) -> bool:
    windows = [window["q"] for window in observed.windows]
    return len(windows) == len(expected) and all(
        same_multiset(got, want) for got, want in zip(windows, expected, strict=True)
    )


@pytest.mark.parametrize("name", list(PLANS))
def test_drasi_and_drasi_ray_outputs(name: str, drasi_observed: dict[str, Observed]) -> None:
    drasi_windows, ours = EXPECTED[name]
    assert _matches(drasi_observed[name], drasi_windows), drasi_observed[name].windows
    engine = run_in_engine(PLANS[name])
    assert _matches(engine, ours), engine.windows
