"""docs/conformance.md stays true: it is what tests.differential.conformance_doc makes, the
function list it is made from is drasi-lib's, and every test it names exists."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from drasi_ray.query.functions import FUNCTIONS
from drasi_ray.query.gql import FUNCTIONS as GQL_FUNCTIONS
from tests.differential.conformance_doc import DOC, build
from tests.differential.drasi_registry import ARCHIVE_ONLY, DRASI_FUNCTIONS
from tests.differential.gql_registry import DRASI_GQL_FUNCTIONS
from tests.differential.pinned import PINNED, Pinned
from tests.differential.probes import changes
from tests.oracle.cases import needs_archive, run_jobs
from tests.oracle.model import Case, CaseRun, QuerySpec

UNKNOWN = "UnknownFunction"


def test_the_document_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == build(), (
        "docs/conformance.md is out of date: python -m tests.differential.conformance_doc"
    )


@pytest.fixture(scope="module")
def calls() -> CaseRun:
    """Each Drasi function, and each function only drasi_ray lists, called once in drasi-lib
    (with whatever arguments: only whether Drasi knows the name matters)."""
    names = [function.name for function in DRASI_FUNCTIONS]
    drasis = {name.lower() for name in names}
    names += sorted(name for name in FUNCTIONS if name not in drasis)
    queries = [QuerySpec(name, f"MATCH (n:N) RETURN {name}(n.x) AS v") for name in names]
    graph = changes(("insert", "n1", "N", {"x": 1}))
    # the past functions apart: only their case pays for the archive's RocksDB store
    past = tuple(query for query in queries if needs_archive((query,)))
    others = tuple(query for query in queries if query not in past)
    runs = run_jobs([(Case("functions", graph), others), (Case("past", graph), past)])
    return CaseRun("functions", {**runs["functions"].queries, **runs["past"].queries})


@pytest.fixture(scope="module")
def gql_calls() -> CaseRun:
    """Each function listed as GQL's, called once in drasi-lib with ``language="gql"``."""
    names = [function.name for function in DRASI_GQL_FUNCTIONS]
    queries = [
        QuerySpec(name, f"MATCH (n:N) RETURN {name}(n.x) AS v", language="gql") for name in names
    ]
    graph = changes(("insert", "n1", "N", {"x": 1}))
    past = tuple(query for query in queries if needs_archive((query,)))
    others = tuple(query for query in queries if query not in past)
    runs = run_jobs([(Case("gql", graph), others), (Case("gql_past", graph), past)])
    return CaseRun("gql", {**runs["gql"].queries, **runs["gql_past"].queries})


def test_drasi_knows_every_function_listed_as_gqls(gql_calls: CaseRun) -> None:
    listed = [f.name for f in DRASI_GQL_FUNCTIONS]
    assert [name for name in listed if _unknown(gql_calls, name)] == []


def test_drasi_rays_gql_has_the_functions_drasis_gql_has() -> None:
    """GQL's functions are its own set: drasi_ray's GQL front end maps exactly these (CAST and
    reduce have syntax of their own)."""
    listed = {function.name.lower() for function in DRASI_GQL_FUNCTIONS}
    assert listed - {"cast", "reduce"} == set(GQL_FUNCTIONS)


def _unknown(run: CaseRun, name: str) -> bool:
    failure = run.queries[name].failure
    return failure is not None and UNKNOWN in failure


def test_drasi_knows_every_function_listed_as_drasis(calls: CaseRun) -> None:
    listed = [f.name for f in DRASI_FUNCTIONS]
    assert [name for name in listed if _unknown(calls, name)] == []


def test_drasi_knows_a_past_function_only_with_an_archive_index() -> None:
    past = [f.name for f in DRASI_FUNCTIONS if f.note == ARCHIVE_ONLY]
    queries = tuple(QuerySpec(name, f"MATCH (n:N) RETURN {name}(n, 0) AS v") for name in past)
    assert past and needs_archive(queries)
    case = Case("without_archive", changes(("insert", "n1", "N", {"x": 1})))
    runs = run_jobs([(case, queries)], archive=False)["without_archive"]
    assert all(_unknown(runs, name) for name in past)


def test_drasi_lacks_every_function_listed_as_only_drasi_rays(calls: CaseRun) -> None:
    drasis = {function.name.lower() for function in DRASI_FUNCTIONS}
    extra = [name for name in FUNCTIONS if name not in drasis]
    assert extra and [name for name in extra if not _unknown(calls, name)] == []


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("pinned", PINNED, ids=lambda pinned: pinned.id)
def test_every_pinned_difference_names_a_test_that_exists(pinned: Pinned) -> None:
    path = Path(__file__).resolve().parents[2] / pinned.path
    assert path.is_file(), pinned.test
    assert pinned.function.startswith("test_") and pinned.function in _test_names(path)
    if pinned.parameter is not None:
        assert f'"{pinned.parameter}"' in path.read_text(encoding="utf-8"), pinned.test
