"""Batches crossing actor boundaries pickle compactly and rebuild identical objects."""

from __future__ import annotations

import pickle

import ray.cloudpickle

from drasi_ray.coordinator.core import Coordinator
from drasi_ray.model.batch import (
    DeltaBatch,
    ElementBatch,
    EntryBatch,
    EntryBatchBuilder,
    ResultBatch,
)
from drasi_ray.model.changes import (
    DecodedEntry,
    ElementDelta,
    Op,
    SubscriptionControl,
    node,
    relation,
)
from drasi_ray.model.results import ControlResult, ControlSignal, QueryResult
from drasi_ray.source.decode import (
    change_event,
    decode_entry,
    decode_rows,
    encode_cloud_event,
    subscription_event,
)


def _entries() -> list[DecodedEntry]:
    events = [
        change_event(Op.INSERT, node("n1", ["A", "B"], {"x": 1, "l": [1, {"k": None}]}), 5),
        change_event(Op.DELETE, relation("r1", ["R"], "n1", "n2", {"w": 2.5}), 7_000_000),
    ]
    decoded = [decode_entry("10-0", {b"data": encode_cloud_event(events)})]
    control = SubscriptionControl(Op.INSERT, "q", "default", ("A",), (), (11, 0, 0))
    decoded.append(DecodedEntry("11-0", (), (control,)))
    decoded.append(DecodedEntry("12-0"))
    return decoded


def test_entry_batch_round_trips_through_both_picklers() -> None:
    batch = EntryBatch(_entries())
    for dumps in (pickle.dumps, ray.cloudpickle.dumps):
        back = pickle.loads(dumps(batch))
        assert isinstance(back, EntryBatch)
        assert list(back) == list(batch)
        assert back[0].changes[0].element.properties["l"] == [1, {"k": None}]


def test_a_batch_built_from_decoded_rows_equals_the_decoded_entries() -> None:
    changes = [
        change_event(Op.UPDATE, node("n1", ["A"], {"x": 1.5, "m": {"l": [1, None]}}), 9),
        change_event(Op.INSERT, relation("r1", ["R"], "n1", "n2", {}), 12_000_000),
    ]
    entries = {
        "20-1": {b"data": encode_cloud_event(changes)},
        "21-0": {b"data": encode_cloud_event([subscription_event(Op.INSERT, "q", "n", ["A"])])},
        "22-0": {b"data": encode_cloud_event([])},
    }
    builder = EntryBatchBuilder()
    for entry_id, fields in entries.items():
        builder.add(entry_id, *decode_rows(entry_id, fields))
    batch = builder.build()
    assert len(batch) == 3  # known from the columns, before any entry is built
    expected = [decode_entry(entry_id, fields) for entry_id, fields in entries.items()]
    for dumps in (pickle.dumps, ray.cloudpickle.dumps):
        back = pickle.loads(dumps(batch))
        assert list(back) == expected
        assert back[0].changes[0].element.properties == {"x": 1.5, "m": {"l": [1, None]}}
    assert list(batch) == expected and batch == EntryBatch(expected)


def test_delta_and_element_batches_round_trip() -> None:
    first, second = _entries()[0].changes
    deltas = [
        ElementDelta(None, first.element, (10, 0, 0), 0),
        ElementDelta(first.element, None, (10, 0, 1), 7),
        ElementDelta(second.element, second.element, (10, 0, 2), 7),
    ]
    # before crosses only for deletes: the query takes the previous state from its index
    shipped = [
        ElementDelta(d.before if d.after is None else None, d.after, d.version, d.source_time_ms)
        for d in deltas
    ]
    assert list(pickle.loads(pickle.dumps(DeltaBatch(deltas)))) == shipped
    elements = [first.element, second.element]
    assert list(pickle.loads(pickle.dumps(ElementBatch(elements)))) == elements


def test_rebuilt_properties_stay_immutable() -> None:
    back = pickle.loads(pickle.dumps(EntryBatch(_entries())))
    properties = back[0].changes[0].element.properties
    try:
        properties["x"] = 2
    except TypeError:
        return
    raise AssertionError("properties of a rebuilt element must refuse mutation")


def _reducer(batch: EntryBatch) -> str:
    return str(batch.__reduce__()[0].__name__)


def test_a_consumer_batch_travels_as_messagepack_and_keeps_every_value_type() -> None:
    properties = {
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
    builder = EntryBatchBuilder()
    for entry_id, fields in entries.items():
        builder.add(entry_id, *decode_rows(entry_id, fields))
    batch = builder.build()
    assert _reducer(batch) == "_of_packed"
    back = pickle.loads(ray.cloudpickle.dumps(batch))
    # repr tells 1 from 1.0 from True, -0.0 from 0.0 and a tuple from a list, at any depth
    assert repr(list(back.entry_rows())) == repr(list(batch.entry_rows()))
    assert list(back) == [decode_entry(entry_id, fields) for entry_id, fields in entries.items()]
    assert _reducer(back) == "_of_packed"  # a batch passed on travels the same way


def test_a_value_messagepack_cannot_carry_falls_back_to_pickled_columns() -> None:
    # Defensive: the decoder refuses such strings, but a batch must never fail to pickle.
    event = change_event(Op.INSERT, node("n1", ["A"], {"x": 1}), 5)
    _, (row,) = decode_rows("5-0", {b"data": encode_cloud_event([event])})
    odd = (*row[:4], {"s": "\ud800"}, *row[5:])  # a lone surrogate: no UTF-8 for it
    builder = EntryBatchBuilder()
    builder.add("5-0", (), [odd])
    batch = builder.build()
    assert _reducer(batch) == "_of_columns"
    assert repr(list(pickle.loads(pickle.dumps(batch)).entry_rows())) == repr(
        list(batch.entry_rows())
    )


def test_batches_of_built_entries_stay_pickled_as_columns() -> None:
    # their property values may be any Python value (a tuple must stay a tuple)
    assert _reducer(EntryBatch(_entries())) == "_of_columns"


def _delta_rows(batch: DeltaBatch) -> str:
    return repr([(d.before, d.after, d.version, d.source_time_ms) for d in batch])


def test_deltas_of_json_values_travel_as_messagepack_and_keep_every_value_type() -> None:
    properties = {"i": 1, "f": 1.0, "b": False, "n": None, "l": [1, 2.0, {"k": True}]}
    inserted = node("n1", ["A"], properties)
    related = relation("r1", ["R"], "n1", "n2", {"w": -0.0})
    deltas = [
        ElementDelta(None, inserted, (1, 18_446_744_073_709_551_615, 0), 0),
        ElementDelta(inserted, None, (2, 0, 1), 7),
        ElementDelta(None, related, (3, 0, 0), 9),
    ]
    packed = DeltaBatch(deltas, json_values=True)
    assert packed.__reduce__()[0].__name__ == "_rebuild_packed_deltas"
    back = pickle.loads(ray.cloudpickle.dumps(packed))
    # repr tells 1 from 1.0 from False and -0.0 from 0.0, at any depth
    assert _delta_rows(back) == _delta_rows(pickle.loads(pickle.dumps(DeltaBatch(deltas))))


def test_deltas_of_any_values_stay_pickled() -> None:
    deltas = [ElementDelta(None, node("n1", ["A"], {"t": (1, 2)}), (1, 0, 0), 0)]
    assert DeltaBatch(deltas).__reduce__()[0].__name__ == "_rebuild_deltas"
    back = pickle.loads(pickle.dumps(DeltaBatch(deltas)))
    assert back[0].after is not None and back[0].after.properties["t"] == (1, 2)


def test_the_coordinator_sends_messagepack_deltas_until_it_applies_built_entries() -> None:
    coordinator = Coordinator()
    event = change_event(Op.INSERT, node("n1", ["A"], {"x": 1}), 5)
    builder = EntryBatchBuilder()
    builder.add("1-0", *decode_rows("1-0", {b"data": encode_cloud_event([event])}))
    coordinator.apply_entries("s", builder.build())
    assert coordinator.json_values
    coordinator.apply_entries("s", _entries()[:1])  # built objects: any Python values
    assert not coordinator.json_values
    coordinator.apply_entries("s", builder.build())
    assert not coordinator.json_values  # for good: the store may hold such values now


def test_a_large_batch_travels_compressed_below_rays_inline_argument_size() -> None:
    builder = EntryBatchBuilder()
    for i in range(1500):  # ~240 KB of rows: above Ray's 100 KB inline limit uncompressed
        properties = {"id": f"sensor-{i}", "temperature": 20.0 + i / 7, "humidity": 41.5}
        event = change_event(Op.UPDATE, node(f"sensor-{i}", ["Sensor"], properties), 5 + i)
        builder.add(f"{i}-0", *decode_rows(f"{i}-0", {b"data": encode_cloud_event([event])}))
    batch = builder.build()
    _, (blob, compressed, controls) = batch.__reduce__()
    assert compressed and controls is None and len(blob) < 100_000
    wire = ray.cloudpickle.dumps(batch)
    assert len(wire) < 100_000
    assert repr(list(pickle.loads(wire).entry_rows())) == repr(list(batch.entry_rows()))
    changes = [change for entry in pickle.loads(wire) for change in entry.changes]
    deltas = DeltaBatch([ElementDelta(None, c.element, c.version, 0) for c in changes], True)
    _, (_, compressed) = deltas.__reduce__()
    back = pickle.loads(ray.cloudpickle.dumps(deltas))
    assert compressed and _delta_rows(back) == _delta_rows(deltas)


def test_result_batches_round_trip_results_and_control_signals_in_order() -> None:
    diffs = ({"type": "UPDATE", "before": {"id": "s1", "t": 1}, "after": {"id": "s1", "t": 2.0}},)
    items = [
        ControlResult("q", 1, 100, ControlSignal.RUNNING),
        QueryResult("q", 2, 101, 99, diffs),
        QueryResult("q", 3, 102, 100, ()),
        ControlResult("q", 4, 103, ControlSignal.STOPPED),
    ]
    for dumps in (pickle.dumps, ray.cloudpickle.dumps):
        back = pickle.loads(dumps(ResultBatch(items)))
        assert isinstance(back, ResultBatch)
        assert list(back) == items
        assert [type(item) for item in back] == [type(item) for item in items]
        assert repr(back[1].results) == repr(diffs)  # 2.0 stays a float, 1 an int
        assert pickle.loads(dumps(ResultBatch(()))) == ResultBatch(())


def test_a_result_batch_pickles_as_columns_not_result_by_result() -> None:
    items = [QueryResult("q", n, 100, 99, ({"type": "ADD", "data": {"n": n}},)) for n in range(50)]
    pickled = ray.cloudpickle.dumps(ResultBatch(items))
    assert pickled.count(b"make_query_result") == 0
    assert pickled.count(b"_rebuild_results") == 1
