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
from drasi_ray.testing.conformance import bootstrap_events, step_source
from tests.differential.scenarios import query_spec
from tests.differential.subject import DrasiRaySubject
from tests.query.support import TinyStore, same_multiset

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _cases() -> list[Any]:
    params = []
    for path in sorted(SCENARIOS.glob("*.json")):
        scenario = json.loads(path.read_text())
        for case in scenario["cases"]:
            params.append(pytest.param(scenario, case, id=f"{path.stem}::{case['name']}"))
    return params


def _declares_sources(scenario: dict[str, Any]) -> bool:
    """Whether a query gives sources, joins or middleware (``{query, ...}`` entries)."""
    return any(isinstance(entry, dict) for entry in scenario["queries"].values())


def _run_in_process(scenario: dict[str, Any], case: dict[str, Any]) -> None:
    """Events through the whole pipeline in one process (stores per source, middleware
    subscriptions, routing, each query's engine), as :mod:`tests.differential.subject` runs
    them."""
    subject = DrasiRaySubject([query_spec(scenario, qid) for qid in case["queries"]])
    try:
        assert not subject.refused, subject.refused
        _steps(subject, scenario, case)
    finally:
        subject.close()


def _steps(subject: DrasiRaySubject, scenario: dict[str, Any], case: dict[str, Any]) -> None:
    position = 0
    for source, event in bootstrap_events(scenario, case):
        subject.apply(position, event, source)
        position += 1
    for number, step in enumerate(case["steps"]):
        produced = subject.apply(position, step["event"], step_source(scenario, step))
        position += 1
        for qid in case["queries"]:
            actual, expected = produced.get(qid, []), step["expect"].get(qid, [])
            assert same_multiset(actual, expected), (
                f"step {number} of {case['name']}, query {qid}:\n"
                f"actual   {actual}\nexpected {expected}"
            )


@pytest.mark.parametrize(("scenario", "case"), _cases())
def test_scenario_case(scenario: dict[str, Any], case: dict[str, Any]) -> None:
    if _declares_sources(scenario):
        _run_in_process(scenario, case)
        return
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
