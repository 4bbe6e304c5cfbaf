"""Queries packed on query hosts: 100 queries in M + K + consumers processes, each isolated
(its own results, sequence and memory figure), and a heavy query on a host of its own."""

from __future__ import annotations

import ray

from drasi_ray.actors import names
from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import ScalingConfig
from drasi_ray.query.definition import Query
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app

QUERIES = 100
SENSORS = 50
SHARDS, HOSTS, CONSUMERS = 3, 2, 2


def _threshold_query(number: int) -> str:
    return (
        f"MATCH (s:Sensor) WHERE s.temperature > {number} "
        "RETURN s.id AS id, s.temperature AS temperature"
    )


def _event(sensor: int) -> bytes:
    element = node(f"s{sensor}", ["Sensor"], {"id": f"s{sensor}", "temperature": 2 * sensor})
    return encode_cloud_event([change_event(Op.INSERT, element, 1_000_000)])


def _processes(app_namespace: str) -> set[int]:
    """The process ids of every named actor of the app."""
    actors = ray.util.list_named_actors(all_namespaces=True)
    handles = [
        ray.get_actor(actor["name"], namespace=app_namespace)
        for actor in actors
        if actor.get("namespace") == app_namespace
    ]
    return set(ray.get([handle.pid.remote() for handle in handles]))


def test_a_hundred_queries_run_in_hosts_shards_and_consumers_only(
    ray_session: None, redis_url: str
) -> None:
    queries = {f"q{number}": _threshold_query(number) for number in range(QUERIES)}
    app = one_source_app(
        redis_url,
        "packed",
        queries,
        prefix="hosts",
        scaling_config=ScalingConfig(shards=SHARDS, query_hosts=HOSTS),
        consumers=CONSUMERS,
    )
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish("packed", [_event(sensor) for sensor in range(SENSORS)])
        app.wait_until_idle(120)
        processes = _processes(app.namespace)
        results = {query_id: app.results(query_id) for query_id in ("q0", "q57", "q99")}
        status = app.status()
    finally:
        app.stop()
    assert len(processes) == HOSTS + SHARDS + CONSUMERS
    assert sorted(row["id"] for row in results["q57"]) == sorted(
        f"s{sensor}" for sensor in range(SENSORS) if 2 * sensor > 57
    )
    assert len(results["q0"]) == SENSORS - 1 and results["q99"] == []
    reports = [status.query(query_id) for query_id in status.queries]
    hosts = {report.host for report in reports}
    assert hosts == {names.shared_host(0), names.shared_host(1)}
    per_host = [len(status.host(name).queries) for name in status.hosts]
    assert sorted(per_host) == [QUERIES // 2, QUERIES // 2]
    sequences = {report.sequence for report in reports}
    assert len(sequences) > 1  # each query numbers its own results
    assert all(report.memory_bytes > 0 for report in reports)
    assert all(report.errors == 0 for report in reports)


def test_a_heavy_query_gets_a_host_of_its_own(ray_session: None, redis_url: str) -> None:
    app = one_source_app(
        redis_url,
        "heavy",
        {"light": _threshold_query(10)},
        prefix="hosts",
        scaling_config=ScalingConfig(shards=1, query_hosts=1),
    )
    app.add_query(
        Query.cypher("heavy")
        .query(_threshold_query(20))
        .from_source("source")
        .with_dedicated_host()
        .build()
    )
    app.start()
    try:
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish("heavy", [_event(sensor) for sensor in range(SENSORS)])
        app.wait_until_idle(60)
        heavy, light = app.results("heavy"), app.results("light")
        hosts = (app.host_of("heavy"), app.host_of("light"))
        pids = {ray.get(app.query_actor(query).pid.remote()) for query in ("heavy", "light")}
    finally:
        app.stop()
    assert hosts == (names.dedicated_host("heavy"), names.shared_host(0))
    assert len(pids) == 2
    assert len(heavy) == sum(1 for sensor in range(SENSORS) if 2 * sensor > 20)
    assert len(light) == sum(1 for sensor in range(SENSORS) if 2 * sensor > 10)
