"""Tests of drasi_ray.source.decode: the platform change-event format of docs/semantics.md §1."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from drasi_ray.model.changes import (
    DecodedEntry,
    Element,
    ElementChange,
    ElementDelta,
    ElementKind,
    FrozenMap,
    Op,
    SubscriptionControl,
    Timing,
    UnknownControl,
    node,
    relation,
)
from drasi_ray.model.errors import DecodeError
from drasi_ray.source import decode
from drasi_ray.source.decode import (
    change_event,
    decode_entry,
    encode_cloud_event,
    subscription_event,
)

Event = dict[str, Any]

TS = 1_700_000_123_456_789_012  # ns; effective_from = 1_700_000_123_456 ms


def entry(*events: Any, field: bytes = b"data") -> dict[bytes, bytes]:
    """Stream-entry fields carrying a CloudEvent with ``events`` as its data array."""
    document = {"id": "e-1", "source": "test", "type": "com.dapr.event.sent", "data": list(events)}
    return {field: orjson.dumps(document)}


def node_event(op: str = "i", **element: Any) -> Event:
    data: dict[str, Any] = {"id": "room-7", "labels": ["Room"], "properties": {"temp": 21.5}}
    data.update(element)
    side = "before" if op == "d" else "after"
    return {
        "op": op,
        "payload": {side: data, "source": {"db": "building", "table": "node", "ts_ns": TS}},
    }


def rel_event(op: str = "i", table: str = "rel", **element: Any) -> Event:
    data: dict[str, Any] = {
        "id": "in-1",
        "labels": ["LOCATED_IN"],
        "startId": "room-7",
        "endId": "floor-2",
        "properties": {"since": "2021-03-04"},
    }
    data.update(element)
    side = "before" if op == "d" else "after"
    return {
        "op": op,
        "payload": {side: data, "source": {"db": "building", "table": table, "ts_ns": TS}},
    }


def control_event(op: str = "i", db: str = "Drasi", **data: Any) -> Event:
    body: dict[str, Any] = {
        "queryId": "q1",
        "queryNodeId": "default",
        "nodeLabels": ["Room", "Floor"],
        "relLabels": ["LOCATED_IN"],
    }
    body.update(data)
    side = "before" if op == "d" else "after"
    return {
        "op": op,
        "payload": {side: body, "source": {"db": db, "table": "SourceSubscription", "ts_ns": 1}},
    }


def on_both_paths(entry_id: str, fields: dict[bytes, bytes]) -> DecodedEntry:
    """``decode_entry``'s result, checked to be what the checked path alone gives (the typed
    path answers most entries, so a rule of the checked path needs this to be tested)."""
    decoded = decode_entry(entry_id, fields)
    assert decode._checked_entry(entry_id, fields) == decoded
    return decoded


def only_change(decoded: DecodedEntry) -> ElementChange:
    assert decoded.controls == ()
    assert len(decoded.changes) == 1
    return decoded.changes[0]


# ---------------------------------------------------------------------------------------------
# the README's shapes: node / relation insert, update, delete; a batch; a control event
# ---------------------------------------------------------------------------------------------


def test_node_insert() -> None:
    event = node_event("i", properties={"name": "Kitchen", "temp": 21.5, "seats": 4})
    change = only_change(decode_entry("1700000123456-3", entry(event)))
    assert change.op is Op.INSERT
    assert change.version == (1700000123456, 3, 0)
    assert change.element == Element(
        ElementKind.NODE,
        "room-7",
        ("Room",),
        FrozenMap({"name": "Kitchen", "temp": 21.5, "seats": 4}),
        effective_from=1_700_000_123_456,
    )
    assert change.timing == Timing(TS)


def test_node_update_reads_after_with_new_labels() -> None:
    event = node_event("u", labels=["Room", "Premium"], properties={"temp": 22, "open": True})
    change = only_change(decode_entry("5-0", entry(event)))
    assert change.op is Op.UPDATE
    assert change.element.labels == ("Room", "Premium")
    assert change.element.properties == {"temp": 22, "open": True}


def test_node_delete_reads_before() -> None:
    event = node_event("d", properties={})
    event["payload"]["after"] = {"id": "other", "labels": ["X"], "properties": {}}
    change = only_change(on_both_paths("5-0", entry(event)))
    assert change.op is Op.DELETE
    assert change.element.id == "room-7"
    assert change.element.properties == {}


@pytest.mark.parametrize("table", ["rel", "relation"])
@pytest.mark.parametrize("op", ["i", "u", "d"])
def test_relation_changes(op: str, table: str) -> None:
    change = only_change(decode_entry("9-1", entry(rel_event(op, table))))
    assert change.op is Op(op)
    assert change.element == relation(
        "in-1",
        ["LOCATED_IN"],
        "room-7",
        "floor-2",
        {"since": "2021-03-04"},
        effective_from=TS // 1_000_000,
    )


def test_node_ignores_relation_endpoints() -> None:
    change = only_change(decode_entry("1-0", entry(node_event(startId=5, endId=None))))
    assert change.element.start_id is None
    assert change.element.end_id is None


def test_batch_of_two_versions_by_position() -> None:
    first = node_event("i", id="s1")
    second = node_event("i", id="s2")
    second["payload"]["source"]["ts_ns"] = 1_000_000_001
    decoded = decode_entry("42-7", entry(first, second))
    assert [c.element.id for c in decoded.changes] == ["s1", "s2"]
    assert [c.version for c in decoded.changes] == [(42, 7, 0), (42, 7, 1)]
    assert decoded.changes[1].effective_from == 1000
    assert decoded.entry_id == "42-7"


def test_subscription_control_event() -> None:
    decoded = decode_entry("3-0", entry(control_event("i")))
    assert decoded.changes == ()
    assert decoded.controls == (
        SubscriptionControl(
            Op.INSERT, "q1", "default", ("Room", "Floor"), ("LOCATED_IN",), (3, 0, 0)
        ),
    )


def test_empty_data_array_is_an_entry_without_changes() -> None:
    assert decode_entry("1-0", entry()) == DecodedEntry("1-0")


# ---------------------------------------------------------------------------------------------
# where the JSON comes from
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", [b"data", b"event", b"payload", b"message"])
def test_each_payload_field_is_read(field: bytes) -> None:
    decoded = decode_entry("1-0", entry(node_event(), field=field))
    assert only_change(decoded).element.id == "room-7"


def test_first_present_field_wins() -> None:
    fields = {**entry(node_event(id="from-event"), field=b"event")}
    fields.update(entry(node_event(id="from-data"), field=b"data"))
    fields.update(entry(node_event(id="from-message"), field=b"message"))
    assert only_change(decode_entry("1-0", fields)).element.id == "from-data"


def test_entry_id_without_sequence() -> None:
    assert only_change(decode_entry("77", entry(node_event()))).version == (77, 0, 0)


# ---------------------------------------------------------------------------------------------
# every error reason
# ---------------------------------------------------------------------------------------------


def reason_of(fields: dict[bytes, bytes], entry_id: str = "1-0") -> str:
    with pytest.raises(DecodeError) as caught:
        decode_entry(entry_id, fields)
    assert str(caught.value) == caught.value.reason
    return caught.value.reason


def test_no_event_data_field() -> None:
    assert reason_of({b"other": b"{}"}) == "no event data found in stream entry"
    assert reason_of({}) == "no event data found in stream entry"


def test_invalid_json_names_the_field() -> None:
    reason = reason_of({b"event": b'{"data": [}'})
    assert reason.startswith("invalid JSON in field 'event': ")
    assert len(reason) > len("invalid JSON in field 'event': ")


@pytest.mark.parametrize(
    "document", [b"[]", b"3", b'{"id": 1}', b'{"data": {}}', b'{"data": null}']
)
def test_missing_or_invalid_data_array(document: bytes) -> None:
    assert reason_of({b"data": document}) == "missing or invalid 'data' array"


def test_invalid_entry_id() -> None:
    assert reason_of(entry(node_event()), "not-an-id") == "invalid stream entry id 'not-an-id'"


def _set(path: str, value: Any) -> Callable[[Event], None]:
    """A mutation setting (``...`` = deleting) the dotted ``path`` of an event."""

    def mutate(event: Event) -> None:
        *parents, last = path.split(".")
        target = event
        for key in parents:
            target = target[key]
        if value is ...:
            del target[last]
        else:
            target[last] = value

    return mutate


ELEMENT_ERRORS: list[tuple[str, Callable[[], Event], Callable[[Event], None], str]] = [
    ("op missing", node_event, _set("op", ...), "missing or invalid 'op' field"),
    ("op number", node_event, _set("op", 1), "missing or invalid 'op' field"),
    ("op unknown", node_event, _set("op", "x"), "unknown operation type 'x'"),
    ("op upper", node_event, _set("op", "I"), "unknown operation type 'I'"),
    ("no payload", node_event, _set("payload", ...), "missing or invalid 'payload' field"),
    ("payload list", node_event, _set("payload", []), "missing or invalid 'payload' field"),
    (
        "no source",
        node_event,
        _set("payload.source", ...),
        "missing or invalid 'payload.source' field",
    ),
    (
        "no table",
        node_event,
        _set("payload.source.table", ...),
        "missing or invalid 'payload.source.table' field",
    ),
    (
        "unknown table",
        node_event,
        _set("payload.source.table", "edge"),
        "unknown table type 'edge'",
    ),
    (
        "no ts",
        node_event,
        _set("payload.source.ts_ns", ...),
        "missing or invalid 'payload.source.ts_ns' field",
    ),
    (
        "negative ts",
        node_event,
        _set("payload.source.ts_ns", -1),
        "missing or invalid 'payload.source.ts_ns' field",
    ),
    (
        "bool ts",
        node_event,
        _set("payload.source.ts_ns", True),
        "missing or invalid 'payload.source.ts_ns' field",
    ),
    (
        "float ts",
        node_event,
        _set("payload.source.ts_ns", 1.5e18),
        "missing or invalid 'payload.source.ts_ns' field",
    ),
    (
        "string ts",
        node_event,
        _set("payload.source.ts_ns", "1700000000"),
        "missing or invalid 'payload.source.ts_ns' field",
    ),
    (
        "no after",
        node_event,
        _set("payload.after", ...),
        "missing or invalid 'payload.after' field",
    ),
    (
        "no before",
        lambda: node_event("d"),
        _set("payload.before", ...),
        "missing or invalid 'payload.before' field",
    ),
    (
        "no id",
        node_event,
        _set("payload.after.id", ...),
        "missing or invalid element 'id' field",
    ),
    (
        "int id",
        node_event,
        _set("payload.after.id", 7),
        "missing or invalid element 'id' field",
    ),
    (
        "empty id",
        node_event,
        _set("payload.after.id", ""),
        "missing or invalid element 'id' field",
    ),
    (
        "no labels",
        node_event,
        _set("payload.after.labels", ...),
        "missing or invalid element 'labels' field",
    ),
    (
        "string labels",
        node_event,
        _set("payload.after.labels", "Room"),
        "missing or invalid element 'labels' field",
    ),
    ("empty labels", node_event, _set("payload.after.labels", []), "labels array is empty"),
    (
        "non-string label",
        node_event,
        _set("payload.after.labels", ["Room", 3]),
        "invalid element 'labels' field: every label must be a string",
    ),
    (
        "no properties",
        node_event,
        _set("payload.after.properties", ...),
        "missing or invalid element 'properties' field",
    ),
    (
        "list properties",
        node_event,
        _set("payload.after.properties", [1]),
        "missing or invalid element 'properties' field",
    ),
    (
        "delete with list properties",
        lambda: node_event("d"),
        _set("payload.before.properties", [1]),
        "missing or invalid element 'properties' field",
    ),
    (
        "no startId",
        rel_event,
        _set("payload.after.startId", ...),
        "missing or invalid 'startId'",
    ),
    ("int startId", rel_event, _set("payload.after.startId", 3), "missing or invalid 'startId'"),
    ("no endId", rel_event, _set("payload.after.endId", ...), "missing or invalid 'endId'"),
    ("null endId", rel_event, _set("payload.after.endId", None), "missing or invalid 'endId'"),
]


@pytest.mark.parametrize(
    ("make", "mutate", "reason"),
    [case[1:] for case in ELEMENT_ERRORS],
    ids=[case[0] for case in ELEMENT_ERRORS],
)
def test_element_event_errors(
    make: Callable[[], Event], mutate: Callable[[Event], None], reason: str
) -> None:
    event = make()
    assert only_change(decode_entry("1-0", entry(copy.deepcopy(event)))) is not None
    mutate(event)
    assert reason_of(entry(event)) == reason


def test_event_that_is_not_an_object() -> None:
    assert reason_of(entry("i")) == "invalid event in 'data' array: not an object"


def test_one_malformed_event_rejects_the_whole_entry() -> None:
    bad = node_event(id="s2")
    del bad["payload"]["after"]["labels"]
    assert reason_of(entry(node_event(id="s1"), bad)) == "missing or invalid element 'labels' field"


def test_delete_may_omit_properties() -> None:
    event = node_event("d")
    del event["payload"]["before"]["properties"]
    assert only_change(on_both_paths("1-0", entry(event))).element.properties == {}


# ---------------------------------------------------------------------------------------------
# time and properties
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ts_ns", "effective_from"),
    [(0, 0), (999_999, 0), (1_000_000, 1), (1_999_999, 1), (2**64 - 1, (2**64 - 1) // 10**6)],
)
def test_effective_from_is_ts_ns_in_whole_milliseconds(ts_ns: int, effective_from: int) -> None:
    event = node_event()
    event["payload"]["source"]["ts_ns"] = ts_ns
    change = only_change(decode_entry("1-0", entry(event)))
    assert change.effective_from == effective_from
    assert change.timing.source_ns == ts_ns


def test_property_types() -> None:
    properties = {
        "string": "hello",
        "int": 42,
        "float": 3.14,
        "bool": True,
        "null": None,
        "list": [1, "two", [3.0, None]],
        "map": {"nested": {"deeper": [False]}},
        "i64_max": 2**63 - 1,
        "i64_min": -(2**63),
    }
    change = only_change(decode_entry("1-0", entry(node_event(properties=properties))))
    decoded = change.element.properties
    assert decoded == properties
    assert type(decoded["int"]) is int
    assert type(decoded["bool"]) is bool
    assert type(decoded["float"]) is float
    assert type(decoded["i64_max"]) is int
    assert type(decoded["i64_min"]) is int
    assert type(decoded["list"]) is list
    assert type(decoded["map"]) is dict
    assert decoded["map"]["nested"]["deeper"] == [False]


@pytest.mark.parametrize("big", [2**63, 2**64 - 1, 2**64, 10**30, -(2**63) - 1])
def test_integers_beyond_i64_become_floats_at_any_depth(big: int) -> None:
    raw = f'{{"top": {big}, "list": [1, {big}], "map": {{"k": [{{"v": {big}}}]}}, "ok": 5}}'
    event = node_event(properties="PLACEHOLDER")
    text = orjson.dumps({"data": [event]}).replace(b'"PLACEHOLDER"', raw.encode())
    properties = only_change(decode_entry("1-0", {b"data": text})).element.properties
    assert properties == {
        "top": float(big),
        "list": [1, float(big)],
        "map": {"k": [{"v": float(big)}]},
        "ok": 5,
    }
    assert type(properties["top"]) is float
    assert type(properties["list"][0]) is int
    assert type(properties["map"]["k"][0]["v"]) is float
    assert type(properties["ok"]) is int


@pytest.mark.parametrize("big", [2**63, -(2**63) - 1])
def test_a_row_of_one_integer_beyond_i64_holds_a_float(big: int) -> None:
    """The row has nothing nested: the integer alone makes it a row to convert."""
    raw = orjson.dumps({"data": [node_event(properties={"n": 1})]}).replace(
        b'"n":1', b'"n":%d' % big
    )
    value = only_change(on_both_paths("1-0", {b"data": raw})).element.properties["n"]
    assert type(value) is float and value == float(big)


def _with_number(event: Event, placeholder: str, number: int) -> dict[bytes, bytes]:
    """An entry of ``event`` whose string ``placeholder`` is replaced by ``number`` (orjson
    writes no integer beyond 64 bits)."""
    text = orjson.dumps({"data": [event]})
    return {b"data": text.replace(f'"{placeholder}"'.encode(), str(number).encode())}


def test_numbers_beyond_u64_in_times() -> None:
    """A ``ts_ns`` beyond u64 is refused on both paths; a reactivator time beyond it is
    ignored, as any invalid one."""
    event = node_event()
    event["payload"]["source"]["ts_ns"] = "TS"
    assert reason_of(_with_number(event, "TS", 2**64)) == (
        "missing or invalid 'payload.source.ts_ns' field"
    )
    assert decode._typed_changes("1-0", _with_number(event, "TS", 2**64)) is None
    event = node_event()
    event["reactivatorStart_ns"] = "START"
    timing = only_change(on_both_paths("1-0", _with_number(event, "START", 2**64))).timing
    assert timing == Timing(TS, None, None)


def test_properties_are_immutable() -> None:
    element = only_change(decode_entry("1-0", entry(node_event()))).element
    with pytest.raises(TypeError):
        element.properties["temp"] = 1  # type: ignore[index]


# ---------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------


def test_reactivator_timing() -> None:
    event = node_event()
    event["reactivatorStart_ns"] = 11
    event["reactivatorEnd_ns"] = 22
    assert only_change(decode_entry("1-0", entry(event))).timing == Timing(TS, 11, 22)


@pytest.mark.parametrize("bad", [None, "11", 1.5, True, -1])
def test_invalid_reactivator_timing_is_ignored(bad: Any) -> None:
    event = node_event()
    event["reactivatorStart_ns"] = bad
    event["reactivatorEnd_ns"] = 5
    assert only_change(on_both_paths("1-0", entry(event))).timing == Timing(TS, None, 5)


# ---------------------------------------------------------------------------------------------
# control entries
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("db", ["Drasi", "drasi", "DRASI", "dRaSi"])
def test_control_db_is_case_insensitive(db: str) -> None:
    decoded = decode_entry("1-0", entry(control_event(db=db)))
    assert len(decoded.controls) == 1


@pytest.mark.parametrize("db", ["drasi2", "mydb", "", None, 5])
def test_other_db_is_not_control(db: Any) -> None:
    event = node_event()
    event["payload"]["source"]["db"] = db
    assert len(decode_entry("1-0", entry(event)).changes) == 1


def test_subscription_update_and_delete() -> None:
    decoded = decode_entry(
        "8-2", entry(control_event("u", nodeLabels=["A"]), control_event("d", queryId="q2"))
    )
    assert decoded.controls == (
        SubscriptionControl(Op.UPDATE, "q1", "default", ("A",), ("LOCATED_IN",), (8, 2, 0)),
        SubscriptionControl(
            Op.DELETE, "q2", "default", ("Room", "Floor"), ("LOCATED_IN",), (8, 2, 1)
        ),
    )


def test_subscription_labels_default_to_empty() -> None:
    event = control_event()
    del event["payload"]["after"]["nodeLabels"]
    event["payload"]["after"]["relLabels"] = None
    (control,) = decode_entry("1-0", entry(event)).controls
    assert isinstance(control, SubscriptionControl)
    assert control.node_labels == ()
    assert control.relation_labels == ()


@pytest.mark.parametrize(
    "mutate",
    [
        _set("payload.after.queryId", ...),
        _set("payload.after.queryNodeId", ...),
        _set("payload.after.queryId", 5),
        _set("payload.after", ...),
    ],
)
def test_subscription_without_ids_is_skipped_with_warning(
    mutate: Callable[[Event], None], caplog: pytest.LogCaptureFixture
) -> None:
    bad = control_event()
    mutate(bad)
    good = control_event(queryId="q9")
    with caplog.at_level(logging.WARNING, logger="drasi_ray.decode"):
        decoded = decode_entry("4-0", entry(bad, good))
    assert [c.query_id for c in decoded.controls if isinstance(c, SubscriptionControl)] == ["q9"]
    assert decoded.controls[0].version == (4, 0, 1)
    assert any(r.levelno == logging.WARNING and "4-0[0]" in r.getMessage() for r in caplog.records)


def test_unknown_control_type() -> None:
    event = control_event()
    event["payload"]["source"]["table"] = "QueryRestart"
    decoded = decode_entry("2-5", entry(event))
    assert decoded.controls == (UnknownControl("QueryRestart", (2, 5, 0)),)
    assert decoded.changes == ()


def test_unknown_control_type_needs_only_its_envelope() -> None:
    """A future control type's fields are unknown: it is skipped, not dead-lettered."""
    event = {"op": "x", "payload": {"source": {"db": "drasi", "table": "Future"}}}
    assert decode_entry("2-5", entry(event)).controls == (UnknownControl("Future", (2, 5, 0)),)


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (_set("op", "z"), "unknown operation type 'z'"),
        (_set("payload.source.table", ...), "missing or invalid 'payload.source.table' field"),
        (_set("payload.after.nodeLabels", "Room"), "invalid 'nodeLabels' array: must be a list"),
        (_set("payload.after.relLabels", [1]), "invalid 'relLabels' array: must be a list"),
    ],
)
def test_malformed_control_event_rejects_entry(
    mutate: Callable[[Event], None], reason: str
) -> None:
    event = control_event()
    mutate(event)
    assert reason_of(entry(control_event(), event)).startswith(reason)


def test_control_entry_decodes_every_event_as_control() -> None:
    """The first event decides: a data event later in a control entry is not a change."""
    decoded = decode_entry("1-0", entry(control_event(), node_event()))
    assert decoded.changes == ()
    assert decoded.controls[1] == UnknownControl("node", (1, 0, 1))


# ---------------------------------------------------------------------------------------------
# encoders, and the fast constructors against the dataclasses
# ---------------------------------------------------------------------------------------------


def test_encode_cloud_event_envelope() -> None:
    raw = encode_cloud_event([node_event()], source="producer-1", topic="rooms-change")
    document = orjson.loads(raw)
    assert document["source"] == "producer-1"
    assert document["topic"] == "rooms-change"
    assert document["type"] == "com.dapr.event.sent"
    assert document["specversion"] == "1.0"
    assert document["time"].endswith("Z")
    assert document["data"] == [node_event()]
    assert "topic" not in orjson.loads(encode_cloud_event([]))
    assert orjson.loads(encode_cloud_event([]))["id"] != document["id"]


def test_subscription_event_round_trip() -> None:
    raw = encode_cloud_event([subscription_event("d", "q3", "n1", ["A"], ["R"])])
    assert decode_entry("6-0", {b"data": raw}).controls == (
        SubscriptionControl(Op.DELETE, "q3", "n1", ("A",), ("R",), (6, 0, 0)),
    )


text = st.characters(codec="utf-8")  # JSON text cannot carry lone surrogates
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(text, max_size=5)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(text, max_size=3), inner),
    max_leaves=6,
)
names = st.text(text, min_size=1, max_size=6)


@st.composite
def elements(draw: st.DrawFn) -> Element:
    labels = draw(st.lists(names, min_size=1, max_size=3))
    properties = draw(st.dictionaries(names, json_values, max_size=4))
    ts_ms = draw(st.integers(0, 2**44))
    if draw(st.booleans()):
        return node(draw(names), labels, properties, ts_ms)
    return relation(draw(names), labels, draw(names), draw(names), properties, ts_ms)


@given(elements(), st.sampled_from(list(Op)), st.integers(0, 999_999))
def test_change_event_round_trip(element: Element, op: Op, sub_ms_ns: int) -> None:
    ts_ns = element.effective_from * 1_000_000 + sub_ms_ns
    raw = encode_cloud_event([change_event(op, element, ts_ns)])
    change = only_change(decode_entry("10-2", {b"data": raw}))
    assert change == ElementChange(op, element, (10, 2, 0), Timing(ts_ns))
    assert hash(change.element) == hash(element)


def test_the_change_model_is_immutable_and_compares_by_value() -> None:
    element = Element(ElementKind.NODE, "n", ("A",), FrozenMap(), None, None, 3)
    assert element == node("n", ["A"], {}, 3) and hash(element) == hash(node("n", ["A"], {}, 3))
    with pytest.raises(AttributeError):
        element.id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        element.properties["x"] = 1
    change = ElementChange(Op.UPDATE, element, (1, 2, 3), Timing(1, None, 2))
    assert DecodedEntry("1-0", (change,)).changes[0].element.effective_from == 3
    delta = ElementDelta(None, element, (1, 2, 3), 4)
    assert delta.element is element


# The typed fast path (msgspec) must agree with the checked path on every input: the same
# changes where it answers, and no answer (None) where the checked path would refuse.

wild_values = json_values | st.integers() | st.sampled_from([2**63, -(2**63) - 1, 2**64, 2**70])


@st.composite
def mutated_entries(draw: st.DrawFn) -> bytes:
    events = []
    for _ in range(draw(st.integers(0, 3))):
        element = draw(elements())
        op = draw(st.sampled_from(list(Op)))
        event = change_event(op, element, draw(st.integers(0, 2**62)))
        if draw(st.booleans()):
            event["reactivatorStart_ns"] = draw(wild_values)
        for _ in range(draw(st.integers(0, 2))):
            _mutate(event, draw)
        events.append(event)
    document: Any = {"id": "x", "data": events}
    if draw(st.integers(0, 9)) == 0:
        document = draw(st.sampled_from([[], {"data": {}}, {"data": None}, "x"]))
    text = json.dumps(document).encode()
    if draw(st.booleans()):  # numbers written -0 (and -0.5, ...) wherever a 0 starts one
        text = text.replace(b": 0", b": -0").replace(b"[0", b"[-0").replace(b", 0", b", -0")
    return text


def _mutate(value: Any, draw: st.DrawFn) -> None:
    """Replace or delete one randomly chosen key somewhere inside ``value`` (a dict)."""
    while True:
        keys = sorted(value)
        if not keys:
            return
        key = draw(st.sampled_from(keys))
        if isinstance(value[key], dict) and draw(st.booleans()):
            value = value[key]
            continue
        if draw(st.booleans()):
            del value[key]
        else:
            value[key] = draw(wild_values | st.sampled_from(["d", "u", "rel", "drasi", ""]))
        return


def _outcome(decode: Any, raw: bytes) -> Any:
    try:
        return decode("7-3", {b"data": raw})
    except DecodeError as exc:
        return ("refused", exc.reason)


@given(mutated_entries())
def test_typed_path_agrees_with_the_checked_path(raw: bytes) -> None:
    checked = _outcome(decode._checked_entry, raw)
    typed = decode._typed_changes("7-3", {b"data": raw})
    if typed is not None:
        assert DecodedEntry("7-3", typed) == checked
    assert _outcome(decode.decode_entry, raw) == checked


@pytest.mark.parametrize("first", ["flat", "nested", "big"])
def test_rows_of_scalars_and_rows_to_convert_take_the_typed_path_in_any_order(first: str) -> None:
    """A row of scalars is read in one parse, a nested row or an integer beyond i64 in the
    parse of any values; whichever shape came before (the parse tried first follows the last
    entry), every entry gives the checked path's changes."""
    rows = {
        "flat": {"id": "s", "t": 70.5, "n": 3, "ok": True, "none": None},
        "nested": {"id": "s", "tags": ["a", {"k": 1}], "m": {"x": [1.5]}},
        "big": {"id": "s", "n": 2**63},
    }
    order = [first, *(shape for shape in rows if shape != first)] * 2
    for shape in order:
        raw = orjson.dumps({"data": [node_event(properties=rows[shape])]})
        typed = decode._typed_changes("7-3", {b"data": raw})
        assert typed is not None, shape
        assert DecodedEntry("7-3", typed) == decode._checked_entry("7-3", {b"data": raw})
        assert decode._SHAPE.nested is (shape != "flat")
    big = orjson.dumps({"data": [node_event(properties=rows["big"])]})
    value = only_change(decode_entry("1-0", {b"data": big})).element.properties["n"]
    assert type(value) is float and value == 2.0**63  # as Drasi holds it


def test_typed_path_leaves_invalid_utf8_to_the_checked_path() -> None:
    raw = b'{"time": "\xff", "data": []}'  # msgspec skips "time" without checking it
    assert decode._typed_changes("1-0", {b"data": raw}) is None
    with pytest.raises(DecodeError, match="invalid JSON"):
        decode_entry("1-0", {b"data": raw})


@pytest.mark.parametrize(
    "where",
    ["property", "in a list", "in a map", "ts_ns", "reactivatorStart_ns", "reactivatorEnd_ns"],
)
def test_a_minus_zero_in_any_field_that_is_read_decodes_as_on_the_checked_path(where: str) -> None:
    """The typed path searches the text for ``-0`` only when it read an integer 0 or a nested
    value: each such field alone, written ``-0``, gives what the checked path gives."""
    nested = {"l": [1]} if where == "in a list" else {"m": {"k": 1}} if where == "in a map" else {}
    event = node_event(properties={"p": 1, "s": "x", **nested})  # nothing else to search for
    event["reactivatorStart_ns"] = 5
    event["reactivatorEnd_ns"] = 6
    raw = orjson.dumps({"data": [event]})
    written = {
        "property": (b'"p":1', b'"p":-0'),
        "in a list": (b'"l":[1]', b'"l":[-0]'),
        "in a map": (b'"k":1', b'"k":-0'),
        "ts_ns": (str(TS).encode(), b"-0"),
        "reactivatorStart_ns": (b'"reactivatorStart_ns":5', b'"reactivatorStart_ns":-0'),
        "reactivatorEnd_ns": (b'"reactivatorEnd_ns":6', b'"reactivatorEnd_ns":-0'),
    }[where]
    raw = raw.replace(*written)
    assert written[1] in raw
    assert _outcome(decode.decode_entry, raw) == _outcome(decode._checked_entry, raw)
    assert decode._typed_changes("7-3", {b"data": raw}) is None


def test_a_number_written_minus_zero_is_the_float_minus_zero_as_drasi_reads_it() -> None:
    """serde_json (Drasi's platform source) reads ``-0`` as the float -0.0, where orjson and
    msgspec give the integer 0: both decoding paths give -0.0, at any depth; ``-0`` inside a
    string, ``-0.0`` and ``-05`` (not JSON) are as before."""
    event = node_event(properties={"z": 1, "l": [1, 2], "f": -0.5, "s": "a:-0"})
    raw = orjson.dumps({"data": [event]})
    raw = raw.replace(b'"z":1', b'"z":-0').replace(b"[1,2]", b"[1, -0 ]")
    assert decode._typed_changes("1-0", {b"data": raw}) is None  # left to the checked path
    properties = only_change(decode_entry("1-0", {b"data": raw})).element.properties
    assert type(properties["z"]) is float and str(properties["z"]) == "-0.0"
    assert [str(item) for item in properties["l"]] == ["1", "-0.0"]
    assert properties["f"] == -0.5 and properties["s"] == "a:-0"
    plain = orjson.dumps({"data": [node_event(properties={"s": "a:-0", "n": 0})]})
    assert decode._typed_changes("1-0", {b"data": plain}) is not None  # the fast path as before
    assert type(only_change(decode_entry("1-0", {b"data": plain})).element.properties["n"]) is int
    with pytest.raises(DecodeError, match="invalid JSON"):
        decode_entry("1-0", {b"data": raw.replace(b"-0 ]", b"-05]")})
