"""Row ids (drasi_ray/query/row_ids.py) and the engine's row changes by id, which query
chaining turns into nodes: what names a row, that the id outlives changes of its values and a
rebuild, and that the changes handed out are every change of the result set."""

from __future__ import annotations

from typing import Any

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, node, relation
from drasi_ray.model.identity import graph_id
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.row_ids import readable_id, row_id
from drasi_ray.query.values import hashable_key, key_output


class Tracked:
    """One query with row tracking on, and a mirror of its rows built from the changes."""

    def __init__(self, text: str) -> None:
        self.query = ContinuousQuery("q", text)
        self.query.track_rows()
        self.elements: dict[str, Element] = {}
        self.mirror: dict[str, dict[str, Any]] = {}

    def put(self, element: Element) -> dict[str, dict[str, Any] | None]:
        before = self.elements.get(element.id)
        self.elements[element.id] = element
        self.query.apply(ElementDelta(before, element, ZERO_VERSION, 0, before is None))
        return self._taken()

    def delete(self, element_id: str) -> dict[str, dict[str, Any] | None]:
        before = self.elements.pop(element_id)
        self.query.apply(ElementDelta(before, None, ZERO_VERSION, 0))
        return self._taken()

    def _taken(self) -> dict[str, dict[str, Any] | None]:
        changes = self.query.take_row_changes()
        for node_id, row in changes.items():
            if row is None:
                self.mirror.pop(node_id, None)
            else:
                self.mirror[node_id] = row
        assert self.mirror == self.query.results_by_id()
        return changes


def test_a_match_row_is_named_by_the_elements_it_binds_nodes_first() -> None:
    graph = Tracked("MATCH (a:A)-[r:R]->(b:B) RETURN a.v AS v, b.v AS w")
    graph.put(node("a1", ["A"], {"v": 1}))
    graph.put(node("b1", ["B"], {"v": 1}))
    assert graph.put(relation("r1", ["R"], "a1", "b1")) == {'["a1","b1","r1"]': {"v": 1, "w": 1}}
    assert graph.put(node("b1", ["B"], {"v": 2})) == {'["a1","b1","r1"]': {"v": 1, "w": 2}}
    assert graph.delete("r1") == {'["a1","b1","r1"]': None}


def test_rows_of_equal_values_are_rows_of_their_own() -> None:
    graph = Tracked("MATCH (s:S) RETURN s.room AS room")
    graph.put(node("s1", ["S"], {"room": "r1"}))
    graph.put(node("s2", ["S"], {"room": "r1"}))
    assert graph.mirror == {'["s1"]': {"room": "r1"}, '["s2"]': {"room": "r1"}}
    assert graph.delete("s1") == {'["s1"]': None}
    assert graph.mirror == {'["s2"]': {"room": "r1"}}


def test_a_group_is_named_by_its_grouping_values_and_updated_in_place() -> None:
    graph = Tracked("MATCH (s:S) RETURN s.room AS room, count(s) AS n, max(s.t) AS top")
    graph.put(node("s1", ["S"], {"room": "r1", "t": 5}))
    assert graph.put(node("s2", ["S"], {"room": "r1", "t": 7})) == {
        '["r1"]': {"room": "r1", "n": 2, "top": 7.0}
    }
    graph.delete("s1")
    assert graph.delete("s2") == {'["r1"]': {"room": "r1", "n": 0, "top": None}}
    assert graph.mirror == {'["r1"]': {"room": "r1", "n": 0, "top": None}}  # Drasi keeps it


def test_a_global_aggregation_is_one_row_named_by_no_values() -> None:
    graph = Tracked("MATCH (s:S) RETURN count(s) AS n")
    graph.put(node("s1", ["S"], {}))
    graph.put(node("s2", ["S"], {}))
    assert graph.mirror == {"[]": {"n": 2}}


def test_equal_grouping_values_of_two_kinds_name_one_group() -> None:
    graph = Tracked("MATCH (s:S) RETURN s.k AS k, count(s) AS n")
    graph.put(node("s1", ["S"], {"k": 2.0}))
    graph.put(node("s2", ["S"], {"k": 2}))
    graph.put(node("s3", ["S"], {"k": True}))
    assert sorted(graph.mirror) == ["[2]", "[true]"]


def test_the_row_of_an_aggregating_with_is_named_by_its_group_and_leaves_when_it_empties() -> None:
    graph = Tracked("MATCH (s:S) WITH s.room AS room, count(s) AS n WHERE n > 1 RETURN room, n")
    graph.put(node("s1", ["S"], {"room": "r1"}))
    assert graph.put(node("s2", ["S"], {"room": "r1"})) == {'["r1"]': {"room": "r1", "n": 2}}
    assert graph.delete("s2") == {'["r1"]': None}


def test_grouping_by_an_element_names_the_group_by_its_id() -> None:
    graph = Tracked("MATCH (a:A)-[:R]->(b:B) WITH b, count(a) AS n RETURN b.name AS name, n")
    graph.put(node("a1", ["A"], {}))
    graph.put(node("b1", ["B"], {"name": "x"}))
    assert graph.put(relation("r1", ["R"], "a1", "b1")) == {'["b1"]': {"name": "x", "n": 1}}


def test_an_optional_match_null_row_and_the_match_that_replaces_it() -> None:
    graph = Tracked("MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b:B) RETURN a.v AS v, b.v AS w")
    graph.put(node("a1", ["A"], {"v": 1}))
    assert graph.mirror == {'["a1",null,null]': {"v": 1, "w": None}}
    graph.put(node("b1", ["B"], {"v": 2}))
    assert graph.put(relation("r1", ["R"], "a1", "b1")) == {
        '["a1",null,null]': None,
        '["a1","b1","r1"]': {"v": 1, "w": 2},
    }
    # b1 leaves the pattern by an update: the null row comes back, which no diff reports
    graph.put(node("b1", ["C"], {"v": 2}))
    assert graph.mirror == {'["a1",null,null]': {"v": 1, "w": None}}


def test_ids_outlive_a_rebuild_and_a_bootstrap_hands_out_no_changes() -> None:
    text = "MATCH (s:S) RETURN s.room AS room, count(s) AS n"
    graph = Tracked(text)
    for number, room in enumerate(["r1", "r2", "r1"]):
        graph.put(node(f"s{number}", ["S"], {"room": room}))
    rebuilt = ContinuousQuery("q", text)
    rebuilt.track_rows()
    rebuilt.bootstrap(list(graph.elements.values()))
    assert rebuilt.take_row_changes() == {}
    assert rebuilt.results_by_id() == graph.query.results_by_id()


def test_graph_ids_of_a_query_of_several_sources_read_as_source_and_id() -> None:
    assert readable_id(graph_id("s", "1")) == "s:1"
    assert readable_id("1") == "1"
    join = graph_id("s", "a") + ":" + graph_id("t", "b")
    assert readable_id(join) == "s:a:t:b"
    assert row_id((graph_id("s", "1"), None)) == '["s:1",null]'


def test_key_output_writes_a_key_as_its_value() -> None:
    values = [None, "x", 3, 2.0, 2.5, True, [1, 2.0], {"k": [True]}, float("nan")]
    written = [key_output(hashable_key(value)) for value in values]
    assert written == [None, "x", 3, 2, 2.5, True, [1, 2], {"k": [True]}, "NaN"]
    element = node("n1", ["A"], {})
    assert key_output(hashable_key(element), readable_id) == "n1"
