"""The engine's shortcuts give what the general path gives.

- bulk bootstrap (a fresh query without OPTIONAL MATCH) = applying every element as a change;
- a property-only update re-reads its rows, unless a pattern predicate reads properties;
- a lone node variable's row follows its labels;
- the row lane (a properties-only update of a lone node variable's row, settled by the one
  part) gives the diffs and the result set, in its order, of the contexts and the collector.
"""

from __future__ import annotations

import random

import pytest

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, node, relation
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.shards.store import ElementStore
from drasi_ray.source.decode import decode_entry, encode_cloud_event
from tests.differential.catalogue import CATALOGUE
from tests.differential.generator import generate_case

QUERIES = {
    "filter": "MATCH (s:Sensor) WHERE s.t > 5 RETURN s.id AS id, s.t AS t",
    "two_hop": (
        "MATCH (r:Room)-[:PART_OF]->(f:Floor)-[:PART_OF]->(b:Building) WHERE r.t > 5 "
        "RETURN r.id AS room, f.id AS floor, b.id AS building"
    ),
    "aggregate": (
        "MATCH (s:Sensor) RETURN s.zone AS zone, count(s) AS n, avg(s.t) AS avg, max(s.t) AS m"
    ),
    "with_average": (
        "MATCH (r:Room)-[:PART_OF]->(f:Floor) WITH f.id AS floor, r.t * 2 AS level "
        "RETURN floor, avg(level) AS average"
    ),
    "inline": "MATCH (a:Sensor {zone: 'z1'}) RETURN a.id AS id",
}


def _graph(seed: int) -> list[Element]:
    rng = random.Random(seed)
    elements: list[Element] = [node("b", ["Building"], {"id": "b"})]
    for f in range(3):
        elements.append(node(f"f{f}", ["Floor"], {"id": f"f{f}"}))
        elements.append(relation(f"pf{f}", ["PART_OF"], f"f{f}", "b"))
        for r in range(4):
            room = f"r{f}_{r}"
            elements.append(node(room, ["Room"], {"id": room, "t": rng.randrange(10)}))
            elements.append(relation(f"p{room}", ["PART_OF"], room, f"f{f}"))
    for s in range(12):
        properties = {"id": f"s{s}", "t": rng.randrange(10), "zone": f"z{s % 3}"}
        elements.append(node(f"s{s}", ["Sensor"], properties))
    rng.shuffle(elements)
    return elements


def _normal(rows: list[dict[str, object]]) -> list[str]:
    return sorted(repr(sorted(row.items())) for row in rows)


@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("seed", range(5))
def test_bulk_bootstrap_equals_applying_each_element(name: str, seed: int) -> None:
    elements = _graph(seed)
    bulk = ContinuousQuery("bulk", QUERIES[name])
    bulk.bootstrap(elements)
    one_by_one = ContinuousQuery("each", QUERIES[name])
    for element in elements:
        one_by_one.apply(ElementDelta(None, element, ZERO_VERSION, 0))
    assert _normal(bulk.results()) == _normal(one_by_one.results())


def _update(query: ContinuousQuery, before: Element, after: Element) -> list[dict[str, object]]:
    return query.apply(ElementDelta(before, after, ZERO_VERSION, 0))


def test_property_update_leaves_an_inline_property_pattern() -> None:
    query = ContinuousQuery("q", QUERIES["inline"])
    old = node("s1", ["Sensor"], {"id": "s1", "zone": "z1"})
    query.bootstrap([old])
    new = node("s1", ["Sensor"], {"id": "s1", "zone": "z2"})
    assert _update(query, old, new) == [{"type": "DELETE", "data": {"id": "s1"}}]
    assert _update(query, new, old) == [{"type": "ADD", "data": {"id": "s1"}}]


def test_property_update_of_a_path_element_updates_its_rows() -> None:
    query = ContinuousQuery("q", QUERIES["two_hop"])
    elements = _graph(1)
    query.bootstrap(elements)
    room = next(e for e in elements if e.id == "r1_2")
    hot = node(room.id, ["Room"], {"id": room.id, "t": 9})
    cold = node(room.id, ["Room"], {"id": room.id, "t": 1})
    _update(query, room, hot)
    row = {"room": "r1_2", "floor": "f1", "building": "b"}
    assert _update(query, hot, cold) == [{"type": "DELETE", "data": row}]
    assert _update(query, cold, hot) == [{"type": "ADD", "data": row}]


def test_label_change_of_a_lone_variable_adds_and_removes_its_row() -> None:
    query = ContinuousQuery("q", QUERIES["filter"])
    sensor = node("s1", ["Sensor"], {"id": "s1", "t": 9})
    other = node("s1", ["Other"], {"id": "s1", "t": 9})
    query.bootstrap([sensor])
    assert _update(query, sensor, other) == [{"type": "DELETE", "data": {"id": "s1", "t": 9}}]
    assert _update(query, other, sensor) == [{"type": "ADD", "data": {"id": "s1", "t": 9}}]


def _lane_queries() -> list[str]:
    """The catalogue's queries that take the row lane (about half of them)."""
    return [query.id for query in CATALOGUE if ContinuousQuery(query.id, query.text)._lane]


@pytest.mark.parametrize("query_id", _lane_queries())
def test_row_lane_gives_what_the_general_path_gives(query_id: str) -> None:
    text = next(query.text for query in CATALOGUE if query.id == query_id)
    lane = ContinuousQuery("lane", text)
    general = ContinuousQuery("general", text)
    general._lane = None  # every change through the contexts and the collector
    store = ElementStore()
    for seed in range(12):
        case = generate_case(seed, 60)
        for position, change in enumerate(case.changes, start=seed * 1000 + 1):
            raw = encode_cloud_event([change.platform_event()], source="lane")
            for element_change in decode_entry(f"{position}-0", {b"data": raw}).changes:
                delta = store.apply(element_change)
                if delta is not None:
                    # repr: value types, key order and NaN count, not just ==
                    assert repr(lane.apply(delta)) == repr(general.apply(delta)), change
    assert repr(lane.results()) == repr(general.results())
    assert lane.row_changes == general.row_changes
