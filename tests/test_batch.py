"""Batches crossing actor boundaries pickle compactly and rebuild identical objects."""

from __future__ import annotations

import pickle

import ray.cloudpickle

from drasi_ray.batch import DeltaBatch, ElementBatch, EntryBatch, EntryBatchBuilder
from drasi_ray.changes import (
    DecodedEntry,
    ElementDelta,
    Op,
    SubscriptionControl,
    node,
    relation,
)
from drasi_ray.decode import (
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
