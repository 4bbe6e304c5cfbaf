"""Batches crossing actor boundaries (drasi_ray.model.wire) pickle compactly and come back
as identical structs, every value type kept."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
import ray.cloudpickle

from drasi_ray.model.changes import (
    DecodedEntry,
    ElementDelta,
    Op,
    SubscriptionControl,
    UnknownControl,
    node,
    relation,
)
from drasi_ray.model.results import ControlResult, ControlSignal, Delivered, QueryResult
from drasi_ray.model.wire import DeltaPacket, EntryPacket, ResultBatch
from drasi_ray.shards.core import ShardCore
from drasi_ray.source.decode import (
    change_event,
    decode_entry,
    encode_cloud_event,
    subscription_event,
)


def _cloudpickled(value: object) -> bytes:
    """Ray's cloudpickle, what Ray pickles a call's arguments with (it has no type hints)."""
    pickled: bytes = ray.cloudpickle.dumps(value)  # type: ignore[no-untyped-call]
    return pickled


DUMPS = (pickle.dumps, _cloudpickled)


def _entries() -> list[DecodedEntry]:
    events = [
        change_event(Op.INSERT, node("n1", ["A", "B"], {"x": 1, "l": [1, {"k": None}]}), 5),
        change_event(Op.DELETE, relation("r1", ["R"], "n1", "n2", {"w": 2.5}), 7_000_000),
    ]
    decoded = [decode_entry("10-0", {b"data": encode_cloud_event(events)})]
    control = SubscriptionControl(Op.INSERT, "q", "default", ("A",), (), (11, 0, 0))
    decoded.append(DecodedEntry("11-0", (), (control, UnknownControl("Future", (11, 0, 1)))))
    decoded.append(DecodedEntry("12-0"))
    return decoded


def _reducer(packet: Any) -> str:
    return str(packet.__reduce__()[0].__name__)


def _decoded(entries: dict[str, dict[bytes, bytes]]) -> list[DecodedEntry]:
    return [decode_entry(entry_id, fields) for entry_id, fields in entries.items()]


def test_entries_of_json_values_travel_as_messagepack_and_come_back_equal() -> None:
    packet = EntryPacket(_entries(), json_values=True)
    assert _reducer(packet) == "_unpack"
    for dumps in DUMPS:
        back = pickle.loads(dumps(packet))
        assert isinstance(back, EntryPacket) and back.json_values
        assert list(back) == list(packet)
        assert back[0].changes[0].element.properties["l"] == [1, {"k": None}]
        assert _reducer(back) == "_unpack"  # a packet passed on travels the same way


def test_every_value_type_survives_messagepack() -> None:
    properties: dict[str, Any] = {
        "i": 1, "f": 1.0, "z": -0.0, "b": True, "n": None, "s": "Zürich ✓", "lo": -(2**63),
        "hi": 2**63 - 1, "l": [1, 1.0, False, None, "x", [2], {"k": [3.5]}], "m": {"a": {}},
    }  # fmt: skip
    changes = [
        change_event(Op.INSERT, node("n1", ["A", "B"], properties), 18_446_744_073_709_551_615),
        change_event(Op.DELETE, relation("r1", ["R"], "n1", "n2", {}), 3),
    ]
    entries = {
        "7-18446744073709551615": {b"data": encode_cloud_event(changes)},
        "8-0": {b"data": encode_cloud_event([subscription_event(Op.INSERT, "q", "n", ["A"])])},
    }
    packet = EntryPacket(_decoded(entries), json_values=True)
    back = pickle.loads(_cloudpickled(packet))
    # repr tells 1 from 1.0 from True and -0.0 from 0.0, at any depth
    assert repr(list(back)) == repr(list(packet))


def test_rebuilt_properties_stay_immutable() -> None:
    back = pickle.loads(pickle.dumps(EntryPacket(_entries(), json_values=True)))
    properties = back[0].changes[0].element.properties
    try:
        properties["x"] = 2
    except TypeError:
        return
    raise AssertionError("properties of a rebuilt element must refuse mutation")


def test_a_value_messagepack_cannot_carry_falls_back_to_pickled_structs() -> None:
    # Defensive: the decoder refuses such strings, but a batch must never fail to pickle.
    entry = DecodedEntry("5-0", _entries()[0].changes[:1])
    change = entry.changes[0]
    odd_element = node("n1", ["A"], {"s": "\ud800"})  # a lone surrogate: no UTF-8 for it
    odd = DecodedEntry(
        "5-0", (type(change)(change.op, odd_element, change.version, change.timing),)
    )
    packet = EntryPacket([odd], json_values=True)
    assert _reducer(packet) == "EntryPacket"
    assert list(pickle.loads(pickle.dumps(packet))) == [odd]


def test_packets_of_any_values_stay_pickled_and_keep_tuples() -> None:
    entry = DecodedEntry("1-0", (_entries()[0].changes[0],))
    tupled = node("n1", ["A"], {"t": (1, 2)})
    change = entry.changes[0]
    entries = [
        DecodedEntry("1-0", (type(change)(change.op, tupled, change.version, change.timing),))
    ]
    packet = EntryPacket(entries)
    assert _reducer(packet) == "EntryPacket"
    back = pickle.loads(pickle.dumps(packet))
    assert back[0].changes[0].element.properties["t"] == (1, 2) and not back.json_values


def _delta_rows(deltas: Any) -> str:
    return repr([(d.before, d.after, d.version, d.source_time_ms) for d in deltas])


def test_deltas_carry_before_only_for_deletes_and_keep_every_value_type() -> None:
    properties = {"i": 1, "f": 1.0, "b": False, "n": None, "l": [1, 2.0, {"k": True}]}
    inserted = node("n1", ["A"], properties)
    related = relation("r1", ["R"], "n1", "n2", {"w": -0.0})
    deltas = [
        ElementDelta(None, inserted, (1, 18_446_744_073_709_551_615, 0), 0),
        ElementDelta(inserted, None, (2, 0, 1), 7),
        ElementDelta(inserted, inserted, (2, 0, 2), 7),
        ElementDelta(None, related, (3, 0, 0), 9),
    ]
    # before crosses only for deletes: the query takes the previous state from its index
    shipped = [
        ElementDelta(d.before if d.after is None else None, d.after, d.version, d.source_time_ms)
        for d in deltas
    ]
    for json_values, reducer in ((True, "_unpack"), (False, "DeltaPacket")):
        packet = DeltaPacket(deltas, json_values)
        assert _reducer(packet) == reducer
        for dumps in DUMPS:
            assert _delta_rows(pickle.loads(dumps(packet))) == _delta_rows(shipped)


def test_the_shard_core_sends_messagepack_deltas_until_it_applies_other_values() -> None:
    core = ShardCore()
    event = change_event(Op.INSERT, node("n1", ["A"], {"x": 1}), 5)
    decoded = [decode_entry("1-0", {b"data": encode_cloud_event([event])})]
    core.apply_entries("s", decoded, json_values=True)
    assert core.json_values
    core.apply_entries("s", _entries()[:1])  # built objects: any Python values
    assert not core.json_values
    core.apply_entries("s", decoded, json_values=True)
    assert not core.json_values  # for good: the store may hold such values now


def test_a_large_batch_travels_compressed_below_rays_inline_argument_size() -> None:
    entries = {}
    for i in range(1500):  # ~240 KB: above Ray's 100 KB inline limit uncompressed
        properties = {"id": f"sensor-{i}", "temperature": 20.0 + i / 7, "humidity": 41.5}
        event = change_event(Op.UPDATE, node(f"sensor-{i}", ["Sensor"], properties), 5 + i)
        entries[f"{i}-0"] = {b"data": encode_cloud_event([event])}
    packet = EntryPacket(_decoded(entries), json_values=True)
    _, (_, blob, compressed) = packet.__reduce__()
    assert compressed and len(blob) < 100_000
    wire = _cloudpickled(packet)
    assert len(wire) < 100_000
    assert list(pickle.loads(wire)) == list(packet)
    changes = [change for entry in packet for change in entry.changes]
    deltas = DeltaPacket([ElementDelta(None, c.element, c.version, 0) for c in changes], True)
    _, (_, _, compressed) = deltas.__reduce__()
    back = pickle.loads(_cloudpickled(deltas))
    assert compressed and _delta_rows(back) == _delta_rows(deltas)


def test_result_batches_round_trip_results_and_control_signals_in_order() -> None:
    diffs = ({"type": "UPDATE", "before": {"id": "s1", "t": 1}, "after": {"id": "s1", "t": 2.0}},)
    items: list[Delivered] = [
        ControlResult("q", 1, 100, ControlSignal.RUNNING),
        QueryResult("q", 2, 101, 99, diffs),
        QueryResult("q", 3, 102, 100, ()),
        ControlResult("q", 4, 103, ControlSignal.STOPPED),
    ]
    for dumps in DUMPS:
        back = pickle.loads(dumps(ResultBatch(items)))
        assert isinstance(back, ResultBatch)
        assert list(back) == items
        assert [type(item) for item in back] == [type(item) for item in items]
        assert repr(back[1].results) == repr(diffs)  # 2.0 stays a float, 1 an int
        assert pickle.loads(dumps(ResultBatch(()))) == ResultBatch(())


def test_a_result_batch_pickles_as_one_blob_not_result_by_result() -> None:
    items = [QueryResult("q", n, 100, 99, ({"type": "ADD", "data": {"n": n}},)) for n in range(50)]
    pickled = _cloudpickled(ResultBatch(items))
    assert pickled.count(b"QueryResult") == 0
    assert pickled.count(b"_unpack_results") == 1


class _Opaque:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Opaque)

    __hash__ = object.__hash__


@pytest.mark.parametrize(
    "value",
    [2**64, "\ud800", _Opaque()],
    ids=["beyond 64 bits", "lone surrogate", "unknown type"],
)
def test_a_result_batch_messagepack_cannot_carry_pickles_its_columns(value: Any) -> None:
    diffs = ({"type": "ADD", "data": {"v": value, "l": [1, -0.0, {"m": None}]}},)
    items: list[Delivered] = [
        QueryResult("q", 1, 100, 99, diffs),
        ControlResult("q", 2, 101, ControlSignal.RUNNING),
    ]
    for dumps in DUMPS:
        wire = dumps(ResultBatch(items))
        assert wire.count(b"_rebuild_results") == 1
        assert list(pickle.loads(wire)) == items


def test_a_result_batch_keeps_every_json_value_as_it_was() -> None:
    row = {
        "i": -(2**63),
        "u": 2**64 - 1,
        "f": -0.0,
        "t": True,
        "n": None,
        "s": "é",
        "l": [1, [2.5]],
    }
    diffs = ({"type": "ADD", "data": row}, {"type": "DELETE", "data": {"m": {"k": [True]}}})
    back = pickle.loads(pickle.dumps(ResultBatch([QueryResult("q", 1, 100, 99, diffs)])))
    assert repr(back[0].results) == repr(diffs)
    assert type(back[0].results) is tuple
