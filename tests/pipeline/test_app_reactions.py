"""The app's HTTP and SSE reactions through the public API: one app (Redis, local Ray, a
manual clock), a real HTTP server (:class:`HttpSink`) and an SSE client, shared by the tests.

Every kind of query output goes through both: rows added, updated and deleted; aggregation
diffs and an emptied group; OPTIONAL MATCH rows with nulls; the late rows of a future
function. The HTTP reaction's actor is SIGKILLed mid-stream; the SSE server is resumed by
``Last-Event-ID`` and restarted; a user's mistakes each give one line.
"""

from __future__ import annotations

import functools
import socket
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import ray
import redis

from drasi_ray import (
    ConfigError,
    DrasiRay,
    HttpCall,
    HttpQueryCalls,
    HttpReaction,
    ManualClock,
    SseReaction,
)
from drasi_ray.model.changes import Op, node, relation
from drasi_ray.model.results import diffs_from_platform_event
from drasi_ray.reactions.feed import kind_of
from drasi_ray.reactions.mirror import json_row
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing import browser
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.embedded_redis import EmbeddedRedis, free_port
from drasi_ray.testing.http_sink import HttpSink, Received
from drasi_ray.testing.sse_client import SseClient
from drasi_ray.testing.waiting import wait_until

T0 = 1_700_000_000_000
MINUTE = 60_000
QUERIES = {
    "hot": "MATCH (s:Sensor) WHERE s.t > 70 RETURN s.id AS id, s.t AS t, s.note AS note",
    "zones": "MATCH (s:Sensor) RETURN s.zone AS zone, count(s) AS n, sum(s.t) AS total",
    "homes": (
        "MATCH (z:Zone) OPTIONAL MATCH (s:Sensor)-[:IN]->(z) RETURN z.id AS zone, s.id AS sensor"
    ),
    "steady": (
        "MATCH (s:Sensor) WHERE drasi.trueFor(s.t > 70, duration({minutes: 5})) RETURN s.id AS id"
    ),
}
SCRIPT = "<script>window.pwned = 1</script><img src=x onerror=window.pwned=2>"
HOT_CALLS = HttpQueryCalls(
    added=HttpCall(
        url="/hot/{{after.id}}",
        method="PUT",
        body='{"kind": "added", "row": {{json after}}, "note": "{{after.note}}"}',
    ),
    updated=HttpCall(
        url="/hot/{{after.id}}",
        method="PATCH",
        body='{"kind": "updated", "before": {{json before}}, "row": {{json after}}}',
    ),
    deleted=HttpCall(url="/hot/{{before.id}}?t={{before.t}}", method="DELETE"),
)


class Scene:
    """The shared app and what watches it."""

    def __init__(self, app: DrasiRay, url: str, stream: str, clock: ManualClock, sink: HttpSink):
        self.app, self.redis_url, self.stream, self.clock, self.sink = app, url, stream, clock, sink
        self.client = redis.Redis.from_url(url)

    def publish(self, *events: dict[str, Any]) -> None:
        with Publisher.from_url(self.redis_url) as publisher:
            publisher.publish(self.stream, [encode_cloud_event([event]) for event in events])
        self.settle()

    def settle(self) -> None:
        self.app.wait_until_idle(60)
        self.app.flush_reactions(60)

    def stream_diffs(self, query_id: str) -> list[tuple[str, str, Any, Any]]:
        """(idempotency key, kind, before, after) of every diff in the query's result stream."""
        found = []
        sequences = []
        entries: Any = self.client.xrange(f"{query_id}-results")
        for _id, fields in entries:
            event = orjson.loads(fields[b"data"])
            if event["data"]["kind"] != "change":
                continue
            sequence = event["data"]["sequence"]
            assert sequence not in sequences, f"{query_id} #{sequence} twice in the stream"
            sequences.append(sequence)
            for index, diff in enumerate(diffs_from_platform_event(event)):
                found.append((f"{query_id}:{sequence}:{index}", *kind_of(diff)))
        return found


def _at(minute: int) -> int:
    return (T0 + minute * MINUTE) * 1_000_000


def sensor(op: Op, sensor_id: str, zone: str, t: float, minute: int, note: str = "") -> Any:
    props = {"id": sensor_id, "zone": zone, "t": t, "note": note}
    return change_event(op, node(sensor_id, ["Sensor"], props), _at(minute))


def zone(zone_id: str) -> Any:
    return change_event(Op.INSERT, node(zone_id, ["Zone"], {"id": zone_id}), _at(0))


def placed(op: Op, sensor_id: str, zone_id: str, minute: int) -> Any:
    link = relation(f"{sensor_id}-in-{zone_id}", ["IN"], sensor_id, zone_id, {})
    return change_event(op, link, _at(minute))


@pytest.fixture(scope="module")
def sink() -> Iterator[HttpSink]:
    with HttpSink() as server:
        yield server


TOKEN = "t0ken-from-a-file"


@pytest.fixture(scope="module")
def scene(
    ray_session: None,
    redis_server: EmbeddedRedis,
    sink: HttpSink,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Scene]:
    url = redis_server.url
    token_file = tmp_path_factory.mktemp("secrets") / "hooks-token"
    token_file.write_text(TOKEN + "\n")
    redis.Redis.from_url(url).flushall()
    stream = f"sensors-{uuid.uuid4().hex[:6]}"
    clock = ManualClock(T0)
    app = one_source_app(url, stream, QUERIES, clock=clock, prefix="reactions")
    calls: dict[str, HttpQueryCalls | None] = {"hot": HOT_CALLS, "zones": None}
    calls.update({"homes": None, "steady": None})
    app.add_reaction(
        HttpReaction(
            id="hooks",
            base_url=sink.url,
            queries=calls,
            retry_initial_ms=20,
            token_file=str(token_file),
            headers={"X-Sent-By": "drasi_ray"},
        )
    )
    app.add_reaction(SseReaction(port=free_port()))  # fixed: a restarted server is there again
    app.start()
    try:
        yield Scene(app, url, stream, clock, sink)
    finally:
        app.stop()


def _delivered_diffs(sink: HttpSink, query_id: str) -> list[tuple[str | None, str, Any, Any]]:
    """What the sink got for a query, as (key, kind, before, after)."""
    return [_as_diff(item) for item in sink.first_receipts() if item.key.startswith(f"{query_id}:")]


def _as_diff(item: Received) -> tuple[str | None, str, Any, Any]:
    if item.path.startswith("/hot/"):
        if item.method == "DELETE":
            return item.key, "deleted", {"id": item.path.split("/")[2].split("?")[0]}, None
        body = item.json()
        return item.key, body["kind"], body.get("before"), body["row"]
    body = item.json()
    assert item.path == f"/changes/{body['queryId']}"
    return item.key, body["kind"], body["before"], body["after"]


def _viewer_has(viewer: Any, query_id: str, results: list[dict[str, Any]]) -> bool:
    """Whether the SSE client's table of ``query_id`` holds ``results``."""
    return _same_rows(viewer.rows(query_id), results)


def _same_rows(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> bool:
    def key(rows: list[dict[str, Any]]) -> Counter[bytes]:
        return Counter(orjson.dumps(json_row(row), option=orjson.OPT_SORT_KEYS) for row in rows)

    return key(left) == key(right)


def _check_views(scene: Scene, viewer: SseClient) -> None:
    """The HTTP receiver got every diff of every query, in order, once per key; the SSE
    client's tables equal the queries' results."""
    for query_id in QUERIES:
        expected = scene.stream_diffs(query_id)
        got = _delivered_diffs(scene.sink, query_id)
        if query_id == "hot":  # DELETE carries only the id in its path
            expected = [
                (k, kind, {"id": before["id"]} if kind == "deleted" else before, after)
                for k, kind, before, after in expected
            ]
        assert got == expected, query_id
        results = scene.app.results(query_id)
        wait_until(
            functools.partial(_viewer_has, viewer, query_id, results),
            30,
            what=f"the SSE client's {query_id} table to equal the results",
        )


def test_every_kind_of_result_reaches_the_http_receiver_and_the_sse_client(
    scene: Scene,
) -> None:
    url = scene.app.reaction_url("dashboard")
    with SseClient(url) as viewer:
        scene.publish(
            zone("a"),
            zone("c"),
            sensor(Op.INSERT, "s1", "a", 75.0, 0, note=SCRIPT),
            sensor(Op.INSERT, "s2", "a", 60.0, 0),
            sensor(Op.INSERT, "s3", "b", 80.0, 0, note='quote " and \\ backslash'),
            placed(Op.INSERT, "s1", "a", 0),
        )
        _check_views(scene, viewer)
        scene.publish(
            sensor(Op.UPDATE, "s2", "a", 72.0, 1),  # hot: added; zones: aggregation
            sensor(Op.UPDATE, "s1", "a", 76.0, 1),  # hot: updated
            sensor(Op.DELETE, "s3", "b", 80.0, 1),  # hot: deleted; zone b emptied
            placed(Op.INSERT, "s2", "c", 1),  # homes: c's null row becomes a match
            placed(Op.DELETE, "s1", "a", 1),  # homes: a's match goes back to null
        )
        _check_views(scene, viewer)
        scene.clock.set(T0 + 6 * MINUTE)  # trueFor over 5 minutes: s1 and s2 come late
        scene.settle()
        _check_views(scene, viewer)

    kinds = {
        query_id: Counter(kind for _k, kind, _b, _a in scene.stream_diffs(query_id))
        for query_id in QUERIES
    }
    assert kinds["hot"] == {"added": 3, "updated": 1, "deleted": 1}
    assert kinds["zones"]["updated"] >= 4  # aggregation diffs, zone b's emptying among them
    assert {"zone": "b", "n": 0, "total": 0.0} in scene.app.results("zones")
    assert {"zone": "a", "sensor": None} in scene.app.results("homes")
    assert kinds["steady"] == {"added": 2}
    script_row = next(r for r in scene.sink.first_receipts() if r.path == "/hot/s1")
    assert script_row.json()["note"] == SCRIPT  # escaped into valid JSON, written as sent
    assert script_row.headers["Authorization"] == f"Bearer {TOKEN}"
    assert script_row.headers["X-Sent-By"] == "drasi_ray"
    assert script_row.headers["Content-Type"] == "application/json"
    report = scene.app.status().reactions
    assert report["hooks"]["lag"] == 0 and report["hooks"]["dead_lettered"] == 0
    assert report["dashboard"]["url"] == scene.app.reaction_url("dashboard")


def _kill(actor: Any) -> None:
    pid = ray.get(actor.pid.remote())
    ray.kill(actor, no_restart=False)
    wait_until(lambda: _new_pid(actor, pid), 120, what="the reaction actor's restart")


def _new_pid(actor: Any, old: int) -> bool:
    try:
        return bool(ray.get(actor.pid.remote(), timeout=5) != old)
    except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
        return False


def test_a_killed_http_reaction_resumes_where_it_was_and_repeats_only_calls_in_flight(
    scene: Scene,
) -> None:
    actor = scene.app._reactions.actors["hooks"]
    before = len(scene.sink.received)
    killed: list[str] = []

    def kill_once(item: Received) -> None:
        if item.key and item.key.startswith("zones:") and not killed:
            killed.append(item.key)

    scene.sink.on_request = kill_once
    scene.sink.stall(60, 0.02)  # a slow receiver: the kill lands mid-stream
    try:
        events = [sensor(Op.UPDATE, "s2", "a", 72.0 + i / 10, 10 + i) for i in range(1, 41)]
        with Publisher.from_url(scene.redis_url) as publisher:
            publisher.publish(scene.stream, [encode_cloud_event([e]) for e in events])
            wait_until(lambda: killed, 30, what="a delivery to the receiver")
            _kill(actor)
        scene.settle()
    finally:
        scene.sink.on_request = None
    for query_id in QUERIES:
        assert [d[0] for d in _delivered_diffs(scene.sink, query_id)] == [
            d[0] for d in scene.stream_diffs(query_id)
        ]
    keys = Counter(item.key for item in scene.sink.received[before:] if item.status < 300)
    repeated = {key: count for key, count in keys.items() if count > 1}
    # each query is delivered by a task of its own: at most its call in flight comes again
    assert all(count == 2 for count in repeated.values()), repeated
    assert len({key.split(":")[0] for key in repeated}) == len(repeated) <= len(QUERIES)


def test_a_reconnecting_sse_client_resumes_by_sequence_and_a_restarted_server_resnapshots(
    scene: Scene,
) -> None:
    url = scene.app.reaction_url("dashboard")
    scene.publish(sensor(Op.INSERT, "s9", "z", 90.0, 20))
    with SseClient(url, ["hot"]) as first:
        wait_until(lambda: "snapshot" in first.kinds(), 30, what="the first snapshot")
        resume_at = first.last_id
    scene.publish(sensor(Op.UPDATE, "s9", "z", 77.0, 20))  # missed while disconnected
    with SseClient(url, ["hot"], last_event_id=resume_at) as second:
        wait_until(lambda: "diff" in second.kinds(), 30, what="the missed diff")
        assert second.kinds()[:2] == ["queries", "diff"]  # no snapshot: resumed
        missed = second.events[1].data
        assert missed["changes"][0]["op"] == "update"
        assert missed["changes"][0]["row"]["t"] == 77.0
        resume_at = second.last_id
    _kill(scene.app._reactions.actors["dashboard"])
    wait_until(lambda: _listening(url), 60, what="the restarted SSE server")
    with SseClient(url, ["hot"], last_event_id=resume_at) as third:
        wait_until(lambda: "snapshot" in third.kinds(), 60, what="a fresh snapshot")
        assert _same_rows(third.rows("hot"), scene.app.results("hot"))


def _listening(url: str) -> bool:
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.socket() as probe:
        return probe.connect_ex((host, int(port))) == 0


def test_a_user_s_mistakes_each_get_one_line(scene: Scene, tmp_path: Path) -> None:
    app = DrasiRay(f"mistakes-{uuid.uuid4().hex[:6]}")
    from drasi_ray import PlatformSource, Query

    app.add_source(
        PlatformSource.builder("s").with_redis_url(scene.redis_url).with_stream_key("x").build()
    )
    app.add_query(Query.cypher("hot").query(QUERIES["hot"]).from_source("s").build())
    messages = []
    bad_field = HttpQueryCalls(added=HttpCall(url="/x/{{after.temperature}}"))
    for spec in [
        HttpReaction(id="h", base_url="http://127.0.0.1:9", queries={"hot": bad_field}),
        HttpReaction(id="h", base_url="http://127.0.0.1:9", queries={"cold": None}),
    ]:
        with pytest.raises(ConfigError) as raised:
            app.add_reaction(spec)
        messages.append(str(raised.value))
    token_file = tmp_path / "token"
    app.add_reaction(
        HttpReaction(
            id="h", base_url="http://127.0.0.1:9", queries={"hot": None}, token_file=str(token_file)
        )
    )
    with pytest.raises(ConfigError) as raised:
        app.start()  # the token is read first: nothing starts
    messages.append(str(raised.value))
    assert not app.running
    busy = scene.app.reaction_url("dashboard").split(":")[-1].rstrip("/")
    taken = DrasiRay(f"mistakes-{uuid.uuid4().hex[:6]}")
    taken.add_source(
        PlatformSource.builder("s").with_redis_url(scene.redis_url).with_stream_key("x").build()
    )
    taken.add_reaction(SseReaction(port=int(busy)))
    with pytest.raises(ConfigError) as raised:
        taken.start()
    messages.append(str(raised.value))
    assert not taken.running
    assert messages == [
        "reaction 'h', query 'hot', added: {{after.temperature}} names field 'temperature', "
        "which the query does not return (its fields: id, t, note)",
        "reaction 'h' names unknown queries ['cold']",
        f"reaction 'h': token_file {token_file} does not exist",
        f"reaction 'dashboard': cannot listen on 127.0.0.1:{busy}: address already in use; "
        "set its port (0: any free port)",
    ]


def test_an_unreachable_endpoint_shows_in_status_and_holds_back_nothing_else(
    scene: Scene,
) -> None:
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()  # nothing listens there now
    scene.app.add_reaction(
        HttpReaction(
            id="nowhere",
            base_url=f"http://127.0.0.1:{port}",
            queries={"hot": None},
            retry_initial_ms=10,
            retry_max_ms=50,
            max_attempts=3,
        )
    )
    scene.publish(sensor(Op.UPDATE, "s1", "a", 78.0, 30))
    report = scene.app.status().reactions
    nowhere = report["nowhere"]
    letters = scene.client.xrange(f"drasi:{scene.app.app_id}:reaction:nowhere:dlq")
    assert nowhere["dead_lettered"] == 1 and nowhere["lag"] == 0, letters
    assert nowhere["failures"] == 3
    assert f"127.0.0.1:{port}" in nowhere["last_error"] and "\n" not in nowhere["last_error"]
    assert report["hooks"]["dead_lettered"] == 0  # the other reaction delivered it
    assert ("PATCH", "/hot/s1") in [(r.method, r.path) for r in scene.sink.received[-3:]]


# -- the dashboard in a real browser ----------------------------------------------------------


@pytest.fixture(scope="module")
def page(scene: Scene) -> Iterator[Any]:
    reason = browser.missing_reason()
    if reason is not None:
        pytest.skip(reason)
    with browser.chromium() as context:
        page = context.new_page()
        page.goto(scene.app.reaction_url("dashboard"))
        page.wait_for_selector("#connection.live")
        yield page


def _sorted(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return sorted(rows, key=lambda row: orjson.dumps(row, option=orjson.OPT_SORT_KEYS))


def _page_shows_results(scene: Scene, page: Any, query_id: str) -> None:
    expected = _sorted(browser.shown_rows(scene.app.results(query_id)))
    wait_until(
        lambda: _sorted(browser.table(page, query_id)) == expected,
        30,
        what=f"the page's {query_id} table to show {expected}",
    )
    count = page.locator(f'section.query[data-query="{query_id}"] .count').text_content()
    assert count == str(len(expected))


def test_the_dashboard_in_a_browser_follows_every_change_and_shows_markup_as_text(
    scene: Scene, page: Any, tmp_path: Path
) -> None:
    for query_id in QUERIES:
        _page_shows_results(scene, page, query_id)
    scene.publish(sensor(Op.INSERT, "b1", "d", 91.5, 40, note=SCRIPT))
    _page_shows_results(scene, page, "hot")
    cell = page.locator(
        'section.query[data-query="hot"] tr:has(td:text-is("b1")) td[data-column="note"]'
    )
    assert cell.text_content() == SCRIPT  # shown as text: nothing of it ran or was parsed
    assert page.evaluate("window.pwned") is None
    assert page.locator("section.query img, section.query tbody script").count() == 0
    row = page.locator('section.query[data-query="hot"] tr:has(td:text-is("b1"))')
    assert "row-added" in (row.get_attribute("class") or "")

    scene.publish(sensor(Op.UPDATE, "b1", "d", 93.0, 41, note=SCRIPT))
    _page_shows_results(scene, page, "hot")
    assert "row-updated" in (row.get_attribute("class") or "")
    _page_shows_results(scene, page, "zones")
    groups = len(scene.app.results("zones"))
    chart = page.locator('section.query[data-query="zones"] .chart svg rect')
    assert chart.count() == min(groups, 12)

    scene.publish(sensor(Op.DELETE, "b1", "d", 93.0, 42))
    gone = page.locator('section.query[data-query="hot"] tr.row-deleted:has(td:text-is("b1"))')
    gone.wait_for(state="attached", timeout=30_000)  # highlighted, then removed
    _page_shows_results(scene, page, "hot")
    _page_shows_results(scene, page, "zones")  # group d emptied: its row stays, count 0
    changed = page.locator('section.query[data-query="hot"] .changed').text_content()
    assert changed and changed != "no change yet"
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    assert (tmp_path / "dashboard.png").stat().st_size > 10_000
