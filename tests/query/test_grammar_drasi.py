"""Query forms that Drasi's Cypher grammar (drasi-core query-cypher) accepts inside our subset.

Each test names the form, checks our parser accepts it, and checks that it means what it
means in Drasi, through ContinuousQuery or an evaluated expression.
"""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node, relation
from drasi_ray.query import ast
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.parser import parse_query
from tests.query._helpers import evaluate


def _rows(text: str, *elements: Any) -> list[dict[str, Any]]:
    """The data of every ADD a query emits as ``elements`` arrive one by one."""
    query = ContinuousQuery("q", text)
    rows: list[dict[str, Any]] = []
    for element in elements:
        for diff in query.apply(ElementDelta(None, element, ZERO_VERSION, 0)):
            if diff["type"] == "ADD":
                rows.append(diff["data"])
    return rows


_GRAPH = (
    node("a", ["A"], {"name": "a"}),
    node("b", ["B"], {"name": "b"}),
    relation("r", ["R"], "a", "b", {}),
)


# --------------------------------------------------------------------------- relations


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("(x)->(y)", [{"x": "a", "y": "b"}]),
        ("(x)<-(y)", [{"x": "b", "y": "a"}]),
        ("(x)-(y)", [{"x": "a", "y": "b"}, {"x": "b", "y": "a"}]),
    ],
)
def test_single_dash_anonymous_relation(pattern: str, expected: list[dict[str, str]]) -> None:
    # Drasi writes an anonymous relation with one dash: `->`, `<-`, `-`.
    text = f"MATCH {pattern} RETURN x.name AS x, y.name AS y"
    assert sorted(_rows(text, *_GRAPH), key=lambda row: row["x"]) == expected


# --------------------------------------------------------------------------- several WHEREs


def test_several_wheres_after_match_are_anded() -> None:
    text = "MATCH (n:A) WHERE n.x > 1 WHERE n.x < 5 RETURN n.x AS x"
    elements = [node(str(x), ["A"], {"x": x}) for x in range(7)]
    assert sorted(row["x"] for row in _rows(text, *elements)) == [2, 3, 4]


def test_several_wheres_after_with_are_anded() -> None:
    text = "MATCH (n:A) WITH n.x AS x WHERE x > 1 WHERE x < 5 RETURN x"
    elements = [node(str(x), ["A"], {"x": x}) for x in range(7)]
    assert sorted(row["x"] for row in _rows(text, *elements)) == [2, 3, 4]


# --------------------------------------------------------------------------- iterators


def test_bracketed_iterator_without_where_or_projection_is_a_list() -> None:
    # `[x IN list]` is Drasi's iterator with neither filter nor map: the list itself.
    assert evaluate("[x IN [1, 2, 3]]") == [1, 2, 3]
    assert evaluate("size([x IN $xs])", parameters={"xs": [4, 5]}) == 2


def test_parenthesised_membership_in_a_list_stays_a_membership_test() -> None:
    assert evaluate("[(x IN [1, 2])]", {"x": 2}) == [True]


def test_reduce_with_a_filter() -> None:
    assert evaluate("reduce(s = 0, x IN [1, 2, 3, 4] WHERE x % 2 = 0 | s + x)") == 6
    query = parse_query("MATCH (n) RETURN reduce(s = 0, x IN n.xs WHERE x > 1 | s + x) AS t")
    (item,) = query.returns.items
    assert isinstance(item.expression, ast.Reduce)
