"""Drasi's conformance scenarios through the public API, with 1 and with 3 consumers."""

from __future__ import annotations

from pathlib import Path

import pytest

from drasi_ray.testing.conformance import load_scenario, run_case

SCENARIOS = Path(__file__).parent.parent / "scenarios"


def _cases() -> list[pytest.ParameterSet]:
    params = []
    for path in sorted(SCENARIOS.glob("*.json")):
        scenario = load_scenario(path)
        for case in scenario["cases"]:
            params.append(pytest.param(path.name, case["name"], id=f"{path.stem}:{case['name']}"))
    return params


@pytest.mark.parametrize("consumers", [1, 3], ids=["1consumer", "3consumers"])
@pytest.mark.parametrize(("file_name", "case_name"), _cases())
def test_scenario_case(
    ray_session: None, redis_url: str, file_name: str, case_name: str, consumers: int
) -> None:
    scenario = load_scenario(SCENARIOS / file_name)
    case = next(case for case in scenario["cases"] if case["name"] == case_name)
    outcome = run_case(scenario, case, redis_url, consumers=consumers)
    assert outcome.steps == len(case["steps"])
    assert outcome.passed, "\n".join(str(mismatch) for mismatch in outcome.mismatches)
