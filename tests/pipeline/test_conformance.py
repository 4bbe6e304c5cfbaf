"""Drasi's conformance scenarios through the public API: with 1 and with 3 consumers on one
store shard and one query host, and with 3 consumers on three shards and two hosts (which must
give exactly the same diffs). The consumer count and the layout are independent, so the second
layout runs with the consumers that exercise more (3) and keeps the suite in its time budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from drasi_ray.model.config import ScalingConfig
from drasi_ray.testing.conformance import load_scenario, run_case

SCENARIOS = Path(__file__).parent.parent / "scenarios"
RUNS = [
    pytest.param(1, ScalingConfig(shards=1, query_hosts=1), id="1consumer-K1-M1"),
    pytest.param(3, ScalingConfig(shards=1, query_hosts=1), id="3consumers-K1-M1"),
    pytest.param(
        3, ScalingConfig(shards=3, query_hosts=2), id="3consumers-K3-M2", marks=pytest.mark.slow
    ),
]


def _cases() -> list[pytest.ParameterSet]:
    params = []
    for path in sorted(SCENARIOS.glob("*.json")):
        scenario = load_scenario(path)
        for case in scenario["cases"]:
            params.append(pytest.param(path.name, case["name"], id=f"{path.stem}:{case['name']}"))
    return params


@pytest.mark.parametrize(("consumers", "scaling"), RUNS)
@pytest.mark.parametrize(("file_name", "case_name"), _cases())
def test_scenario_case(
    ray_session: None,
    redis_url: str,
    file_name: str,
    case_name: str,
    consumers: int,
    scaling: ScalingConfig,
) -> None:
    scenario = load_scenario(SCENARIOS / file_name)
    case = next(case for case in scenario["cases"] if case["name"] == case_name)
    outcome = run_case(scenario, case, redis_url, consumers=consumers, scaling_config=scaling)
    assert outcome.steps == len(case["steps"])
    assert outcome.passed, "\n".join(str(mismatch) for mismatch in outcome.mismatches)
