"""Synthetic joins (Drasi's QueryJoin): relations between nodes with equal key values.

Behaviours checked against drasi-lib 0.3.0 (a join query over one Python source): links both
ways with ids "a:b" and "b:a"; null joins null; 1 does not join 1.0; a key change breaks and
makes links in the change that alters the key. Where drasi-lib keeps a link it should not (a
node replaced by an insert without the key property), the test shows both outputs.
"""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray import AppConfig, ConfigError, Query
from drasi_ray.model.changes import Element, ElementDelta, node, relation
from drasi_ray.model.query_specs import QueryJoin
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.joins import JoinIndex
from tests.query.support import same_multiset

PLATE = QueryJoin(
    id="J",
    keys=({"label": "V", "property": "plate"}, {"label": "O", "property": "plate"}),  # type: ignore[arg-type]
)
TEXT = "MATCH (v:V)-[r:J]->(o:O) RETURN v.name AS v, o.name AS o, elementId(r) AS rid"


class Graph:
    """Applies whole-element states to one query, as the coordinator's store would."""

    def __init__(self, query: ContinuousQuery) -> None:
        self.query = query
        self.elements: dict[str, Element] = {}
        self.clock = 0

    def put(self, element: Element) -> list[dict[str, Any]]:
        return self._apply(self.elements.get(element.id), element)

    def delete(self, element_id: str) -> list[dict[str, Any]]:
        return self._apply(self.elements.get(element_id), None)

    def _apply(self, before: Element | None, after: Element | None) -> list[dict[str, Any]]:
        self.clock += 1
        delta = ElementDelta(before, after, (self.clock, 0, 0), self.clock)
        if after is None:
            self.elements.pop(delta.element.id, None)
        else:
            self.elements[after.id] = after
        return self.query.apply(delta)


def graph(text: str = TEXT, joins: tuple[QueryJoin, ...] = (PLATE,)) -> Graph:
    return Graph(ContinuousQuery("q", text, joins=joins))


def add(v: str, o: str, rid: str) -> dict[str, Any]:
    return {"type": "ADD", "data": {"v": v, "o": o, "rid": rid}}


def delete(v: str, o: str, rid: str) -> dict[str, Any]:
    return {"type": "DELETE", "data": {"v": v, "o": o, "rid": rid}}


def test_equal_values_link_both_ways_with_drasis_ids() -> None:
    g = graph("MATCH (a)-[r:J]->(b) RETURN elementId(a) AS a, elementId(b) AS b, elementId(r) AS r")
    assert g.put(node("v1", ["V"], {"plate": "A"})) == []
    diffs = g.put(node("o1", ["O"], {"plate": "A"}))
    assert same_multiset(
        diffs,
        [
            {"type": "ADD", "data": {"a": "o1", "b": "v1", "r": "o1:v1"}},
            {"type": "ADD", "data": {"a": "v1", "b": "o1", "r": "v1:o1"}},
        ],
    )


def test_key_change_breaks_and_makes_the_join_in_that_change() -> None:
    g = graph()
    g.put(node("v1", ["V"], {"plate": "A", "name": "car"}))
    g.put(node("v2", ["V"], {"plate": "B", "name": "van"}))
    assert g.put(node("o1", ["O"], {"plate": "A", "name": "x"})) == [add("car", "x", "v1:o1")]
    moved = g.put(node("o1", ["O"], {"plate": "B", "name": "x"}))
    assert same_multiset(moved, [delete("car", "x", "v1:o1"), add("van", "x", "v2:o1")])
    renamed = g.put(node("o1", ["O"], {"plate": "B", "name": "y"}))
    assert renamed == [
        {
            "type": "UPDATE",
            "before": {"v": "van", "o": "x", "rid": "v2:o1"},
            "after": {"v": "van", "o": "y", "rid": "v2:o1"},
        }
    ]
    assert g.delete("v2") == [delete("van", "y", "v2:o1")]


def test_nodes_of_one_key_are_not_linked_and_every_peer_is() -> None:
    g = graph()
    g.put(node("v1", ["V"], {"plate": "A", "name": "a"}))
    g.put(node("v2", ["V"], {"plate": "A", "name": "b"}))
    diffs = g.put(node("o1", ["O"], {"plate": "A", "name": "o"}))
    assert same_multiset(diffs, [add("a", "o", "v1:o1"), add("b", "o", "v2:o1")])


def test_values_join_by_kind_and_null_joins_null() -> None:
    g = graph()
    g.put(node("v1", ["V"], {"plate": 1, "name": "int"}))
    assert g.put(node("o1", ["O"], {"plate": 1.0, "name": "float"})) == []
    g.put(node("v2", ["V"], {"plate": None, "name": "n1"}))
    assert g.put(node("o2", ["O"], {"plate": None, "name": "n2"})) == [add("n1", "n2", "v2:o2")]


def test_a_join_applies_only_where_a_pattern_names_it() -> None:
    query = ContinuousQuery("q", "MATCH (v:V) RETURN v.name AS v", joins=(PLATE,))
    assert query.node_labels == frozenset({"V"})
    joined = ContinuousQuery("q", TEXT, joins=(PLATE,))
    assert joined.node_labels == frozenset({"V", "O"})


def test_join_labels_are_needed_even_when_the_pattern_leaves_them_open() -> None:
    query = ContinuousQuery("q", "MATCH (v:V)-[:J]->(o) RETURN o.name AS o", joins=(PLATE,))
    assert query.node_labels is None  # an unlabelled node variable needs every node


def test_losing_the_key_property_leaves_the_join_where_drasi_keeps_the_link() -> None:
    """drasi-lib 0.3.0, same changes (insert v1, insert o1, insert o1 again without plate,
    update o1's name): [], [ADD b], [ADD b2], [UPDATE b2 -> b3]: its index keeps the link of
    the replaced element. drasi_ray drops it: the replaced o1 has no plate, so it joins
    nothing."""
    g = graph()
    g.put(node("v1", ["V"], {"plate": "A", "name": "a"}))
    assert g.put(node("o1", ["O"], {"plate": "A", "name": "b"})) == [add("a", "b", "v1:o1")]
    assert g.put(node("o1", ["O"], {"name": "b2"})) == [delete("a", "b", "v1:o1")]
    assert g.put(node("o1", ["O"], {"name": "b3"})) == []


def test_losing_the_label_leaves_the_join() -> None:
    g = graph()
    g.put(node("v1", ["V"], {"plate": "A", "name": "a"}))
    g.put(node("o1", ["O"], {"plate": "A", "name": "b"}))
    assert g.put(node("o1", ["X"], {"plate": "A", "name": "b"})) == [delete("a", "b", "v1:o1")]
    assert g.put(node("o1", ["O"], {"plate": "A", "name": "c"})) == [add("a", "c", "v1:o1")]


def test_joins_cross_with_real_relations_and_bootstrap() -> None:
    text = "MATCH (o:O)-[:J]->(v:V)-[:AT]->(z:Z) RETURN o.name AS o, v.name AS v, z.name AS z"
    elements = [
        node("o1", ["O"], {"plate": "A", "name": "order"}),
        node("v1", ["V"], {"plate": "A", "name": "car"}),
        node("z1", ["Z"], {"name": "curb"}),
        relation("at1", ["AT"], "v1", "z1"),
    ]
    query = ContinuousQuery("q", text, joins=(PLATE,))
    query.bootstrap(elements)
    assert query.results() == [{"o": "order", "v": "car", "z": "curb"}]
    stepwise = Graph(ContinuousQuery("q", text, joins=(PLATE,)))
    diffs = [diff for element in elements for diff in stepwise.put(element)]
    assert diffs == [{"type": "ADD", "data": {"o": "order", "v": "car", "z": "curb"}}]


def test_a_change_touches_only_the_nodes_sharing_its_values() -> None:
    index = JoinIndex([PLATE])
    for number in range(500):
        index.node_changed(None, node(f"v{number}", ["V"], {"plate": f"P{number}"}))
    changes = index.node_changed(None, node("o1", ["O"], {"plate": "P7"}))
    assert changes is not None
    assert sorted(r.id for r in changes.put) == ["o1:v7", "v7:o1"]
    moved = index.node_changed(
        node("o1", ["O"], {"plate": "P7"}), node("o1", ["O"], {"plate": "P8"})
    )
    assert moved is not None
    assert sorted(moved.dropped) == ["o1:v7", "v7:o1"]
    assert sorted(r.id for r in moved.put) == ["o1:v8", "v8:o1"]
    assert (
        index.node_changed(
            node("o1", ["O"], {"plate": "P8"}), node("o1", ["O"], {"plate": "P8", "x": 1})
        )
        is None
    )


def test_two_joins_on_one_pair_give_one_relation_with_both_labels() -> None:
    other = QueryJoin(
        id="K",
        keys=({"label": "V", "property": "owner"}, {"label": "O", "property": "owner"}),  # type: ignore[arg-type]
    )
    index = JoinIndex([PLATE, other])
    index.node_changed(None, node("v1", ["V"], {"plate": "A", "owner": "x"}))
    changes = index.node_changed(None, node("o1", ["O"], {"plate": "A", "owner": "x"}))
    assert changes is not None
    assert {r.id: r.labels for r in changes.put} == {"v1:o1": ("J", "K"), "o1:v1": ("J", "K")}


def test_builder_and_yaml_declare_joins_in_drasis_shape() -> None:
    built = (
        Query.cypher("q")
        .query(TEXT)
        .from_source("s")
        .with_join("J", ("V", "plate"), ("O", "plate"))
        .build()
    )
    assert built.joins == (PLATE,)
    config = AppConfig.from_mapping(
        {
            "queries": [
                {
                    "id": "q",
                    "sources": ["s"],
                    "query": TEXT,
                    "joins": [
                        {
                            "id": "J",
                            "keys": [
                                {"label": "V", "property": "plate"},
                                {"label": "O", "property": "plate"},
                            ],
                        }
                    ],
                }
            ]
        }
    )
    assert config.queries[0].joins == (PLATE,)


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([("V", "plate")], "at least 2"),
        ([("V", "plate"), ("V", "plate")], "two different"),
        ([("V", ""), ("O", "plate")], "keys.0.property"),
    ],
)
def test_invalid_joins_are_refused_naming_the_problem(
    keys: list[tuple[str, str]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        Query.cypher("q").query(TEXT).from_source("s").with_join("J", *keys)


def test_a_join_without_an_id_is_refused_in_yaml() -> None:
    with pytest.raises(ConfigError, match=r"queries\.0\.joins\.0\.id"):
        AppConfig.from_mapping(
            {
                "queries": [
                    {
                        "id": "q",
                        "sources": ["s"],
                        "query": TEXT,
                        "joins": [{"keys": [{"label": "V", "property": "p"}] * 2}],
                    }
                ]
            }
        )


def test_gaining_the_key_label_joins_where_drasi_misses_the_link() -> None:
    """drasi-lib 0.3.0, same changes (insert v1 [V] plate A, insert o1 [X] plate A, update o1
    to [O] plate A, to plate B, back to plate A): [], [], [], [], [ADD]: its index registers a
    node under a key only when the key's value changes, so o1 joins only after its plate moved
    away and back. drasi_ray joins o1 as soon as it has the label and the value."""
    g = graph()
    g.put(node("v1", ["V"], {"plate": "A", "name": "a"}))
    assert g.put(node("o1", ["X"], {"plate": "A", "name": "b"})) == []
    assert g.put(node("o1", ["O"], {"plate": "A", "name": "b"})) == [add("a", "b", "v1:o1")]
    assert g.put(node("o1", ["O"], {"plate": "B", "name": "b"})) == [delete("a", "b", "v1:o1")]
    assert g.put(node("o1", ["O"], {"plate": "A", "name": "b"})) == [add("a", "b", "v1:o1")]
