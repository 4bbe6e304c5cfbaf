"""Source middleware at the edges the random cases rarely reach, against drasi-lib.

The sources differential (test_sources_differential.py) runs the middleware over generated
changes. These cases aim at the rules those seldom exercise: ``promote`` reading the element
as it came (not what an earlier mapping promoted) and taking a null target as absent, and
``unwind`` with a condition (met when its path selects anything, even false), scalar items
(children without properties), a key that is not a string (the item's position instead), and
the children's time (the parent change's); ``parse_json``'s and ``decoder``'s limits (size in
bytes, not characters; nesting depth up to the limit; C1 control characters refused). Each
runs through drasi-lib and drasi_ray; the diffs must agree.
"""

from __future__ import annotations

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
