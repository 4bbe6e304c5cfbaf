"""drasi_ray.testing.inprocess: the pipeline's cores wired in one process, without Ray or Redis.

The same changes through one shard and one host, and through three shards and two hosts, give
the same results in the same order per query; a middleware pipeline's failure is reported for
its entry; a query's failure surfaces; a rescale keeps every element on exactly one shard.
"""

from __future__ import annotations

from typing import Any

import pytest

from drasi_ray.host.runner import QueryRunner
from drasi_ray.model.changes import Op, node, relation
from drasi_ray.model.config import QueryConfig
from drasi_ray.model.query_specs import MiddlewareSpec
from drasi_ray.model.results import QueryResult
from drasi_ray.source.decode import change_event
from drasi_ray.testing.inprocess import InProcessApp

QUERIES = {
    "hot": "MATCH (s:Sensor) WHERE s.t > 70 RETURN s.name AS name, s.t AS t",
    "count": "MATCH (s:Sensor) RETURN count(s) AS n",
    "rooms": "MATCH (s:Sensor)-[:IN]->(r:Room) RETURN r.name AS room, count(s) AS sensors",
}


def _events() -> list[dict[str, Any]]:
    """Rooms, sensors in them, temperature updates and deletes: 60 changes."""
    events = [
        change_event(Op.INSERT, node(f"r{i}", ["Room"], {"name": f"R{i}"}), 1_000) for i in range(3)
    ]
    for i in range(12):
        sensor = node(f"s{i}", ["Sensor"], {"name": f"S{i}", "t": 60 + i})
        events.append(change_event(Op.INSERT, sensor, 2_000 + i))
        events.append(
            change_event(Op.INSERT, relation(f"in{i}", ["IN"], f"s{i}", f"r{i % 3}"), 3_000 + i)
        )
    for i in range(12):
        events.append(change_event(Op.UPDATE, node(f"s{i}", ["Sensor"], {"t": 80 - i}), 4_000 + i))
    for i in range(0, 12, 3):
        events.append(change_event(Op.DELETE, node(f"s{i}", ["Sensor"]), 5_000 + i))
    return events


def _run(shards: int, hosts: int) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Each query's diffs in order, and its result rows at the end."""
    with InProcessApp(shards=shards, hosts=hosts) as app:
        for query_id, text in QUERIES.items():
            app.add_query(QueryConfig(id=query_id, query=text, sources=("s",)))
        feeds = {query_id: app.subscribe(query_id) for query_id in QUERIES}
        for event in _events():
            app.publish("s", event)
        diffs = {
            query_id: [diff for item in feed.drain() for diff in item.results]  # type: ignore[union-attr]
            for query_id, feed in feeds.items()
        }
        rows = {query_id: sorted(map(repr, app.results(query_id))) for query_id in QUERIES}
        return diffs, rows


def test_shards_and_hosts_change_nothing_a_query_sees() -> None:
    one = _run(shards=1, hosts=1)
    many = _run(shards=3, hosts=2)
    assert many == one
    diffs, rows = one
    assert len(diffs["count"]) == 12 + 4  # one aggregation diff per insert and per delete
    assert rows["count"] == [repr({"n": 8})]


def test_a_query_added_later_is_bootstrapped_from_every_shard() -> None:
    with InProcessApp(shards=3) as app:
        for event in _events():
            app.publish("s", event)
        loaded = app.add_query(QueryConfig(id="count", query=QUERIES["count"], sources=("s",)))
        assert loaded == 8  # the elements of its subscription: the sensors
        assert app.results("count") == [{"n": 8}]
        by_shard = app.run(app.control.elements_by_shard("s"))
        assert sorted(by_shard) == [0, 1, 2]
        assert sum(len(part) for part in by_shard.values()) == 3 + 8 + 12


def test_a_rescale_moves_elements_and_rebootstraps_the_queries() -> None:
    with InProcessApp(shards=1) as app:
        app.add_query(QueryConfig(id="rooms", query=QUERIES["rooms"], sources=("s",)))
        for event in _events():
            app.publish("s", event)
        assert app.rescale(3) > 0
        assert _placement(app) == 3 + 8 + 12  # each element on exactly one shard
        # rebuilt from the graph: as a query bootstrapped now (R0 lost its sensors: no row)
        app.add_query(QueryConfig(id="fresh", query=QUERIES["rooms"], sources=("s",)))
        assert _rows(app, "rooms") == _rows(app, "fresh") == ["R1: 4", "R2: 4"]
        app.publish("s", change_event(Op.DELETE, node("s1", ["Sensor"]), 9_000))
        assert app.rescale(2) > 0  # and down: shard 2's records go to shards 0 and 1
        assert len(app.shards) == 2
        assert _placement(app) == 3 + 7 + 12
        assert _rows(app, "rooms") == ["R1: 3", "R2: 4"]


def _placement(app: InProcessApp) -> int:
    """How many elements the shards hold; fails if one sits on two shards."""
    by_shard = app.run(app.control.elements_by_shard("s"))
    assert sorted(by_shard) == list(range(len(app.shards)))
    ids = [element.id for part in by_shard.values() for element in part]
    assert len(ids) == len(set(ids))
    return len(ids)


def _rows(app: InProcessApp, query_id: str) -> list[str]:
    return sorted(f"{row['room']}: {row['sensors']}" for row in app.results(query_id))


def test_a_pipeline_failure_is_reported_for_its_entry_and_the_others_go_on() -> None:
    parse = MiddlewareSpec.model_validate(
        {"name": "parse", "kind": "parse_json", "config": {"target_property": "doc"}}
    )
    config = QueryConfig(
        id="parsed",
        query="MATCH (d:Doc) RETURN d.doc.v AS v",
        sources=("s",),
        middleware=(parse,),
        pipelines={"s": ("parse",)},
    )
    with InProcessApp(shards=2) as app:
        app.add_query(config)
        feed = app.subscribe("parsed")
        good = change_event(Op.INSERT, node("d1", ["Doc"], {"doc": '{"v": 1}'}), 1_000)
        bad = change_event(Op.INSERT, node("d2", ["Doc"], {"doc": "{not json"}), 2_000)
        assert app.publish("s", good).rejected == []
        report = app.publish("s", bad, entry_id="7-0")
        assert [rejection.entry_id for rejection in report.rejected] == ["7-0"]
        results = [item for item in feed.drain() if isinstance(item, QueryResult)]
        assert [diff["data"] for item in results for diff in item.results] == [{"v": 1}]


def test_a_query_that_fails_to_apply_a_change_raises_in_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = QueryConfig(id="q", query="MATCH (s:Sensor) RETURN s.t AS t", sources=("s",))
    with InProcessApp() as app:
        app.add_query(config)
        hosted = app.hosts["host-0"].hosted("q")
        # (the runner is replaced, not patched: a compiled class's methods cannot be)
        monkeypatch.setattr(hosted, "runner", _FailingRunner(hosted.runner))
        with pytest.raises(RuntimeError, match="engine broke"):
            app.publish("s", change_event(Op.INSERT, node("s1", ["Sensor"], {"t": 1}), 1_000))
        assert hosted.errors == 1


class _FailingRunner:
    """A query's runner whose engine breaks on every change; the rest is the real runner's."""

    def __init__(self, runner: QueryRunner) -> None:
        self._runner = runner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)

    async def apply(self, _deltas: object) -> None:
        raise RuntimeError("engine broke")
