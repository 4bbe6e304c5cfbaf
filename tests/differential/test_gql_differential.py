"""The GQL differential test in CI: drasi_ray's GQL against Drasi's own (drasi-lib with
``language="gql"``), and each GQL query against its Cypher twin.

Fixed seeds: every GQL catalogue query (tests/differential/catalogue_gql.py) over each seed's
random graph (tests/differential/generator.py), once through drasi-lib and once along
drasi_ray's engine path (tests/differential/subject.py), compared as the Cypher catalogue is
(tests/differential/compare.py). Then drasi_ray runs each query's Cypher twin over the same
graphs, and its output must be the GQL query's: with the first comparison, Drasi's GQL output
is its Cypher twin's too. ``python -m bench.differential --gql`` runs the same at length.
"""

from __future__ import annotations

import pytest

from tests.differential.catalogue import CATALOGUE
from tests.differential.catalogue_gql import GQL_CATALOGUE, TWINS
from tests.differential.compare import Comparison, compare_runs
from tests.differential.generator import generate_case
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle
from tests.oracle.model import CaseRun

SEEDS = range(200, 204)
CHANGES = 60
TEXTS = {query.id: query.text for query in GQL_CATALOGUE}


@pytest.fixture(scope="module")
def runs() -> tuple[dict[str, CaseRun], dict[str, CaseRun], dict[str, CaseRun]]:
    """(Drasi's GQL runs, drasi_ray's GQL runs, drasi_ray's runs of the Cypher twins) of
    every seed's case, by case name."""
    cases = [generate_case(seed, CHANGES) for seed in SEEDS]
    drasi = run_oracle(cases, GQL_CATALOGUE)
    ours = {case.name: run_drasi_ray(case, GQL_CATALOGUE) for case in cases}
    twins = {case.name: run_drasi_ray(case, tuple(TWINS.values())) for case in cases}
    return drasi, ours, twins


@pytest.fixture(scope="module")
def comparison(runs: tuple[dict[str, CaseRun], ...]) -> Comparison:
    drasi, ours, _twins = runs
    return compare_runs(drasi, ours, TEXTS)


def test_the_catalogue_covers_gql_and_twins_most_of_the_cypher_catalogue() -> None:
    assert len(GQL_CATALOGUE) >= 40
    assert len({query.id for query in GQL_CATALOGUE}) == len(GQL_CATALOGUE)
    assert all(query.language == "gql" for query in GQL_CATALOGUE)
    assert len(TWINS) >= len(GQL_CATALOGUE) * 3 // 4
    assert len(set(TWINS) & {query.id for query in CATALOGUE}) >= 60


def test_every_gql_catalogue_query_runs_in_drasi(comparison: Comparison) -> None:
    assert not comparison.skipped, "\n".join(
        f"{s.query_id} / {s.case}: {s.reason}" for s in comparison.skipped[:10]
    )


def test_every_change_of_every_gql_query_is_compared(comparison: Comparison) -> None:
    assert comparison.compared_queries == len(GQL_CATALOGUE) * len(SEEDS)
    assert comparison.compared_steps == len(GQL_CATALOGUE) * len(SEEDS) * CHANGES


def test_drasi_ray_gives_drasis_gql_diffs_and_results(comparison: Comparison) -> None:
    shown = "\n".join(d.describe()[:2000] for d in comparison.divergences[:5])
    assert not comparison.divergences, (
        f"{len(comparison.divergences)} divergences in {comparison.diverging_queries()}; "
        f"shrink one with python -m bench.differential --gql --shrink\n{shown}"
    )


def test_each_gql_query_gives_its_cypher_twins_output(
    runs: tuple[dict[str, CaseRun], ...],
) -> None:
    _drasi, ours, twins = runs
    gql = {
        name: CaseRun(name, {query_id: run.queries[query_id] for query_id in TWINS})
        for name, run in ours.items()
    }
    outcome = compare_runs(twins, gql, TEXTS)
    assert outcome.compared_queries == len(TWINS) * len(SEEDS)
    shown = "\n".join(d.describe()[:2000] for d in outcome.divergences[:5])
    assert not outcome.divergences, f"GQL differs from its Cypher twin:\n{shown}"
