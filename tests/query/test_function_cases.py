"""drasi_ray's engine against the function cases of :mod:`tests.query.drasi_function_cases`
(the values Drasi returns, and the documented deviations from them)."""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node
from drasi_ray.query.engine import ContinuousQuery
from tests.oracle.values import same_typed
from tests.query.drasi_function_cases import (
    EFFECTIVE_FROM,
    REFUSED,
    SCALAR_CASES,
    UUID_V4,
    FunctionCase,
)


def returned(case: FunctionCase) -> Any:
    """What a continuous query returns for the case's expression over its node (REFUSED when
    the engine refuses the row)."""
    query = ContinuousQuery("q", f"MATCH (n:T) RETURN {case.expression} AS v")
    element = node("n1", ["T"], case.properties, EFFECTIVE_FROM)
    diffs = query.apply(ElementDelta(None, element, ZERO_VERSION, EFFECTIVE_FROM))
    if query.take_evaluation_errors():
        assert diffs == []
        return REFUSED
    assert [diff["type"] for diff in diffs] == ["ADD"]
    return diffs[0]["data"]["v"]


@pytest.mark.parametrize("case", SCALAR_CASES, ids=lambda case: case.id)
def test_function_case(case: FunctionCase) -> None:
    actual = returned(case)
    if case.expected is REFUSED:
        assert actual is REFUSED
    else:
        assert same_typed(actual, case.expected), f"{actual!r} != {case.expected!r}"


def test_random_uuid_is_a_new_version_4_uuid_per_row() -> None:
    query = ContinuousQuery("q", "MATCH (n:T) RETURN n.k AS k, randomUUID() AS id")
    values = [
        query.apply(ElementDelta(None, node(f"n{k}", ["T"], {"k": k}), ZERO_VERSION, 0))[0]["data"]
        for k in range(3)
    ]
    identifiers = [value["id"] for value in values]
    assert all(UUID_V4.match(identifier) for identifier in identifiers), identifiers
    assert len(set(identifiers)) == 3
