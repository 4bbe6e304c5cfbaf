"""Review probes of the continuous-query engine: cases the clause-by-clause tests missed."""

from __future__ import annotations

from drasi_ray.model.changes import ZERO_VERSION, ElementDelta, node, relation
from drasi_ray.query.engine import ContinuousQuery
from tests.query.test_engine import Graph, add, agg, assert_diffs, update


def test_grouping_by_an_element_shows_its_current_properties() -> None:
    # A group of a node is keyed by the node's id: a property change keeps the group, but the
    # grouping value must follow the node (Drasi projects it from the current row).
    g = Graph("MATCH (a:A) RETURN a AS a, count(a) AS c")
    g.node("1", "A", x=1)
    assert_diffs(g.node("1", "A", x=2), agg({"a": {"x": 1}, "c": 1}, {"a": {"x": 2}, "c": 1}))
    assert g.query.results() == [{"a": {"x": 2}, "c": 1}]


def test_grouping_element_change_reaches_the_next_part() -> None:
    g = Graph("MATCH (a:A)-[:R]->(b:B) WITH a, count(b) AS c RETURN a.x AS x, c")
    g.node("1", "A", x=1)
    g.node("2", "B")
    g.rel("r", "R", "1", "2")
    assert_diffs(g.node("1", "A", x=2), update({"x": 1, "c": 1}, {"x": 2, "c": 1}))


def test_undirected_self_loop_counts_once_in_bootstrap_as_incrementally() -> None:
    # The bulk bootstrap walked a node's outgoing and incoming lists, so it met a self-loop
    # twice; a change solves it once (openCypher: an undirected self-loop is one match).
    text = "MATCH (a:A)-[r:R]-(b) RETURN a.n AS a, count(b) AS c"
    elements = [node("1", ["A"], {"n": 1}), relation("s", ["R"], "1", "1", {})]
    bulk = ContinuousQuery("q", text)
    bulk.bootstrap(elements)
    incremental = ContinuousQuery("q", text)
    for element in elements:
        incremental.apply(ElementDelta(None, element, ZERO_VERSION, 0))
    assert bulk.results() == incremental.results() == [{"a": 1, "c": 1}]


def test_min_max_over_mixed_temporal_types_do_not_raise() -> None:
    # Python refuses date < datetime and naive < aware: each temporal type orders by itself,
    # and different types by a fixed rank (as numbers < strings < booleans).
    g = Graph(
        "MATCH (n:N) RETURN min(CASE n.k WHEN 1 THEN date(n.d) ELSE datetime(n.t) END) AS lo, "
        "max(CASE n.k WHEN 1 THEN localdatetime(n.t) ELSE datetime(n.t + 'Z') END) AS hi"
    )
    g.node("1", "N", k=1, d="2024-01-01", t="2024-01-01T00:00:00")
    g.node("2", "N", k=2, d="2024-01-01", t="2024-01-01T00:00:00")
    assert g.query.results() == [{"lo": "2024-01-01", "hi": "2024-01-01T00:00:00+00:00"}]
    assert not g.query.take_evaluation_errors()


def test_min_max_refuse_lists_cleanly() -> None:
    g = Graph("MATCH (n:N) RETURN max(n.l) AS m")
    g.node("1", "N", l=[1])
    g.node("2", "N", l=["a"])
    assert g.query.results() == []  # both rows refused: no group
    assert g.query.take_evaluation_errors() == ["cannot order values of type List"] * 2


def test_python_errors_at_the_edge_of_a_functions_range_refuse_the_row() -> None:
    # exp(1000) overflows a float: the row is refused and reported, the query goes on
    g = Graph("MATCH (n:N) RETURN n.id AS id, exp(n.x) AS e")
    g.node("1", "N", id=1, x=1000)
    assert g.query.results() == []
    assert g.query.take_evaluation_errors() == ["OverflowError: math range error"]
    g.node("2", "N", id=2, x=0)
    assert g.query.results() == [{"id": 2, "e": 1.0}]


def test_python_errors_in_a_where_or_an_aggregate_refuse_the_row() -> None:
    filtered = Graph("MATCH (n:N) WHERE exp(n.x) > 1 RETURN n.id AS id")
    filtered.node("1", "N", id=1, x=1000)
    filtered.node("2", "N", id=2, x=1)
    assert filtered.query.results() == [{"id": 2}]
    grouped = Graph("MATCH (n:N) RETURN n.k AS k, sum(exp(n.x)) AS s")
    grouped.node("1", "N", k="a", x=1000)
    grouped.node("2", "N", k="a", x=0)
    assert grouped.query.results() == [{"k": "a", "s": 1.0}]
    assert grouped.query.take_evaluation_errors() == ["OverflowError: math range error"]


def test_a_new_row_entering_a_group_is_reported_even_if_the_group_is_unchanged() -> None:
    # Drasi marks every aggregation caused by an added row "default_before" and keeps it even
    # when before == after (core/src/query/continuous_query.rs drops equal aggregations only
    # without that mark); updates and removals that leave the group unchanged emit nothing.
    g = Graph("MATCH (t:T) RETURN t.g AS g, max(t.v) AS m")
    g.node("t1", "T", g="x", v=5)
    assert_diffs(g.node("t2", "T", g="x", v=3), agg({"g": "x", "m": 5.0}, {"g": "x", "m": 5.0}))
    assert_diffs(g.node("t2", "T", g="x", v=4))
    assert_diffs(g.delete("t2"))


def test_a_row_replaced_within_its_group_by_one_change_is_reported() -> None:
    # moving a relation's end removes one row and adds another: the added row is reported
    g = Graph("MATCH (a:A)-[:R]->(b:B) RETURN a.g AS g, count(b) AS c")
    g.node("a1", "A", g="x")
    g.node("b1", "B")
    g.node("b2", "B")
    g.rel("r1", "R", "a1", "b1")
    assert_diffs(g.rel("r1", "R", "a1", "b2"), agg({"g": "x", "c": 1}, {"g": "x", "c": 1}))


def test_a_list_comprehension_without_brackets_is_a_function_argument() -> None:
    # drasi-core shared-tests use_cases/document: Drasi's grammar takes `x IN list WHERE p`
    # (and `| e`) bare; the pod query's sidecar column reads it inside head(...).
    g = Graph(
        "MATCH (p:Pod) RETURN "
        "head(c IN p.status.containerStatuses WHERE c.name = 'sidecar').containerID AS sidecar, "
        "size(c IN p.status.containerStatuses | c.restartCount) AS n"
    )
    statuses = [
        {"name": "nginx", "containerID": "d://1"},
        {"name": "sidecar", "containerID": "d://2"},
    ]
    assert_diffs(
        g.node("p1", "Pod", status={"containerStatuses": statuses}), add(sidecar="d://2", n=2)
    )


def test_floats_and_lists_become_text_as_in_drasi() -> None:
    # Drasi's toString and string '+' print a Float with Rust's f64 Display ("21", never
    # "21.0", never an exponent) and a List as "[a, b]" (core/src/evaluation/functions/text/
    # text.rs ToString, expressions/mod.rs Add; VariableValue's Display).
    g = Graph(
        "MATCH (s:S) RETURN toString(s.t) AS t, 'T=' + s.t AS label, toString(floor(s.t)) AS f, "
        "toString(s.big) AS big, toString(s.small) AS small, toString(s.l) AS l, "
        "'on: ' + s.on AS on"
    )
    row = {
        "t": "21",
        "label": "T=21",
        "f": "21",
        "big": "100000000000000000000",
        "small": "0.0000015",
        "l": "[1, a, 2.5, [true]]",
        "on": "on: true",
    }
    props = {"t": 21.0, "big": 1e20, "small": 1.5e-6, "l": [1, "a", 2.5, [True]], "on": True}
    assert_diffs(g.put(node("s1", ["S"], props)), add(**row))


def test_conversions_parse_and_round_as_drasi() -> None:
    # Drasi's toInteger floors a Float (and a Float's text), and its toInteger / toFloat /
    # toBoolean parse the text as Rust's str::parse does: no surrounding spaces, no '_'
    # (core/src/evaluation/functions/cypher_scalar/to_integer.rs, to_float.rs, to_boolean.rs).
    g = Graph(
        "MATCH (s:S) RETURN toInteger(s.f) AS i, toInteger(s.t) AS it, toInteger(s.sp) AS isp, "
        "toInteger(s.u) AS iu, toFloat(s.sp) AS fsp, toFloat(s.e) AS fe, "
        "toBoolean(s.b) AS b, toBoolean(s.bu) AS bu"
    )
    props = {
        "f": -4.5,
        "t": "-4.5",
        "sp": " 12 ",
        "u": "1_000",
        "e": "1e3",
        "b": " true",
        "bu": "TRUE",
    }
    row = {
        "i": -5,
        "it": -5,
        "isp": None,
        "iu": None,
        "fsp": None,
        "fe": 1000.0,
        "b": None,
        "bu": True,
    }
    assert_diffs(g.put(node("s1", ["S"], props)), add(**row))


def test_split_takes_a_list_of_delimiters_as_drasi() -> None:
    # Drasi's split(s, [d, ...]) cuts at every character of any delimiter and drops the empty
    # pieces (core/src/evaluation/functions/text/text.rs, Split with a List).
    g = Graph("MATCH (s:S) RETURN split(s.t, [',', '; ']) AS parts")
    assert_diffs(g.node("s1", "S", t=",a,b;c d,,"), add(parts=["a", "b", "c", "d"]))
