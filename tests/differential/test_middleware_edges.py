"""Source middleware at the edges the random cases rarely reach, against drasi-lib.

The sources differential (test_sources_differential.py) runs the middleware over generated
changes. These cases aim at the rules those seldom exercise: ``promote`` reading the element
as it came (not what an earlier mapping promoted) and taking a null target as absent, and
``unwind`` with a condition (met when its path selects anything, even false), scalar items
(children without properties), a key that is not a string (the item's position instead), and
the children's time (the parent change's); ``parse_json``'s and ``decoder``'s limits (size in
bytes, not characters; nesting depth up to the limit; C1 control characters refused); and
``map``'s outputs: a selector's values each in turn as ``$['$selected']`` (the element itself
without a selector), a condition per value, the first value a path selects, an id that is not
a string as its JSON text, an output skipped when its id or a relation end selects nothing, a
property whose path selects nothing left out (not null), a delete read as its metadata only,
and ``elementType: Node`` from a relation. Each runs through drasi-lib and drasi_ray; the diffs
must agree.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.differential import catalogue_sources as catalogue
from tests.differential.compare import compare_runs
from tests.differential.probes import changes
from tests.differential.subject import run_drasi_ray
from tests.oracle.cases import run_oracle
from tests.oracle.model import SOURCE_ID, Case, QuerySpec

ONE = (SOURCE_ID,)

PROMOTE = {
    "name": "promote",
    "kind": "promote",
    "config": {
        "mappings": [
            {"path": "$.m.k", "target_name": "t"},
            {"path": "$.t", "target_name": "u"},  # reads the element as it came: no t
        ],
        "on_conflict": "skip",
        "on_error": "skip",
    },
}
UNWIND = {
    "name": "unwind",
    "kind": "unwind",
    "config": {
        "A": [
            {"selector": "$.items[*]", "label": "Item", "key": "$.k", "relation": "HAS"},
            {"selector": "$.tags[*]", "label": "Tag", "condition": "$.tagged"},
        ]
    },
}

PARSE_JSON = {
    **catalogue.PARSE_JSON,
    "config": {**catalogue.PARSE_JSON["config"], "max_json_size": 12, "max_nesting_depth": 2},
}
DECODER = {**catalogue.DECODER, "config": {**catalogue.DECODER["config"], "max_size_bytes": 4}}

MAP = {
    "name": "map",
    "kind": "map",
    "config": {
        "B": {
            "insert": [
                {
                    "op": "Insert",
                    "label": "Named",
                    "selector": "$.items[*]",
                    "condition": "$['$selected'].keep",
                    "id": "$['$selected'].k",
                    "properties": {"x": "$['$selected'].xs[*]", "w": "$['$selected'].w"},
                }
            ],
            "delete": [{"op": "Delete", "label": "Named", "id": "$.name"}],  # no properties
        },
        "R": {
            "insert": [
                {
                    "label": "Link",
                    "id": "$.lid",
                    "elementType": {"Relation": {"inNodeId": "$.from", "outNodeId": "$.to"}},
                },
                {
                    "op": "Insert",
                    "label": "Named",
                    "elementType": "Node",
                    "id": "$.nid",
                    "properties": {
                        "x": "$.x",
                        "meta": "$['$selected']['$metadata']",
                        "start": "$['$selected']['$in_node']",
                    },
                },
            ]
        },
    },
}
MAP_CHANGES = changes(
    (
        "insert",
        "b1",
        "B",
        {
            "name": "a",
            "items": [
                {"k": "a", "keep": True, "xs": [1, 2], "w": 5},
                {"k": "b", "xs": [3]},  # the condition selects nothing
                {"k": [1, 2], "keep": 0, "xs": [4]},  # id [1,2]; w selects nothing
            ],
        },
    ),
    ("insert", "n9", "Named", {"x": 0}),  # not mapped: map passes mapped changes only
    (
        "insert",
        "r1",
        "R",
        {"lid": "l1", "from": "a", "to": "[1,2]", "nid": "rn", "x": 7},
        "a",
        "n9",
    ),
    ("insert", "r2", "R", {"lid": "l2", "from": "a", "nid": "rn2", "x": 8}, "a", "[1,2]"),  # no to
    ("delete", "b1", "B", {"name": "a"}),  # read as metadata: no $.name, Named a stays
)
MAPPED_NODES = "MATCH (n:Named) RETURN elementId(n) AS id, n.x AS x, n.w AS w, n.meta AS meta, "
MAPPED_NODES += "n.start AS start"

CASES: dict[str, tuple[QuerySpec, Case]] = {
    "promote": (
        catalogue.piped(
            "promote",
            "MATCH (a:A) RETURN elementId(a) AS id, a.t AS t, a.u AS u",
            PROMOTE,
            sources=ONE,
        ),
        Case(
            "promote",
            changes(
                ("insert", "a1", "A", {"m": {"k": 5}, "t": None}),  # a null target is absent
                ("insert", "a2", "A", {"m": {"k": 6}, "t": 1}),  # skip: t stays 1
                ("update", "a1", "A", {"m": {"k": 7}, "t": 3}),
            ),
        ),
    ),
    "unwind": (
        catalogue.piped(
            "unwind",
            "MATCH (a:A)-[:HAS]->(i:Item) RETURN elementId(i) AS item, i.v AS v, "
            "drasi.changeDateTime(i) AS t",
            UNWIND,
            sources=ONE,
        ),
        Case(
            "unwind",
            changes(
                ("insert", "a1", "A", {"items": [{"k": "x", "v": 1}, {"k": 2, "v": 2}, 3]}),
                ("update", "a1", "A", {"items": [{"k": "x", "v": 10}]}),
            ),
        ),
    ),
    "unwind_condition": (
        catalogue.piped(
            "unwind_condition",
            "MATCH (t:Tag) RETURN elementId(t) AS tag, t.value AS value",
            UNWIND,
            sources=ONE,
        ),
        Case(
            "unwind_condition",
            changes(
                ("insert", "a1", "A", {"tags": ["p", "q"]}),  # the condition selects nothing
                ("insert", "a3", "A", {"tags": ["s"], "tagged": False}),  # selects false
                ("insert", "a2", "A", {"tags": ["r"], "tagged": True}),
            ),
        ),
    ),
    "parse_json_limits": (
        catalogue.piped(
            "parse_json_limits",
            "MATCH (c:C) RETURN elementId(c) AS id, c.parsed AS p",
            PARSE_JSON,
            sources=ONE,
        ),
        Case(
            "parse_json_limits",
            changes(
                ("insert", "c1", "C", {"j": "[1]"}),  # depth 2: the limit, parsed
                ("insert", "c2", "C", {"j": "[[1]]"}),  # depth 3: over it
                ("insert", "c3", "C", {"j": '"a\u0080b"'}),  # a C1 control character
                ("insert", "c4", "C", {"j": '"\u00e9\u00e9\u00e9\u00e9"'}),  # 10 bytes
                ("insert", "c5", "C", {"j": '"' + "\u00e9" * 6 + '"'}),  # 8 chars, 14 bytes
            ),
        ),
    ),
    "decoder_limit": (
        catalogue.piped(
            "decoder_limit", "MATCH (b:B) RETURN elementId(b) AS id, b.d AS d", DECODER, sources=ONE
        ),
        Case(
            "decoder_limit",
            changes(
                ("insert", "b1", "B", {"s": "a%20"}),  # 4 bytes: the limit
                ("insert", "b2", "B", {"s": "\u00e9\u00e9\u00e9"}),  # 3 chars, 6 bytes
            ),
        ),
    ),
    "map_nodes": (
        catalogue.piped("map_nodes", MAPPED_NODES, MAP, sources=ONE),
        Case("map_nodes", MAP_CHANGES),
    ),
    "map_relations": (
        catalogue.piped(
            "map_relations",
            "MATCH (a)-[l:Link]->(b) RETURN elementId(l) AS id, elementId(a) AS a, "
            "elementId(b) AS b, drasi.changeDateTime(l) AS t",
            MAP,
            sources=ONE,
        ),
        Case("map_relations", MAP_CHANGES),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_middleware_edges_agree_with_drasi(name: str) -> None:
    spec, case = CASES[name]
    drasi = run_oracle([case], [spec])
    ours = {case.name: run_drasi_ray(case, [spec])}
    outcome = compare_runs(drasi, ours)
    assert not outcome.skipped, [s.reason for s in outcome.skipped]
    assert outcome.compared_steps == len(case.changes)
    assert not outcome.divergences, "\n".join(d.describe() for d in outcome.divergences)


def test_map_leaves_out_a_property_whose_path_selects_nothing() -> None:
    """A node's property names as each engine returns the node: drasi-lib gives a node as its
    debug text (so the diffs cannot compare it), whose property map names them."""
    spec = catalogue.piped(
        "map_properties", "MATCH (n:Named) RETURN elementId(n) AS id, n", MAP, sources=ONE
    )
    case = Case("map_properties", MAP_CHANGES)
    drasi = run_oracle([case], [spec])[case.name].queries[spec.id]
    ours = run_drasi_ray(case, [spec]).queries[spec.id]
    assert drasi.failure is None and ours.failure is None
    names = {row["id"]: _property_names(row["n"]) for row in drasi.results}
    assert names == {row["id"]: sorted(row["n"]) for row in ours.results}
    assert names["[1,2]"] == ["x"]  # w selected nothing: left out, not null


def _property_names(debug_text: Any) -> list[str]:
    """The property names in drasi-lib's text of an element (``... properties:
    ElementPropertyMap { values: {"w": Integer(5), "x": Integer(1)} } })``)."""
    assert isinstance(debug_text, str), debug_text
    values = debug_text.split("ElementPropertyMap { values: ", 1)[1]
    return sorted(re.findall(r'"([^"]+)": ', values))
