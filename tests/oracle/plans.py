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
at least ~300 ms away from step times. :func:`run_in_drasi` runs plans in the oracle's child
process (:mod:`tests.oracle.child`): each plan gets its own Drasi instance, all run at once
against one wall-clock base time, and the child waits for the plans' times to come (it is the
oracle's clock, not a test sleeping).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, ElementKind, FrozenMap
from drasi_ray.query.engine import ContinuousQuery
from tests.oracle.child import Emit, create_drasi, run_child
from tests.oracle.model import plain_diff
from tests.query.support import same_multiset

ENGINE_BASE_MS = 1_700_000_000_000
"""The base time of plans run through drasi_ray's engine (any fixed time works)."""
SETTLE_MS = 700
"""How long after a plan's last step its late results (due re-evaluations) are collected."""
LEAD_MS = 400
"""Time between the end of setting up every Drasi instance and the base time of the plans."""
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
    """Run ``plans`` at once through drasi-lib, in the oracle's child process."""
    raw = run_child("plans", {"plans": list(plans)}, CHILD_TIMEOUT_S)
    assert len(raw) == len(plans), "drasi-lib's child did not finish the plans"
    for observed, each in zip(raw, plans, strict=True):
        failed = {q: s for q, s in observed["status"].items() if s != "Running"}
        assert not failed, f"Drasi stopped queries of plan {each['name']}: {failed}"
    return [Observed(item["windows"], item["results"]) for item in raw]


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


# --------------------------------------------------------------------------- Drasi's side


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


async def _sleep_until(when_ms: int) -> None:
    delay = when_ms - _now_ms()
    if delay > 0:
        await asyncio.sleep(delay / 1000)


class _DrasiRun:
    """One plan on its own Drasi instance, in the child."""

    def __init__(self, plan: Mapping[str, Any], number: int) -> None:
        self.plan = plan
        self.name = f"plan{number}"
        self.arrivals: list[tuple[int, str, list[dict[str, Any]]]] = []
        self.instance: Any = None

    async def setup(self) -> None:
        instance = self.instance = await create_drasi(self.name)
        await instance.start()
        await instance.add_python_source("s")
        queries = self.plan["queries"]
        for query_id, text in queries.items():
            await instance.add_query(query_id, text, ["s"])
        await instance.add_python_reaction("r", list(queries), self._arrived)
        for query_id in queries:
            await instance.wait_for_query(query_id)

    def _arrived(self, event: Mapping[str, Any]) -> None:
        self.arrivals.append((_now_ms(), event["query_id"], event["results"]))

    async def run(self, base: int) -> dict[str, Any]:
        starts: list[int] = []
        for step in self.plan["steps"]:
            await _sleep_until(base + step["at"])
            starts.append(_now_ms())
            change = step.get("change")
            if change is not None:
                pushed = _resolve(dict(change), base)
                pushed["effective_from"] = base + step.get("effective", step["at"])
                await self.instance.push_change("s", pushed)
        await _sleep_until(base + self.plan["steps"][-1]["at"] + SETTLE_MS)
        queries = self.plan["queries"]
        return {
            "windows": self._windows(starts),
            "results": {q: await self.instance.get_query_results(q) for q in queries},
            "status": {q: await self.instance.get_query_status(q) for q in queries},
        }

    def _windows(self, starts: list[int]) -> list[dict[str, list[Any]]]:
        """Each arrival in the window of the last step that started before it."""
        windows: list[dict[str, list[Any]]] = [
            {q: [] for q in self.plan["queries"]} for _ in starts
        ]
        for arrived, query_id, diffs in self.arrivals:
            index = max((i for i, start in enumerate(starts) if start <= arrived), default=0)
            windows[index][query_id].extend(plain_diff(diff) for diff in diffs)
        return windows


async def serve(doc: Mapping[str, Any], emit: Emit) -> None:
    """The child's runner of a plans request: every plan at once, one line per plan."""
    runs = [_DrasiRun(each, number) for number, each in enumerate(doc["plans"])]
    for run in runs:
        await run.setup()
    base = _now_ms() + LEAD_MS
    for observed in await asyncio.gather(*(run.run(base) for run in runs)):
        emit(observed)
    for run in runs:
        await run.instance.stop()


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
