"""Argument rules of the future and stateful functions, and aggregates in a WHERE (engine)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node
from drasi_ray.model.errors import QueryEvaluationError
from drasi_ray.query import temporal
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.future_functions import due_ms_of, duration_ms_of
from tests.query._helpers import evaluate


def _rows(text: str, *elements: Any, fire_at: int | None = None) -> ContinuousQuery:
    query = ContinuousQuery("q", text)
    for element in elements:
        query.apply(ElementDelta(None, element, ZERO_VERSION, element.effective_from))
    if fire_at is not None:
        query.fire_due(fire_at)
    return query


@pytest.mark.parametrize(
    ("value", "millis"),
    [
        (1_000, 1_000),
        (dt.date(1970, 1, 2), 86_400_000),
        (dt.datetime(1970, 1, 1, 0, 0, 1), 1_000),
        (dt.datetime(1970, 1, 1, 1, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), 1_000),
        (None, None),
    ],
)
def test_due_times(value: Any, millis: int | None) -> None:
    assert due_ms_of("f", value) == millis


@pytest.mark.parametrize("value", [-1, True, "2020-01-01", 1.5])
def test_bad_due_times_are_errors(value: Any) -> None:
    with pytest.raises(QueryEvaluationError):
        due_ms_of("f", value)


def test_durations_drop_months_as_drasi_does() -> None:
    assert duration_ms_of("f", temporal.Duration(months=2, days=1, seconds=1)) == 86_401_000
    assert duration_ms_of("f", temporal.Duration(seconds=-1, nanoseconds=500_000)) == -999
    assert duration_ms_of("f", 250) == 250


def test_null_arguments_give_null() -> None:
    query = _rows(
        "MATCH (a:A) RETURN a.id AS id, drasi.trueFor(a.missing, duration('PT1S')) AS f, "
        "drasi.trueLater(true, a.missing) AS l, drasi.trueUntil(a.missing, 5) AS u",
        node("a1", ["A"], {"id": "a1"}, 1_000),
    )
    assert query.results() == [{"id": "a1", "f": None, "l": None, "u": None}]


def test_a_condition_that_is_not_boolean_refuses_the_row() -> None:
    element = node("a1", ["A"], {"id": "a1"}, 1_000)
    filtered = _rows(
        "MATCH (a:A) WHERE drasi.trueFor(a.id, duration('PT1S')) RETURN a.id AS id", element
    )
    assert filtered.results() == []
    projected = _rows("MATCH (a:A) RETURN drasi.trueFor(a.id, duration('PT1S')) AS f", element)
    assert projected.results() == []
    assert "drasi.trueFor() expects a Boolean" in projected.take_evaluation_errors()[0]


def test_stateful_functions_need_a_continuous_query() -> None:
    with pytest.raises(QueryEvaluationError, match="only be evaluated in a continuous query"):
        evaluate("drasi.previousValue(1)")


def test_awaiting_outside_a_query_is_still_a_value() -> None:
    query = _rows("MATCH (a:A) RETURN drasi.awaiting() AS w", node("a1", ["A"], {}, 1))
    assert query.results() == [{"w": "Awaiting"}]


def test_an_aggregate_in_a_grouping_where_counts_every_row_of_the_group() -> None:
    query = _rows(
        "MATCH (o:O) WHERE count(o) > 2 AND o.v > 0 RETURN o.g AS g, sum(o.v) AS total",
        node("o1", ["O"], {"g": "a", "v": 1}, 1),
        node("o2", ["O"], {"g": "a", "v": -5}, 2),
        node("o3", ["O"], {"g": "a", "v": 2}, 3),
        node("o4", ["O"], {"g": "b", "v": 9}, 4),
    )
    # o1 and o2 arrived while the group had fewer than 3 rows; o3 is the third.
    assert query.results() == [{"g": "a", "total": 2.0}]


def test_an_aggregate_in_a_projecting_where_sees_the_row_alone() -> None:
    query = _rows(
        "MATCH (o:O) WHERE max(o.v) > 1 AND count(o) = 1 RETURN o.id AS id",
        node("o1", ["O"], {"id": "o1", "v": 1}, 1),
        node("o2", ["O"], {"id": "o2", "v": 3}, 2),
    )
    assert query.results() == [{"id": "o2"}]


def test_a_stateful_inline_predicate_of_an_optional_match_is_refused() -> None:
    from drasi_ray.model.errors import UnsupportedQueryError

    with pytest.raises(UnsupportedQueryError):
        ContinuousQuery(
            "q",
            "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b:B WHERE drasi.previousValue(b.x) > 1) "
            "RETURN a.id AS id",
        )
