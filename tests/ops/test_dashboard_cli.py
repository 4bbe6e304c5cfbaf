"""``drasi-ray dashboard`` and ``drasi-ray demo`` print the dashboard's URL, and it serves."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from pathlib import Path

import pytest

from drasi_ray.model.config import AppConfig
from drasi_ray.model.reaction_specs import SseReaction
from drasi_ray.ops import cli, dashboard
from drasi_ray.ops.demo import run_demo
from drasi_ray.testing.waiting import wait_until

APP = """\
id: dash-app
sources:
  - id: sensors
    properties:
      redis_url: {url}
      stream_key: sensor-changes
      block_ms: 100
queries:
  - id: hot
    sources: [sensors]
    query: MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id
"""


def _app_file(tmp_path: Path, url: str) -> str:
    path = tmp_path / "app.yaml"
    path.write_text(APP.format(url=url))
    return str(path)


def test_dashboard_adds_an_sse_reaction_or_moves_the_one_there_is(tmp_path: Path) -> None:
    config = AppConfig.from_yaml(_app_file(tmp_path, "redis://127.0.0.1:1"))
    added = dashboard.with_dashboard(config, None, None).reactions
    assert added == (SseReaction(id="dashboard", port=8080),)
    moved = dashboard.with_dashboard(
        dashboard.with_dashboard(config, None, 0), "0.0.0.0", 9000
    ).reactions
    assert moved == (SseReaction(id="dashboard", host="0.0.0.0", port=9000),)


def test_dashboard_prints_the_url_serves_the_page_and_stops(
    ray_session: None, redis_url: str, tmp_path: Path
) -> None:
    config = dashboard.with_dashboard(AppConfig.from_yaml(_app_file(tmp_path, redis_url)), None, 0)
    said: list[str] = []
    stop = threading.Event()
    runner = threading.Thread(target=dashboard.serve, args=(config, stop, said.append))
    runner.start()
    try:
        line = wait_until(lambda: next((s for s in said if "dashboard at" in s), None), 120)
        url = line.split("dashboard at ")[1].split(" ")[0]
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as page:
            html = page.read().decode()
            assert "Content-Security-Policy" in page.headers
        assert '<script src="/static/dashboard.js"' in html
        with urllib.request.urlopen(url + "api/queries", timeout=10) as listing:
            queries = json.loads(listing.read())
        assert [(q["id"], q["columns"], q["aggregating"]) for q in queries] == [
            ("hot", ["id"], False)
        ]
    finally:
        stop.set()
        runner.join(timeout=120)
    assert said[-1] == "drasi-ray: stopped"


def test_a_port_in_use_is_one_line_and_exit_status_2(
    ray_session: None, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = cli.main(["dashboard", _app_file(tmp_path, redis_url), "--port", str(port)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (
        f"drasi-ray: error: reaction 'dashboard': cannot listen on 127.0.0.1:{port}: "
        "address already in use; set its port (0: any free port)"
    )


@pytest.mark.slow  # its own Redis and app: ~15 s on a loaded 2-core machine
def test_the_demo_shows_the_dashboard_url_first(ray_session: None) -> None:
    said: list[str] = []
    rows = run_demo(sensors=3, updates=4, consumers=1, interval_s=0.0, echo=said.append)
    assert said[0].startswith("redis: ")
    assert said[1].startswith("dashboard: http://127.0.0.1:")
    assert said[-1 - len(rows)].startswith(f"current results ({len(rows)} rows)")


def test_status_shows_an_http_reaction_s_lag_and_dead_letters_from_redis(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import redis

    from drasi_ray.model import encoding, keys
    from drasi_ray.model.results import QueryResult, platform_change_event
    from drasi_ray.reactions.relay import Position

    text = APP.format(url=redis_url) + (
        "reactions:\n  - kind: http\n    id: hooks\n    base_url: http://127.0.0.1:9\n"
        "    queries: {hot: null}\n"
    )
    path = tmp_path / "app.yaml"
    path.write_text(text)
    client = redis.Redis.from_url(redis_url)
    for sequence in (1, 2, 3):
        event = platform_change_event(QueryResult("hot", sequence, 0, 0, ()))
        entry_id = client.xadd("hot-results", {"data": encoding.dumps(event)})
        if sequence == 1:
            position = Position(entry_id.decode(), 1)
            client.hset(keys.reaction_positions("dash-app", "hooks"), "hot", position.dumps())
    client.xadd(keys.reaction_dead_letters("dash-app", "hooks"), {"reason": "HTTP 400"})
    assert cli.main(["status", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["reactions"]["hooks"]
    assert report["dead_letters"] == 1
    assert report["queries"] == {"hot": {"sequence": 1, "stream_sequence": 3, "lag": 2}}
    assert cli.main(["status", str(path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[-2].split() == [
        "REACTION",
        "QUERY",
        "DELIVERED",
        "TO",
        "STREAM",
        "SEQUENCE",
        "LAG",
        "DLQ",
    ]
    assert table[-1].split() == ["hooks", "hot", "1", "3", "2", "1"]


def test_validate_refuses_a_template_field_the_query_does_not_return(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(
        APP.format(url="redis://127.0.0.1:1")
        + "reactions:\n  - kind: http\n    id: hooks\n    base_url: http://h\n    queries:\n"
        + "      hot:\n        added: {url: '/s/{{after.temp}}'}\n"
    )
    assert cli.main(["validate", str(path)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line == (
        f"{path}:18:9: reactions.0.queries.hot: reaction 'hooks', query 'hot', added: "
        "{{after.temp}} names field 'temp', which the query does not return (its fields: id)"
    )
