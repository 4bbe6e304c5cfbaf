"""The future queue, the function state and its persistence, and how a query rebuilds from it."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, node
from drasi_ray.query import temporal
from drasi_ray.query.engine import ContinuousQuery
from drasi_ray.query.futures import FutureQueue, PushType
from drasi_ray.query.stateful import (
    MISSING,
    FunctionState,
    Memo,
    decode_value,
    digest,
    encode_value,
)
from drasi_ray.query.values import AWAITING, hashable_key, to_output

KEY = (0, "row")


def _due_times(queue: FutureQueue) -> list[int]:
    return [entry.due_ms for entry in queue]


def test_if_not_exists_keeps_the_first_due_time() -> None:
    queue = FutureQueue()
    assert queue.push(PushType.IF_NOT_EXISTS, KEY, "a", 0, 500)
    assert not queue.push(PushType.IF_NOT_EXISTS, KEY, "a", 100, 900)
    assert _due_times(queue) == [500]


def test_overwrite_keeps_the_last_due_time() -> None:
    queue = FutureQueue()
    queue.push(PushType.OVERWRITE, KEY, "a", 0, 500)
    queue.push(PushType.OVERWRITE, KEY, "b", 100, 900)
    assert [(e.anchor_id, e.due_ms) for e in queue] == [("b", 900)]
    assert queue.pop_due(10_000) is not None
    assert queue.pop_due(10_000) is None  # the replaced entry's ticket is skipped


def test_always_keeps_every_due_time_and_pops_in_time_order() -> None:
    queue = FutureQueue()
    for due in (900, 300, 600):
        queue.push(PushType.ALWAYS, KEY, "a", 0, due)
    queue.push(PushType.ALWAYS, (1, "other"), "b", 0, 450)
    assert queue.next_due() == 300
    assert queue.pop_due(299) is None
    popped = [queue.pop_due(1000) for _ in range(4)]
    assert [entry.due_ms for entry in popped if entry is not None] == [300, 450, 600, 900]
    assert queue.next_due() is None


def test_remove_drops_every_entry_of_a_key() -> None:
    queue = FutureQueue()
    queue.push(PushType.ALWAYS, KEY, "a", 0, 300)
    queue.push(PushType.ALWAYS, KEY, "a", 0, 400)
    queue.remove(KEY)
    assert len(queue) == 0
    assert queue.pop_due(10_000) is None


def test_dirty_keys_and_load() -> None:
    queue = FutureQueue()
    queue.push(PushType.ALWAYS, KEY, "a", 10, 300)
    assert queue.take_dirty() == {KEY}
    assert queue.take_dirty() == set()
    copy = FutureQueue()
    copy.load(queue.entries(KEY))
    assert copy.take_dirty() == set()
    entry = copy.pop_due(300)
    assert entry is not None and (entry.anchor_id, entry.original_ms) == ("a", 10)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        7,
        2.5,
        float("inf"),
        "text",
        [1, [2, "x"]],
        {"a": 1, "$map": {"b": None}},
        AWAITING,
        dt.date(2020, 1, 4),
        dt.datetime(2020, 1, 4, 10, 30, 0, 250_000),
        dt.datetime(2020, 1, 4, 10, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        dt.datetime(2020, 7, 4, 10, 30, tzinfo=ZoneInfo("Europe/Paris")),
        dt.time(8, 15, 1),
        dt.time(8, 15, tzinfo=dt.timezone.utc),
        temporal.Duration(1, 2, 3, 4),
    ],
)
def test_kept_values_survive_json(value: Any) -> None:
    import orjson

    decoded = decode_value(orjson.loads(orjson.dumps(encode_value(value))))
    assert decoded == value and type(decoded) is type(value)
    if isinstance(value, dt.datetime):
        assert decoded.utcoffset() == value.utcoffset()


def test_an_element_is_kept_as_its_properties() -> None:
    element = node("n1", ["N"], {"x": 1})
    assert decode_value(encode_value(element)) == to_output(element)


def test_digests_name_equal_keys_alike() -> None:
    assert digest(("a", 5)) == digest(("a", 5.0))
    assert digest((True,)) != digest((1,))
    assert digest((hashable_key(temporal.Duration(0, 1, 0, 0)),)) == digest(
        (hashable_key(temporal.Duration(0, 1, 0, 0)),)
    )
    assert len(digest(("x",))) == 24


# --------------------------------------------------------------------------- rebuilding

TRUE_FOR = (
    "MATCH (a:A) WHERE drasi.trueFor(a.on = true, duration({seconds: 10})) "
    "RETURN a.id AS id, drasi.previousValue(a.level, -1) AS before"
)


def _insert(query: ContinuousQuery, element: Element) -> list[dict[str, Any]]:
    return query.apply(ElementDelta(None, element, ZERO_VERSION, element.effective_from))


def _persisted(state: FunctionState) -> FunctionState:
    """A fresh state loaded from what ``state`` would have written."""
    fields = {name: raw for name, raw in state.take_changes().items() if raw is not None}
    restored = FunctionState()
    restored.load(fields)
    return restored


def test_a_restarted_query_rebuilds_its_rows_and_fires_a_pending_true_for_once() -> None:
    query = ContinuousQuery("q", TRUE_FOR)
    held = node("a1", ["A"], {"id": "a1", "on": True, "level": 1}, 1_000)
    pending = node("a2", ["A"], {"id": "a2", "on": True, "level": 2}, 5_000)
    _insert(query, held)
    assert query.fire_due(11_000) == [[{"type": "ADD", "data": {"id": "a1", "before": -1}}]]
    assert _insert(query, pending) == []
    rows = query.results()

    restarted = ContinuousQuery("q", TRUE_FOR, state=_persisted(query.state))
    restarted.bootstrap([held, pending])
    assert restarted.results() == rows
    assert restarted.next_due_ms() == 15_000
    assert restarted.fire_due(14_999) == []
    assert restarted.fire_due(15_000) == [[{"type": "ADD", "data": {"id": "a2", "before": -1}}]]
    assert restarted.fire_due(99_000) == []


def test_a_restarted_query_fires_at_the_time_of_the_change_that_scheduled_it() -> None:
    """A due entry re-evaluates at the transaction time of the change that scheduled it, and
    at its due time in real time, before a restart as after it."""
    text = (
        "MATCH (a:A) WHERE drasi.trueFor(a.on, duration({seconds: 10})) "
        "RETURN a.id AS id, datetime.transaction() AS t, datetime.realtime() AS r"
    )
    query = ContinuousQuery("q", text)
    element = node("a1", ["A"], {"id": "a1", "on": True}, 1_000)
    _insert(query, element)
    restarted = ContinuousQuery("q", text, state=_persisted(query.state))
    restarted.bootstrap([element])
    fired = [{"id": "a1", "t": "1970-01-01T00:00:01+00:00", "r": "1970-01-01T00:00:11+00:00"}]
    assert (
        restarted.fire_due(11_000)
        == query.fire_due(11_000)
        == [[{"type": "ADD", "data": fired[0]}]]
    )


def test_what_is_forgotten_is_written_as_a_deletion() -> None:
    state = FunctionState()
    state.set_value(0, "key", 5)
    state.remember(0, "row", Memo("arguments", 1))
    written = state.take_changes()
    assert len(written) == 2
    state.set_value(0, "key", MISSING)
    state.forget(0, "row")
    assert state.take_changes() == dict.fromkeys(written)
    assert state.take_changes() == {}


def test_a_change_missed_while_down_is_applied_when_the_query_rebuilds() -> None:
    """The change reached the store but not the query: the rebuild applies it at its time, so
    the query goes on as one that saw it (but emits no diff for it)."""
    off = node("a1", ["A"], {"id": "a1", "on": False, "level": 1}, 1_000)
    on = node("a1", ["A"], {"id": "a1", "on": True, "level": 3}, 2_000)
    seen = ContinuousQuery("q", TRUE_FOR)
    _insert(seen, off)
    assert seen.apply(ElementDelta(off, on, ZERO_VERSION, 2_000)) == []

    missed = ContinuousQuery("q", TRUE_FOR)
    _insert(missed, off)
    restarted = ContinuousQuery("q", TRUE_FOR, state=_persisted(missed.state))
    restarted.bootstrap([on])
    assert restarted.results() == seen.results() == []
    assert restarted.next_due_ms() == seen.next_due_ms() == 12_000
    assert restarted.fire_due(12_000) == seen.fire_due(12_000) != []


def test_a_new_query_bootstraps_as_if_each_element_arrived_at_its_time() -> None:
    query = ContinuousQuery(
        "q", "MATCH (a:A) WHERE drasi.trueFor(a.on, duration({seconds: 10})) RETURN a.id AS id"
    )
    query.bootstrap(
        [
            node("late", ["A"], {"id": "late", "on": True}, 9_000),
            node("early", ["A"], {"id": "early", "on": True}, 1_000),
        ]
    )
    assert query.results() == []
    assert query.fire_due(11_000) == [[{"type": "ADD", "data": {"id": "early"}}]]
    assert query.fire_due(19_000) == [[{"type": "ADD", "data": {"id": "late"}}]]


def test_a_query_without_stateful_functions_keeps_nothing() -> None:
    query = ContinuousQuery("q", "MATCH (a:A) WHERE a.on RETURN a.id AS id")
    _insert(query, node("a1", ["A"], {"id": "a1", "on": True}, 1_000))
    assert not query.stateful
    assert query.state.take_changes() == {}
    assert query.next_due_ms() is None


def test_a_due_entry_of_an_element_changed_since_does_nothing() -> None:
    query = ContinuousQuery("q", "MATCH (a:A) WHERE drasi.trueLater(a.on, a.due) RETURN a.id AS id")
    first = node("a1", ["A"], {"id": "a1", "on": True, "due": 5_000}, 1_000)
    _insert(query, first)
    changed = node("a1", ["A"], {"id": "a1", "on": True, "due": 5_000, "x": 1}, 6_000)
    assert query.apply(ElementDelta(first, changed, ZERO_VERSION, 6_000)) == [
        {"type": "ADD", "data": {"id": "a1"}}
    ]
    assert query.fire_due(6_000) == []
