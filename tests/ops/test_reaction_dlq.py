"""``drasi-ray dlq ... --reaction``: an HTTP reaction's dead letters listed, shown, replayed
through the reaction (the same request, idempotency key and token as the refused one) and
purged, against a real HTTP server, a real Redis and an app run on a local Ray."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import redis

from drasi_ray import DrasiRay
from drasi_ray.model import keys
from drasi_ray.model.changes import Op, node
from drasi_ray.ops import cli
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing.http_sink import HttpSink, Received

TOKEN = "dlq-t0ken"
APP = """\
id: {app_id}
sources:
  - id: sensors
    properties:
      redis_url: {url}
      stream_key: {stream}
      block_ms: 100
queries:
  - id: hot
    sources: [sensors]
    query: "MATCH (s:Sensor) WHERE s.t > 70 RETURN s.id AS id, s.t AS t"
reactions:
  - kind: http
    id: hooks
    base_url: {base_url}
    token_file: {token_file}
    max_attempts: 2
    retry_initial_ms: 20
    queries:
      hot:
        added:
          method: PUT
          url: /hot/{{{{after.id}}}}
          body: '{{"t": {{{{after.t}}}}}}'
          headers: {{X-Source-Time: "{{{{sourceTimeMs}}}}"}}
"""
SENSORS = {"s1": 71.5, "s2": 80.0, "s3": 99.0}


def _sensor(sensor_id: str, t: float, minute: int) -> bytes:
    element = node(sensor_id, ["Sensor"], {"id": sensor_id, "t": t})
    when = (1_700_000_000_000 + minute * 60_000) * 1_000_000
    return encode_cloud_event([change_event(Op.INSERT, element, when)])


def _request(item: Received) -> tuple[str, str, bytes, str | None, str | None, str | None]:
    """What the reaction sent: method, path, body, key, source time header, authorization."""
    headers = item.headers
    return (
        item.method,
        item.path,
        item.body,
        item.key,
        headers.get("X-Source-Time"),
        headers.get("Authorization"),
    )


def _dlq(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = cli.main(["dlq", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_a_reaction_s_dead_letters_are_listed_replayed_through_it_and_purged(
    ray_session: None, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app_id = f"rdlq-{uuid.uuid4().hex[:6]}"
    stream = f"sensors-{uuid.uuid4().hex[:6]}"
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with HttpSink() as sink:
        app_yaml = tmp_path / "app.yaml"
        app_yaml.write_text(
            APP.format(
                app_id=app_id,
                url=redis_url,
                stream=stream,
                base_url=sink.url,
                token_file=token_file,
            )
        )
        app = DrasiRay.from_yaml(app_yaml)
        sink.fail(len(SENSORS), 400)  # every diff is refused, so dead-lettered at once
        app.start()
        try:
            with Publisher.from_url(redis_url) as publisher:
                events = [_sensor(s, t, minute) for minute, (s, t) in enumerate(SENSORS.items())]
                publisher.publish(stream, events)
            app.wait_until_idle(60)
            app.flush_reactions(60)
        finally:
            app.stop()  # the replay needs no running app
        refused = {item.key: _request(item) for item in sink.received if item.status == 400}
        assert len(refused) == 3 and all(r[5] == f"Bearer {TOKEN}" for r in refused.values())
        key = keys.reaction_dead_letters(app_id, "hooks")
        ids = [i.decode() for i, _ in redis.Redis.from_url(redis_url).xrange(key)]
        config = str(app_yaml)

        code, out, _ = _dlq(capsys, "list", "hooks", config, "--reaction")
        assert code == 0 and out[0] == f"3 dead letter(s) in {key}"
        assert out[1].startswith(f"{ids[0]}  hot:1:0 added  attempts 1  reason: HTTP 400")
        assert out[2] == f"    request: PUT {sink.url}/hot/s1"
        assert out[3] == '    diff: {"type":"ADD","data":{"id":"s1","t":71.5}}', out
        code, _, err = _dlq(capsys, "list", "hooks", config)
        assert code == 2 and err == [
            "drasi-ray: error: unknown source 'hooks' (sources: sensors); 'hooks' is a "
            "reaction: add --reaction for its dead letters"
        ]
        code, out, _ = _dlq(capsys, "show", "hooks", config, "--reaction", "--id", ids[1])
        assert code == 0 and out[0] == f"dead letter {ids[1]} of reaction hooks"
        assert "  key:        hot:2:0 (added, result sequence 2)" in out
        code, _, err = _dlq(capsys, "replay", "hooks", config, "--reaction", "--id", "1-0")
        assert code == 2
        assert err == [f"drasi-ray: error: no dead letter 1-0 in {key} (see dlq list)"]

        sink.clear()
        code, out, _ = _dlq(capsys, "replay", "hooks", config, "--reaction", "--id", ids[0])
        assert code == 0 and out == ["replayed 1 dead letter(s) through reaction 'hooks'"]
        sink.fail(1, 400)  # the next one is refused again, the last is delivered
        code, out, err = _dlq(capsys, "replay", "hooks", config, "--reaction")
        assert code == 1 and out == ["replayed 1 dead letter(s) through reaction 'hooks'"]
        assert err == [f"drasi-ray: {ids[1]} not delivered (kept): HTTP 400: sink says no"]
        # each replayed request is the refused one: same path, body, key, source time, token
        sent = [_request(item) for item in sink.received]
        assert sent == [refused["hot:1:0"], refused["hot:2:0"], refused["hot:3:0"]]

        code, out, _ = _dlq(capsys, "purge", "hooks", config, "--reaction", "--id", ids[1])
        assert code == 0 and out == [f"purged 1 dead letter(s) from {key}"]
        code, out, _ = _dlq(capsys, "list", "hooks", config, "--reaction")
        assert code == 0 and out == [f"0 dead letter(s) in {key}"]
