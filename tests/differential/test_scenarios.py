"""Drasi's shared-test scenarios (tests/scenarios/*.json) through drasi-lib and drasi_ray.

tests/query/test_scenarios.py checks drasi_ray's diffs against the expectations transcribed in
each file; here the same cases run through drasi-lib, so the transcriptions are checked against
Drasi itself: drasi_ray's diffs of every step must be Drasi's, and the expectations of every
step must be drasi-lib's diffs, except where a difference is a known one
(tests/differential/known.py), listed here with the step it shows in.
"""

from __future__ import annotations

import pytest

from tests.differential.compare import compare_query, same_multiset
from tests.differential.known import KNOWN
from tests.differential.pinned import PINNED
from tests.differential.scenarios import ScenarioCase, scenario_cases
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_jobs
from tests.oracle.model import CaseRun

CASES = tuple(scenario_cases())

KNOWN_DIFFERENCES = {
    # collect over the rows of two OPTIONAL MATCH clauses: Drasi loses order ids
    ("collect_aggregation::bootstrap_rows", "collect_mixed_types_query"): (
        "optional_second_match_in_aggregate"
    ),
    # drasi-lib reports drasi.linearGradient per row, drasi-core (the transcription) as an
    # aggregate
    ("linear_regression::linear_gradient", "gradient_query"): "linear_gradient_per_row",
    # whole elements returned (Drasi writes their Debug text) and re-evaluated before rows
    ("temporal_retrieval::get_version_by_timestamp", "version_by_timestamp_query"): (
        "past_function_before_row"
    ),
    ("temporal_retrieval::get_versions_by_timerange", "versions_by_timerange_query"): (
        "past_function_before_row"
    ),
    (
        "temporal_retrieval::get_versions_by_timerange_with_initial_value_flag",
        "versions_with_initial_value_query",
    ): "past_function_before_row",
    (
        "temporal_retrieval::get_versions_by_timerange_with_initial_value_flag",
        "versions_with_initial_value_query_2",
    ): "past_function_before_row",
}
"""(scenario case, query) -> the known difference it shows (tests/differential/known.py, or
one other tests pin: tests/differential/pinned.py)."""


def test_every_listed_difference_is_documented() -> None:
    documented = {known.id for known in KNOWN} | {pinned.id for pinned in PINNED}
    assert set(KNOWN_DIFFERENCES.values()) <= documented


@pytest.fixture(scope="module")
def drasi_runs() -> dict[str, CaseRun]:
    return run_jobs([(scenario.case, scenario.queries) for scenario in CASES])


def _name(scenario: ScenarioCase) -> str:
    return scenario.case.name


@pytest.mark.parametrize("scenario", CASES, ids=_name)
def test_drasi_ray_gives_drasis_diffs(
    scenario: ScenarioCase, drasi_runs: dict[str, CaseRun]
) -> None:
    ours = run_drasi_ray(scenario.case, scenario.queries)
    for query in scenario.queries:
        theirs = drasi_runs[scenario.case.name].queries[query.id]
        if query.id in scenario.refusing:
            _assert_refused(scenario, query.id, theirs.failure)
            continue
        assert theirs.failure is None, theirs.failure
        found = compare_query(
            scenario.case.name, query.id, theirs, ours.queries[query.id], query.text
        )
        steps = [d for d in found if d.step is None or d.step >= scenario.first_step]
        if (scenario.case.name, query.id) in KNOWN_DIFFERENCES:
            assert steps, "a known difference that no longer shows: correct the docs"
            continue
        assert not steps, "\n".join(d.describe()[:2000] for d in steps)


@pytest.mark.parametrize("scenario", CASES, ids=_name)
def test_the_transcribed_expectations_are_drasis(
    scenario: ScenarioCase, drasi_runs: dict[str, CaseRun]
) -> None:
    ours = run_drasi_ray(scenario.case, scenario.queries)
    for query in scenario.queries:
        if (scenario.case.name, query.id) in KNOWN_DIFFERENCES:
            continue
        theirs = drasi_runs[scenario.case.name].queries[query.id]
        rows = ours.queries[query.id].rows
        for number, expected in enumerate(scenario.expected):
            step = scenario.first_step + number
            if rows[step] >= 2 and ours.queries[query.id].aggregating:
                continue  # Drasi's hash-map order decides: compared by net effect above
            want = [_normal(d) for d in expected.get(query.id, [])]
            got = [_normal(d) for d in theirs.steps[step]]
            assert same_multiset(want, got, strict_types=False), (
                f"step {number}, {query.id}: transcribed {want}, drasi-lib {got}"
            )


def _assert_refused(scenario: ScenarioCase, query_id: str, failure: str | None) -> None:
    """Drasi stops a query whose middleware fails (status Error) where drasi_ray dead-letters
    the entry; the steps before must agree, and the failing step changes no result in
    drasi_ray (checked against the expectations by tests/query/test_scenarios.py)."""
    assert failure is not None and "status Error" in failure, failure


def _normal(diff: dict[str, object]) -> list[object]:
    kind = diff["type"]
    if kind == "ADD":
        return ["ADD", None, diff["data"]]
    if kind == "DELETE":
        return ["DELETE", diff["data"], None]
    return [kind, diff.get("before"), diff["after"]]
