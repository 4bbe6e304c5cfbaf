"""Source middleware, kind by kind, on the cases of drasi-core's middleware unit tests, plus the
shard's pipeline subscriptions (derived store, rejection of a failing change)."""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from typing import Any

import pytest

from drasi_ray import ConfigError, Query
from drasi_ray.host.pipelines import SourcePipelines, source_view
from drasi_ray.model.changes import (
    DecodedEntry,
    Element,
    ElementChange,
    ElementDelta,
    Op,
    PipedChange,
    Timing,
    VersionedElement,
    node,
    relation,
)
from drasi_ray.model.errors import MiddlewareError
from drasi_ray.model.query_specs import MiddlewareSpec
from drasi_ray.query.values import strict_key
from drasi_ray.shards.core import ShardCore
from drasi_ray.shards.routing import LabelFilter
from drasi_ray.source.middleware import Change, build_pipeline

_EMPTY: dict[str, Element] = {}


def run(kind: str, config: dict[str, Any], change: Change, index: Any = _EMPTY) -> list[Change]:
    spec = MiddlewareSpec(name="m", kind=kind, config=config)
    return build_pipeline([spec], ["m"], "test").process(change, index)


def insert(element: Element) -> Change:
    return Change(Op.INSERT, element)


def props(changes: list[Change]) -> list[dict[str, Any]]:
    return [dict(change.element.properties) for change in changes]


# -- relabel --------------------------------------------------------------------------------


def test_relabel_renames_mapped_labels_of_every_operation() -> None:
    config = {"labelMappings": {"Person": "User", "KNOWS": "FOLLOWS"}}
    person = node("p1", ["Person", "Employee"], {"name": "Alice"})
    (out,) = run("relabel", config, insert(person))
    assert out.element.labels == ("User", "Employee")
    assert out.element.properties == {"name": "Alice"}
    (gone,) = run("relabel", config, Change(Op.DELETE, relation("r", ["KNOWS"], "a", "b")))
    assert (gone.op, gone.element.labels) == (Op.DELETE, ("FOLLOWS",))


def test_relabel_needs_a_mapping() -> None:
    with pytest.raises(ConfigError, match=r"'m' \(relabel\).*labelMappings"):
        run("relabel", {"labelMappings": {}}, insert(node("p", ["P"])))


# -- decoder --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "encoded", "decoded"),
    [
        ("base64", base64.b64encode(b"Hello World!").decode(), "Hello World!"),
        ("base64url", "SGVsbG8gV29ybGQh", "Hello World!"),
        ("hex", "48656c6c6f", "Hello"),
        ("url", "Hello%20World%21", "Hello World!"),
        ("json_escape", 'line\\nnext \\"q\\"', 'line\nnext "q"'),
    ],
)
def test_decoder_decodes_each_encoding(encoding: str, encoded: str, decoded: str) -> None:
    config = {"encoding_type": encoding, "target_property": "data", "output_property": "out"}
    (out,) = run("decoder", config, insert(node("n", ["N"], {"data": encoded})))
    assert out.element.properties["out"] == decoded
    assert out.element.properties["data"] == encoded


def test_decoder_strips_quotes_and_skips_or_fails_on_errors() -> None:
    quoted = insert(node("n", ["N"], {"data": '"SGk="'}))
    config = {"encoding_type": "base64", "target_property": "data", "strip_quotes": True}
    assert props(run("decoder", config, quoted)) == [{"data": "Hi"}]
    bad = insert(node("n", ["N"], {"data": "not base64!"}))
    with pytest.raises(MiddlewareError, match="Failed to decode property 'data' using base64"):
        run("decoder", {"encoding_type": "base64", "target_property": "data"}, bad)
    skip = {"encoding_type": "base64", "target_property": "data", "on_error": "skip"}
    assert props(run("decoder", skip, bad)) == [{"data": "not base64!"}]
    with pytest.raises(MiddlewareError, match="not found"):
        run("decoder", {"encoding_type": "hex", "target_property": "x"}, bad)


def test_decoder_refuses_an_unknown_encoding() -> None:
    with pytest.raises(ConfigError, match="encoding_type"):
        run("decoder", {"encoding_type": "rot13", "target_property": "d"}, insert(node("n", ["N"])))


# -- parse_json -----------------------------------------------------------------------------


def test_parse_json_parses_into_values_and_reports_errors() -> None:
    text = '{"a": [1, 2.5, {"b": null}], "c": "x"}'
    config = {"target_property": "raw", "output_property": "doc"}
    (out,) = run("parse_json", config, insert(node("n", ["N"], {"raw": text})))
    assert out.element.properties["doc"] == {"a": [1, 2.5, {"b": None}], "c": "x"}
    with pytest.raises(MiddlewareError, match=r"\[Error: ParseError\]"):
        run("parse_json", config, insert(node("n", ["N"], {"raw": "{nope"})))
    with pytest.raises(MiddlewareError, match=r"\[Error: DeepNesting\]"):
        run(
            "parse_json",
            {"target_property": "raw", "max_nesting_depth": 2},
            insert(node("n", ["N"], {"raw": "[[1]]"})),
        )
    with pytest.raises(MiddlewareError, match=r"\[Error: InvalidType\]"):
        run("parse_json", config, insert(node("n", ["N"], {"raw": 5})))


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("[2, 2.0, 1e2, 0.1]", [2, 2.0, 100.0, 0.1]),
        ("[-0, -0.0, 0]", [-0.0, -0.0, 0]),
        ("[9223372036854775807, 9223372036854775808]", [9223372036854775807, 9.223372036854776e18]),
        ('{"big": 123456789012345678901234567890}', {"big": 1.2345678901234568e29}),
        ("[1e-400]", [0.0]),
        ("[1E400]", None),
        ("[1, NaN]", None),
        ("Infinity", None),
        ('"\\ud800"', None),
        ("01", None),
    ],
)
def test_parse_json_reads_numbers_as_drasi_does(text: str, parsed: Any) -> None:
    """Drasi's outputs (drasi-lib 0.3.0, parse_json with ``on_error: skip``; None: the text is
    refused and the change passes unparsed): serde_json's reading, where an integer beyond an
    i64 is a Float and ``-0`` the Float -0.0, and numbers beyond a double, NaN, Infinity and a
    lone surrogate are errors. The random two-source differential cases carry such texts too
    (tests/differential/generator.py ``JSON_TEXTS``)."""
    config = {"target_property": "raw", "output_property": "doc", "on_error": "skip"}
    (out,) = run("parse_json", config, insert(node("n", ["N"], {"raw": text})))
    got = out.element.properties.get("doc")
    assert got == parsed
    assert strict_key(got) == strict_key(parsed)  # Integer or Float, as Drasi holds it
    if isinstance(parsed, list) and parsed and parsed[0] == 0:
        assert math.copysign(1, got[0]) == math.copysign(1, parsed[0])  # the sign of -0.0


# -- promote --------------------------------------------------------------------------------


def test_promote_copies_nested_values_with_conflict_rules() -> None:
    element = node("n", ["N"], {"user": {"id": 7, "name": "Ann"}, "name": "old"})
    mappings = [
        {"path": "$.user.id", "target_name": "userId"},
        {"path": "$.user.name", "target_name": "name"},
    ]
    (out,) = run("promote", {"mappings": mappings}, insert(element))
    assert (out.element.properties["userId"], out.element.properties["name"]) == (7, "Ann")
    (kept,) = run("promote", {"mappings": mappings, "on_conflict": "skip"}, insert(element))
    assert kept.element.properties["name"] == "old"
    with pytest.raises(MiddlewareError, match="already exists"):
        run("promote", {"mappings": mappings, "on_conflict": "fail"}, insert(element))
    with pytest.raises(MiddlewareError, match="selected no values"):
        run("promote", {"mappings": [{"path": "$.none", "target_name": "x"}]}, insert(element))


def test_promote_refuses_an_invalid_path() -> None:
    with pytest.raises(ConfigError, match=r"mappings\.0\.path: invalid JSONPath"):
        run("promote", {"mappings": [{"path": "z$.a[", "target_name": "x"}]}, insert(node("n", [])))


# -- unwind ---------------------------------------------------------------------------------

UNWIND = {
    "Pod": [
        {
            "selector": "$.status.containerStatuses[*]",
            "label": "Container",
            "key": "$.containerID",
            "relation": "OWNS",
        }
    ]
}


def pod(*containers: tuple[str, str]) -> Element:
    statuses = [{"containerID": cid, "name": name} for cid, name in containers]
    return node("p1", ["Pod"], {"status": {"containerStatuses": statuses}})


def test_unwind_makes_children_and_relations_and_removes_those_that_go() -> None:
    inserted = run("unwind", UNWIND, insert(pod(("c1", "nginx"), ("c2", "redis"))))
    child = "$unwind-$.status.containerStatuses[*]-p1-c1"
    assert [(c.op, c.element.id) for c in inserted] == [
        (Op.INSERT, child),
        (Op.INSERT, f"{child}$rel"),
        (Op.INSERT, "$unwind-$.status.containerStatuses[*]-p1-c2"),
        (Op.INSERT, "$unwind-$.status.containerStatuses[*]-p1-c2$rel"),
        (Op.INSERT, "p1"),
    ]
    link = inserted[1].element
    assert (link.start_id, link.end_id, link.labels) == ("p1", child, ("OWNS",))
    stored = {"p1": pod(("c1", "nginx"), ("c2", "redis"))}
    updated = run("unwind", UNWIND, Change(Op.UPDATE, pod(("c1", "nginx2"))), stored)
    assert [(c.op, c.element.id) for c in updated] == [
        (Op.UPDATE, child),
        (Op.UPDATE, f"{child}$rel"),
        (Op.DELETE, "$unwind-$.status.containerStatuses[*]-p1-c2"),
        (Op.DELETE, "$unwind-$.status.containerStatuses[*]-p1-c2$rel"),
        (Op.UPDATE, "p1"),
    ]
    deleted = run("unwind", UNWIND, Change(Op.DELETE, node("p1", ["Pod"])), stored)
    assert [c.op for c in deleted] == [Op.DELETE] * 5


def test_unwind_refuses_a_bad_selector_and_a_wrong_shape() -> None:
    with pytest.raises(ConfigError, match="selector: invalid JSONPath"):
        run("unwind", {"Pod": [{**UNWIND["Pod"][0], "selector": "z$.x[*]"}]}, insert(pod()))
    with pytest.raises(ConfigError, match="invalid config"):
        run("unwind", {"Pod": UNWIND["Pod"][0]}, insert(pod()))


# -- map ------------------------------------------------------------------------------------

TELEMETRY = {
    "Telemetry": {
        "insert": [
            {
                "selector": "$[?(@.additionalProperties.Source == 'provider.telemetry')]",
                "op": "Update",
                "label": "Vehicle",
                "id": "$.vehicleId",
                "properties": {
                    "id": "$.vehicleId",
                    "currentSpeed": "$.signals[?(@.name == 'Vehicle.Speed')].value",
                },
            }
        ]
    }
}


def telemetry(source: str = "provider.telemetry") -> Element:
    return node(
        "t1",
        ["Telemetry"],
        {
            "signals": [
                {"name": "Vehicle.CurrentLocation.Heading", "value": "96"},
                {"name": "Vehicle.Speed", "value": "119"},
            ],
            "additionalProperties": {"Source": source},
            "vehicleId": "v1",
        },
    )


@pytest.mark.parametrize("kind", ["map", "remap"])
def test_map_turns_an_event_into_an_update_of_another_element(kind: str) -> None:
    (out,) = run(kind, TELEMETRY, insert(telemetry()))
    assert (out.op, out.element.id, out.element.labels) == (Op.UPDATE, "v1", ("Vehicle",))
    assert out.element.properties == {"id": "v1", "currentSpeed": "119"}
    assert run(kind, TELEMETRY, insert(telemetry("other"))) == []
    assert run(kind, TELEMETRY, Change(Op.UPDATE, telemetry())) == []  # no update mapping


def test_map_builds_relations_and_deletes() -> None:
    config = {
        "Link": {
            "insert": [
                {
                    "elementType": {"Relation": {"inNodeId": "$.from", "outNodeId": "$.to"}},
                    "label": "LINKS",
                    "properties": {"w": "$.weight"},
                }
            ],
            "delete": [{"op": "Delete", "label": "LINKS"}],
        }
    }
    (out,) = run("map", config, insert(node("l1", ["Link"], {"from": "a", "to": 2, "weight": 3})))
    assert (out.element.start_id, out.element.end_id, out.element.labels) == ("a", "2", ("LINKS",))
    (gone,) = run("map", config, Change(Op.DELETE, node("l1", ["Link"])))
    assert (gone.op, gone.element.id, gone.element.labels) == (Op.DELETE, "l1", ("LINKS",))


def test_map_refuses_an_unknown_operation() -> None:
    with pytest.raises(ConfigError, match="invalid config"):
        run("map", {"T": {"insert": [{"op": "Upsert"}]}}, insert(node("n", [])))


# -- jq -------------------------------------------------------------------------------------


def test_jq_maps_with_real_jq_programs() -> None:
    config = {
        "Order": {
            "insert": [
                {
                    "query": "[.items[] | {sku, qty: (.qty * 2)}]",
                    "id": '"line-" + .sku',
                    "label": '"Line"',
                    "op": "Update",
                }
            ]
        }
    }
    element = node("o1", ["Order"], {"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 3}]})
    out = run("jq", config, insert(element))
    assert [(c.op, c.element.id, c.element.labels) for c in out] == [
        (Op.UPDATE, "line-a", ("Line",)),
        (Op.UPDATE, "line-b", ("Line",)),
    ]
    assert props(out) == [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 6}]


def test_jq_numbers_beyond_an_i64_come_out_as_floats() -> None:
    """jq computes in doubles; Drasi reads its output as JSON, where a whole number beyond an
    i64 is a Float. (The ``jq`` package gives such a number as a Python int of any size, which
    no property value can hold: the query's results could not be written.)"""
    config = {"N": {"insert": [{"query": "{x: (.x * 1e20), y: [.x * 2], z: .x}"}]}}
    out = run("jq", config, insert(node("n1", ["N"], {"x": 3})))
    assert props(out) == [{"x": 3e20, "y": [6], "z": 3}]
    assert [type(v) for v in (out[0].element.properties["x"], out[0].element.properties["z"])] == [
        float,
        int,
    ]


def test_jq_skips_a_failing_program_unless_told_to_halt() -> None:
    failing = {"query": '.x | error("boom")'}
    element = node("o1", ["Order"], {"x": 1})
    assert run("jq", {"Order": {"insert": [failing]}}, insert(element)) == []
    halting = {"Order": {"insert": [{**failing, "haltOnError": True}]}}
    with pytest.raises(MiddlewareError, match=r"middleware 'm' \(jq\).*boom"):
        run("jq", halting, insert(element))


def test_jq_skips_only_the_item_whose_id_fails() -> None:
    """Drasi reads each item's id apart: an id program that fails, or that gives other than
    one result (jq-rs hands several back as lines, which do not parse as one JSON value, and
    none as no text), skips that item, not the change."""
    failing = {"Order": {"insert": [{"query": ".items", "id": ".id"}]}}
    items = [{"id": "a"}, 5, {"id": ["x", 1]}]  # .id fails on a number
    out = run("jq", failing, insert(node("o1", ["Order"], {"items": items})))
    assert [c.element.id for c in out] == ["a", '["x",1]']
    counted = {"Order": {"insert": [{"query": ".items", "id": ".id[]?"}]}}
    items = [{"id": ["p"]}, {"id": ["q", "r"]}, {"id": []}, {"id": ["s"]}]
    out = run("jq", counted, insert(node("o1", ["Order"], {"items": items})))
    assert [c.element.id for c in out] == ["p", "s"]


def test_jq_makes_an_item_that_is_not_a_map_a_node_without_properties() -> None:
    config = {"Order": {"insert": [{"query": "[.a, .b]"}]}}
    out = run("jq", config, insert(node("o1", ["Order"], {"a": 5, "b": {"k": 1}})))
    assert props(out) == [{}, {"k": 1}]


def test_jq_refuses_a_program_that_does_not_compile() -> None:
    with pytest.raises(ConfigError, match=r"Order\.insert\.0\.query: invalid jq program"):
        run("jq", {"Order": {"insert": [{"query": ".["}]}}, insert(node("n", [])))


# -- pipelines, the builder, the shard core ------------------------------------------------


def test_a_pipeline_feeds_each_output_to_the_next_middleware() -> None:
    specs = [
        MiddlewareSpec(name="unwind", kind="unwind", config=UNWIND),
        MiddlewareSpec(name="relabel", kind="relabel", config={"labelMappings": {"Pod": "P"}}),
    ]
    out = build_pipeline(specs, ["unwind", "relabel"], "s").process(insert(pod(("c1", "x"))), {})
    assert [c.element.labels for c in out] == [("Container",), ("OWNS",), ("P",)]


def test_the_builder_refuses_undeclared_middleware_and_unknown_kinds() -> None:
    with pytest.raises(ConfigError, match="undeclared middleware"):
        Query.cypher("q").query("MATCH (n) RETURN n").from_source("s", pipeline=["x"]).build()
    with pytest.raises(ConfigError, match="unknown middleware kind 'nope'"):
        Query.cypher("q").query("MATCH (n) RETURN n").with_middleware("x", "nope")


def entry(entry_id: str, ms: int, *changes: tuple[Op, Element]) -> DecodedEntry:
    return DecodedEntry(
        entry_id,
        tuple(
            ElementChange(op, element, (ms, 0, index), Timing(ms))
            for index, (op, element) in enumerate(changes)
        ),
    )


def test_a_store_shard_hands_a_piped_query_the_applied_changes_whatever_their_labels() -> None:
    core = ShardCore()
    core.table.register_query("plain", ["s"], LabelFilter.of(["N"], []))
    core.table.register_query("piped", ["s"], LabelFilter.of(["Nothing"], []))
    core.pipe("piped", ["s"])
    good = node("n1", ["N"], {"v": "4869"})
    routed, _report = core.apply_entries("s", [entry("1-0", 1, (Op.INSERT, good))])
    assert [type(item) for item in routed["plain"]] == [ElementDelta]
    assert routed["piped"] == [
        PipedChange("s", "1-0", ElementChange(Op.INSERT, good, (1, 0, 0), Timing(1)))
    ]
    again, _replay = core.apply_entries("s", [entry("1-0", 1, (Op.INSERT, good))])
    assert dict(again) == {}  # a redelivery reaches no pipeline
    assert core.snapshot("piped", ["s"]) == []
    assert core.piped_snapshot("piped", ["s"]) == {"s": [VersionedElement(good, (1, 0, 0))]}


def test_the_query_side_derives_changes_and_rejects_failing_ones() -> None:
    core = ShardCore()
    core.pipe("piped", ["s"])
    decoder = MiddlewareSpec(
        name="d", kind="decoder", config={"encoding_type": "hex", "target_property": "v"}
    )
    pipes = SourcePipelines()
    pipes.subscribe("piped", [decoder], {"s": ("d",)}, {"s": source_view([])})
    good = node("n1", ["N"], {"v": "4869"})
    bad = node("n2", ["N"], {"v": "zz"})
    routed, _report = core.apply_entries(
        "s", [entry("1-0", 1, (Op.INSERT, good)), entry("2-0", 2, (Op.INSERT, bad))]
    )
    outcomes = [pipes.apply(item.source_id, item.change) for item in _piped(routed["piped"])]
    derived = [d.element.properties["v"] for o in outcomes for d in o.deltas.get("piped", ())]
    assert derived == ["Hi"]
    assert outcomes[0].failures == []
    assert "query 'piped', source 's': middleware 'd' (decoder)" in outcomes[1].failures[0]
    assert [e.properties["v"] for e in pipes.elements("piped", "s") or ()] == ["Hi"]


def test_a_late_subscription_is_built_from_the_source_as_inserts() -> None:
    core = ShardCore()
    core.pipe("q", ["s"])
    core.apply_entries("s", [entry("1-0", 1, (Op.INSERT, node("p", ["Person"], {"a": 1})))])
    relabel = MiddlewareSpec(name="r", kind="relabel", config={"labelMappings": {"Person": "U"}})
    pipes = SourcePipelines()
    view = source_view(core.piped_snapshot("q", ["s"])["s"])
    pipes.subscribe("q", [relabel], {"s": ("r",)}, {"s": view})
    assert [e.labels for e in pipes.elements("q", "s") or ()] == [("U",)]


def test_yaml_gives_pipelines_in_drasis_subscription_shape() -> None:
    from drasi_ray import AppConfig

    config = AppConfig.from_mapping(
        {
            "queries": [
                {
                    "id": "q",
                    "query": "MATCH (u:User) RETURN u.name AS name",
                    "sources": ["a", {"id": "b", "pipeline": ["r"]}],
                    "middleware": [
                        {"name": "r", "kind": "relabel", "config": {"labelMappings": {"P": "U"}}}
                    ],
                }
            ]
        }
    )
    query = config.queries[0]
    assert (query.sources, query.pipelines) == (("a", "b"), {"b": ("r",)})
    with pytest.raises(ConfigError, match="pipeline for 'c', which is not a source"):
        AppConfig.from_mapping(
            {"queries": [{**config.queries[0].model_dump(), "pipelines": {"c": ["r"]}}]}
        )


# -- changes the store does not apply never reach a pipeline --------------------------------


def _unwound(core: ShardCore, pipes: SourcePipelines, batch: DecodedEntry) -> list[str]:
    """The ids of what one batch of ``s`` made in the piped query ``q`` (its engine's deltas)."""
    routed, _report = core.apply_entries("s", [batch])
    made = []
    for item in routed.get("q", ()):
        assert isinstance(item, PipedChange)
        made += [d.element.id for d in pipes.apply(item.source_id, item.change).deltas.get("q", ())]
    return made


def _unwinding_query() -> tuple[ShardCore, SourcePipelines]:
    core = ShardCore()
    core.pipe("q", ["s"])
    pipes = SourcePipelines()
    spec = MiddlewareSpec(name="u", kind="unwind", config=UNWIND)
    pipes.subscribe("q", [spec], {"s": ("u",)}, {"s": source_view([])})
    return core, pipes


def test_a_duplicate_or_overtaken_change_makes_no_second_unwind_output() -> None:
    """Under at-least-once delivery an entry may come twice, and with several consumers an
    older change may arrive after a newer one: the store applies neither, so the pipeline never
    sees them and the query gets each child once."""
    core, pipes = _unwinding_query()
    child = "$unwind-$.status.containerStatuses[*]-p1-c1"
    first = entry("1-0", 1, (Op.INSERT, pod(("c1", "nginx"))))
    assert _unwound(core, pipes, first) == [child, f"{child}$rel", "p1"]
    assert _unwound(core, pipes, first) == []  # redelivered
    newer = entry("3-0", 3, (Op.UPDATE, pod(("c2", "redis"))))
    assert len(_unwound(core, pipes, newer)) == 5  # c2 and its relation in, c1's out, p1
    older = entry("2-0", 2, (Op.UPDATE, pod(("c9", "late"))))
    assert _unwound(core, pipes, older) == []  # overtaken by the update at 3-0
    gone = entry("4-0", 4, (Op.DELETE, node("p1", ["Pod"])))
    assert len(_unwound(core, pipes, gone)) == 3
    assert _unwound(core, pipes, gone) == []  # a redelivered delete of a tombstone
    assert pipes.elements("q", "s") == []


def test_a_piped_change_handed_to_the_query_twice_derives_nothing_the_second_time() -> None:
    """The query side keeps its own versions: should the same applied change reach it twice
    (a host's delivery retried), its outputs carry the versions they had, and its store takes
    none of them again, for an unwind (children of the element) and a map (other elements)."""
    core, pipes = _unwinding_query()
    mapping = MiddlewareSpec(name="m", kind="map", config=TELEMETRY)
    pipes.subscribe("r", [mapping], {"s": ("m",)}, {"s": source_view([])})
    core.pipe("r", ["s"])
    routed, _report = core.apply_entries(
        "s", [entry("1-0", 1, (Op.INSERT, pod(("c1", "x"))), (Op.INSERT, telemetry()))]
    )
    piped = _piped(routed["q"])
    assert routed["r"] == piped
    once = [pipes.apply(item.source_id, item.change).deltas for item in piped]
    twice = [pipes.apply(item.source_id, item.change).deltas for item in piped]
    assert [len(d.get("q", ())) for d in once] == [3, 1]  # unwind passes telemetry on
    assert [len(d.get("r", ())) for d in once] == [0, 1]
    assert twice == [{}, {}]


def _piped(items: Sequence[ElementDelta | PipedChange]) -> list[PipedChange]:
    """Routed items of a source the query pipes: applied changes, all of them."""
    assert all(isinstance(item, PipedChange) for item in items)
    return [item for item in items if isinstance(item, PipedChange)]
