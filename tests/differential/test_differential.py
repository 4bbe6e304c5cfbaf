"""The differential test in CI: drasi_ray's diffs and results against Drasi's own engine.

Fixed seeds: every catalogue query (tests/differential/catalogue.py) over each seed's random
graph (tests/differential/generator.py), once through drasi-lib and once along drasi_ray's
engine path (tests/differential/subject.py), compared per change and per query as multisets,
and the final result sets (tests/differential/compare.py). ``python -m bench.differential``
runs the same at length.

The comparison's own tests come first: a comparison that could not see a divergence would
make the main test pass whatever drasi_ray did.
"""

from __future__ import annotations

import copy

import pytest

from tests.differential.catalogue import CATALOGUE
from tests.differential.compare import Comparison, compare_runs
from tests.differential.generator import generate_case
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle
from tests.oracle.model import CaseRun, QueryRun

SEEDS = range(100, 112)
CHANGES = 60
TEXTS = {query.id: query.text for query in CATALOGUE}


@pytest.fixture(scope="module")
def runs() -> tuple[dict[str, CaseRun], dict[str, CaseRun]]:
    """(Drasi's runs, drasi_ray's runs) of every seed's case, by case name."""
    cases = [generate_case(seed, CHANGES) for seed in SEEDS]
    drasi = run_oracle(cases, CATALOGUE)
    ours = {case.name: run_drasi_ray(case, CATALOGUE) for case in cases}
    return drasi, ours


@pytest.fixture(scope="module")
def comparison(runs: tuple[dict[str, CaseRun], dict[str, CaseRun]]) -> Comparison:
    return compare_runs(*runs, TEXTS)


def _first_change_with_diffs(run: QueryRun) -> int:
    return next(step for step, diffs in enumerate(run.steps) if diffs)


def test_the_comparison_sees_a_changed_value(
    runs: tuple[dict[str, CaseRun], dict[str, CaseRun]],
) -> None:
    drasi, ours = runs
    case = next(iter(ours))
    altered = copy.deepcopy(ours)
    run = altered[case].queries["node_properties"]
    step = _first_change_with_diffs(run)
    run.steps[step] = [{"type": "ADD", "data": {"name": "nobody", "x": 0, "flag": None, "l": []}}]
    found = compare_runs({case: drasi[case]}, {case: altered[case]}, TEXTS).divergences
    assert [(d.query_id, d.step, d.kind) for d in found] == [("node_properties", step, "diffs")]


def test_the_comparison_sees_an_integer_for_a_float(
    runs: tuple[dict[str, CaseRun], dict[str, CaseRun]],
) -> None:
    drasi, ours = runs
    case = next(iter(ours))
    altered = copy.deepcopy(ours)
    run = altered[case].queries["sum_avg_by_name"]
    step = _first_change_with_diffs(run)
    diff = run.steps[step][0]
    diff["after"] = {**diff["after"], "total": int(diff["after"]["total"])}
    found = compare_runs({case: drasi[case]}, {case: altered[case]}, TEXTS).divergences
    assert [(d.query_id, d.step, d.kind) for d in found] == [("sum_avg_by_name", step, "type")]


def test_every_catalogue_query_runs_in_drasi(comparison: Comparison) -> None:
    assert not comparison.skipped, "\n".join(
        f"{s.query_id} / {s.case}: {s.reason}" for s in comparison.skipped[:10]
    )


def test_every_change_of_every_query_is_compared(comparison: Comparison) -> None:
    assert comparison.compared_queries == len(CATALOGUE) * len(SEEDS)
    assert comparison.compared_steps == len(CATALOGUE) * len(SEEDS) * CHANGES


def test_drasi_ray_gives_drasis_diffs_and_results(comparison: Comparison) -> None:
    shown = "\n".join(d.describe()[:2000] for d in comparison.divergences[:5])
    assert not comparison.divergences, (
        f"{len(comparison.divergences)} divergences in {comparison.diverging_queries()}; "
        f"shrink one with python -m bench.differential --shrink\n{shown}"
    )
