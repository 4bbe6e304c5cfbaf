"""The app's reactions: diffs per second the HTTP reaction delivers to a local server, and how
long a change takes to reach a browser showing the dashboard.

(a) **HTTP throughput.** One query returning every sensor's temperature (each update is one
    diff), an HTTP reaction posting to :class:`~drasi_ray.testing.http_sink.HttpSink` (an
    aiohttp server in this process). The receiver is down while ``--diffs`` sensor updates are
    published and applied, so the results wait in the query's result stream; the clock runs
    from the receiver coming back until it has every diff. Once with one request per diff
    (the default call), once with ``batch_path`` and ``--batch`` diffs per request.
(b) **Change-to-browser latency.** The dashboard (an SSE reaction) open in headless Chromium
    (Playwright on Debian's ``/usr/bin/chromium``). A paced publisher sends sensor updates at
    each ``--rates`` (changes/s) for ``--duration`` seconds, each stamped with the wall time
    just before its XADD (the property ``sent``, ms); the page notes ``Date.now()`` when it has
    applied the diff to its table (its ``drasi:diff`` event). Latency = that minus ``sent``:
    Redis, the consumer, the store, the query, the platform reaction's write, the SSE server's
    read and send, and the page's update of its table. Skipped, saying why, without Chromium.

``--screenshot PATH`` then shows a small scene (a filter and an aggregating query) on the
dashboard and saves the page as ``PATH`` (docs/images/dashboard.png is made so).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import redis

from bench.common import bench_env, command_line, format_table, load_average, print_lines, rate
from bench.results import Recorder
from drasi_ray import DrasiRay, HttpReaction, SseReaction
from drasi_ray.model.changes import Op, node
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.streams.publisher import Publisher
from drasi_ray.testing import browser
from drasi_ray.testing.apps import one_source_app
from drasi_ray.testing.http_sink import HttpSink
from drasi_ray.testing.waiting import wait_until

READINGS = "MATCH (s:Sensor) RETURN s.id AS id, s.temperature AS temperature, s.sent AS sent"
QUERY_ID = "readings"
SENSORS = 200
COLLECT = """() => {
    window.latencies = [];
    document.addEventListener("drasi:diff", (event) => {
        const { changes, receivedMs, timeMs } = event.detail;
        for (const change of changes) {
            if (change.row && change.row.sent) {
                window.latencies.push([receivedMs - change.row.sent, timeMs - change.row.sent]);
            }
        }
    });
}"""


@dataclass(frozen=True)
class HttpRun:
    label: str
    diffs: int
    seconds: float
    requests: int

    @property
    def rate(self) -> float:
        return rate(self.diffs, self.seconds)


@dataclass(frozen=True)
class LatencyRun:
    offered: int
    changes: int
    received: int
    latencies_ms: tuple[float, ...]
    """per change: XADD to the page's table updated"""
    server_ms: tuple[float, ...]
    """per change: XADD to the SSE server applying it (the rest is sending and the page)"""
    loads: tuple[float, float]

    def p(self, q: float, server: bool = False) -> float:
        ordered = sorted(self.server_ms if server else self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _reading(index: int, sensors: int, sent_ms: float | None = None) -> bytes:
    sensor_id = f"sensor-{index % sensors}"
    temperature = 50.0 + (index * 7919 % 4000) / 100  # changes every update
    properties: dict[str, Any] = {"id": sensor_id, "temperature": temperature}
    if sent_ms is not None:
        properties["sent"] = sent_ms
    element = node(sensor_id, ["Sensor"], properties)
    return encode_cloud_event([change_event(Op.UPDATE, element, time.time_ns())])


def _app(url: str, prefix: str) -> tuple[DrasiRay, str]:
    stream = f"{prefix}-{uuid.uuid4().hex[:6]}"
    app = one_source_app(url, stream, {QUERY_ID: READINGS}, prefix=prefix, batch_size=500)
    return app, stream


# --------------------------------------------------------------------------------------------
# (a) HTTP throughput
# --------------------------------------------------------------------------------------------


def _diffs_in_stream(client: redis.Redis) -> int:
    count = 0
    entries: Any = client.xrange(f"{QUERY_ID}-results")
    for _id, fields in entries:
        data = orjson.loads(fields[b"data"])["data"]
        if data["kind"] == "change":
            count += len(data["addedResults"]) + len(data["updatedResults"])
            count += len(data["deletedResults"])
    return count


def _delivered(sink: HttpSink, batched: bool) -> int:
    received = sink.delivered()
    if not batched:
        return len({item.key for item in received})
    return len({diff["idempotencyKey"] for item in received for diff in item.json()})


def http_run(url: str, diffs: int, batch: int | None) -> HttpRun:
    """Deliver a backlog of ``diffs`` results to a local server (module docstring, (a))."""
    redis.Redis.from_url(url).flushall()
    app, stream = _app(url, "bench-http")
    with HttpSink() as sink:
        app.add_reaction(
            HttpReaction(
                id="bench",
                base_url=sink.url,
                queries={QUERY_ID: None},
                max_attempts=1_000_000,
                retry_initial_ms=10,
                retry_max_ms=20,
                max_lag=10_000_000,
                batch_path="/batch" if batch else None,
                max_batch=batch or 100,
            )
        )
        app.start()
        try:
            sink.go_away()
            with Publisher.from_url(url) as publisher:
                publisher.publish(stream, [_reading(i, diffs) for i in range(diffs)])
            app.wait_until_idle(600)
            client = redis.Redis.from_url(url)
            wait_until(lambda: _diffs_in_stream(client) >= diffs, 600, what="the result stream")
            started = time.perf_counter()
            sink.come_back()
            wait_until(lambda: _delivered(sink, batch is not None) >= diffs, 600, poll_s=0.05)
            seconds = time.perf_counter() - started
            label = f"batches of {batch} diffs (batch_path)" if batch else "one request per diff"
            return HttpRun(label, diffs, seconds, len(sink.delivered()))
        finally:
            app.stop()


# --------------------------------------------------------------------------------------------
# (b) change-to-browser latency
# --------------------------------------------------------------------------------------------


def _publish_paced(url: str, stream: str, offered: int, duration_s: float, offset: int) -> int:
    """Publish ``offered`` changes/s for ``duration_s``, each stamped as it goes; the count."""
    total = int(offered * duration_s)
    start = time.perf_counter()
    with Publisher.from_url(url) as publisher:
        sent = 0
        while sent < total:
            due = min(total, int((time.perf_counter() - start) * offered) + 1)
            if due <= sent:
                time.sleep(0.0005)
                continue
            now = time.time() * 1000
            publisher.publish(
                stream, [_reading(offset + i, SENSORS, now) for i in range(sent, due)]
            )
            sent = due
    return total


def latency_runs(url: str, rates: Sequence[int], duration_s: float) -> list[LatencyRun]:
    """The dashboard's change-to-browser latency at each offered rate (module docstring)."""
    redis.Redis.from_url(url).flushall()
    app, stream = _app(url, "bench-dash")
    app.add_reaction(SseReaction(port=0))
    app.start()
    runs = []
    try:
        with browser.chromium() as context:
            page = context.new_page()
            page.goto(app.reaction_url("dashboard"))
            page.wait_for_selector("#connection.live")
            page.evaluate(COLLECT)
            _publish_paced(url, stream, 200, 1.0, 0)  # warm up: every sensor's row exists
            app.wait_until_idle(120)
            offset = 10_000
            for offered in rates:
                runs.append(_latency_run(app, page, url, stream, offered, duration_s, offset))
                offset += int(offered * duration_s) + 1
    finally:
        app.stop()
    return runs


def _latency_run(
    app: DrasiRay, page: Any, url: str, stream: str, offered: int, duration_s: float, offset: int
) -> LatencyRun:
    page.evaluate("() => { window.latencies = []; }")
    before = load_average()
    changes = _publish_paced(url, stream, offered, duration_s, offset)
    app.wait_until_idle(300)
    received = 0
    try:
        received = wait_until(
            lambda: (n := page.evaluate("window.latencies.length")) >= changes and n,
            60,
            what="every change in the browser",
        )
    except TimeoutError:
        received = page.evaluate("window.latencies.length")
    pairs = page.evaluate("window.latencies")
    latencies = tuple(float(total) for total, _server in pairs)
    server = tuple(float(server) for _total, server in pairs)
    cut_off = app.status().reactions["dashboard"]["cut_off"]
    if cut_off:
        print(f"the browser was cut off {cut_off} time(s) (fell behind the client buffer)")
    return LatencyRun(offered, changes, int(received), latencies, server, (before, load_average()))


# --------------------------------------------------------------------------------------------
# the screenshot of the docs
# --------------------------------------------------------------------------------------------

SCENE = {
    "hot-sensors": (
        "MATCH (s:Sensor) WHERE s.temperature > 70 "
        "RETURN s.id AS id, s.location AS location, s.temperature AS temperature, s.note AS note"
    ),
    "by-location": (
        "MATCH (s:Sensor) RETURN s.location AS location, count(s) AS sensors, "
        "avg(s.temperature) AS average"
    ),
}


def _sensor(op: Op, sensor_id: str, location: str, temperature: float, note: str = "") -> bytes:
    properties = {"id": sensor_id, "location": location, "temperature": temperature, "note": note}
    element = node(sensor_id, ["Sensor"], properties)
    return encode_cloud_event([change_event(op, element, time.time_ns())])


def screenshot(url: str, path: Path) -> None:
    """Show :data:`SCENE` on the dashboard mid-change and save the page as ``path``."""
    stream = f"scene-{uuid.uuid4().hex[:6]}"
    app = one_source_app(url, stream, SCENE, prefix="scene")
    app.add_reaction(SseReaction(port=0))
    app.start()
    first = [
        _sensor(Op.INSERT, "sensor-1", "Building A", 74.2),
        _sensor(Op.INSERT, "sensor-2", "Building A", 68.0),
        _sensor(Op.INSERT, "sensor-3", "Building B", 81.5, note="<script>alert(1)</script>"),
        _sensor(Op.INSERT, "sensor-4", "Warehouse", 71.0),
        _sensor(Op.INSERT, "sensor-5", "Building B", 65.3),
        _sensor(Op.INSERT, "sensor-6", "Lab 1", 77.8),
    ]
    later = [
        _sensor(Op.UPDATE, "sensor-2", "Building A", 72.4),  # added to hot-sensors
        _sensor(Op.UPDATE, "sensor-1", "Building A", 75.9),  # updated
        _sensor(Op.DELETE, "sensor-4", "Warehouse", 71.0),  # deleted; Warehouse emptied
    ]
    try:
        with browser.chromium() as context, Publisher.from_url(url) as publisher:
            page = context.new_page()
            page.set_viewport_size({"width": 1280, "height": 620})
            page.goto(app.reaction_url("dashboard"))
            page.wait_for_selector("#connection.live")
            publisher.publish(stream, first)
            app.wait_until_idle(60)
            time.sleep(2.0)  # the first rows' highlight fades
            publisher.publish(stream, later)
            app.wait_until_idle(60)
            page.wait_for_selector("tr.row-deleted")
            path.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(path))
    finally:
        app.stop()


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def _report(http: list[HttpRun], latency: list[LatencyRun], recorder: Recorder) -> None:
    rows: list[list[object]] = [
        [run.label, f"{run.diffs:,}", run.requests, f"{run.seconds:.2f}", f"{run.rate:,.0f}"]
        for run in http
    ]
    print_lines(format_table(["HTTP reaction", "diffs", "requests", "s", "diffs/s"], rows))
    for run in http:
        recorder.add(
            f"HTTP reaction to a local aiohttp server, {run.label}",
            round(run.rate),
            "diffs/s",
            detail=f"a backlog of {run.diffs:,} diffs in the result stream, {run.requests:,} "
            "requests; the server runs in the benchmark's process",
        )
    rows = [
        [
            f"{late.offered:,}",
            f"{late.received:,}/{late.changes:,}",
            f"{statistics.median(late.latencies_ms) if late.latencies_ms else 0:.1f}",
            f"{late.p(0.99):.1f}",
            f"{max(late.latencies_ms, default=0):.1f}",
            f"{late.p(0.5, server=True):.1f} / {late.p(0.99, server=True):.1f}",
            f"{late.loads[0]:.1f} / {late.loads[1]:.1f}",
        ]
        for late in latency
    ]
    headers = ["changes/s", "in browser", "p50 ms", "p99 ms", "max ms", "to the server p50/p99"]
    headers.append("load before/after")
    print_lines(format_table(headers, rows))
    for late in latency:
        recorder.add(
            f"dashboard change-to-browser latency p99 at {late.offered:,} changes/s",
            round(late.p(0.99), 1),
            "ms",
            detail=f"p50 {late.p(0.5):.1f} ms; XADD to the SSE server p50/p99 "
            f"{late.p(0.5, server=True):.1f}/{late.p(0.99, server=True):.1f} ms; "
            f"{late.received:,} of {late.changes:,} changes seen by headless Chromium, "
            f"{SENSORS} rows, XADD to the page's table updated",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reactions", description=__doc__)
    parser.add_argument("--diffs", type=int, default=5000, help="HTTP backlog (default 5000)")
    parser.add_argument("--batch", type=int, default=100, help="diffs per batch request")
    parser.add_argument("--rates", default="100,1000", help="offered changes/s, comma-separated")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per rate")
    parser.add_argument("--screenshot", type=Path, help="save the dashboard's picture here")
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    recorder = Recorder("reactions", command_line("bench.reactions", argv))
    rates = [int(value) for value in args.rates.split(",") if value]
    with bench_env() as server:
        http = [
            http_run(server.url, args.diffs, None),
            http_run(server.url, args.diffs, args.batch),
        ]
        reason = browser.missing_reason()
        latency = latency_runs(server.url, rates, args.duration) if reason is None else []
        if reason is not None:
            print(f"dashboard latency skipped: {reason}")
        if args.screenshot is not None and reason is None:
            screenshot(server.url, args.screenshot)
            print(f"screenshot: {args.screenshot}")
    _report(http, latency, recorder)
    if not args.no_record:
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
