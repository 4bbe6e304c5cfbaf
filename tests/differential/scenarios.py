"""Drasi's shared-test scenarios (``tests/scenarios/*.json``) as differential cases.

A scenario case is a bootstrap and steps of platform events, with the diffs each step must
give. Here each case becomes one :class:`~tests.oracle.model.Case` (the bootstrap's
changes, then the steps', each on its source), with its queries as
:class:`~tests.oracle.model.QuerySpec` objects carrying their sources, joins, middleware
and pipelines, so drasi-lib and drasi_ray can run it and their diffs be compared step by step,
and the scenario's transcribed expectations checked against drasi-lib's.

A case's last step may list in ``error`` the queries whose middleware fails on its event:
drasi-lib then stops those queries (status Error), where drasi_ray dead-letters the entry and
goes on; either way the step changes no result (:attr:`ScenarioCase.refusing`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drasi_ray.testing.conformance import ScenarioQuery, bootstrap_events, step_source
from tests.oracle.model import Case, GraphChange, QuerySpec

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"

_OPS = {"i": "insert", "u": "update", "d": "delete"}


@dataclass(frozen=True, slots=True)
class ScenarioCase:
    """One scenario case: its changes, its queries, and where its steps start."""

    case: Case
    queries: tuple[QuerySpec, ...]
    first_step: int
    expected: tuple[Mapping[str, list[dict[str, Any]]], ...]
    refusing: frozenset[str] = frozenset()
    """Queries whose middleware fails on the last step (Drasi stops them there)."""


def graph_change(event: Mapping[str, Any], source: str | None = None) -> GraphChange:
    """The change a platform event stands for (the element's time in milliseconds), on
    ``source`` (default: the differential cases' one source)."""
    op = event["op"]
    payload = event["payload"]
    data = payload["before"] if op == "d" else payload["after"]
    change = GraphChange(
        _OPS[op],  # type: ignore[arg-type]
        data["id"],
        tuple(data["labels"]),
        dict(data.get("properties") or {}),
        payload["source"]["ts_ns"] // 1_000_000,
        data.get("startId"),
        data.get("endId"),
    )
    if source is None:
        return change
    return GraphChange(
        change.op,
        change.id,
        change.labels,
        change.properties,
        change.effective_from,
        change.start_id,
        change.end_id,
        source,
    )


def scenario_cases() -> Iterator[ScenarioCase]:
    """Every case of every scenario file, in file order, but those on an injected clock
    (Drasi's future functions: drasi-lib's future queue runs on the wall clock, so such a case
    cannot run through it as written; tests/query/test_future_functions_drasi.py runs those
    functions through drasi-lib on timed plans instead). A scenario calling Drasi's past
    functions runs with drasi-lib's archive index on (tests/oracle/cases.py)."""
    for path in sorted(SCENARIO_DIR.glob("*.json")):
        scenario = json.loads(path.read_text(encoding="utf-8"))
        for case in scenario["cases"]:
            if case.get("clock") is None:
                yield scenario_case(scenario, case)


def query_spec(scenario: Mapping[str, Any], query_id: str) -> QuerySpec:
    """A scenario query with its sources, joins, middleware and pipelines."""
    query = ScenarioQuery.of(scenario, query_id)
    return QuerySpec(
        query_id,
        query.text,
        tuple(query.joins),
        tuple(query.middleware),
        {source: tuple(names) for source, names in query.pipelines.items()},
        tuple(query.sources),
    )


def scenario_case(scenario: Mapping[str, Any], case: Mapping[str, Any]) -> ScenarioCase:
    several = _declares_sources(scenario)
    bootstrap = [
        graph_change(event, source if several else None)
        for source, event in bootstrap_events(scenario, case)
    ]
    steps = [
        graph_change(step["event"], step_source(scenario, step) if several else None)
        for step in case["steps"]
    ]
    name = f"{scenario['name']}::{case['name']}"
    queries = tuple(query_spec(scenario, qid) for qid in case["queries"])
    if not several:  # the differential cases' one source
        queries = tuple(QuerySpec(q.id, q.text) for q in queries)
    expected = tuple(step["expect"] for step in case["steps"])
    refusing = frozenset(case["steps"][-1].get("error", ())) if case["steps"] else frozenset()
    return ScenarioCase(
        Case(name, tuple(bootstrap + steps)), queries, len(bootstrap), expected, refusing
    )


def _declares_sources(scenario: Mapping[str, Any]) -> bool:
    """Whether a query gives sources, joins or middleware (``{query, ...}`` entries)."""
    return any(isinstance(entry, dict) for entry in scenario["queries"].values())
