"""QueryResult's compact pickled form: what crosses Ray to every subscriber."""

from __future__ import annotations

import pickle

import pytest
from ray import cloudpickle

from drasi_ray.model.results import QueryResult


def test_query_results_round_trip_through_ray_pickling() -> None:
    result = QueryResult(
        "q",
        7,
        1_700_000_000_123,
        1_700_000_000_100,
        ({"type": "UPDATE", "before": {"t": 1}, "after": {"t": 1.0}}, {"type": "ADD", "data": {}}),
    )
    back = pickle.loads(cloudpickle.dumps([result, result]))  # type: ignore[no-untyped-call]
    assert back == [result, result]
    assert back[0].updated == result.updated and type(back[0].results[0]["after"]["t"]) is float
    with pytest.raises(AttributeError):
        back[0].sequence = 8  # type: ignore[misc]
