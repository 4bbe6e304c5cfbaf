"""docs/conformance.md stays true: it is what tests.differential.conformance_doc makes, and the
function list it is made from is drasi-lib's."""

from __future__ import annotations

import pytest

from drasi_ray.query.functions import FUNCTIONS
from tests.differential.conformance_doc import DOC, build
from tests.differential.drasi_registry import ARCHIVE_ONLY, DRASI_FUNCTIONS
from tests.differential.model import Case, CaseRun, QuerySpec
from tests.differential.oracle import run_jobs
from tests.differential.probes import changes

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
    queries = tuple(QuerySpec(name, f"MATCH (n:N) RETURN {name}(n.x) AS v") for name in names)
    case = Case("functions", changes(("insert", "n1", "N", {"x": 1})))
    return run_jobs([(case, queries)])["functions"]


def _unknown(run: CaseRun, name: str) -> bool:
    failure = run.queries[name].failure
    return failure is not None and UNKNOWN in failure


def test_drasi_knows_every_function_listed_as_drasis(calls: CaseRun) -> None:
    listed = [f.name for f in DRASI_FUNCTIONS if f.note != ARCHIVE_ONLY]
    assert [name for name in listed if _unknown(calls, name)] == []


def test_drasi_knows_a_past_function_only_with_an_archive_index(calls: CaseRun) -> None:
    past = [f.name for f in DRASI_FUNCTIONS if f.note == ARCHIVE_ONLY]
    assert past and all(_unknown(calls, name) for name in past)


def test_drasi_lacks_every_function_listed_as_only_drasi_rays(calls: CaseRun) -> None:
    drasis = {function.name.lower() for function in DRASI_FUNCTIONS}
    extra = [name for name in FUNCTIONS if name not in drasis]
    assert extra and [name for name in extra if not _unknown(calls, name)] == []
