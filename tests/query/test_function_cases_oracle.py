"""Drasi itself against the function cases of :mod:`tests.query.drasi_function_cases`: every
case's recorded Drasi outcome (a value with its type, an error that stops the query, or a
panic that silences it) is what drasi-lib gives today. drasi_ray's side of each case is
checked by tests/query/test_function_cases.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.engines import Outcome, run_drasi
from tests.oracle.model import GraphChange
from tests.oracle.values import same_typed
from tests.query.drasi_function_cases import (
    EFFECTIVE_FROM,
    ERROR,
    SCALAR_CASES,
    SILENT,
    UUID_V4,
    FunctionCase,
)


@pytest.fixture(scope="module")
def drasi_outcome() -> Outcome:
    """Every case in one drasi-lib run: query ``c<i>`` over label ``C<i>``, one node each."""
    queries = {
        f"c{i}": f"MATCH (n:C{i}) RETURN {case.expression} AS v"
        for i, case in enumerate(SCALAR_CASES)
    }
    changes = [
        GraphChange("insert", f"n{i}", (f"C{i}",), case.properties, EFFECTIVE_FROM)
        for i, case in enumerate(SCALAR_CASES)
    ]
    return run_drasi(queries, changes)


def _drasi_result(outcome: Outcome, index: int) -> Any:
    query_id = f"c{index}"
    status = outcome.statuses[query_id]
    if status == "Error":
        return ERROR
    if status == "Silent":
        return SILENT
    diffs = outcome.steps[query_id][index]
    assert [diff["type"] for diff in diffs] == ["ADD"], diffs
    return diffs[0]["data"]["v"]


@pytest.mark.parametrize(
    ("index", "case"), list(enumerate(SCALAR_CASES)), ids=[case.id for case in SCALAR_CASES]
)
def test_drasi_gives_the_recorded_outcome(
    drasi_outcome: Outcome, index: int, case: FunctionCase
) -> None:
    actual, recorded = _drasi_result(drasi_outcome, index), case.drasi_outcome
    if recorded is ERROR or recorded is SILENT:
        assert actual is recorded
    else:
        assert same_typed(actual, recorded), f"drasi-lib gave {actual!r}, recorded {recorded!r}"


def test_drasi_random_uuid_has_the_shape_drasi_ray_gives() -> None:
    changes = [GraphChange("insert", f"n{k}", ("T",), {"k": k}) for k in range(2)]
    outcome = run_drasi({"q": "MATCH (n:T) RETURN n.k AS k, randomUUID() AS id"}, changes)
    identifiers = [diff["data"]["id"] for step in outcome.steps["q"] for diff in step]
    assert len(identifiers) == 2 and identifiers[0] != identifiers[1]
    assert all(UUID_V4.match(identifier) for identifier in identifiers), identifiers
