"""Run Drasi conformance scenarios (``tests/scenarios/*.json``) through the public API.

A scenario file holds queries and cases; each case starts from an empty graph with fresh
queries, publishes its ``bootstrap`` events as one stream entry per source (so they apply in
order with any number of consumers), then for each step publishes one event on its source,
waits until the app is idle and compares the diffs the step produced, per query, as a
multiset (numbers by value, floats to 1e-9 relative). Format: ``tests/scenarios/README.md``
(a query may be Cypher text, or ``{query, sources, joins, middleware}`` in Drasi's shapes).

Each case runs in its own app (fresh actors, one fresh stream per source), with as many
consumers per source as asked. A case with a ``clock`` runs on a
:class:`~drasi_ray.model.clock.ManualClock` starting there; a step's ``clock`` moves it before
the step's event, and the diffs of what came due count in that step.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from drasi_ray.actors.subscription import Subscription
from drasi_ray.app import DrasiRay
from drasi_ray.model import keys
from drasi_ray.model.clock import ManualClock
from drasi_ray.model.config import QueryConfig, RayConfig, ScalingConfig, validated
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.source.platform import PlatformSource
from drasi_ray.streams.publisher import Publisher

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


@dataclass(frozen=True, slots=True)
class ScenarioQuery:
    """One query of a scenario: its text, sources, and Drasi-shaped joins and middleware."""

    text: str
    sources: tuple[str, ...]
    joins: tuple[dict[str, Any], ...] = ()
    middleware: tuple[dict[str, Any], ...] = ()
    pipelines: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @staticmethod
    def of(scenario: Mapping[str, Any], query_id: str) -> ScenarioQuery:
        entry = scenario["queries"][query_id]
        default = (default_source(scenario),)
        if isinstance(entry, str):
            return ScenarioQuery(entry, default)
        sources: list[str] = []
        pipelines: dict[str, tuple[str, ...]] = {}
        for item in entry.get("sources", default):
            if isinstance(item, str):
                sources.append(item)
            else:
                sources.append(item["id"])
                pipelines[item["id"]] = tuple(item.get("pipeline", ()))
        return ScenarioQuery(
            entry["query"],
            tuple(sources),
            tuple(entry.get("joins", ())),
            tuple(entry.get("middleware", ())),
            pipelines,
        )

    def config(self, query_id: str) -> QueryConfig:
        config: QueryConfig = validated(
            QueryConfig,
            id=query_id,
            query=self.text,
            sources=self.sources,
            joins=self.joins,
            middleware=self.middleware,
            pipelines=self.pipelines,
        )
        return config


def default_source(scenario: Mapping[str, Any]) -> str:
    return str(scenario.get("source_id") or "source")


def bootstrap_events(
    scenario: Mapping[str, Any], case: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """``(source, event)`` of each bootstrap item (an event, or ``{source, event}``)."""
    default = default_source(scenario)
    return [
        (item["source"], item["event"]) if "event" in item else (default, item)
        for item in case.get("bootstrap", [])
    ]


def step_source(scenario: Mapping[str, Any], step: Mapping[str, Any]) -> str:
    return str(step.get("source") or default_source(scenario))


def scenario_sources(scenario: Mapping[str, Any], case: Mapping[str, Any]) -> list[str]:
    """Every source the case's queries read or its events arrive on."""
    found = dict.fromkeys([default_source(scenario)])
    for query_id in case["queries"]:
        found.update(dict.fromkeys(ScenarioQuery.of(scenario, query_id).sources))
    found.update(dict.fromkeys(source for source, _ in bootstrap_events(scenario, case)))
    found.update(dict.fromkeys(step_source(scenario, step) for step in case["steps"]))
    return list(found)


def load_scenario(path: str | Path) -> dict[str, Any]:
    scenario: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return scenario


def run_case(
    scenario: Mapping[str, Any],
    case: Mapping[str, Any],
    redis_url: str,
    consumers: int = 1,
    ray_config: RayConfig | None = None,
    idle_timeout: float = 30.0,
    scaling_config: ScalingConfig | None = None,
) -> CaseOutcome:
    """Run one case in a fresh app; return its outcome (mismatches per step and query).

    ``scaling_config``: how many store shards and query hosts the app runs (default: the
    app's defaults, :class:`~drasi_ray.model.config.ScalingConfig`).
    """
    tag = uuid.uuid4().hex[:8]
    clock = None if case.get("clock") is None else ManualClock(case["clock"])
    app = DrasiRay(
        f"conformance-{tag}", ray_config=ray_config, clock=clock, scaling_config=scaling_config
    )
    streams: dict[str, str] = {}
    for number, source_id in enumerate(scenario_sources(scenario, case)):
        streams[source_id] = f"scenario-{scenario['name']}-{case['name']}-{tag}-{number}"
        app.add_source(
            PlatformSource.builder(source_id)
            .with_redis_url(redis_url)
            .with_stream_key(streams[source_id])
            .with_consumers(consumers)
            .with_batch_size(50)
            .with_block_ms(100)
            .with_dispatch_buffer_capacity(100_000)
            .build()
        )
    for query_id in case["queries"]:
        app.add_query(ScenarioQuery.of(scenario, query_id).config(query_id))
    outcome = CaseOutcome(scenario["name"], case["name"])
    app.start()
    try:
        subscriptions = {query_id: app.subscribe(query_id) for query_id in case["queries"]}
        with Publisher.from_url(redis_url) as publisher:
            run = _CaseRun(
                app, publisher, streams, scenario, subscriptions, idle_timeout, redis_url, clock
            )
            run.steps(case, outcome)
    finally:
        app.stop()
    return outcome


@dataclass(slots=True)
class _CaseRun:
    app: DrasiRay
    publisher: Publisher
    streams: Mapping[str, str]
    scenario: Mapping[str, Any]
    subscriptions: Mapping[str, Subscription]
    idle_timeout: float
    redis_url: str
    clock: ManualClock | None = None

    def steps(self, case: Mapping[str, Any], outcome: CaseOutcome) -> None:
        # One entry per source holds the whole bootstrap: one consumer applies it, in order,
        # whatever the consumer count (separate entries spread over consumers and make
        # order-dependent values, such as a collect() list, depend on the race).
        by_source: dict[str, list[dict[str, Any]]] = {}
        for source, event in bootstrap_events(self.scenario, case):
            by_source.setdefault(source, []).append(event)
        for source, events in by_source.items():
            self.publisher.publish(self.streams[source], [encode_cloud_event(events)])
        self.app.wait_until_idle(self.idle_timeout)
        for subscription in self.subscriptions.values():
            subscription.drain()
        for number, step in enumerate(case["steps"], start=1):
            published = self._step(step)
            outcome.steps += 1
            self._compare(case, number, step, outcome)
            if step.get("error") and published is not None:
                stream, entry_id = published
                self._check_dead_letter(stream, entry_id, case["name"], number, step, outcome)

    def _step(self, step: Mapping[str, Any]) -> tuple[str, str] | None:
        """Move the clock (a step's ``clock``), publish its event on its source's stream, wait
        until idle; the stream and entry id of the event (None: a clock-only step)."""
        if step.get("clock") is not None:
            if self.clock is None:
                raise ValueError("a step moves the clock of a case that has none")
            self.clock.set(step["clock"])
        published = None
        if step.get("event") is not None:
            stream = self.streams[step_source(self.scenario, step)]
            (entry_id,) = self.publisher.publish(stream, [encode_cloud_event([step["event"]])])
            published = (stream, entry_id)
        self.app.wait_until_idle(self.idle_timeout)
        return published

    def _check_dead_letter(
        self,
        stream: str,
        entry_id: str,
        case: str,
        number: int,
        step: Mapping[str, Any],
        outcome: CaseOutcome,
    ) -> None:
        """The entry a query's middleware failed on is in ``<stream>:dlq``, with a reason
        naming each such query."""
        with redis.Redis.from_url(self.redis_url) as client:
            letters = client.xrange(keys.dead_letter_stream(stream))
        reasons = [
            fields[b"reason"].decode()
            for _id, fields in letters
            if fields.get(b"entry_id", b"").decode() == entry_id
        ]
        for query_id in step["error"]:
            if not any(f"query {query_id!r}" in reason for reason in reasons):
                expected = [{"dead_letter": entry_id, "query": query_id}]
                mismatch = StepMismatch(case, number, "dead-letter", expected, reasons)
                outcome.mismatches.append(mismatch)

    def _compare(
        self, case: Mapping[str, Any], number: int, step: Mapping[str, Any], outcome: CaseOutcome
    ) -> None:
        for query_id, subscription in self.subscriptions.items():
            actual = [diff for result in subscription.drain() for diff in result.results]
            expected = list(step["expect"].get(query_id, []))
            if not diffs_match(expected, actual):
                outcome.mismatches.append(
                    StepMismatch(case["name"], number, query_id, expected, actual)
                )


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
