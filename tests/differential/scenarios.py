"""Drasi's shared-test scenarios (``tests/scenarios/*.json``) as differential cases.

A scenario case is a bootstrap and steps of platform events, with the diffs each step must
give. Here each case becomes one :class:`~tests.differential.model.Case` (the bootstrap's
changes, then the steps'), so drasi-lib and drasi_ray can run it and their diffs be compared
step by step, and the scenario's transcribed expectations checked against drasi-lib's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.differential.model import Case, GraphChange, QuerySpec

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"

_OPS = {"i": "insert", "u": "update", "d": "delete"}


@dataclass(frozen=True, slots=True)
class ScenarioCase:
    """One scenario case: its changes, its queries, and where its steps start."""

    case: Case
    queries: tuple[QuerySpec, ...]
    first_step: int
    expected: tuple[Mapping[str, list[dict[str, Any]]], ...]


def graph_change(event: Mapping[str, Any]) -> GraphChange:
    """The change a platform event stands for (the element's time in milliseconds)."""
    op = event["op"]
    payload = event["payload"]
    data = payload["before"] if op == "d" else payload["after"]
    return GraphChange(
        _OPS[op],  # type: ignore[arg-type]
        data["id"],
        tuple(data["labels"]),
        dict(data.get("properties") or {}),
        payload["source"]["ts_ns"] // 1_000_000,
        data.get("startId"),
        data.get("endId"),
    )


def scenario_cases() -> Iterator[ScenarioCase]:
    """Every case of every scenario file, in file order, but those on an injected clock
    (Drasi's future functions: drasi-lib's future queue runs on the wall clock, so such a case
    cannot run through it as written; tests/query/test_future_functions_drasi.py runs those
    functions through drasi-lib on timed plans instead) and those of a scenario marked
    ``archive`` (Drasi's past functions need drasi-lib's archive index, which this oracle does
    not turn on; tests/query/test_history_oracle.py runs them with it)."""
    for path in sorted(SCENARIO_DIR.glob("*.json")):
        scenario = json.loads(path.read_text(encoding="utf-8"))
        if scenario.get("archive"):
            continue
        for case in scenario["cases"]:
            if case.get("clock") is None:
                yield _scenario_case(scenario, case)


def _scenario_case(scenario: Mapping[str, Any], case: Mapping[str, Any]) -> ScenarioCase:
    bootstrap = [graph_change(event) for event in case["bootstrap"]]
    steps = [graph_change(step["event"]) for step in case["steps"]]
    name = f"{scenario['name']}::{case['name']}"
    queries = tuple(QuerySpec(qid, scenario["queries"][qid]) for qid in case["queries"])
    expected = tuple(step["expect"] for step in case["steps"])
    return ScenarioCase(Case(name, tuple(bootstrap + steps)), queries, len(bootstrap), expected)
