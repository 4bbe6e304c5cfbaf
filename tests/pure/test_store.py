"""Tests of drasi_ray.shards.store: the versioned element store of docs/semantics.md §2."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drasi_ray.model.changes import (
    Element,
    ElementChange,
    ElementDelta,
    FrozenMap,
    Op,
    Timing,
    Version,
    node,
    relation,
)
from drasi_ray.model.errors import DrasiRayError
from drasi_ray.shards.store import ElementStore


def change(op: Op | str, element: Element, version: Version | int) -> ElementChange:
    full = (version, 0, 0) if isinstance(version, int) else version
    return ElementChange(Op(op), element, full, Timing(element.effective_from * 1_000_000))


def room(props: dict[str, Any], at: int = 0, labels: tuple[str, ...] = ("Room",)) -> Element:
    return node("r1", labels, props, at)


def canon(value: Any) -> Any:
    """A form whose ``==`` is strict about types (``1``, ``1.0`` and ``True`` differ)."""
    if isinstance(value, Element):
        return (
            value.kind,
            value.id,
            value.labels,
            canon(dict(value.properties)),
            value.start_id,
            value.end_id,
            value.effective_from,
        )
    if isinstance(value, dict):
        return ("map", sorted((key, canon(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return ("list", [canon(item) for item in value])
    return (type(value).__name__, value)


def contents(store: ElementStore) -> list[Any]:
    return sorted(canon(element) for element in store.elements())


# ---------------------------------------------------------------------------------------------
# plain semantics, in order
# ---------------------------------------------------------------------------------------------


def test_insert_then_get() -> None:
    store = ElementStore()
    delta = store.apply(change("i", room({"temp": 20}, 5), 1))
    assert delta == ElementDelta(None, room({"temp": 20}, 5), (1, 0, 0), 5, inserted=True)
    assert store.get("r1") == room({"temp": 20}, 5)
    assert store.get("other") is None
    assert len(store) == 1
    assert "r1" in store
    assert list(store.elements()) == [room({"temp": 20}, 5)]


def test_insert_of_existing_replaces_whole() -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20, "name": "a"}, 1, ("Room", "Old")), 1))
    delta = store.apply(change("i", room({"temp": 21}, 2), 2))
    assert delta is not None
    assert delta.before == room({"temp": 20, "name": "a"}, 1, ("Room", "Old"))
    assert delta.after == room({"temp": 21}, 2)
    assert store.get("r1") == room({"temp": 21}, 2)


def test_update_merges_and_keeps_absent_properties() -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20, "name": "a"}, 1), 1))
    delta = store.apply(change("u", room({"temp": 22, "open": True}, 2, ("Room", "Hot")), 2))
    expected = room({"temp": 22, "name": "a", "open": True}, 2, ("Room", "Hot"))
    assert delta == ElementDelta(room({"temp": 20, "name": "a"}, 1), expected, (2, 0, 0), 2)
    assert store.get("r1") == expected


def test_update_of_unknown_inserts() -> None:
    store = ElementStore()
    delta = store.apply(change("u", room({"temp": 20}, 3), 1))
    assert delta == ElementDelta(None, room({"temp": 20}, 3), (1, 0, 0), 3)
    assert len(store) == 1


def visible(store: ElementStore) -> Element:
    element = store.get("r1")
    assert element is not None
    return element


def test_an_update_keeps_the_stored_order_of_the_keys() -> None:
    """An update carrying every key, in another order, merges into the stored order."""
    store = ElementStore()
    store.apply(change("i", room({"temp": 20, "name": "a"}, 1), 1))
    store.apply(change("u", room({"name": "b", "temp": 21}, 2), 2))
    assert list(visible(store).properties.items()) == [("temp", 21), ("name", "b")]
    store.apply(change("u", room({"temp": 22, "name": "c"}, 3), 3))
    assert list(visible(store).properties.items()) == [("temp", 22), ("name", "c")]


def test_versions_after_a_change_that_carried_every_key() -> None:
    """A record keeps no versions while each value was set by its head (an update carrying
    every key): a later partial update, an older change filling in and a late delete then
    see the version of each value, and elements handed out before do not change."""
    store = ElementStore()
    store.apply(change("u", room({"temp": 20, "name": "a"}, 1), 5))
    first = visible(store)
    store.apply(change("u", room({"temp": 21}, 2), 6))  # a part of the keys: merged
    second = visible(store)
    store.apply(change("u", room({"open": True}, 0), 4))  # older: fills in a new key only
    third = visible(store)
    store.apply(change("d", room({}, 0), (5, 0, 1)))  # removes what (5, 0, 0) set
    assert first.properties == {"temp": 20, "name": "a"}
    assert second.properties == {"temp": 21, "name": "a"}
    assert third.properties == {"temp": 21, "name": "a", "open": True}
    assert visible(store).properties == {"temp": 21}
    record = orjson.loads(store.snapshot_element("r1"))
    assert record[9:] == [{"temp": 21}, None]


def test_delete() -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20}, 1), 1))
    delta = store.apply(change("d", room({}, 4), 2))
    assert delta == ElementDelta(room({"temp": 20}, 1), None, (2, 0, 0), 4)
    assert store.get("r1") is None
    assert len(store) == 0
    assert "r1" not in store
    assert list(store.elements()) == []


def test_delete_of_unknown_does_nothing() -> None:
    store = ElementStore()
    assert store.apply(change("d", room({}), 1)) is None
    assert len(store) == 0
    assert store.get("r1") is None


def test_reinsert_after_delete_starts_afresh() -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20, "name": "a"}), 1))
    store.apply(change("d", room({}), 2))
    delta = store.apply(change("u", room({"temp": 5}, 9), 3))
    assert delta == ElementDelta(None, room({"temp": 5}, 9), (3, 0, 0), 9)


def test_relation_endpoints() -> None:
    store = ElementStore()
    first = relation("e1", ["IN"], "r1", "f1", {"w": 1}, 1)
    store.apply(change("i", first, 1))
    assert store.get("e1") == first
    moved = relation("e1", ["IN"], "r1", "f2", {}, 2)
    delta = store.apply(change("u", moved, 2))
    assert delta is not None
    assert delta.after == relation("e1", ["IN"], "r1", "f2", {"w": 1}, 2)
    assert delta.after.start_id == "r1"
    assert delta.after.end_id == "f2"


# ---------------------------------------------------------------------------------------------
# no-ops: redelivery, duplicates, strictness about what "changed" means
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["i", "u", "d"])
def test_redelivery_is_a_no_op(op: str) -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20}, 1), 1))
    latest = change(op, room({"temp": 25, "x": [1]}, 2), 2)
    assert store.apply(latest) is not None
    state = contents(store)
    assert store.apply(latest) is None
    assert store.apply(change("i", room({"temp": 20}, 1), 1)) is None
    assert contents(store) == state


def test_producer_duplicate_with_new_version_changes_nothing_visible() -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20}, 1), 1))
    assert store.apply(change("u", room({"temp": 20}, 1), 2)) is None
    assert store.apply(change("i", room({"temp": 20}, 1), 3)) is None


def test_same_values_at_a_later_time_is_a_change() -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20}, 1), 1))
    delta = store.apply(change("u", room({"temp": 20}, 7), 2))
    assert delta is not None
    assert delta.after is not None
    assert delta.after.effective_from == 7


@pytest.mark.parametrize(
    ("old", "new"),
    [(1, True), (True, 1), (1, 1.0), (0, False), ([1], [True]), ({"a": 1}, {"a": 1.0})],
)
def test_value_type_changes_are_changes(old: Any, new: Any) -> None:
    store = ElementStore()
    store.apply(change("i", room({"v": old}), 1))
    delta = store.apply(change("u", room({"v": new}), 2))
    assert delta is not None
    assert delta.after is not None
    assert canon(delta.after.properties["v"]) == canon(new)


# ---------------------------------------------------------------------------------------------
# out of order: apply by version, not by arrival
# ---------------------------------------------------------------------------------------------


def test_older_insert_after_newer_update_only_fills_in() -> None:
    store = ElementStore()
    store.apply(change("u", room({"temp": 25}, 2, ("Room", "Hot")), 2))
    delta = store.apply(change("i", room({"temp": 20, "name": "a"}, 1), 1))
    assert delta is not None
    after = room({"temp": 25, "name": "a"}, 2, ("Room", "Hot"))
    assert delta.after == after
    assert store.get("r1") == after


def test_older_update_after_newer_insert_is_overtaken() -> None:
    store = ElementStore()
    store.apply(change("i", room({"temp": 20}, 2), 2))
    assert store.apply(change("u", room({"temp": 1, "old": True}, 1), 1)) is None
    assert store.get("r1") == room({"temp": 20}, 2)


def test_delete_blocks_older_changes_arriving_later() -> None:
    store = ElementStore()
    assert store.apply(change("d", room({}), 5)) is None
    assert store.apply(change("i", room({"temp": 20}), 3)) is None
    assert store.apply(change("u", room({"temp": 21}), 4)) is None
    assert store.get("r1") is None
    assert store.apply(change("u", room({"temp": 22}, 6), 6)) is not None


def test_late_delete_removes_only_what_older_versions_set() -> None:
    store = ElementStore()
    store.apply(change("i", room({"a": 1, "b": 1}, 1), 1))
    store.apply(change("u", room({"a": 2}, 3, ("Room", "New")), 3))
    delta = store.apply(change("d", room({}, 2), 2))
    assert delta is not None
    assert delta.after == room({"a": 2}, 3, ("Room", "New"))


def test_within_entry_position_orders_changes() -> None:
    store = ElementStore()
    store.apply(change("u", room({"t": "second"}), (7, 0, 1)))
    store.apply(change("u", room({"t": "first"}), (7, 0, 0)))
    assert store.get("r1") == room({"t": "second"})


def test_tombstones_are_forgotten_only_below_the_bound_and_once_persisted() -> None:
    store = ElementStore()
    store.apply(change("i", node("a", ["X"]), 1))
    store.apply(change("d", node("a", ["X"]), 2))  # a tombstone at 2
    store.apply(change("d", node("b", ["X"]), 5))  # delete of an unknown element: one at 5
    store.apply(change("i", node("c", ["X"]), 6))  # alive: never forgotten
    assert store.tombstones == 2
    assert store.forget_tombstones((9, 0)) == []  # not persisted yet (dirty): kept
    store.take_dirty()
    assert store.forget_tombstones((2, 0)) == []  # bound is exclusive
    assert store.forget_tombstones((3, 0)) == ["a"]
    assert (store.tombstones, len(store)) == (1, 1)
    with pytest.raises(KeyError):
        store.snapshot_element("a")  # the record is gone, not just hidden
    # What a tombstone was for is over: newer changes apply as to an unknown element.
    assert store.apply(change("i", node("a", ["X"], {"v": 1}), 7)) is not None
    assert store.tombstones == 1
    store.take_dirty()
    assert sorted(store.forget_tombstones((9, 9))) == ["b"]
    assert [e.id for e in store.elements()] == ["c", "a"]


def test_a_loaded_tombstone_can_be_forgotten_and_a_revived_one_is_not() -> None:
    source = ElementStore()
    source.apply(change("d", node("gone", ["X"]), 4))
    restored = ElementStore()
    restored.load_element("gone", source.snapshot_element("gone"))
    restored.take_dirty()
    assert restored.tombstones == 1
    restored.apply(change("u", node("gone", ["X"], {"v": 1}), 5))  # revived: no tombstone
    restored.take_dirty()
    assert (restored.tombstones, restored.forget_tombstones((99, 0))) == (0, [])
    assert restored.get("gone") is not None


# ---------------------------------------------------------------------------------------------
# persistence
# ---------------------------------------------------------------------------------------------


def test_snapshot_and_load_round_trip() -> None:
    store = ElementStore()
    store.apply(change("i", room({"a": 1, "f": 1.0, "t": True, "l": [1, {"k": None}]}, 3), 1))
    store.apply(change("u", room({"a": 2}, 4), 2))
    store.apply(change("i", relation("e1", ["IN"], "r1", "f1", {}, 2), 3))
    store.apply(change("d", node("gone", ["X"]), 4))
    restored = ElementStore()
    for element_id in ("r1", "e1", "gone"):
        restored.load_element(element_id, store.snapshot_element(element_id))
        assert restored.snapshot_element(element_id) == store.snapshot_element(element_id)
    assert contents(restored) == contents(store)
    assert len(restored) == 2
    # the tombstone and the versions survive: old changes stay blocked, new ones apply
    assert restored.apply(change("i", node("gone", ["X"]), 3)) is None
    assert restored.apply(change("u", room({"a": 0}), 1)) is None
    assert restored.apply(change("u", room({"a": 9}, 5), 9)) is not None


def test_snapshot_format() -> None:
    store = ElementStore()
    store.apply(change("u", room({"b": 2, "a": 1}, 3), (4, 1, 2)))
    record = orjson.loads(store.snapshot_element("r1"))
    assert record == [
        4,
        None,
        [4, 1, 2],
        True,
        "node",
        ["Room"],
        None,
        None,
        3,
        {"a": 1, "b": 2},
        None,
    ]  # every value set by head: no versions written
    assert store.snapshot_element("r1").index(b'"a"') < store.snapshot_element("r1").index(b'"b"')
    store.apply(change("u", room({"a": 5}, 4), (5, 0, 0)))
    assert orjson.loads(store.snapshot_element("r1"))[9:] == [
        {"a": 5, "b": 2},
        {"b": [4, 1, 2]},  # set before the head (5, 0, 0), which set "a"
    ]
    store.apply(change("u", room({"c": 7}, 4), (4, 1, 1)))  # older: fills in "c" only
    assert orjson.loads(store.snapshot_element("r1"))[9:] == [
        {"a": 5, "b": 2, "c": 7},
        {"b": [4, 1, 2], "c": [4, 1, 1]},
    ]
    store.apply(change("u", room({"a": 6, "b": 3, "c": 8}, 4), (6, 0, 0)))
    assert orjson.loads(store.snapshot_element("r1"))[9:] == [{"a": 6, "b": 3, "c": 8}, None]


def test_format_3_records_still_load() -> None:
    """Format 3 wrote the version of every value (null when each was set by head)."""
    fresh = ElementStore()
    fresh.apply(change("u", room({"a": 1, "b": 2}, 3), (4, 1, 2)))
    fresh.apply(change("u", room({"a": 5}, 3), (5, 0, 0)))
    every = ElementStore()
    every.load_element(
        "r1",
        b'[3, null, [5, 0, 0], true, "node", ["Room"], null, null, 3,'
        b' {"a": 5, "b": 2}, {"a": [5, 0, 0], "b": [4, 1, 2]}]',
    )
    assert every.snapshot_element("r1") == fresh.snapshot_element("r1")
    assert every.get("r1") == fresh.get("r1")
    assert every.apply(change("u", room({"b": 0}, 3), (4, 1, 1))) is None  # older than "b"
    by_head = ElementStore()
    by_head.load_element(
        "r1", b'[3, null, [4, 1, 2], true, "node", ["Room"], null, null, 3, {"a": 1}, null]'
    )
    assert orjson.loads(by_head.snapshot_element("r1"))[9:] == [{"a": 1}, None]


def test_format_2_records_still_load() -> None:
    store = ElementStore()
    store.load_element(
        "r1",
        b'[2, null, [4, 1, 2], true, "node", ["Room"], null, null, 3,'
        b' {"a": 1, "b": 2}, {"a": [4, 1, 2], "b": [4, 1, 2]}]',
    )
    fresh = ElementStore()
    fresh.apply(change("u", room({"a": 1, "b": 2}, 3), (4, 1, 2)))
    assert store.snapshot_element("r1") == fresh.snapshot_element("r1")
    assert store.get("r1") == fresh.get("r1")
    assert store.apply(change("u", room({"a": 0}, 3), (4, 1, 1))) is None  # older than head


def test_format_1_records_still_load() -> None:
    store = ElementStore()
    store.load_element(
        "r1",
        b'{"format": 1, "reset": null, "head": [4, 1, 2], "alive": true, "kind": "node",'
        b' "labels": ["Room"], "startId": null, "endId": null, "effectiveFrom": 3,'
        b' "properties": {"a": [1, [4, 1, 2]]}}',
    )
    fresh = ElementStore()
    fresh.apply(change("u", room({"a": 1}, 3), (4, 1, 2)))
    assert store.snapshot_element("r1") == fresh.snapshot_element("r1")
    assert store.get("r1") == fresh.get("r1")


def test_load_replaces_and_recounts() -> None:
    store = ElementStore()
    store.apply(change("i", room({"a": 1}), 1))
    source = ElementStore()
    source.apply(change("i", room({}), 1))
    source.apply(change("d", room({}), 2))
    store.load_element("r1", source.snapshot_element("r1"))
    assert len(store) == 0
    assert store.get("r1") is None


def test_snapshot_of_unknown_element() -> None:
    with pytest.raises(KeyError):
        ElementStore().snapshot_element("nobody")


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b'{"format": 2}',
        b'[2, null, null, false, null, [], null, null, 0, {"a": 1}, {}]',
        b"[5, null, null, false, null, [], null, null, 0, {}, {}]",
        b'[4, null, [1, 0, 0], true, "node", [], null, null, 0, {"a": 1}, {"b": [1, 0, 0]}]',
        b'[4, null, [1, 0, 0], true, "node", [], null, null, 0, {"a": 1}, {"a": [1, 0]}]',
        b'[4, null, null, false, null, [], null, null, 0, {"a": 1}, null]',
        b'[2, null, [1, 0, 0], true, "node", [], null, null, 0, {"a": 1}, null]',
        b'[3, null, null, false, null, [], null, null, 0, {"a": 1}, null]',
        b'[3, null, [1, 0, 0], true, "node", [], null, null, 0, [], null]',
        b'{"format": 1, "reset": [1, 2], "head": null, "alive": false, "kind": null,'
        b' "labels": [], "startId": null, "endId": null, "effectiveFrom": 0, "properties": {}}',
        b'{"format": 1, "reset": null, "head": null, "alive": true, "kind": null,'
        b' "labels": [], "startId": null, "endId": null, "effectiveFrom": 0, "properties": {}}',
        b'{"format": 1, "reset": null, "head": null, "alive": false, "kind": "edge",'
        b' "labels": [], "startId": null, "endId": null, "effectiveFrom": 0, "properties": {}}',
        b'{"format": 1, "reset": null, "head": null, "alive": false, "kind": null,'
        b' "labels": [], "startId": null, "endId": null, "effectiveFrom": 0,'
        b' "properties": {"a": 1}}',
    ],
)
def test_load_rejects_invalid_records(data: bytes) -> None:
    store = ElementStore()
    with pytest.raises(DrasiRayError, match="invalid element record for 'r1'"):
        store.load_element("r1", data)
    assert store.get("r1") is None


def test_take_dirty() -> None:
    store = ElementStore()
    store.apply(change("i", room({}), 1))
    store.apply(change("d", node("n2", ["X"]), 1))
    assert store.take_dirty() == {"r1", "n2"}
    assert store.take_dirty() == set()
    store.apply(change("i", room({}), 1))  # redelivery: nothing written
    assert store.take_dirty() == set()
    store.mark_dirty(["r1", "never-seen"])  # e.g. persisting failed
    assert store.take_dirty() == {"r1"}


def test_a_record_handed_over_stays_dirty_only_if_it_was() -> None:
    """A rescale moves records with their dirty mark: the new owner writes only those the old
    owner had not written yet, and loading them leaves its own dirty records as they are."""
    old, new = ElementStore(), ElementStore()
    old.apply(change("i", room({}), 1))
    old.take_dirty()  # r1 written
    old.apply(change("d", node("n2", ["X"]), 1))  # n2 not written yet
    new.apply(change("i", node("n3", ["X"]), 1))
    moving = [(i, old.snapshot_element(i), i in old.dirty_ids()) for i in old.record_ids()]
    old.drop(old.record_ids())
    for element_id, record, dirty in moving:
        new.load_element(element_id, record)
        if not dirty:
            new.mark_clean([element_id])
    assert new.take_dirty() == {"n2", "n3"}
    assert old.take_dirty() == set() and old.record_ids() == []


# ---------------------------------------------------------------------------------------------
# the invariant: any interleaving converges to in-order application
# ---------------------------------------------------------------------------------------------


def reference(changes: list[ElementChange]) -> tuple[dict[str, Element], list[tuple[Any, Any]]]:
    """Plain Drasi semantics applied in order; the final graph and the visible transitions."""
    graph: dict[str, Element] = {}
    transitions: list[tuple[Any, Any]] = []
    for item in changes:
        element = item.element
        old = graph.get(element.id)
        new: Element | None
        if item.op is Op.INSERT:
            new = element
        elif item.op is Op.UPDATE:
            merged = element.properties if old is None else {**old.properties, **element.properties}
            new = Element(
                element.kind,
                element.id,
                element.labels,
                FrozenMap(merged),
                element.start_id,
                element.end_id,
                element.effective_from,
            )
        else:
            new = None
        before = None if old is None else canon(old)
        after = None if new is None else canon(new)
        if before != after:
            transitions.append((before, after))
        if new is None:
            graph.pop(element.id, None)
        else:
            graph[element.id] = new
    return graph, transitions


property_values = st.sampled_from([0, 1, 1.0, True, False, None, "s", [1], [True], {"k": 1}])


@st.composite
def streams(draw: st.DrawFn) -> list[ElementChange]:
    """Changes on a few ids, versioned as a stream would: entries with one or more events."""
    changes: list[ElementChange] = []
    count = draw(st.integers(1, 14))
    ms = 1000
    while len(changes) < count:
        ms += draw(st.integers(0, 2))
        seq = 0 if not changes or changes[-1].version[0] != ms else changes[-1].version[1] + 1
        for index in range(draw(st.integers(1, 3))):
            element_id = draw(st.sampled_from(["a", "b", "c"]))
            labels = draw(st.lists(st.sampled_from(["A", "B"]), min_size=1, max_size=2))
            properties = draw(st.dictionaries(st.sampled_from(["x", "y", "z"]), property_values))
            at = draw(st.integers(0, 3))
            if draw(st.booleans()):
                element = node(element_id, labels, properties, at)
            else:
                ends = draw(st.lists(st.sampled_from(["n1", "n2"]), min_size=2, max_size=2))
                element = relation(element_id, labels, ends[0], ends[1], properties, at)
            op = draw(st.sampled_from([Op.INSERT, Op.UPDATE, Op.UPDATE, Op.DELETE]))
            changes.append(change(op, element, (ms, seq, index)))
    return changes


def _transitions(deltas: list[ElementDelta]) -> list[tuple[Any, Any]]:
    """Each delta as ``(before, after)`` in :func:`canon` form (None for no element)."""
    return [
        (None if d.before is None else canon(d.before), None if d.after is None else canon(d.after))
        for d in deltas
    ]


@given(streams())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_in_order_deltas_equal_plain_drasi_semantics(changes: list[ElementChange]) -> None:
    store = ElementStore()
    deltas = [delta for item in changes if (delta := store.apply(item)) is not None]
    graph, transitions = reference(changes)
    assert _transitions(deltas) == transitions
    assert contents(store) == sorted(canon(element) for element in graph.values())
    assert len(store) == len(graph)


@given(streams(), st.data())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_interleaving_with_duplicates_converges(
    changes: list[ElementChange], data: st.DataObject
) -> None:
    arrival = data.draw(st.permutations(changes))
    for _ in range(data.draw(st.integers(0, 6))):
        duplicate = data.draw(st.sampled_from(changes))
        arrival.insert(data.draw(st.integers(0, len(arrival))), duplicate)

    store = ElementStore()
    for item in arrival:
        before = store.get(item.element.id)
        delta = store.apply(item)
        after = store.get(item.element.id)
        if delta is None:  # nothing visible changed
            assert canon(before) == canon(after)
        else:  # the delta describes exactly the visible change
            assert canon(delta.before) == canon(before)
            assert canon(delta.after) == canon(after)
            assert canon(before) != canon(after)

    in_order = ElementStore()
    for item in changes:
        in_order.apply(item)
    graph, _ = reference(changes)
    assert contents(store) == sorted(canon(element) for element in graph.values())
    assert len(store) == len(graph)
    for element_id in {item.element.id for item in changes}:
        assert store.snapshot_element(element_id) == in_order.snapshot_element(element_id)


@given(streams(), st.data())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_forgetting_tombstones_below_a_safe_bound_changes_nothing(
    changes: list[ElementChange], data: st.DataObject
) -> None:
    """Applied in order, with tombstones forgotten at random points below the next change's
    entry (nothing older can come any more): the same deltas and graph as plain semantics."""
    store = ElementStore()
    deltas = []
    for item in changes:
        if data.draw(st.booleans()):
            store.take_dirty()
            store.forget_tombstones(item.version[:2])
        if (delta := store.apply(item)) is not None:
            deltas.append(delta)
    graph, transitions = reference(changes)
    assert _transitions(deltas) == transitions
    assert contents(store) == sorted(canon(element) for element in graph.values())
    store.take_dirty()
    store.forget_tombstones((1 << 62, 0))
    assert store.tombstones == 0 and len(store) == len(graph)
