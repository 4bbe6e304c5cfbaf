"""Property test: after every random change, the incremental result equals a from-scratch
evaluation (tests/query/naive.py), and the emitted diffs turn the previous result into the
new one (except for a non-aggregating OPTIONAL MATCH, where Drasi's diffs do not).

Graph: four nodes (labels A/B, props v and g), four relations (labels R/S, any endpoints, even
missing nodes, prop w); changes insert/replace, and delete, in any order.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drasi_ray.model.changes import node, relation
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.expressions import contains_aggregate
from drasi_ray.query.parser import parse_query
from tests.query import naive
from tests.query.support import TinyStore, apply_diffs, same, same_multiset

QUERIES = {
    "filter": "MATCH (n:A) WHERE n.v > 1 RETURN n.v AS v, n.g AS g",
    "two_hop": "MATCH (a:A)-[r:R]->(b)-[s]-(c:B) RETURN a.v AS av, r.w AS w, c.g AS cg",
    "incoming": "MATCH (a:A)<-[r:R|S]-(b:B) RETURN a.g AS ag, r.w AS w, b.v AS bv",
    "optional": "MATCH (a:A) OPTIONAL MATCH (a)-[r:R]->(b:B) RETURN a.v AS av, b.v AS bv",
    "optional_where": (
        "MATCH (a:A) OPTIONAL MATCH (a)-[:S]-(b) WHERE b.v > a.v RETURN a.g AS ag, b.v AS bv"
    ),
    "optional_agg": (
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) RETURN a.g AS g, count(b) AS c, "
        "collect(b.v) AS vs"
    ),
    "optional_chain": (
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) OPTIONAL MATCH (b)-[s:S]-(c:B) "
        "RETURN a.v AS av, b.v AS bv, s.w AS sw, c.g AS cg"
    ),
    "optional_chain_agg": (
        "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) OPTIONAL MATCH (b)-[:S]->(c) "
        "RETURN a.g AS g, count(b) AS nb, count(c) AS nc, collect(c.v) AS vs"
    ),
    "crossing_agg": "MATCH (n:A) WITH n, n.v AS v WHERE v > 1 RETURN n.g AS g, count(n) AS c",
    "grouped": (
        "MATCH (n:A)-[r:R|S]->(m) RETURN n.g AS g, count(m) AS c, sum(r.w) AS s, "
        "avg(m.v) AS a, min(m.v) AS lo, max(r.w) AS hi, collect(m.v) AS vs"
    ),
    "with_where": (
        "MATCH (n:A) WITH n.g AS g, count(n) AS c, sum(n.v) AS s WHERE c > 1 RETURN g, c, s"
    ),
    "with_element": "MATCH (n:B) WITH n, n.v * 2 AS dv WHERE dv > 2 RETURN n.g AS g, dv",
    "labels_props": (
        "MATCH (a:A|B {g: 'x'})-[:R]->(b:A) WHERE b.v IS NOT NULL RETURN a.v AS av, b.v AS bv"
    ),
    "global": "MATCH (n:A) WHERE n.v >= 1 RETURN count(n) AS c, max(n.v) AS m",
    "two_levels": (
        "MATCH (n:A) WITH n.g AS g, count(n) AS c RETURN count(g) AS groups, sum(c) AS total"
    ),
    "cartesian": "MATCH (a:A) MATCH (b:B) WHERE a.v = b.v RETURN a.g AS ag, b.g AS bg",
    "distinct": "MATCH (n:A)-[:R]-(m) RETURN n.g AS g, count(DISTINCT m.v) AS d",
    "where_group": (
        "MATCH (n:A)-[r]->(m) WHERE r.w > 0 RETURN m.g AS g, sum(r.w) AS s, min(n.v) AS lo"
    ),
}

NODE_IDS = ["n0", "n1", "n2", "n3"]
REL_IDS = ["r0", "r1", "r2", "r3"]

node_changes = st.builds(
    lambda i, labels, v, g: ("node", i, labels, v, g),
    st.sampled_from(NODE_IDS),
    st.sampled_from([("A",), ("B",), ("A", "B"), ("C",)]),
    st.one_of(st.none(), st.integers(0, 3)),
    st.sampled_from(["x", "y"]),
)
rel_changes = st.builds(
    lambda i, label, s, e, w: ("rel", i, label, s, e, w),
    st.sampled_from(REL_IDS),
    st.sampled_from(["R", "S", "T"]),
    st.sampled_from(NODE_IDS),
    st.sampled_from(NODE_IDS),
    st.one_of(st.none(), st.integers(-1, 3)),
)
deletes = st.builds(lambda i: ("del", i), st.sampled_from(NODE_IDS + REL_IDS))
changes = st.lists(st.one_of(node_changes, rel_changes, deletes), max_size=30)


def _apply(store: TinyStore, change: tuple[Any, ...]) -> Any:
    if change[0] == "del":
        return store.delete(change[1])
    if change[0] == "node":
        _, i, labels, v, g = change
        props = {"g": g} if v is None else {"g": g, "v": v}
        return store.put(node(i, labels, props))
    _, i, label, start, end, w = change
    return store.put(relation(i, [label], start, end, {} if w is None else {"w": w}))


def _normal(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lists compare as multisets (collect order is arrival order in the engine)."""
    return [
        {k: sorted(v, key=repr) if isinstance(v, list) else v for k, v in row.items()}
        for row in rows
    ]


def _grouping(text: str) -> list[str]:
    items = parse_query(text).returns.items
    return [i.name for i in items if not contains_aggregate(i.expression)]


def _identity_row(text: str, row: dict[str, Any]) -> bool:
    """True if ``row`` holds identity values in every aggregate column (an emptied group)."""
    calls = {
        i.name: i.expression
        for i in parse_query(text).returns.items
        if contains_aggregate(i.expression)
    }
    return all(same(row[name], naive.identity(call.name)) for name, call in calls.items())  # type: ignore[union-attr]


def check_against_oracle(query: ContinuousQuery, text: str, store: TinyStore) -> None:
    actual = _normal(query.results())
    expected = _normal(naive.evaluate(text, store.elements))
    if not query.is_aggregating:
        assert same_multiset(actual, expected), f"\nengine {actual}\nnaive  {expected}"
        return
    keys = _grouping(text)
    extra = list(actual)
    for row in expected:
        match = next((r for r in extra if same(r, row)), None)
        assert match is not None, f"\nmissing {row}\nengine {actual}\nnaive  {expected}"
        extra.remove(match)
    expected_keys = [tuple(row[k] for k in keys) for row in expected]
    for row in extra:
        assert _identity_row(text, row), f"stale group {row}; naive {expected}"
        assert not any(same(tuple(row[k] for k in keys), key) for key in expected_keys)


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequence=changes)
def test_incremental_equals_from_scratch(name: str, sequence: list[tuple[Any, ...]]) -> None:
    text = QUERIES[name]
    query = ContinuousQuery(name, text)
    store = TinyStore()
    rows: list[dict[str, Any]] = []
    group_keys = _grouping(text) if query.is_aggregating else []
    # Drasi's diffs of OPTIONAL MATCH rows do not compose (a second match is an update from a
    # null row already replaced; a lost match, an update to a null row that is not there when
    # other matches remain: docs/conformance.md), so only the result set is checked there.
    composes = "OPTIONAL" not in text or query.is_aggregating
    for change in sequence:
        delta = _apply(store, change)
        if delta is None:
            continue
        diffs = query.apply(delta)
        check_against_oracle(query, text, store)
        if composes:
            apply_diffs(rows, diffs, group_keys)
            assert same_multiset(_normal(rows), _normal(query.results())), (diffs, rows)


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequence=changes)
def test_bootstrap_equals_incremental(name: str, sequence: list[tuple[Any, ...]]) -> None:
    """Loading the final graph silently gives the same result as replaying the changes
    (up to emptied groups, which only the replay has seen)."""
    text = QUERIES[name]
    store = TinyStore()
    for change in sequence:
        _apply(store, change)
    loaded = ContinuousQuery(name, text)
    loaded.bootstrap(reversed(list(store.elements.values())))
    check_against_oracle(loaded, text, store)
