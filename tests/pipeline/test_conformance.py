"""Drasi's conformance scenarios through the public API: with 1 consumer in the default
scaling (the fused layout: the control plane, store shard 0 and the query host in one actor),
and with 2 consumers on three shards and two hosts, each an actor of its own (which must give
exactly the same diffs). The consumer count and the layout are independent, so the second
layout runs with more than one consumer, each case's steps read by either. Two, not three:
each case's consumers are processes started for it, which took 70% of a case's time with three
(a fifth less with two), and a third consumer reads by no path the second does not. A third
run (one shard and one host as actors) added nothing either run misses and cost a tenth of the
suite's time.

Each configuration runs every case in one running app (:class:`~drasi_ray.testing.conformance.
CaseApp`): each case on sources, streams, consumers and queries of its own, added to the app
and removed after the case; a case with a manual clock runs in an app of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from drasi_ray.model.config import ScalingConfig
from drasi_ray.testing.conformance import CaseApp, load_scenario
from drasi_ray.testing.embedded_redis import EmbeddedRedis

SCENARIOS = Path(__file__).parent.parent / "scenarios"
RUNS = [
    pytest.param((1, ScalingConfig()), id="1consumer-fused"),
    pytest.param(
        (2, ScalingConfig(shards=3, query_hosts=2)), id="2consumers-K3-M2", marks=pytest.mark.slow
    ),
]


@pytest.fixture(scope="module", params=RUNS)
def case_app(
    request: pytest.FixtureRequest, ray_session: None, redis_server: EmbeddedRedis
) -> Iterator[CaseApp]:
    """One running app per configuration (consumers x layout), shared by every case."""
    consumers, scaling = request.param
    with CaseApp(redis_server.url, consumers=consumers, scaling_config=scaling) as app:
        yield app


def _cases() -> list[pytest.ParameterSet]:
    params = []
    for path in sorted(SCENARIOS.glob("*.json")):
        scenario = load_scenario(path)
        for case in scenario["cases"]:
            params.append(pytest.param(path.name, case["name"], id=f"{path.stem}:{case['name']}"))
    return params


@pytest.mark.parametrize(("file_name", "case_name"), _cases())
def test_scenario_case(case_app: CaseApp, file_name: str, case_name: str) -> None:
    scenario = load_scenario(SCENARIOS / file_name)
    case = next(case for case in scenario["cases"] if case["name"] == case_name)
    outcome = case_app.run(scenario, case)
    assert outcome.steps == len(case["steps"])
    assert outcome.passed, "\n".join(str(mismatch) for mismatch in outcome.mismatches)
