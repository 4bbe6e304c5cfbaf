"""Operations against a real local Ray: publish -> run -> status, replay, scale."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import ray
import redis

from drasi_ray import DrasiRay
from drasi_ray.actors import scaling
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.model.shards import shard_of
from drasi_ray.ops import cli
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.waiting import wait_until

SENSOR_QUERY = "MATCH (s:Sensor) RETURN s.id AS id, s.temperature AS temperature"

APP = """\
id: {app_id}
sources:
  - id: sensors
    properties:
      redis_url: {url}
      stream_key: sensor-changes
      consumers: {consumers}
      block_ms: 100
      start_id: "{start_id}"
queries:
  - id: all-sensors
    sources: [sensors]
    query: "{query}"
    reactions:
      - kind: platform
ray:
  address: local
  num_cpus: 1
  include_dashboard: false
"""


def _write_app(
    tmp_path: Path, url: str, consumers: int = 1, start_id: str = "0", app_id: str | None = None
) -> str:
    """The app file (a new app id unless ``app_id``: the file of a running app, its group)."""
    app_id = app_id or f"ops-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "app.yaml"
    text = APP.format(
        app_id=app_id, url=url, consumers=consumers, start_id=start_id, query=SENSOR_QUERY
    )
    path.write_text(text)
    return str(path)


def _event(sensor_id: str, temperature: float) -> bytes:
    element = node(sensor_id, ["Sensor"], {"id": sensor_id, "temperature": temperature})
    return encode_cloud_event([change_event(Op.UPDATE, element, time.time_ns())])


def _change(sensor_id: str, temperature: float) -> dict[str, object]:
    element = node(sensor_id, ["Sensor"], {"id": sensor_id, "temperature": temperature})
    return change_event(Op.UPDATE, element, 1_000_000_000)


def _status(app_yaml: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert cli.main(["status", app_yaml, "--json"]) == 0
    report: dict[str, object] = json.loads(capsys.readouterr().out)
    return report


def test_publish_run_status_shows_lag_falling_to_zero(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_yaml = _write_app(tmp_path, redis_url)
    events = tmp_path / "events.jsonl"
    lines = [json.dumps(_change(f"s{i}", i)) for i in range(200)]
    events.write_text("\n".join(lines) + "\n")
    assert cli.main(["publish", "sensor-changes", str(events), "--redis-url", redis_url]) == 0
    before = _status(app_yaml, capsys)["sources"]["sensors"]  # type: ignore[index]
    assert before["lag"] == 200 and not before["group_exists"]
    done = subprocess.run(
        [sys.executable, "-m", "drasi_ray.ops.cli", "run", app_yaml, "--quiet", "--exit-when-idle"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = _status(app_yaml, capsys)
    after = report["sources"]["sensors"]  # type: ignore[index]
    assert (after["lag"], after["pending"], after["length"]) == (0, 0, 200)
    query = report["queries"]["all-sensors"]  # type: ignore[index]
    assert query["rows"] == 200 and query["stream_sequence"] == 200
    assert query["last_sequence"] == 200


def _app(redis_url: str, consumers: int = 1, start_id: str = "$") -> DrasiRay:
    return one_source_app(
        redis_url,
        "sensor-changes",
        {"all-sensors": SENSOR_QUERY},
        source_id="sensors",
        prefix="ops",
        consumers=consumers,
        start_id=start_id,
        claim_idle_ms=1000,
    )


def test_replay_applies_history_the_group_skipped(
    ray_session: None, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Publisher.from_url(redis_url) as publisher:
        publisher.publish("sensor-changes", [_event(f"old-{i}", i) for i in range(20)])
    app = _app(redis_url, start_id="$")  # Drasi's default: history is skipped
    app.start()
    try:
        app.wait_until_idle(30)
        assert app.results("all-sensors") == []
        app_yaml = _write_app(tmp_path, redis_url, app_id=app.app_id)
        assert cli.main(["replay", "sensors", "--from", "0", app_yaml]) == 0
        wait_until(lambda: len(app.results("all-sensors")) == 20, what="the replayed rows")
        app.wait_until_idle(30)
        ids = sorted(row["id"] for row in app.results("all-sensors"))
    finally:
        app.stop()
    assert ids == sorted(f"old-{i}" for i in range(20))


def _applied(app: DrasiRay) -> int:
    """Changes the coordinator applied so far."""
    applied: int = app.status().totals.applied
    return applied


@contextmanager
def _producing(redis_url: str, sensors: int) -> Iterator[dict[str, float]]:
    """A producer thread publishing 20 readings of ``sensors`` sensors every 20 ms until the
    block ends; yields each sensor's last published temperature (complete once it ended)."""
    stop = threading.Event()
    published: dict[str, float] = {}

    def produce() -> None:
        with Publisher.from_url(redis_url) as publisher:
            number = 0
            while not stop.is_set():
                batch = {f"s{(number + i) % sensors}": float(number + i) for i in range(20)}
                publisher.publish("sensor-changes", [_event(k, v) for k, v in batch.items()])
                published.update(batch)
                number += 20
                time.sleep(0.02)  # paces the producer; no test waits on it

    producer = threading.Thread(target=produce)
    producer.start()
    try:
        yield published
    finally:
        stop.set()
        producer.join()


def test_scale_up_and_down_while_changes_flow_loses_nothing(
    ray_session: None, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = _app(redis_url, consumers=1)
    app.start()
    client = redis.Redis.from_url(redis_url)
    try:
        with _producing(redis_url, sensors=50) as published:
            assert app.scale("sensors", 3) == 1
            group = keys.consumer_group(app.app_id)
            assert len(client.xinfo_consumers("sensor-changes", group)) == 3
            applied = _applied(app)  # changes flow through three consumers for a while
            wait_until(lambda: _applied(app) >= applied + 200, what="changes through 3 consumers")
            assert app.scale("sensors", 1) == 3
            names = [c["name"] for c in client.xinfo_consumers("sensor-changes", group)]
            assert names == [b"sensors-0"]
            applied = _applied(app)
            wait_until(lambda: _applied(app) >= applied + 100, what="changes through 1 consumer")
        app.wait_until_idle(60)
        rows = {row["id"]: row["temperature"] for row in app.results("all-sensors")}
        consumers = app.status().consumers("sensors")
    finally:
        app.stop()
    assert rows == published  # every sensor at its last published value
    assert len(consumers) == 1
    info = client.xinfo_groups("sensor-changes")[0]
    assert info["pending"] == 0


def test_cli_scale_finds_the_running_apps_actors(
    ray_session: None, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_yaml = _write_app(tmp_path, redis_url)
    app = DrasiRay.from_yaml(app_yaml)
    app.start()
    client = redis.Redis.from_url(redis_url)
    try:
        assert cli.main(["scale", "sensors", "2", app_yaml]) == 0
        assert "1 -> 2 consumers" in capsys.readouterr().out
        group = keys.consumer_group(app.app_id)
        assert len(client.xinfo_consumers("sensor-changes", group)) == 2
        with Publisher.from_url(redis_url) as publisher:
            publisher.publish("sensor-changes", [_event(f"s{i}", i) for i in range(40)])
        app.wait_until_idle(30)
        assert len(app.results("all-sensors")) == 40
        assert cli.main(["scale", "sensors", "1", app_yaml]) == 0
        assert len(client.xinfo_consumers("sensor-changes", group)) == 1
    finally:
        app.stop()


def test_rescaling_the_store_shards_while_changes_flow_moves_every_element(
    ray_session: None, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1 -> 3 shards through the app, 3 -> 2 through the command line, while a producer
    publishes: every sensor ends at its last value, each shard holds exactly the elements it
    owns, and nothing is left pending."""
    app_yaml = _write_app(tmp_path, redis_url, consumers=2)
    app = DrasiRay.from_yaml(app_yaml)
    app.start()
    try:
        with _producing(redis_url, sensors=200) as published:
            applied = _applied(app)
            wait_until(lambda: _applied(app) >= applied + 200, what="changes through 1 shard")
            assert app.scale_shards(3) == 1
            applied = _applied(app)
            wait_until(lambda: _applied(app) >= applied + 200, what="changes through 3 shards")
            assert cli.main(["scale", "--shards", "2", app_yaml]) == 0
            assert "3 -> 2 store shards" in capsys.readouterr().out
            applied = _applied(app)
            wait_until(lambda: _applied(app) >= applied + 200, what="changes through 2 shards")
        app.wait_until_idle(60)
        rows = {row["id"]: row["temperature"] for row in app.results("all-sensors")}
        held = ray.get(app.coordinator_actor().elements_by_shard.remote("sensors"))
        shard_actors = len(_shards(app))
    finally:
        app.stop()
    assert rows == published
    assert shard_actors == 2 and sorted(held) == [0, 1]
    owners = {index: [element.id for element in elements] for index, elements in held.items()}
    assert sorted(element_id for ids in owners.values() for element_id in ids) == sorted(
        published
    ), "every element on exactly one shard"
    for index, ids in owners.items():
        wrong = [element_id for element_id in ids if shard_of(element_id, 2) != index]
        assert not wrong, f"shard {index} holds elements it does not own: {wrong}"
    group = redis.Redis.from_url(redis_url).xinfo_groups("sensor-changes")[0]
    assert group["pending"] == 0


def _shards(app: DrasiRay) -> list[object]:
    """The app's store shards as they are now (the command line may have changed them)."""
    return [app.coordinator_actor(), *scaling.find_shards(app.namespace)]
