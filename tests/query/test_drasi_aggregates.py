"""Drasi's aggregates ``drasi.linearGradient(x, y)`` and ``drasi.last(x)``, and
``retainHistory(...)``, through the engine. The expected values are drasi-lib's
(tests/oracle checks them against it)."""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, node
from drasi_ray.model.errors import QuerySyntaxError
from drasi_ray.query.engine import ContinuousQuery


class Points:
    """A query over ``(:P {g, x, y})`` nodes, changed one node at a time."""

    def __init__(self, text: str) -> None:
        self.query = ContinuousQuery("q", text)
        self.nodes: dict[str, Element] = {}

    def put(self, point: str, **properties: Any) -> list[dict[str, Any]]:
        after = node(point, ["P"], properties)
        delta = ElementDelta(self.nodes.get(point), after, ZERO_VERSION, 0)
        self.nodes[point] = after
        return self._apply(delta)

    def delete(self, point: str) -> list[dict[str, Any]]:
        return self._apply(ElementDelta(self.nodes.pop(point), None, ZERO_VERSION, 0))

    def _apply(self, delta: ElementDelta) -> list[dict[str, Any]]:
        diffs = self.query.apply(delta)
        assert self.query.take_evaluation_errors() == []
        return diffs


def _values(diffs: list[dict[str, Any]], column: str = "v") -> list[tuple[Any, Any]]:
    return [(diff["before"][column], diff["after"][column]) for diff in diffs]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("MATCH (p:P) RETURN drasi.linearGradient(p.x) AS v", "takes 2 arguments, got 1"),
        ("MATCH (p:P) RETURN drasi.last(p.x, p.y) AS v", "takes 1 argument, got 2"),
        ("MATCH (p:P) RETURN drasi.linearGradient(p.x, sum(p.y)) AS v", "cannot be nested"),
    ],
)
def test_aggregate_calls_are_checked_when_registered(text: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError, match=message):
        ContinuousQuery("q", text)


def test_linear_gradient_follows_the_group() -> None:
    points = Points("MATCH (p:P) RETURN p.g AS g, drasi.linearGradient(p.x, p.y) AS v")
    assert _values(points.put("p1", g="a", x=1, y=6)) == [(None, None)]
    assert _values(points.put("p2", g="a", x=2, y=7)) == [(None, 1.0)]
    assert _values(points.put("p3", g="b", x=9, y=9)) == [(None, None)]
    assert _values(points.put("p4", g="a", x=4, y=8)) == [(1.0, 0.6428571428571429)]
    # reverting leaves rounding residue, exactly as Drasi's running statistics do
    changed = points.put("p2", g="a", x=2, y=1)
    assert _values(changed) == [(0.6428571428571429, 1.0714285714285716)]
    assert _values(points.delete("p4")) == [(1.0714285714285716, -4.999999999999998)]
    assert _values(points.delete("p1")) == [(-4.999999999999998, None)]
    assert sorted(points.query.results(), key=lambda row: row["g"]) == [
        {"g": "a", "v": None},
        {"g": "b", "v": None},
    ]


def test_linear_gradient_of_points_at_one_x_is_null() -> None:
    points = Points("MATCH (p:P) RETURN drasi.linearGradient(p.x, p.y) AS v")
    points.put("p1", x=2, y=1)
    assert _values(points.put("p2", x=2, y=5)) == [(None, None)]


def test_linear_gradient_leaves_out_a_point_with_a_null_coordinate() -> None:
    points = Points("MATCH (p:P) RETURN drasi.linearGradient(p.x, p.y) AS v")
    points.put("p1", x=1, y=1)
    points.put("p2", x=2, y=3)
    assert _values(points.put("p3", y=5)) == [(2.0, 2.0)]  # Drasi: null (docs/conformance.md)
    assert _values(points.delete("p3")) == []


@pytest.mark.parametrize(
    ("coordinate", "expected"),
    [
        ("duration({seconds: p.s})", 0.5),
        ("datetime({epochSeconds: p.s})", 0.5),
        ("date({year: 2024, month: 1, day: p.s})", 0.5 / 86_400),
        ("localtime({hour: 0, minute: 0, second: p.s})", 500.0),
    ],
)
def test_linear_gradient_reads_temporal_coordinates_as_drasi(
    coordinate: str, expected: float
) -> None:
    points = Points(f"MATCH (p:P) RETURN drasi.linearGradient({coordinate}, p.y) AS v")
    # y rises 1000 from s = 1 to s = 3: over 2000 ms of a duration or an instant, over two
    # days (in milliseconds) of dates, over 2 seconds of a time of day
    points.put("p1", s=1, y=0)
    (diff,) = points.put("p2", s=3, y=1000)
    assert diff["after"]["v"] == pytest.approx(expected, rel=1e-15)


def test_last_is_what_the_latest_change_brought() -> None:
    points = Points("MATCH (p:P) RETURN drasi.last(p.x) AS v")
    assert _values(points.put("p1", x=1)) == [(None, 1)]
    assert _values(points.put("p2", x=2.5)) == [(1, 2.5)]
    assert _values(points.put("p3", x=None)) == [(2.5, None)]
    assert _values(points.put("p4", x=[1, "a"])) == [(None, [1, "a"])]
    assert _values(points.put("p2", x="s")) == [([1, "a"], "s")]
    assert _values(points.delete("p1")) == [("s", None)]  # a leaving row clears it


def test_retain_history_keeps_what_leaving_rows_gave() -> None:
    points = Points(
        "MATCH (p:P) RETURN retainHistory(collect(p.x)) AS v, retainHistory(count(p)) AS n"
    )
    points.put("p1", x=5)
    points.put("p2", x=3)
    assert _values(points.put("p1", x=1)) == [([5, 3], [5, 3, 1])]
    assert points.delete("p2") == []
    assert _values(points.put("p3", x=4), "n") == [(3, 4)]
    assert points.query.results() == [{"v": [5, 3, 1, 4], "n": 4}]


def test_retain_history_of_a_plain_value_is_the_value() -> None:
    points = Points("MATCH (p:P) RETURN retainHistory(p.x) AS v, retainHistory() AS w")
    assert points.put("p1", x=5) == [{"type": "ADD", "data": {"v": 5, "w": None}}]
