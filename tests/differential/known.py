"""Where drasi_ray deliberately differs from Drasi, each pinned by a probe run through both.

Two kinds, both listed in docs/conformance.md (generated from this module):

- ``deviation``: Drasi runs the query but is plainly wrong; drasi_ray keeps openCypher's
  meaning (or the result a user can rely on);
- ``refusal``: Drasi refuses the query, fails on it (the query stops: its status leaves
  "Running") or panics (it stops answering); drasi_ray keeps openCypher's meaning, or refuses
  too when it does not support the feature.

tests/differential/test_known.py runs every probe through drasi-lib and drasi_ray and checks
both outcomes, so a drasi-lib release that changes one of them fails the test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from tests.differential.compare import same_multiset
from tests.differential.probes import Outcome, Probe, changes

Step = tuple[tuple[str, Any, Any], ...]


@dataclass(frozen=True, slots=True)
class Expected:
    """What one engine gives for a probe. ``failure``: a text its failure contains
    ("refused" for a query refused when added, "did not finish" for a panic, else the error
    Drasi logged). Otherwise, if given, the diffs of each change (in any order, lists as
    multisets, numbers of their kind), the final results, a text their JSON shows; none
    given: the query runs."""

    steps: tuple[Step, ...] | None = None
    results: tuple[Any, ...] | None = None
    failure: str | None = None
    shows: str | None = None
    """A text the diffs' JSON contains."""


@dataclass(frozen=True, slots=True)
class Known:
    """One known difference: what Drasi does and what drasi_ray does, in words for the docs,
    and the probe with both outcomes. ``function``: a Drasi function drasi_ray may not support
    yet; until it does, drasi_ray must refuse the query."""

    id: str
    kind: Literal["deviation", "refusal"]
    drasi_does: str
    drasi_ray_does: str
    probe: Probe
    drasi: Expected
    drasi_ray: Expected
    function: str | None = None


def _n(**properties: Any) -> tuple[Any, ...]:
    return ("insert", "n1", "N", properties)


def _join(join_id: str, *keys: str) -> dict[str, Any]:
    """A join in Drasi's shape from ``Label.property`` keys."""
    pairs = (key.split(".") for key in keys)
    return {"id": join_id, "keys": [{"label": label, "property": name} for label, name in pairs]}


PLACED = _join("PLACED", "Order.customer", "Customer.cid")
AT = _join("AT", "Order.store", "Store.sid")
SHOPS = _join("SHOPS", "Customer.home", "Store.sid")
NEAR = _join("NEAR", "Order.region", "Customer.region")
CYCLE = (
    "MATCH (c:Customer)-[:PLACED]->(o:Order)-[:AT]->(s:Store)<-[:SHOPS]-(c) "
    "RETURN c.cid AS c, o.oid AS o, s.sid AS s"
)
"""Customers who placed an order at their home store: a cycle of three joins."""

_RUNS = Expected()
_REFUSED = Expected(failure="refused")
_PANIC = Expected(failure="did not finish")


def _stops(error: str) -> Expected:
    return Expected(failure=f"error={error}")


def _row(**row: Any) -> Step:
    return (("ADD", None, row),)


def _added(**row: Any) -> Expected:
    """One change that adds one row."""
    return Expected(steps=(_row(**row),), results=(row,))


KNOWN: tuple[Known, ...] = (
    # ------------------------------------------------------------------ deviations
    Known(
        "int_float_equality",
        "deviation",
        "`2.0 = 2` is false (while `2.0 <> 2` is false too and `2.0 IN [2]` is true)",
        "true: numbers compare by value",
        Probe("int_float_equality", "MATCH (n:N) RETURN n.x = 2 AS eq", changes(_n(x=2.0))),
        _added(eq=False),
        _added(eq=True),
    ),
    Known(
        "map_equality",
        "deviation",
        "`=` and `<>` are false between any two maps",
        "maps compare key by key",
        Probe(
            "map_equality",
            "MATCH (n:N) RETURN {a: n.x} = {a: 1} AS eq, {a: n.x} <> {a: 2} AS ne",
            changes(_n(x=1)),
        ),
        _added(eq=False, ne=False),
        _added(eq=True, ne=True),
    ),
    Known(
        "element_inequality",
        "deviation",
        "`<>` is false between any two nodes",
        "nodes compare by identity",
        Probe(
            "element_inequality",
            "MATCH (a:N), (b:N) WHERE a <> b RETURN a.name AS a, b.name AS b",
            changes(("insert", "n1", "N", {"name": "x"}), ("insert", "n2", "N", {"name": "y"})),
        ),
        Expected(steps=((), ()), results=()),
        Expected(
            steps=((), (("ADD", None, {"a": "x", "b": "y"}), ("ADD", None, {"a": "y", "b": "x"}))),
            results=({"a": "x", "b": "y"}, {"a": "y", "b": "x"}),
        ),
    ),
    Known(
        "string_ordering",
        "deviation",
        "`<`, `<=`, `>`, `>=` are false between strings",
        "strings order lexicographically",
        Probe(
            "string_ordering",
            "MATCH (n:N) WHERE n.name < 'm' RETURN n.name AS name",
            changes(_n(name="b")),
        ),
        Expected(steps=((),), results=()),
        _added(name="b"),
    ),
    Known(
        "undirected_relation",
        "deviation",
        "an undirected relation pattern also pairs each end with itself: four rows for one "
        "relation",
        "one row per direction",
        Probe(
            "undirected_relation",
            "MATCH (a:N)-[:R]-(b:N) RETURN a.name AS a, b.name AS b",
            changes(
                ("insert", "x", "N", {"name": "x"}),
                ("insert", "y", "N", {"name": "y"}),
                ("insert", "r", "R", {}, "x", "y"),
            ),
        ),
        Expected(
            steps=(
                (),
                (),
                (
                    ("ADD", None, {"a": "x", "b": "x"}),
                    ("ADD", None, {"a": "x", "b": "y"}),
                    ("ADD", None, {"a": "y", "b": "x"}),
                    ("ADD", None, {"a": "y", "b": "y"}),
                ),
            )
        ),
        Expected(
            steps=(
                (),
                (),
                (("ADD", None, {"a": "x", "b": "y"}), ("ADD", None, {"a": "y", "b": "x"})),
            )
        ),
    ),
    Known(
        "node_pattern_matches_relations",
        "deviation",
        "a node pattern without a label matches relations too",
        "nodes only",
        Probe(
            "node_pattern_matches_relations",
            "MATCH (a) RETURN a.x AS x",
            changes(_n(x=1), ("insert", "r1", "R", {"x": 5}, "n1", "n1")),
        ),
        Expected(steps=(_row(x=1), _row(x=5))),
        Expected(steps=(_row(x=1), ())),
    ),
    Known(
        "optional_partial_match",
        "deviation",
        "an OPTIONAL MATCH matches in part: a relation to a node of another label (or to a "
        "missing node) gives a row with that node null",
        "the whole OPTIONAL MATCH pattern matches, or the row has its null extension",
        Probe(
            "optional_partial_match",
            "MATCH (a:A) OPTIONAL MATCH (a)-[r:R]->(b:B) RETURN a.name AS a, r.w AS w, b.name AS b",
            changes(
                ("insert", "b1", "B", {"name": "b1"}),
                ("insert", "c1", "C", {"name": "c1"}),
                ("insert", "a1", "X", {"name": "a1"}),
                ("insert", "r1", "R", {"w": 1}, "a1", "b1"),
                ("insert", "r2", "R", {"w": 2}, "a1", "c1"),
                ("update", "a1", "A", {}),
            ),
        ),
        Expected(
            steps=(
                *((),) * 5,
                (
                    ("ADD", None, {"a": "a1", "w": 1, "b": "b1"}),
                    ("ADD", None, {"a": "a1", "w": 2, "b": None}),
                ),
            )
        ),
        Expected(steps=(*((),) * 5, _row(a="a1", w=1, b="b1"))),
    ),
    Known(
        "optional_chain_link",
        "deviation",
        "a match of the first of two chained OPTIONAL MATCH clauses is not reported (its null "
        "row keeps the variable the second clause joins on, so before equals after)",
        "an UPDATE from the null row",
        Probe(
            "optional_chain_link",
            "MATCH (c:C) OPTIONAL MATCH (c)-[:S]->(a) OPTIONAL MATCH (a)-[:R]->(b) "
            "RETURN c.name AS c, a.name AS a, b.name AS b",
            changes(
                ("insert", "c1", "C", {"name": "c1"}),
                ("insert", "a1", "A", {"name": "a1"}),
                ("insert", "s1", "S", {}, "c1", "a1"),
            ),
        ),
        Expected(steps=(_row(c="c1", a=None, b=None), (), ())),
        Expected(
            steps=(
                _row(c="c1", a=None, b=None),
                (),
                (("UPDATE", {"c": "c1", "a": None, "b": None}, {"c": "c1", "a": "a1", "b": None}),),
            )
        ),
    ),
    Known(
        "optional_result_set",
        "deviation",
        "the result set (`get_query_results`) keeps an OPTIONAL MATCH null row after a match "
        "replaced it, even after the row is deleted",
        "the result set holds the rows the query has (the diffs are Drasi's)",
        Probe(
            "optional_result_set",
            "MATCH (a:A) OPTIONAL MATCH (a)-[:R]->(b) RETURN a.name AS a, b.name AS b",
            changes(
                ("insert", "a1", "A", {"name": "a1"}),
                ("insert", "b1", "B", {"name": "b1"}),
                ("insert", "r1", "R", {}, "a1", "b1"),
                ("delete", "a1", "A", {}),
            ),
        ),
        Expected(results=({"a": "a1", "b": None},)),
        Expected(results=()),
    ),
    Known(
        "optional_second_match_in_aggregate",
        "deviation",
        "a second OPTIONAL MATCH match takes back from its group the null row an earlier match "
        "had already replaced: a collect over the rows of two OPTIONAL MATCH clauses loses values",
        "the group holds every row",
        Probe(
            "optional_second_match_in_aggregate",
            "MATCH (p:P) OPTIONAL MATCH (p)-[:O]->(o) OPTIONAL MATCH (r)-[:V]->(p) "
            "RETURN p.name AS p, collect(o.name) AS os, count(r) AS rs",
            changes(
                ("insert", "p1", "P", {"name": "p1"}),
                ("insert", "o1", "O", {"name": "o1"}),
                ("insert", "o2", "O", {"name": "o2"}),
                ("insert", "e1", "O", {}, "p1", "o1"),
                ("insert", "e2", "O", {}, "p1", "o2"),
                ("insert", "r1", "R", {"name": "r1"}),
                ("insert", "v1", "V", {}, "r1", "p1"),
                ("insert", "r2", "R", {"name": "r2"}),
                ("insert", "v2", "V", {}, "r2", "p1"),
            ),
        ),
        Expected(results=({"p": "p1", "os": ["o1", "o2"], "rs": 4},)),
        Expected(results=({"p": "p1", "os": ["o1", "o2", "o1", "o2"], "rs": 4},)),
    ),
    Known(
        "division_by_zero",
        "deviation",
        "a change whose row divides by zero is skipped, before or after the change, so the "
        "row keeps its old value and misses the next change too",
        "the row is dropped while it divides by zero, and comes back when it does not",
        Probe(
            "division_by_zero",
            "MATCH (n:N) RETURN n.name AS name, n.x / n.y AS q",
            changes(
                _n(name="n1", x=1, y=1),
                ("update", "n1", "N", {"y": 0}),
                ("update", "n1", "N", {"y": 2}),
            ),
        ),
        Expected(steps=(_row(name="n1", q=1.0), (), ()), results=({"name": "n1", "q": 1.0},)),
        Expected(
            steps=(
                _row(name="n1", q=1.0),
                (("DELETE", {"name": "n1", "q": 1.0}, None),),
                _row(name="n1", q=0.5),
            ),
            results=({"name": "n1", "q": 0.5},),
        ),
    ),
    Known(
        "min_max_of_null",
        "deviation",
        "min and max read null when a row with a null argument joins or changes",
        "nulls are ignored: the group's extreme",
        Probe(
            "min_max_of_null",
            "MATCH (n:N) RETURN max(n.x) AS m",
            changes(_n(x=5), ("insert", "n2", "N", {"y": 1})),
        ),
        Expected(
            steps=(
                (("aggregation", {"m": None}, {"m": 5.0}),),
                (("aggregation", {"m": None}, {"m": None}),),
            ),
            results=({"m": None},),
        ),
        Expected(
            steps=(
                (("aggregation", {"m": None}, {"m": 5.0}),),
                (("aggregation", {"m": 5.0}, {"m": 5.0}),),
            ),
            results=({"m": 5.0},),
        ),
    ),
    Known(
        "sum_float_drift",
        "deviation",
        "`sum` and `avg` keep one running float: a value too small to register beside a large "
        "one is lost, and the loss stays. With 10^17 and 1 summed and 10^17 taken back, the "
        "group of one row of 1 sums to 0; emptied, to -1; a row of 0.1 added then sums and "
        "averages to -0.9",
        "integers are totalled exactly (floats apart), and a group that empties starts again at "
        "zero: 1, then 0, then 0.1",
        Probe(
            "sum_float_drift",
            "MATCH (n:N) RETURN sum(n.x) AS s, avg(n.x) AS m",
            changes(
                _n(x=10**17),
                ("insert", "n2", "N", {"x": 1}),
                ("delete", "n1", "N", {}),
                ("delete", "n2", "N", {}),
                ("insert", "n3", "N", {"x": 0.1}),
            ),
        ),
        Expected(
            steps=(
                (("aggregation", {"s": 0.0, "m": 0.0}, {"s": 1e17, "m": 1e17}),),
                (("aggregation", {"s": 1e17, "m": 1e17}, {"s": 1e17, "m": 5e16}),),
                (("aggregation", {"s": 1e17, "m": 5e16}, {"s": 0.0, "m": 0.0}),),
                (("aggregation", {"s": 0.0, "m": 0.0}, {"s": -1.0, "m": 0.0}),),
                (("aggregation", {"s": -1.0, "m": 0.0}, {"s": -0.9, "m": -0.9}),),
            ),
            results=({"s": -0.9, "m": -0.9},),
        ),
        Expected(
            steps=(
                (("aggregation", {"s": 0.0, "m": 0.0}, {"s": 1e17, "m": 1e17}),),
                (("aggregation", {"s": 1e17, "m": 1e17}, {"s": 1e17, "m": 5e16}),),
                (("aggregation", {"s": 1e17, "m": 5e16}, {"s": 1.0, "m": 1.0}),),
                (("aggregation", {"s": 1.0, "m": 1.0}, {"s": 0.0, "m": 0.0}),),
                (("aggregation", {"s": 0.0, "m": 0.0}, {"s": 0.1, "m": 0.1}),),
            ),
            results=({"s": 0.1, "m": 0.1},),
        ),
    ),
    Known(
        "sum_numbers_and_durations",
        "deviation",
        "a group of numbers and durations is summed as one: a number counts as that many "
        "milliseconds (5 and 7 seconds sum to `PT7.005S`), and with the 5 taken back the one "
        "7-second duration sums to the number 7000",
        "a group that holds both has no sum or average (null); one kind alone sums as itself "
        "(`PT7S`)",
        Probe(
            "sum_numbers_and_durations",
            "MATCH (n:N) RETURN sum(CASE WHEN n.d THEN duration({seconds: n.x}) ELSE n.x END) "
            "AS s, avg(CASE WHEN n.d THEN duration({seconds: n.x}) ELSE n.x END) AS m",
            changes(
                _n(x=5, d=False),
                ("insert", "n2", "N", {"x": 7, "d": True}),
                ("delete", "n1", "N", {}),
                ("delete", "n2", "N", {}),
            ),
        ),
        Expected(
            steps=(
                (("aggregation", {"s": 0.0, "m": 0.0}, {"s": 5.0, "m": 5.0}),),
                (
                    (
                        "aggregation",
                        {"s": "PT0.005S", "m": "PT0.005S"},
                        {"s": "PT7.005S", "m": "PT3.502S"},
                    ),
                ),
                (("aggregation", {"s": 7005.0, "m": 3502.5}, {"s": 7000.0, "m": 7000.0}),),
                (("aggregation", {"s": "PT7S", "m": "PT7S"}, {"s": "P0D", "m": 0.0}),),
            ),
            results=({"s": "P0D", "m": 0.0},),
        ),
        Expected(
            steps=(
                (("aggregation", {"s": 0.0, "m": 0.0}, {"s": 5.0, "m": 5.0}),),
                (("aggregation", {"s": 5.0, "m": 5.0}, {"s": None, "m": None}),),
                (("aggregation", {"s": None, "m": None}, {"s": "PT7S", "m": "PT7S"}),),
                (("aggregation", {"s": "PT7S", "m": "PT7S"}, {"s": "P0D", "m": 0.0}),),
            ),
            results=({"s": "P0D", "m": 0.0},),
        ),
    ),
    Known(
        "whole_element",
        "deviation",
        "a returned node or relation is written as the Rust `Debug` text of the element",
        "the map of its properties",
        Probe("whole_element", "MATCH (n:N) RETURN n AS n", changes(_n(x=5))),
        Expected(shows='"n": "Element(Node { metadata: ElementMetadata {'),
        _added(n={"x": 5}),
    ),
    Known(
        "collect_elements",
        "deviation",
        "`collect()` of nodes or relations collects nothing",
        "their property maps",
        Probe("collect_elements", "MATCH (a:N) RETURN collect(a) AS c", changes(_n(name="x"))),
        Expected(steps=((("aggregation", {"c": []}, {"c": []}),),)),
        Expected(steps=((("aggregation", {"c": []}, {"c": [{"name": "x"}]}),),)),
    ),
    Known(
        "duration_months",
        "deviation",
        "a duration's years and months are not written (14 months and an hour: `PT3600S`)",
        "`P1Y2MT3600S`",
        Probe(
            "duration_months",
            "MATCH (n:N) RETURN duration({months: 14, seconds: n.s}) AS d",
            changes(_n(s=3600)),
        ),
        _added(d="PT3600S"),
        _added(d="P1Y2MT3600S"),
    ),
    Known(
        "truncate_quarter",
        "deviation",
        "the quarter of March, June and September starts the next month (`2024-03-15` gives "
        "`2024-04-01`), and December's fails",
        "the quarter's first day (`2024-01-01`)",
        Probe(
            "truncate_quarter",
            "MATCH (n:N) RETURN date.truncate('quarter', date(n.d)) AS q",
            changes(_n(d="2024-03-15")),
        ),
        _added(q="2024-04-01"),
        _added(q="2024-01-01"),
    ),
    Known(
        "truncate_week_year",
        "deviation",
        "the first Monday of the calendar year, after the date itself for early January "
        "(`2025-01-02` gives `2025-01-06`)",
        "the Monday of ISO week 1 of the date's week-year (`2024-12-30`)",
        Probe(
            "truncate_week_year",
            "MATCH (n:N) RETURN date.truncate('weekYear', date(n.d)) AS w",
            changes(_n(d="2025-01-02")),
        ),
        _added(w="2025-01-06"),
        _added(w="2024-12-30"),
    ),
    Known(
        "clock_in_an_offset_zone",
        "deviation",
        "a zone given as an offset (or an IANA name with a hyphen) is read as UTC",
        "the clock in that offset or zone",
        Probe(
            "clock_in_an_offset_zone",
            "MATCH (n:N) RETURN datetime.transaction('+05:00').hour = "
            "datetime.transaction().hour AS utc",
            changes(_n(x=1)),
        ),
        _added(utc=True),
        _added(utc=False),
    ),
    Known(
        "local_datetime_clock_in_a_zone",
        "deviation",
        "`localdatetime.transaction(zone)` is the UTC wall clock (while "
        "`localtime.transaction(zone)` is the zone's)",
        "the zone's wall clock for both",
        Probe(
            "local_datetime_clock_in_a_zone",
            "MATCH (n:N) RETURN localdatetime.transaction('Asia/Kolkata').hour = "
            "localtime.transaction('Asia/Kolkata').hour AS same",
            changes(_n(x=1)),
        ),
        _added(same=False),
        _added(same=True),
    ),
    Known(
        "linear_gradient_per_row",
        "deviation",
        "drasi-lib does not count `drasi.linearGradient` among the aggregates (drasi-core "
        "does): each new row is an ADD carrying the gradient of one accumulator for the query",
        "an aggregate, as drasi-core's own tests have it: one aggregation diff per group, the "
        "same values",
        Probe(
            "linear_gradient_per_row",
            "MATCH (p:N) RETURN drasi.linearGradient(p.x, p.y) AS g",
            changes(
                ("insert", "n1", "N", {"x": 1, "y": 6}),
                ("insert", "n2", "N", {"x": 2, "y": 7}),
            ),
        ),
        Expected(
            steps=((("ADD", None, {"g": None}),), (("ADD", None, {"g": 1.0}),)),
            results=({"g": None}, {"g": 1.0}),
        ),
        Expected(
            steps=(
                (("aggregation", {"g": None}, {"g": None}),),
                (("aggregation", {"g": None}, {"g": 1.0}),),
            ),
            results=({"g": 1.0},),
        ),
    ),
    Known(
        "last_per_row",
        "deviation",
        "drasi-lib does not count `drasi.last` among the aggregates (drasi-core does): each "
        "new row is an ADD carrying the last value of one accumulator for the query",
        "an aggregate: one aggregation diff per group, the same values",
        Probe(
            "last_per_row",
            "MATCH (p:N) RETURN p.g AS g, drasi.last(p.x) AS v",
            changes(
                ("insert", "n1", "N", {"g": "a", "x": 1}),
                ("insert", "n2", "N", {"g": "b", "x": 2}),
            ),
        ),
        Expected(
            steps=((("ADD", None, {"g": "a", "v": 1}),), (("ADD", None, {"g": "b", "v": 2}),)),
            results=({"g": "a", "v": 1}, {"g": "b", "v": 2}),
        ),
        Expected(
            steps=(
                (("aggregation", {"g": "a", "v": None}, {"g": "a", "v": 1}),),
                (("aggregation", {"g": "b", "v": None}, {"g": "b", "v": 2}),),
            ),
            results=({"g": "a", "v": 1}, {"g": "b", "v": 2}),
        ),
    ),
    Known(
        "linear_gradient_of_a_null_point",
        "deviation",
        "the change that adds a point with a null coordinate reports a gradient of null (the "
        "point is left out, and the next change's value is the gradient again)",
        "the point is left out and the gradient stays",
        Probe(
            "linear_gradient_of_a_null_point",
            "MATCH (p:N) RETURN drasi.linearGradient(p.x, p.y) AS g",
            changes(
                ("insert", "n1", "N", {"x": 1, "y": 1}),
                ("insert", "n2", "N", {"x": 2, "y": 3}),
                ("insert", "n3", "N", {"y": 5}),
            ),
        ),
        Expected(
            steps=(
                (("ADD", None, {"g": None}),),
                (("ADD", None, {"g": 2.0}),),
                (("ADD", None, {"g": None}),),
            )
        ),
        Expected(
            steps=(
                (("aggregation", {"g": None}, {"g": None}),),
                (("aggregation", {"g": None}, {"g": 2.0}),),
                (("aggregation", {"g": 2.0}, {"g": 2.0}),),
            ),
            results=({"g": 2.0},),
        ),
    ),
    Known(
        "and_or_precedence",
        "deviation",
        "AND and OR bind alike, left to right: `a OR b AND c` is `(a OR b) AND c`",
        "AND binds tighter than OR (openCypher's, and GQL's): `a OR (b AND c)`",
        Probe(
            "and_or_precedence",
            "MATCH (n:N) WHERE n.x = 3 OR n.x = 1 AND n.y = 5 RETURN n.name AS name",
            changes(_n(name="a", x=3, y=2)),
        ),
        Expected(steps=((),), results=()),
        _added(name="a"),
    ),
    Known(
        "modulo_precedence",
        "deviation",
        "`%` binds tighter than `*` and `/` (as tight as `^`): `2 * 3 % 4` is 6",
        "`%` binds as `*` and `/`, left to right: 2",
        Probe("modulo_precedence", "MATCH (n:N) RETURN 2 * n.x % 4 AS m", changes(_n(x=3))),
        _added(m=6),
        _added(m=2),
    ),
    Known(
        "string_escapes",
        "deviation",
        "a backslash in a string literal is itself: `'a\\nb'` is `a`, a backslash, `nb` (and "
        "`'\\''` does not parse)",
        "the escape: a newline",
        Probe("string_escapes", "MATCH (n:N) RETURN 'a\\nb' AS s", changes(_n(x=1))),
        _added(s="a\\nb"),
        _added(s="a\nb"),
    ),
    Known(
        "join_cycle",
        "deviation",
        "a cycle of joins (a customer placed an order at a store that is the customer's home "
        "store) also matches a customer who did not place the order, when that customer "
        "arrives last; in other orders it reports the right row twice, or right, from run to "
        "run, and a cycle of plain relations does the same (tests/differential/"
        "test_cycles.py)",
        "the rows whose every link closes the cycle, once",
        Probe(
            "join_cycle",
            CYCLE,
            changes(
                ("insert", "o1", "Order", {"oid": "o1", "customer": "c1", "store": "s1"}),
                ("insert", "s1", "Store", {"sid": "s1"}),
                ("insert", "c1", "Customer", {"cid": "c1", "home": "s1"}),
                ("insert", "c2", "Customer", {"cid": "c2", "home": "s1"}),
            ),
            joins=(PLACED, AT, SHOPS),
        ),
        Expected(
            steps=((), (), _row(c="c1", o="o1", s="s1"), _row(c="c2", o="o1", s="s1")),
            results=({"c": "c1", "o": "o1", "s": "s1"}, {"c": "c2", "o": "o1", "s": "s1"}),
        ),
        Expected(
            steps=((), (), _row(c="c1", o="o1", s="s1"), ()),
            results=({"c": "c1", "o": "o1", "s": "s1"},),
        ),
    ),
    Known(
        "two_joins_on_one_pair",
        "deviation",
        "two joins that link the same pair of nodes (an order and the customer who placed it, "
        "in the order's region) give both links the one id `o1:c1`: one replaces the other, "
        "so a pattern that needs both finds nothing",
        "one relation with both labels: the pattern matches while both keys agree",
        Probe(
            "two_joins_on_one_pair",
            "MATCH (o:Order)-[:PLACED]->(c:Customer), (o)-[:NEAR]->(c) "
            "RETURN o.oid AS o, c.cid AS c",
            changes(
                ("insert", "c1", "Customer", {"cid": "c1", "region": "north"}),
                ("insert", "o1", "Order", {"oid": "o1", "customer": "c1", "region": "north"}),
                ("update", "o1", "Order", {"region": "south"}),
                ("update", "o1", "Order", {"region": "north"}),
            ),
            joins=(PLACED, NEAR),
        ),
        Expected(steps=((), (), (), ()), results=()),
        Expected(
            steps=(
                (),
                _row(o="o1", c="c1"),
                (("DELETE", {"o": "o1", "c": "c1"}, None),),
                _row(o="o1", c="c1"),
            ),
            results=({"o": "o1", "c": "c1"},),
        ),
    ),
    Known(
        "two_joins_on_one_pair_break_together",
        "deviation",
        "of two joins on one pair of nodes (one id `o1:c1`), the one that breaks (the order "
        "moves to another region) takes the other link with it: the customer who placed the "
        "order is matched no more",
        "the link that still holds keeps the row",
        Probe(
            "two_joins_on_one_pair_break_together",
            "MATCH (o:Order)-[:PLACED|NEAR]->(c:Customer) RETURN o.oid AS o, c.cid AS c",
            changes(
                ("insert", "c1", "Customer", {"cid": "c1", "region": "north"}),
                ("insert", "o1", "Order", {"oid": "o1", "customer": "c1", "region": "north"}),
                ("update", "o1", "Order", {"region": "south"}),
            ),
            joins=(PLACED, NEAR),
        ),
        Expected(
            steps=((), _row(o="o1", c="c1"), (("DELETE", {"o": "o1", "c": "c1"}, None),)),
            results=(),
        ),
        Expected(steps=((), _row(o="o1", c="c1"), ()), results=({"o": "o1", "c": "c1"},)),
    ),
    # ------------------------------------------------------------------ refusals
    Known(
        "count_star",
        "refusal",
        "a parse error",
        "refused too, saying to count a variable",
        Probe("count_star", "MATCH (a:N) RETURN count(*) AS c", changes(_n(x=1))),
        _REFUSED,
        _REFUSED,
    ),
    Known(
        "count_distinct",
        "refusal",
        "a parse error",
        "counts distinct values",
        Probe("count_distinct", "MATCH (a:N) RETURN count(DISTINCT a.x) AS c", changes(_n(x=1))),
        _REFUSED,
        Expected(steps=((("aggregation", {"c": 0}, {"c": 1}),),)),
    ),
    Known(
        "labels_function",
        "refusal",
        "unknown function: the query stops",
        "the element's labels",
        Probe("labels_function", "MATCH (a:N) RETURN labels(a) AS c", changes(_n(x=1))),
        _stops('UnknownFunction("labels")'),
        _added(c=["N"]),
    ),
    Known(
        "st_dev",
        "refusal",
        "unknown function: the query stops",
        "refused when added (unknown function)",
        Probe("st_dev", "MATCH (a:N) RETURN stDev(a.x) AS c", changes(_n(x=1))),
        _stops('UnknownFunction("stDev")'),
        _REFUSED,
    ),
    Known(
        "sqrt_function",
        "refusal",
        "unknown function: the query stops",
        "the square root",
        Probe("sqrt_function", "MATCH (a:N) RETURN sqrt(a.x) AS c", changes(_n(x=4))),
        _stops('UnknownFunction("sqrt")'),
        _added(c=2.0),
    ),
    Known(
        "any_predicate",
        "refusal",
        "unknown function: the query stops",
        "refused when added (unknown function)",
        Probe(
            "any_predicate",
            "MATCH (a:N) RETURN any(v IN a.l WHERE v > 1) AS c",
            changes(_n(l=[1, 2])),
        ),
        _stops('UnknownFunction("any")'),
        _REFUSED,
    ),
    Known(
        "regex_match",
        "refusal",
        "a parse error",
        "refused too",
        Probe(
            "regex_match",
            "MATCH (a:N) WHERE a.name =~ 'x.*' RETURN a.name AS c",
            changes(_n(name="xy")),
        ),
        _REFUSED,
        _REFUSED,
    ),
    Known(
        "match_after_with",
        "refusal",
        "the MATCH is ignored: the query stops at the variable it would bind",
        "refused when added",
        Probe(
            "match_after_with",
            "MATCH (a:N) WITH a MATCH (b:M) RETURN a.name AS a, b.name AS b",
            changes(_n(name="x")),
        ),
        _stops('UnknownIdentifier("b")'),
        _REFUSED,
    ),
    Known(
        "min_of_strings",
        "refusal",
        "an error: the query stops",
        "the least string",
        Probe(
            "min_of_strings",
            "MATCH (a:N) RETURN min(a.name) AS c",
            changes(_n(name="b"), ("insert", "n2", "N", {"name": "a"})),
        ),
        _stops("FunctionError"),
        Expected(results=({"c": "a"},)),
    ),
    Known(
        "substring_out_of_range",
        "refusal",
        "an error: the query stops",
        "the part of the string there is (`''`)",
        Probe(
            "substring_out_of_range",
            "MATCH (a:N) RETURN substring(a.name, 5, 2) AS c",
            changes(_n(name="abc")),
        ),
        _stops("FunctionError"),
        _added(c=""),
    ),
    Known(
        "list_max_of_empty",
        "refusal",
        "a panic: the query stops answering",
        "null",
        Probe("list_max_of_empty", "MATCH (a:N) RETURN drasi.listMax(a.l) AS c", changes(_n(l=[]))),
        _PANIC,
        _added(c=None),
    ),
    Known(
        "list_min_of_empty",
        "refusal",
        "a panic: the query stops answering",
        "null",
        Probe("list_min_of_empty", "MATCH (a:N) RETURN drasi.listMin(a.l) AS c", changes(_n(l=[]))),
        _PANIC,
        _added(c=None),
    ),
    Known(
        "to_string_or_null_of_a_boolean",
        "refusal",
        "an error: the query stops",
        "the text `toString` gives (`'true'`)",
        Probe(
            "to_string_or_null_of_a_boolean",
            "MATCH (a:N) RETURN toStringOrNull(a.flag) AS c",
            changes(_n(flag=True)),
        ),
        _stops("FunctionError"),
        _added(c="true"),
    ),
    Known(
        "truncate_null",
        "refusal",
        "an error: the query stops",
        "null",
        Probe(
            "truncate_null",
            "MATCH (a:N) RETURN date.truncate('day', a.missing) AS c",
            changes(_n(x=1)),
        ),
        _stops("FunctionError"),
        _added(c=None),
    ),
    Known(
        "stdevp_with_null",
        "refusal",
        "a panic: the query stops answering",
        "null",
        Probe(
            "stdevp_with_null",
            "MATCH (a:N) RETURN drasi.stdevp(a.l) AS c",
            changes(_n(l=[None])),
        ),
        _PANIC,
        _added(c=None),
    ),
    Known(
        "avg_of_null",
        "refusal",
        "an error: the query stops",
        "nulls are ignored",
        Probe(
            "avg_of_null",
            "MATCH (a:N) RETURN avg(a.x) AS c",
            changes(_n(x=1), ("insert", "n2", "N", {"name": "a"})),
        ),
        _stops("FunctionError"),
        Expected(results=({"c": 1.0},)),
    ),
    Known(
        "index_of_null",
        "refusal",
        "an error: the query stops",
        "null",
        Probe("index_of_null", "MATCH (a:N) RETURN a.l[0] AS c", changes(_n(x=1))),
        _stops("InvalidType"),
        _added(c=None),
    ),
    Known(
        "negative_index_of_empty_list",
        "refusal",
        "a panic: the query stops answering",
        "null",
        Probe(
            "negative_index_of_empty_list",
            "MATCH (a:N) RETURN a.l[-1] AS c",
            changes(_n(l=[])),
        ),
        _PANIC,
        _added(c=None),
    ),
    Known(
        "in_null_list",
        "refusal",
        "an error: the query stops",
        "false: the row does not pass",
        Probe(
            "in_null_list",
            "MATCH (a:N) WHERE 1 IN a.l RETURN a.name AS c",
            changes(_n(name="x")),
        ),
        _stops("InvalidType"),
        Expected(steps=((),), results=()),
    ),
    Known(
        "comprehension_of_null",
        "refusal",
        "an error: the query stops",
        "null",
        Probe(
            "comprehension_of_null",
            "MATCH (a:N) RETURN [v IN a.l | v] AS c",
            changes(_n(name="x")),
        ),
        _stops("InvalidType"),
        _added(c=None),
    ),
    Known(
        "reduce_calling_a_function",
        "refusal",
        "an error: the query stops",
        "the reduction",
        Probe(
            "reduce_calling_a_function",
            "MATCH (a:N) RETURN reduce(t = 0, v IN a.l | t + abs(v)) AS c",
            changes(_n(l=[1, -2])),
        ),
        _stops("FunctionError"),
        _added(c=3),
    ),
    Known(
        "negative_integer_power",
        "refusal",
        "an overflow error: the query stops",
        "`0.25`",
        Probe("negative_integer_power", "MATCH (a:N) RETURN 2 ^ a.x AS c", changes(_n(x=-2))),
        _stops("OverflowError"),
        _added(c=0.25),
    ),
    Known(
        "element_id_of_null",
        "refusal",
        "an error: the query stops",
        "null",
        Probe(
            "element_id_of_null",
            "MATCH (a:N) OPTIONAL MATCH (a)-[:R]->(b) RETURN elementId(b) AS c",
            changes(_n(x=1)),
        ),
        _stops("FunctionError"),
        _added(c=None),
    ),
    Known(
        "duration_of_null",
        "refusal",
        "an error: the query stops",
        "null",
        Probe("duration_of_null", "MATCH (a:N) RETURN duration(a.d) AS c", changes(_n(name="x"))),
        _stops("FunctionError"),
        _added(c=None),
    ),
    Known(
        "datetime_without_offset",
        "refusal",
        "an error: the query stops",
        "the datetime in UTC",
        Probe(
            "datetime_without_offset",
            "MATCH (a:N) RETURN datetime(a.t) AS c",
            changes(_n(t="2024-01-02T10:00:00")),
        ),
        _stops("FunctionError"),
        _added(c="2024-01-02T10:00:00+00:00"),
    ),
    Known(
        "to_string_of_datetime",
        "refusal",
        "an error: the query stops",
        "ISO 8601 text",
        Probe(
            "to_string_of_datetime",
            "MATCH (a:N) RETURN toString(datetime(a.t)) AS c",
            changes(_n(t="2024-01-02T10:00:00Z")),
        ),
        _stops("FunctionError"),
        _added(c="2024-01-02T10:00:00Z"),
    ),
    Known(
        "max_over_emptied_zero_group",
        "refusal",
        "an index error (`IndexError(CorruptedData)`): the query stops, when a group of the "
        "first aggregating WITH that held 0 (avg's value of an empty group) from two rows "
        "empties under a `max` or `min` (with any other value, e.g. 2, it runs)",
        "the update Drasi gives for any other value: `top` back to null",
        Probe(
            "max_over_emptied_zero_group",
            "MATCH (a:A)-[:R]->(b)-[:S]->(c) WITH c, b, avg(a.x) AS bx "
            "WITH c, max(bx) AS top RETURN elementId(c) AS id, top",
            changes(
                ("insert", "a1", "A", {"x": 0}),
                ("insert", "a2", "A", {"x": 0}),
                ("insert", "b1", "B", {}),
                ("insert", "c1", "C", {}),
                ("insert", "r1", "R", {}, "a1", "b1"),
                ("insert", "r2", "R", {}, "a2", "b1"),
                ("insert", "s1", "S", {}, "b1", "c1"),
                ("delete", "s1", "S", {}, "b1", "c1"),
            ),
        ),
        _stops("IndexError(CorruptedData)"),
        Expected(
            steps=(
                *((),) * 6,
                (("UPDATE", {"id": "c1", "top": None}, {"id": "c1", "top": 0.0}),),
                (("UPDATE", {"id": "c1", "top": 0.0}, {"id": "c1", "top": None}),),
            ),
            results=({"id": "c1", "top": None},),
        ),
    ),
    # ------------------------------------------------------------------ GQL
    Known(
        "gql_and_or_precedence",
        "deviation",
        "as in its Cypher: AND and OR bind alike, left to right",
        "AND binds tighter than OR, as GQL has it",
        Probe(
            "gql_and_or_precedence",
            "MATCH (n:N) WHERE n.x = 3 OR n.x = 1 AND n.y = 5 RETURN n.name AS name",
            changes(_n(name="a", x=3, y=2)),
            "gql",
        ),
        Expected(steps=((),), results=()),
        _added(name="a"),
    ),
    Known(
        "gql_group_by_key_named_as_a_column",
        "deviation",
        "a GROUP BY key the RETURN does not show, whose name (here `n.y`: `y`) is a RETURN "
        "column's alias, gives that column its value",
        "the column's own value",
        Probe(
            "gql_group_by_key_named_as_a_column",
            "MATCH (n:N) RETURN n.x AS y, count(n) AS c GROUP BY y, n.y",
            changes(_n(x=1, y=2)),
            "gql",
        ),
        _added(y=2, c=1),
        _added(y=1, c=1),
    ),
    Known(
        "gql_relation_after_statement",
        "refusal",
        "a LET, FILTER or YIELD keeps only the node variables: a relation variable read after "
        "one stops the query (unknown identifier)",
        "refused when added, naming the variable and why",
        Probe(
            "gql_relation_after_statement",
            "MATCH (a:N)-[r:R]->(b) LET z = 1 RETURN r.w AS w, z",
            changes(_n(x=1), ("insert", "r1", "R", {"w": 2}, "n1", "n1")),
            "gql",
        ),
        _stops('UnknownIdentifier("r")'),
        _REFUSED,
    ),
    Known(
        "gql_let_reads_its_own_binding",
        "refusal",
        "a LET binding that reads another of the same LET stops the query (unknown identifier)",
        "refused when added (a later LET can read it)",
        Probe(
            "gql_let_reads_its_own_binding",
            "MATCH (n:N) LET a = n.x, b = a + 1 RETURN b",
            changes(_n(x=1)),
            "gql",
        ),
        _stops('UnknownIdentifier("a")'),
        _REFUSED,
    ),
    Known(
        "gql_unaliased_column_beside_a_hidden_key",
        "refusal",
        "with a GROUP BY key the RETURN does not show, a RETURN column that is an unaliased "
        "expression stops the query (unknown identifier)",
        "refused when added, asking for an alias",
        Probe(
            "gql_unaliased_column_beside_a_hidden_key",
            "MATCH (n:N) RETURN count(n) GROUP BY n.y",
            changes(_n(y=1)),
            "gql",
        ),
        _stops('UnknownIdentifier("n")'),
        _REFUSED,
    ),
    Known(
        "gql_cypher_function_name",
        "refusal",
        "a function of its Cypher set that GQL's lacks (here `toUpper`, GQL's `upper`): the "
        "query stops (unknown function)",
        "refused when added, naming GQL's function",
        Probe(
            "gql_cypher_function_name",
            "MATCH (n:N) RETURN toUpper(n.name) AS u",
            changes(_n(name="a")),
            "gql",
        ),
        _stops('UnknownFunction("toUpper")'),
        _REFUSED,
    ),
    Known(
        "gql_function_name_case",
        "refusal",
        "function names are case-sensitive: `UPPER` stops the query (unknown function)",
        "names in any case, as in Cypher",
        Probe(
            "gql_function_name_case",
            "MATCH (n:N) RETURN UPPER(n.name) AS u, COUNT(n) AS c",
            changes(_n(name="a")),
            "gql",
        ),
        _stops('UnknownFunction("UPPER")'),
        Expected(steps=((("aggregation", {"u": "A", "c": 0}, {"u": "A", "c": 1}),),)),
    ),
)
"""Every known difference, in the order docs/conformance.md lists them."""


def unmet(expected: Expected, outcome: Outcome) -> str | None:
    """Why ``outcome`` does not meet ``expected`` (None if it does)."""
    if expected.failure is not None:
        if outcome.failure is None or expected.failure not in outcome.failure:
            return f"expected a failure with {expected.failure!r}, got {outcome.failure!r}"
        return None
    if outcome.failure is not None:
        return f"expected it to run, it failed: {outcome.failure}"
    if expected.steps is not None:
        if len(expected.steps) != len(outcome.steps):
            return f"expected {len(expected.steps)} changes, got {len(outcome.steps)}"
        for number, (want, got) in enumerate(zip(expected.steps, outcome.steps, strict=True)):
            wanted = [list(diff) for diff in want]
            if not same_multiset(wanted, [list(diff) for diff in got], True, True):
                return f"change {number}: expected {want}, got {got}"
    results = expected.results
    if results is not None and not same_multiset(list(results), list(outcome.results), True, True):
        return f"results: expected {results}, got {outcome.results}"
    if expected.shows is not None and expected.shows not in json.dumps(outcome.steps):
        return f"expected the diffs to show {expected.shows!r}, got {outcome.steps}"
    return None
