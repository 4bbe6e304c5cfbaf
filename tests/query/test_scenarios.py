"""Every case of every conformance scenario (tests/scenarios/*.json), run in-process.

Events go through :class:`TinyStore` (upsert / partial-merge semantics) into the engine; the
diffs of each step must equal the expected ones as a multiset (numbers by value). A case with a
``clock`` runs on that injected clock: after every step the re-evaluations due by then fire,
and a step with a ``clock`` moves it (README.md of tests/scenarios).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drasi_ray.query.engine import ContinuousQuery
from tests.query.support import TinyStore, same_multiset

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _cases() -> list[Any]:
    params = []
    for path in sorted(SCENARIOS.glob("*.json")):
        scenario = json.loads(path.read_text())
        for case in scenario["cases"]:
            params.append(pytest.param(scenario, case, id=f"{path.stem}::{case['name']}"))
    return params


@pytest.mark.parametrize(("scenario", "case"), _cases())
def test_scenario_case(scenario: dict[str, Any], case: dict[str, Any]) -> None:
    queries = {qid: ContinuousQuery(qid, scenario["queries"][qid]) for qid in case["queries"]}
    store = TinyStore()
    now = case.get("clock")
    for event in case["bootstrap"]:
        delta = store.event(event)
        if delta is not None:
            for query in queries.values():
                query.apply(delta)
    _fire(queries, now)
    for number, step in enumerate(case["steps"]):
        now = step.get("clock", now)
        event = step.get("event")
        delta = None if event is None else store.event(event)
        for qid, query in queries.items():
            actual = query.apply(delta) if delta is not None else []
            actual += _fire({qid: query}, now)
            expected = step["expect"].get(qid, [])
            assert same_multiset(actual, expected), (
                f"step {number} of {case['name']}, query {qid}:\n"
                f"actual   {actual}\nexpected {expected}"
            )


def _fire(queries: dict[str, ContinuousQuery], now: int | None) -> list[Any]:
    """The diffs of the re-evaluations due at ``now`` (none without a clock)."""
    if now is None:
        return []
    return [diff for query in queries.values() for diffs in query.fire_due(now) for diff in diffs]
