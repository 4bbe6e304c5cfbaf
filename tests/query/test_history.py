"""Element history (drasi_ray.model.history) and Drasi's past functions through the engine."""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray.model.changes import ZERO_VERSION, Element, ElementDelta, node
from drasi_ray.model.errors import QuerySyntaxError
from drasi_ray.model.history import ElementHistory, HistoryLimits
from drasi_ray.query.engine import ContinuousQuery


def _thing(value: int, time: int, element_id: str = "t1", **more: Any) -> Element:
    return node(element_id, ["Thing"], {"Value": value, **more}, effective_from=time)


def _values(elements: list[Element]) -> list[Any]:
    return [element.properties["Value"] for element in elements]


def _history(*times: int, limits: HistoryLimits | None = None) -> ElementHistory:
    history = ElementHistory(limits)
    for time in times:
        history.observe("t1", _thing(time, time))
    return history


def _at(history: ElementHistory, element_id: str, time_ms: int) -> Element:
    """The version of ``element_id`` in effect at ``time_ms`` (there must be one)."""
    found = history.as_at(element_id, time_ms)
    assert found is not None
    return found


# --------------------------------------------------------------------------- the history


def test_a_version_is_in_effect_from_its_time_until_the_next() -> None:
    history = _history(0, 1000, 2000)
    assert history.as_at("t1", -1) is None
    assert [_at(history, "t1", t).properties["Value"] for t in (0, 999, 1000, 2001)] == [
        0,
        0,
        1000,
        2000,
    ]
    assert history.as_at("other", 5000) is None


def test_a_range_holds_the_versions_that_took_effect_in_it() -> None:
    history = _history(0, 1111, 2000, 3000)
    assert _values(history.between("t1", 1000, 2001, from_previous=False)) == [1111, 2000]
    assert _values(history.between("t1", 1111, 2001, from_previous=True)) == [1111, 2000]
    assert _values(history.between("t1", 1750, 2000, from_previous=True)) == [1111, 2000]
    assert _values(history.between("t1", 3001, 9000, from_previous=True)) == [3000]
    assert history.between("t1", 5, 4, from_previous=False) == []


def test_a_version_at_the_same_time_replaces_the_one_there() -> None:
    history = _history(0, 1000)
    history.observe("t1", _thing(7, 1000))
    assert _values(history.between("t1", 0, 9999, from_previous=False)) == [0, 7]


def test_at_most_max_versions_are_kept_the_oldest_going_first() -> None:
    history = _history(0, 1000, 2000, 3000, limits=HistoryLimits(max_versions=2))
    assert _values(history.between("t1", 0, 9999, from_previous=False)) == [2000, 3000]


def test_retention_keeps_the_version_in_effect_at_the_cutoff() -> None:
    history = _history(0, 1000, 2000, 3000, limits=HistoryLimits(retention_ms=1500))
    # cutoff 3000 - 1500 = 1500: the version of 1000 is still in effect then
    assert _values(history.between("t1", 0, 9999, from_previous=False)) == [1000, 2000, 3000]
    history.observe("t1", _thing(4000, 4000))
    assert _values(history.between("t1", 0, 9999, from_previous=False)) == [2000, 3000, 4000]


def test_a_deleted_element_takes_its_history_with_it() -> None:
    history = _history(0, 1000)
    history.observe("t1", None)
    assert history.as_at("t1", 5000) is None and len(history) == 0


@pytest.mark.parametrize("limits", [{"max_versions": 0}, {"retention_ms": -1}])
def test_limits_are_checked(limits: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        HistoryLimits(**limits)


def test_the_shipped_form_gives_the_same_history_back() -> None:
    history = _history(0, 1000, 2000)
    copy = ElementHistory()
    copy.load(history.records(["t1", "absent"]))
    assert copy.between("t1", 0, 9999, False) == history.between("t1", 0, 9999, False)


def test_durable_writes_bring_a_stored_copy_up_to_date() -> None:
    history = ElementHistory(HistoryLimits(max_versions=2), durable=True)
    stored: dict[bytes, bytes] = {}

    def write() -> None:
        writes = history.take_writes()
        stored.update(writes.puts)
        for field in writes.deletes:
            stored.pop(field, None)

    for time in (0, 1000):
        history.observe("t1", _thing(time, time))
    write()
    history.observe("t1", _thing(2000, 2000))  # drops the version of 0
    history.observe("t2", _thing(5, 5, "t2"))
    write()
    history.observe("t2", None)
    write()
    copy = ElementHistory(HistoryLimits(max_versions=2))
    copy.load_versions(stored.items())
    assert _values(copy.between("t1", 0, 9999, False)) == [1000, 2000]
    assert copy.as_at("t2", 10) is None
    assert not history.take_writes()


def test_failed_writes_are_taken_back_unless_superseded() -> None:
    history = ElementHistory(durable=True)
    history.observe("t1", _thing(0, 0))
    failed = history.take_writes()
    history.observe("t1", _thing(1, 0))  # the same version, rewritten since
    history.retry_writes(failed)
    writes = history.take_writes()
    copy = ElementHistory()
    copy.load_versions(writes.puts.items())
    assert _values(copy.between("t1", 0, 0, False)) == [1]


def test_a_history_that_is_not_durable_keeps_no_writes() -> None:
    history = _history(0, 1000)
    assert not history.take_writes()


# --------------------------------------------------------------------------- through a query

AT = (
    "MATCH (t:Thing) RETURN t.Value AS now,"
    " drasi.getVersionByTimestamp(t, 999).Value AS v0,"
    " drasi.getVersionByTimestamp(t, datetime({epochMillis: 1500})).Value AS at_1500,"
    " [v IN drasi.getVersionsByTimeRange(t, 1000, 2001) | v.Value] AS range"
)


class Things:
    def __init__(self, text: str, limits: HistoryLimits | None = None) -> None:
        self.query = ContinuousQuery("q", text, history=limits)
        self.elements: dict[str, Element] = {}

    def put(self, element: Element) -> list[dict[str, Any]]:
        delta = ElementDelta(self.elements.get(element.id), element, ZERO_VERSION, 0)
        self.elements[element.id] = element
        return self._apply(delta)

    def delete(self, element_id: str, time: int) -> list[dict[str, Any]]:
        return self._apply(ElementDelta(self.elements.pop(element_id), None, ZERO_VERSION, time))

    def _apply(self, delta: ElementDelta) -> list[dict[str, Any]]:
        diffs = self.query.apply(delta)
        assert self.query.take_evaluation_errors() == []
        return diffs


def test_only_a_query_calling_a_past_function_keeps_a_history() -> None:
    assert ContinuousQuery("q", "MATCH (t:Thing) RETURN t.Value AS v").history is None
    assert ContinuousQuery("q", "MATCH (t:Thing) RETURN t.Value AS v").history_limits is None
    query = ContinuousQuery("q", AT, history=HistoryLimits(max_versions=3))
    assert query.history_limits == HistoryLimits(max_versions=3)


def test_past_functions_read_the_versions_the_query_saw() -> None:
    things = Things(AT)
    things.put(_thing(0, 0))
    things.put(_thing(1, 1000))
    (diff,) = things.put(_thing(2, 2000))
    assert diff["after"] == {"now": 2, "v0": 0, "at_1500": 1, "range": [1, 2]}
    # the row before is the one emitted for the change at 1000
    assert diff["before"] == {"now": 1, "v0": 0, "at_1500": 1, "range": [1]}


def test_a_version_is_the_merged_element() -> None:
    things = Things(
        "MATCH (t:Thing) RETURN [v IN drasi.getVersionsByTimeRange(t, 0, 9999) | [v.Value, v.x]]"
        " AS versions"
    )
    things.put(_thing(0, 0, x="a"))
    (diff,) = things.put(node("t1", ["Thing"], {"Value": 1, "x": "a"}, effective_from=1000))
    assert diff["after"] == {"versions": [[0, "a"], [1, "a"]]}


def test_a_re_created_element_starts_a_new_history() -> None:
    things = Things(AT)
    things.put(_thing(7, 500, "t2"))
    things.delete("t2", 4000)
    (diff,) = things.put(_thing(8, 4500, "t2"))
    # Drasi's archive would still give 7 for 999 (docs/conformance.md)
    assert diff["data"] == {"now": 8, "v0": None, "at_1500": None, "range": []}


def test_a_restarted_query_gets_its_history_back_with_its_bootstrap() -> None:
    first = Things(AT)
    for value, time in ((0, 0), (1, 1000), (2, 2000)):
        first.put(_thing(value, time))
    assert first.query.history is not None
    shipped = first.query.history.records(["t1"])
    restarted = ContinuousQuery("q", AT)
    restarted.load_history(shipped)
    restarted.bootstrap([_thing(2, 2000)])
    assert restarted.results() == first.query.results()
    forgetful = ContinuousQuery("q", AT)
    forgetful.bootstrap([_thing(2, 2000)])
    assert forgetful.results() != first.query.results()


def test_the_history_is_bounded_per_query() -> None:
    things = Things(
        "MATCH (t:Thing) RETURN t.Value AS v, size(drasi.getVersionsByTimeRange(t, 0, 99999)) AS n",
        HistoryLimits(max_versions=2),
    )
    rows = [things.put(_thing(value, value * 1000))[0] for value in range(4)]
    assert [(row.get("data") or row["after"])["n"] for row in rows] == [1, 2, 2, 2]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("drasi.getVersionByTimestamp(t.Value, 5)", "node or relationship"),
        ("drasi.getVersionByTimestamp(t, -1)", "must not be negative"),
        ("drasi.getVersionByTimestamp(t, 'x')", "expects a timestamp"),
        ("drasi.getVersionsByTimeRange(t, 0, 5, 'yes')", "Boolean"),
    ],
)
def test_past_function_arguments_are_checked(call: str, message: str) -> None:
    query = ContinuousQuery("q", f"MATCH (t:Thing) RETURN {call} AS v")
    assert query.apply(ElementDelta(None, _thing(0, 0), ZERO_VERSION, 0)) == []
    (error,) = query.take_evaluation_errors()
    assert message in error


def test_past_function_arities_are_checked_when_registered() -> None:
    with pytest.raises(QuerySyntaxError, match="takes 3 to 4 arguments"):
        ContinuousQuery("q", "MATCH (t:Thing) RETURN drasi.getVersionsByTimeRange(t, 1) AS v")
