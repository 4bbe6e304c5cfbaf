"""Timed plans run through Drasi (the oracle) and through drasi_ray's engine, compared.

A plan is JSON-able data::

    {"name": ..., "queries": {query_id: cypher},
     "steps": [{"at": ms, "change": {...}, "effective": ms?}, {"at": ms}, ...]}

``at`` is a time in milliseconds after the plan's base time: the wall clock when the step
runs. A step with a ``change`` (drasi-lib's ``push_change`` fields: ``op`` insert / update /
delete, ``id``, ``labels``, ``properties``, ``start_id``, ``end_id``) pushes it with
``effective_from`` = base + ``effective`` (default: ``at``); a step without one only lets time
pass. In properties, ``{"$at": ms}`` stands for the epoch milliseconds base + ms.

Observed per step: a *window* of diffs per query, every diff that arrived from the step's start
to the next step's start (so a re-evaluation due between two steps belongs to the earlier
one), and finally each query's result rows. drasi_ray's engine runs the same plan on an
injected clock: at each step it first fires what came due before the step (into the previous
window), applies the change, then fires what is due at the step.

Drasi fires due re-evaluations on its wall clock, polling every 100 ms, so plans keep due times
at least ~300 ms away from step times.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, ElementKind, FrozenMap
from drasi_ray.query.engine import ContinuousQuery
from tests.query.support import same_multiset

ENGINE_BASE_MS = 1_700_000_000_000
"""The base time of plans run through drasi_ray's engine (any fixed time works)."""
SETTLE_MS = 700
"""As the child's: results due within this time after the last step still count."""
CHILD_TIMEOUT_S = 120


# --------------------------------------------------------------------------- building plans


def plan(name: str, queries: Mapping[str, str], *steps: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "queries": dict(queries), "steps": list(steps)}


def insert(at: int, element_id: str, labels: Sequence[str], **properties: Any) -> dict[str, Any]:
    change = {"op": "insert", "id": element_id, "labels": list(labels), "properties": properties}
    return {"at": at, "change": change}


def update(at: int, element_id: str, labels: Sequence[str], **properties: Any) -> dict[str, Any]:
    step = insert(at, element_id, labels, **properties)
    step["change"]["op"] = "update"
    return step


def relate(
    at: int, element_id: str, label: str, start: str, end: str, **properties: Any
) -> dict[str, Any]:
    step = insert(at, element_id, [label], **properties)
    step["change"].update(start_id=start, end_id=end)
    return step


def delete(at: int, element_id: str, labels: Sequence[str]) -> dict[str, Any]:
    return {"at": at, "change": {"op": "delete", "id": element_id, "labels": list(labels)}}


def wait(at: int) -> dict[str, Any]:
    return {"at": at}


def at(ms: int) -> dict[str, int]:
    """A property value: the epoch milliseconds ``ms`` after the plan's base time."""
    return {"$at": ms}


# --------------------------------------------------------------------------- observations


@dataclass(frozen=True, slots=True)
class Observed:
    """What a plan produced: per step, per query, the diffs of its window; the final rows."""

    windows: list[dict[str, list[Any]]]
    results: dict[str, list[Any]]


def run_in_drasi(plans: Sequence[dict[str, Any]]) -> list[Observed]:
    """Run ``plans`` at once through drasi-lib in a child process."""
    with tempfile.TemporaryDirectory() as folder:
        plans_file, out_file = Path(folder, "plans.json"), Path(folder, "out.json")
        plans_file.write_text(json.dumps(list(plans)))
        subprocess.run(
            [sys.executable, "-m", "tests.futures.drasi_child", str(plans_file), str(out_file)],
            env=_quiet_env(),
            cwd=Path(__file__).resolve().parents[2],
            timeout=CHILD_TIMEOUT_S,
            capture_output=True,
            check=False,
        )
        raw = json.loads(out_file.read_text())
    for observed, each in zip(raw, plans, strict=True):
        failed = {q: s for q, s in observed["status"].items() if s != "Running"}
        assert not failed, f"Drasi stopped queries of plan {each['name']}: {failed}"
    return [Observed(item["windows"], item["results"]) for item in raw]


def _quiet_env() -> dict[str, str]:
    import os

    return {**os.environ, "RUST_LOG": "error"}


def run_in_engine(each: Mapping[str, Any]) -> Observed:
    """Run one plan through drasi_ray's engine on an injected clock."""
    queries = {q: ContinuousQuery(q, text) for q, text in each["queries"].items()}
    graph: dict[str, Element] = {}
    windows: list[dict[str, list[Any]]] = []
    for step in each["steps"]:
        now = ENGINE_BASE_MS + step["at"]
        if windows:
            _fire(queries, now - 1, windows[-1])
        window: dict[str, list[Any]] = {q: [] for q in queries}
        windows.append(window)
        change = step.get("change")
        if change is not None:
            delta = _delta(graph, change, ENGINE_BASE_MS + step.get("effective", step["at"]))
            if delta is not None:
                for query_id, query in queries.items():
                    window[query_id].extend(query.apply(delta))
        _fire(queries, now, window)
    _fire(queries, ENGINE_BASE_MS + each["steps"][-1]["at"] + SETTLE_MS, windows[-1])
    return Observed(windows, {q: query.results() for q, query in queries.items()})


def _fire(queries: Mapping[str, ContinuousQuery], now: int, window: dict[str, list[Any]]) -> None:
    for query_id, query in queries.items():
        for diffs in query.fire_due(now):
            window[query_id].extend(diffs)


def _delta(
    graph: dict[str, Element], change: Mapping[str, Any], time_ms: int
) -> ElementDelta | None:
    """Apply a push_change to the graph as Drasi does (update merges properties)."""
    element_id = change["id"]
    before = graph.get(element_id)
    if change["op"] == "delete":
        if before is None:
            return None
        del graph[element_id]
        return ElementDelta(before, None, ZERO_VERSION, time_ms)
    properties = _resolve(dict(change.get("properties") or {}), ENGINE_BASE_MS)
    if change["op"] == "update" and before is not None:
        properties = {**before.properties, **properties}
    start, end = change.get("start_id"), change.get("end_id")
    kind = ElementKind.NODE if start is None else ElementKind.RELATION
    after = Element(
        kind, element_id, tuple(change["labels"]), FrozenMap(properties), start, end, time_ms
    )
    graph[element_id] = after
    return ElementDelta(before, after, ZERO_VERSION, time_ms)


def _resolve(value: Any, base: int) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$at"}:
            return base + int(value["$at"])
        return {key: _resolve(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, base) for item in value]
    return value


# --------------------------------------------------------------------------- comparison


def differences(expected: Observed, actual: Observed) -> list[str]:
    """Where two observations of one plan differ (diff windows as multisets, final rows)."""
    problems: list[str] = []
    for number, (want, got) in enumerate(zip(expected.windows, actual.windows, strict=True)):
        for query_id in want:
            if not same_multiset(got[query_id], want[query_id]):
                problems.append(
                    f"step {number} query {query_id}:\n  drasi  {want[query_id]}\n"
                    f"  engine {got[query_id]}"
                )
    for query_id, rows in expected.results.items():
        if not same_multiset(actual.results[query_id], rows):
            problems.append(
                f"results of {query_id}:\n  drasi  {rows}\n  engine {actual.results[query_id]}"
            )
    return problems
