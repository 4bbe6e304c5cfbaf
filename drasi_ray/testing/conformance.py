"""Run Drasi conformance scenarios (``tests/scenarios/*.json``) through the public API.

A scenario file holds queries and cases; each case starts from an empty graph with fresh
queries, publishes its ``bootstrap`` events as one stream entry (so they apply in order with any
number of consumers), then for each step publishes one event, waits until
the app is idle and compares the diffs the step produced, per query, as a multiset (numbers by
value, floats to 1e-9 relative). Format: ``tests/scenarios/README.md``.

Each case runs in its own app (fresh actors, a fresh stream), with as many consumers as asked.
A case with a ``clock`` runs on a :class:`~drasi_ray.model.clock.ManualClock` starting there; a
step's ``clock`` moves it before the step's event, and the diffs of what came due count in that
step.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drasi_ray.actors.subscription import Subscription
from drasi_ray.app import DrasiRay
from drasi_ray.model.clock import ManualClock
from drasi_ray.model.config import RayConfig
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app

REL_TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class StepMismatch:
    case: str
    step: int
    query_id: str
    expected: list[dict[str, Any]]
    actual: list[dict[str, Any]]

    def __str__(self) -> str:
        return (
            f"{self.case} step {self.step} query {self.query_id}:\n"
            f"  expected {json.dumps(self.expected, sort_keys=True, default=str)}\n"
            f"  actual   {json.dumps(self.actual, sort_keys=True, default=str)}"
        )


@dataclass(slots=True)
class CaseOutcome:
    scenario: str
    case: str
    steps: int = 0
    mismatches: list[StepMismatch] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.mismatches


def load_scenario(path: str | Path) -> dict[str, Any]:
    scenario: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return scenario


def iter_cases(scenario: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    yield from scenario["cases"]


def run_case(
    scenario: Mapping[str, Any],
    case: Mapping[str, Any],
    redis_url: str,
    consumers: int = 1,
    ray_config: RayConfig | None = None,
    idle_timeout: float = 30.0,
) -> CaseOutcome:
    """Run one case in a fresh app; return its outcome (mismatches per step and query)."""
    stream = f"scenario-{scenario['name']}-{case['name']}-{uuid.uuid4().hex[:8]}"
    queries = {query_id: scenario["queries"][query_id] for query_id in case["queries"]}
    clock = None if case.get("clock") is None else ManualClock(case["clock"])
    app = one_source_app(
        redis_url,
        stream,
        queries,
        source_id=scenario.get("source_id") or "source",
        prefix="conformance",
        dispatch_buffer_capacity=100_000,
        ray_config=ray_config,
        clock=clock,
        consumers=consumers,
        batch_size=50,
    )
    outcome = CaseOutcome(scenario["name"], case["name"])
    app.start()
    try:
        subscriptions = {query_id: app.subscribe(query_id) for query_id in case["queries"]}
        with Publisher.from_url(redis_url) as publisher:
            steps = _Steps(app, publisher, stream, clock, idle_timeout)
            steps.run(case, subscriptions, outcome)
    finally:
        app.stop()
    return outcome


@dataclass(slots=True)
class _Steps:
    """Publishes a case's events (and moves its clock) step by step, waiting for idle."""

    app: DrasiRay
    publisher: Publisher
    stream: str
    clock: ManualClock | None
    idle_timeout: float

    def run(
        self,
        case: Mapping[str, Any],
        subscriptions: Mapping[str, Subscription],
        outcome: CaseOutcome,
    ) -> None:
        # One entry holds the whole bootstrap: one consumer applies it, in order, whatever the
        # consumer count (separate entries spread over consumers and make order-dependent
        # values, such as a collect() list, depend on the race).
        bootstrap = case.get("bootstrap", [])
        if bootstrap:
            self.publisher.publish(self.stream, [encode_cloud_event(bootstrap)])
        self.app.wait_until_idle(self.idle_timeout)
        for subscription in subscriptions.values():
            subscription.drain()
        for number, step in enumerate(case["steps"], start=1):
            self.step(step)
            outcome.steps += 1
            for query_id, subscription in subscriptions.items():
                actual = [diff for result in subscription.drain() for diff in result.results]
                expected = list(step["expect"].get(query_id, []))
                if not diffs_match(expected, actual):
                    outcome.mismatches.append(
                        StepMismatch(case["name"], number, query_id, expected, actual)
                    )

    def step(self, step: Mapping[str, Any]) -> None:
        """Move the clock (a step's ``clock``), publish its event, wait until idle."""
        if step.get("clock") is not None:
            if self.clock is None:
                raise ValueError("a step moves the clock of a case that has none")
            self.clock.set(step["clock"])
        if step.get("event") is not None:
            self.publisher.publish(self.stream, [encode_cloud_event([step["event"]])])
        self.app.wait_until_idle(self.idle_timeout)


def diffs_match(expected: Sequence[Any], actual: Sequence[Any]) -> bool:
    """Multiset equality of diff lists, numbers compared by value (floats 1e-9 relative)."""
    if len(expected) != len(actual):
        return False
    unmatched = list(actual)
    for want in expected:
        index = next((i for i, got in enumerate(unmatched) if values_equal(want, got)), None)
        if index is None:
            return False
        unmatched.pop(index)
    return True


def values_equal(left: Any, right: Any) -> bool:
    """Structural equality where 5 == 5.0 and floats match to 1e-9 relative."""
    if _is_number(left) and _is_number(right):
        return math.isclose(float(left), float(right), rel_tol=REL_TOLERANCE, abs_tol=1e-12)
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(values_equal(left[k], right[k]) for k in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(
            values_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    return type(left) is type(right) and bool(left == right)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def run_scenario_file(
    path: str | Path, redis_url: str, consumers: int = 1, ray_config: RayConfig | None = None
) -> list[CaseOutcome]:
    """Run every case of a scenario file."""
    scenario = load_scenario(path)
    return [
        run_case(scenario, case, redis_url, consumers, ray_config) for case in iter_cases(scenario)
    ]
