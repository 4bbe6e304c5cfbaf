"""Drasi's future and stateful functions, checked against Drasi itself (drasi-lib).

Every plan below runs through drasi-lib (in one child process, on its wall clock: the module
takes a few seconds) and through drasi_ray's engine on an injected clock; the diffs of every
step and the final rows must agree. Plans keep one re-evaluation pending at a time where
drasi-lib would otherwise fire the others early (see test_future_deviations.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.plans import (
    Observed,
    at,
    delete,
    differences,
    insert,
    plan,
    run_in_drasi,
    run_in_engine,
    update,
    wait,
)

SECOND = "duration({seconds: 1})"

PLANS: dict[str, dict[str, Any]] = {
    "true_for": plan(
        "true_for",
        {"q": f"MATCH (a:A) WHERE drasi.trueFor(a.on = true, {SECOND}) RETURN a.id AS id"},
        insert(0, "a1", ["A"], id="a1", on=True),
        wait(700),  # due at 1000
        wait(1400),
        update(1500, "a1", ["A"], on=False),
        update(1800, "a1", ["A"], on=True),  # due at 2800, but:
        update(2200, "a1", ["A"], on=False),
        wait(3100),
    ),
    "true_for_projected": plan(
        "true_for_projected",
        {"q": f"MATCH (a:A) RETURN a.id AS id, drasi.trueFor(a.on = true, {SECOND}) AS held"},
        insert(0, "a1", ["A"], id="a1", on=True),
        wait(700),
        wait(1400),
        update(1500, "a1", ["A"], on=False),
    ),
    "true_until": plan(
        "true_until",
        {
            "q": "MATCH (a:Invoice) WHERE drasi.trueUntil(a.status = 'unpaid', a.due) "
            "RETURN a.id AS id"
        },
        insert(0, "i1", ["Invoice"], id="i1", status="unpaid", due=at(1000)),
        insert(100, "i2", ["Invoice"], id="i2", status="unpaid", due=at(1000)),
        update(400, "i2", ["Invoice"], status="paid"),
        wait(1400),
        update(1600, "i1", ["Invoice"], status="paid"),
    ),
    "true_until_projected": plan(
        "true_until_projected",
        {
            "q": "MATCH (a:Invoice) RETURN a.id AS id, "
            "drasi.trueUntil(a.status = 'unpaid', a.due) AS open"
        },
        insert(0, "i1", ["Invoice"], id="i1", status="unpaid", due=at(1000)),
        insert(100, "i2", ["Invoice"], id="i2", status="paid", due=at(1000)),  # false now
        wait(400),
        update(500, "i1", ["Invoice"], status="paid"),
        wait(1400),
    ),
    "true_later": plan(
        "true_later",
        {"q": "MATCH (a:A) WHERE drasi.trueLater(a.x > 5, a.due) RETURN a.id AS id"},
        insert(0, "a1", ["A"], id="a1", x=10, due=at(1000)),
        update(400, "a1", ["A"], x=3),
        wait(1400),
        update(1500, "a1", ["A"], x=10, due=at(2200)),
        wait(1900),
        wait(2600),
    ),
    "true_now_or_later": plan(
        "true_now_or_later",
        {"q": "MATCH (a:A) WHERE drasi.trueNowOrLater(a.x > 5, a.due) RETURN a.id AS id"},
        insert(0, "a1", ["A"], id="a1", x=3, due=at(1000)),
        insert(200, "a2", ["A"], id="a2", x=10, due=at(1000)),
        wait(500),  # a2 came at 200 (true now), not at its due time: a window between them
        wait(1400),
        update(1500, "a1", ["A"], x=7),
        update(1700, "a1", ["A"], x=1),
    ),
    "future": plan(
        "future",
        {
            "q": "MATCH (a:A) WHERE NOT (drasi.future(a, a.due) = drasi.awaiting()) "
            "RETURN a.id AS id"
        },
        insert(0, "a1", ["A"], id="a1", due=at(1000)),
        insert(100, "a2", ["A"], id="a2", due=at(-5000)),
        wait(1400),
    ),
    "awaiting": plan(
        "awaiting",
        {
            "q": "MATCH (a:A) WHERE NOT drasi.awaiting() AND drasi.awaiting() IS NOT NULL "
            "RETURN a.id AS id, drasi.awaiting() AS value, "
            "drasi.awaiting() = drasi.awaiting() AS same, coalesce(drasi.awaiting(), 1) AS c"
        },
        insert(0, "a1", ["A"], id="a1"),
    ),
    "previous_value": plan(
        "previous_value",
        {
            "q": "MATCH (i:Invoice) WHERE i.amount > drasi.previousValue(i.amount) "
            "RETURN i.id AS id, i.amount AS amount",
            "p": "MATCH (i:Invoice) RETURN i.id AS id, drasi.previousValue(i.amount, 0) AS prev",
        },
        insert(0, "i1", ["Invoice"], id="i1", amount=100),
        insert(50, "i2", ["Invoice"], id="i2", amount=200),
        update(100, "i1", ["Invoice"], amount=105),
        update(150, "i1", ["Invoice"], amount=110),
        update(200, "i1", ["Invoice"], amount=110),
        update(250, "i1", ["Invoice"], amount=90),
        update(300, "i1", ["Invoice"], amount=95),
        delete(350, "i1", ["Invoice"]),
        insert(400, "i1", ["Invoice"], id="i1", amount=96),
    ),
    "previous_distinct_value": plan(
        "previous_distinct_value",
        {
            "q": "MATCH (c:Contract) WHERE c.status = 'active' "
            "AND drasi.previousDistinctValue(c.status) = 'pending' "
            "RETURN c.id AS id, c.tags AS tags",
            "m": "MATCH (c:Contract WHERE c.status = 'active' "
            "AND drasi.previousDistinctValue(c.status) = 'pending') "
            "RETURN c.id AS id, c.tags AS tags",
        },
        insert(0, "c1", ["Contract"], id="c1", status="pending", tags="t1"),
        update(50, "c1", ["Contract"], status="active"),
        update(100, "c1", ["Contract"], tags="t2"),
        insert(150, "c2", ["Contract"], id="c2", status="cancelled", tags="t1"),
        update(200, "c2", ["Contract"], status="active"),
        update(250, "c2", ["Contract"], status="pending"),
        update(300, "c2", ["Contract"], status="active"),
    ),
    "sliding_window": plan(
        "sliding_window",
        {
            "m": f"MATCH (s:Sensor) RETURN drasi.slidingWindow({SECOND}, max(s.value)) AS m",
            "g": f"MATCH (s:Sensor) RETURN s.group AS g, "
            f"drasi.slidingWindow({SECOND}, avg(s.value)) AS a",
        },
        insert(0, "s1", ["Sensor"], id="s1", group="A", value=50),
        wait(700),  # s1 leaves the window at 1000
        insert(1300, "s2", ["Sensor"], id="s2", group="A", value=30),
        insert(1400, "s3", ["Sensor"], id="s3", group="B", value=10),
        update(1500, "s2", ["Sensor"], value=65),  # s2, s3 leave at 2400-2500
        wait(2000),
        wait(2900),
    ),
    "true_for_of_sum": plan(
        "true_for_of_sum",
        {
            "q": "MATCH (o:Order) WHERE o.status = 'ready' "
            f"AND drasi.trueFor(sum(o.value) > 1, {SECOND}) RETURN sum(o.value) AS value"
        },
        insert(0, "o1", ["Order"], id="o1", status="ready", value=2),
        wait(700),
        wait(1400),
        insert(1500, "o2", ["Order"], id="o2", status="ready", value=1),
    ),
}


@pytest.fixture(scope="module")
def drasi_observed() -> dict[str, Observed]:
    names = list(PLANS)
    observed = run_in_drasi([PLANS[name] for name in names])
    return dict(zip(names, observed, strict=True))


@pytest.mark.parametrize("name", list(PLANS))
def test_engine_matches_drasi(name: str, drasi_observed: dict[str, Observed]) -> None:
    problems = differences(drasi_observed[name], run_in_engine(PLANS[name]))
    assert not problems, "\n".join(problems)
