"""The CLI subcommands that need only Redis: validate, publish, status, dlq, replay, --help."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

from drasi_ray.model import keys
from drasi_ray.model.partitions import stream_for
from drasi_ray.ops import cli
from drasi_ray.source.decode import encode_cloud_event
from drasi_ray.streams.records import DeadLetter

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
GROUP = keys.consumer_group("cli-app")
SUBCOMMANDS = [
    "demo",
    "run",
    "dashboard",
    "validate",
    "publish",
    "status",
    "results",
    "dlq",
    "replay",
    "scale",
]
SUBCOMMANDS += ["apply", "list", "describe", "delete", "watch"]

APP = """\
id: cli-app
sources:
  - id: sensors
    properties:
      redis_url: {url}
      stream_key: sensor-changes
queries:
  - id: hot
    sources: [sensors]
    query: >
      MATCH (s:Sensor)
      WHERE s.temperature > 70
      RETURN s.id AS id
    reactions:
      - kind: platform
"""


def _app_file(tmp_path: Path, url: str, text: str = APP) -> str:
    path = tmp_path / "app.yaml"
    path.write_text(text.format(url=url))
    return str(path)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_help_teaches_with_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    assert "examples:" in capsys.readouterr().out


def test_validate_reports_a_bad_key_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = APP.replace(
        "      stream_key: sensor-changes\n", "      stream_key: s\n      batch_sise: 5\n"
    )
    assert cli.main(["validate", _app_file(tmp_path, "redis://localhost:6379", text)]) == 1
    out = capsys.readouterr().out.strip()
    assert out.endswith("app.yaml:7:7: sources.0.properties.batch_sise: unknown key"), out


def test_validate_reports_a_bad_query_at_the_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = APP.replace("RETURN s.id AS id", "RETURN s.id AS id ORDER BY s.id")
    assert cli.main(["validate", _app_file(tmp_path, "redis://localhost:6379", text)]) == 1
    out = capsys.readouterr().out.strip()
    # the file's line 13 is "      RETURN s.id AS id ORDER BY s.id": ORDER starts at column 25
    assert "app.yaml:13:25: queries.0.query: ORDER BY is not supported" in out, out
    assert "(query line 1, column 61)" in out


def test_validate_reads_a_gql_query_as_gql(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gql = APP.replace("    query: >\n", "    query_language: GQL\n    query: >\n").replace(
        "WHERE s.temperature > 70", "FILTER s.temperature > 70"
    )
    assert cli.main(["validate", _app_file(tmp_path, "redis://localhost:6379", gql)]) == 0
    bad = gql.replace("RETURN s.id AS id", "RETURN toUpper(s.id) AS id")
    assert cli.main(["validate", _app_file(tmp_path, "redis://localhost:6379", bad)]) == 1
    out = capsys.readouterr().out.strip()
    assert "app.yaml:14:14: queries.0.query: unknown GQL function 'toUpper'; GQL writes" in out


def test_validate_accepts_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", str(EXAMPLES / "app.yaml")]) == 0
    assert capsys.readouterr().out.strip().endswith(": ok")


def test_publish_wraps_change_events_and_passes_cloud_events(
    redis_url: str, tmp_path: Path
) -> None:
    events = (EXAMPLES / "sensor-events.jsonl").read_text().splitlines()
    cloud_event = {"id": "e-1", "source": "x", "type": "t", "data": [json.loads(events[0])]}
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([*events, "", json.dumps(cloud_event)]) + "\n")
    argv = ["publish", "feed", str(path), "--redis-url", redis_url, "--batch", "2"]
    assert cli.main([*argv, "--progress", "always"]) == 0
    entries: Any = redis.Redis.from_url(redis_url).xrange("feed")
    documents = [orjson.loads(fields[b"data"]) for _, fields in entries]
    assert len(documents) == 6
    assert [doc["data"] for doc in documents[:5]] == [[json.loads(line)] for line in events]
    assert documents[5] == cloud_event


def test_publish_names_the_bad_line(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text('{"op": "i", "payload": {}}\n{"nope": 1}\n')
    argv = ["publish", "feed", str(path), "--redis-url", redis_url]
    assert cli.main([*argv, "--no-check"]) == 2
    assert "line 2: neither a change event" in capsys.readouterr().err
    assert cli.main(argv) == 2  # checked as a consumer would, before anything is sent
    assert "line 1: a consumer would dead-letter it: missing or invalid 'payload.source' field" in (
        capsys.readouterr().err
    )


def test_status_computes_lag_pending_and_dead_letters_on_redis_62(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = redis.Redis.from_url(redis_url)
    for number in range(5):
        client.xadd("sensor-changes", {"data": b"{}", "n": str(number)})
    client.xgroup_create("sensor-changes", GROUP, id="0")
    client.xreadgroup(GROUP, "sensors-0", {"sensor-changes": ">"}, count=2)
    client.xadd("sensor-changes:dlq", {"reason": "bad"})
    assert cli.main(["status", _app_file(tmp_path, redis_url), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    source = report["sources"]["sensors"]
    assert (source["length"], source["lag"], source["pending"]) == (5, 3, 2)
    assert source["dead_letters"] == 1
    (stream,) = source["streams"]
    assert (stream["stream"], stream["length"], stream["lag"]) == ("sensor-changes", 5, 3)
    assert [(c["name"], c["pending"]) for c in stream["consumers"]] == [("sensors-0", 2)]
    assert report["queries"]["hot"]["rows"] == 0
    assert cli.main(["status", _app_file(tmp_path, redis_url)]) == 0
    table = capsys.readouterr().out
    assert "sensors-0 2/" in table and "LAG" in table


def test_dlq_list_replay_purge(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dead letters are inspected (payload and reason), fixed (a corrected payload), replayed
    only when a consumer would take them, and a missing id is an error (issue #27, item 7)."""
    client = redis.Redis.from_url(redis_url)
    good = (EXAMPLES / "sensor-events.jsonl").read_text().splitlines()[0]
    bad = good.replace('"op": "i"', '"op": "q"')  # an unknown op
    for number in range(3):
        letter = DeadLetter(
            f"1-{number}", "unknown operation type 'q'",
            {b"data": encode_cloud_event([json.loads(bad)]), b"n": b"%d" % number},
            "sensor-changes", "sensors-0", 1,
        )  # fmt: skip
        client.xadd("sensor-changes:dlq", dict(letter.to_fields(1000)))  # type: ignore[arg-type]
    app = _app_file(tmp_path, redis_url)
    assert cli.main(["dlq", "list", "sensors", app]) == 0
    listing = capsys.readouterr().out
    assert "3 dead letter(s)" in listing and "unknown operation type 'q'" in listing
    assert '"data":[{"op":"q","payload":{"after":{"id":"sensor-1"' in listing
    letters: Any = client.xrange("sensor-changes:dlq")
    first, second, third = (i.decode() for i, _ in letters)
    assert cli.main(["dlq", "show", "sensors", app, "--id", first]) == 0
    shown = capsys.readouterr().out  # every field, JSON indented
    assert '"op": "q"' in shown and "field n:" in shown

    assert cli.main(["dlq", "replay", "sensors", app, "--id", first]) == 2  # still malformed
    assert f"dead letter {first} would be rejected again: unknown operation type 'q'" in (
        capsys.readouterr().err
    )
    assert client.xlen("sensor-changes") == 0 and client.xlen("sensor-changes:dlq") == 3
    fixed = tmp_path / "fixed.json"
    fixed.write_text(good)
    argv = ["dlq", "replay", "sensors", app, "--id", first, "--payload", str(fixed)]
    assert cli.main(argv) == 0
    entries: Any = client.xrange("sensor-changes")
    ((_, fields),) = entries
    assert orjson.loads(fields[b"data"])["data"] == [json.loads(fixed.read_text())]
    assert client.xlen("sensor-changes:dlq") == 2

    fixed.write_text('{"op": "i", "payload": {}}')  # a correction a consumer would reject
    argv = ["dlq", "replay", "sensors", app, "--id", second, "--payload", str(fixed)]
    assert cli.main(argv) == 2
    assert "the corrected payload for" in capsys.readouterr().err
    assert cli.main(["dlq", "replay", "sensors", app, "--id", second, "--force"]) == 0
    assert client.xlen("sensor-changes") == 2

    for action in ("replay", "purge", "show"):  # an id that is not there
        assert cli.main(["dlq", action, "sensors", app, "--id", "123-0"]) == 2
        assert "no dead letter 123-0 in sensor-changes:dlq" in capsys.readouterr().err
    assert cli.main(["dlq", "purge", "sensors", app, "--id", "abc"]) == 2
    assert "--id 'abc' is not a dead-letter id" in capsys.readouterr().err
    assert cli.main(["dlq", "purge", "sensors", app, "--id", third]) == 0
    assert client.xlen("sensor-changes:dlq") == 0


def test_replay_moves_the_group_position(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = redis.Redis.from_url(redis_url)
    ids = [client.xadd("sensor-changes", {"data": b"{}"}).decode() for _ in range(3)]
    client.xgroup_create("sensor-changes", GROUP, id="$")
    assert cli.main(["replay", "sensors", "--from", ids[0], _app_file(tmp_path, redis_url)]) == 0
    assert f"{ids[-1]} -> {ids[0]}" in capsys.readouterr().out
    group = client.xinfo_groups("sensor-changes")[0]
    assert group["last-delivered-id"].decode() == ids[0]


PARTITIONED = APP.replace(
    "      stream_key: sensor-changes\n", "      stream_keys: [part-0, part-1, part-2]\n"
)


def test_a_partitioned_source_through_publish_status_dlq_and_replay(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = redis.Redis.from_url(redis_url)
    streams = ["part-0", "part-1", "part-2"]
    lines = tmp_path / "events.jsonl"
    events = [
        {"op": "u", "payload": {"after": {"id": f"s{n % 9}", "labels": ["Sensor"],
         "properties": {"n": n}}, "source": {"db": "d", "table": "node", "ts_ns": n}}}
        for n in range(45)
    ]  # fmt: skip
    lines.write_bytes(b"\n".join(orjson.dumps(event) for event in events))
    publish = ["publish", ",".join(streams), str(lines), "--redis-url", redis_url]
    assert cli.main(publish) == 0
    placed: dict[str, list[int]] = {}
    for stream in streams:
        written: Any = client.xrange(stream)
        for _, fields in written:
            (event,) = orjson.loads(fields[b"data"])["data"]
            element = event["payload"]["after"]
            assert stream_for(element["id"], streams) == stream
            placed.setdefault(element["id"], []).append(element["properties"]["n"])
    assert placed == {f"s{k}": list(range(k, 45, 9)) for k in range(9)}  # in order, each
    app = _app_file(tmp_path, redis_url, PARTITIONED)

    assert cli.main(["replay", "sensors", "--from", "0", app]) == 0  # creates the groups
    assert cli.main(["replay", "sensors", "--from", "$", "--stream", "part-1", app]) == 0
    capsys.readouterr()
    assert cli.main(["status", app, "--json"]) == 0
    source = json.loads(capsys.readouterr().out)["sources"]["sensors"]
    lengths = [client.xlen(stream) for stream in streams]
    assert [s["stream"] for s in source["streams"]] == streams
    assert [s["lag"] for s in source["streams"]] == [lengths[0], 0, lengths[2]]
    assert source["lag"] == lengths[0] + lengths[2] and source["length"] == 45
    assert cli.main(["replay", "sensors", "--from", "0", "--stream", "nope", app]) == 2

    for number, stream in enumerate(["part-2", "part-1"]):
        letter = DeadLetter("1-0", "bad", {b"data": b"x%d" % number}, stream, "sensors-0", 1)
        client.xadd("part-0:dlq", dict(letter.to_fields(1000)))  # type: ignore[arg-type]
    assert cli.main(["dlq", "replay", "sensors", app, "--force"]) == 0
    part_2: Any = client.xrange("part-2")
    part_1: Any = client.xrange("part-1")
    assert part_2[-1][1] == {b"data": b"x0"}
    assert part_1[-1][1] == {b"data": b"x1"}
    assert client.xlen("part-0:dlq") == 0


def test_validate_refuses_the_fused_layout_with_more_than_one_shard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = APP + "scaling:\n  layout: fused\n  shards: 2\n"
    assert cli.main(["validate", _app_file(tmp_path, "redis://localhost:6379", text)]) == 1
    out = capsys.readouterr().out.strip()
    assert "layout fused runs one store shard and one shared query host" in out, out
    assert "Traceback" not in out
