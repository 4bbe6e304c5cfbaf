"""End-to-end latency and sustained throughput of the whole pipeline, 1 and 2 consumers.

Redis -> consumer actors -> coordinator -> the README's filter query -> a subscriber in this
process, through the public API (DrasiRay, PlatformSource, ``app.subscribe``). The workload is
:mod:`bench.pipeline`'s: realistic sensor updates in which every event changes a result row,
so every event yields exactly one :class:`~drasi_ray.model.results.QueryResult`.

For each consumer count, one app (batch 100, block 50 ms: latency settings) runs:

(a) **sustained**: a backlog of ``--backlog-events`` is released to the running actors; the
    clock stops when the subscriber has received every result. ``--sustained-rounds`` backlogs
    (5 by default), each released to the app and to the peer's loop in turn, both running
    (the order alternates by round), so the two meet the same stretches of machine load: the
    machine is shared, and its speed was seen to change by 2x within minutes. Each backlog is
    published while the group's last-delivered id is held past every id
    (:func:`bench.ingest.hold_backlog`), then one ``XGROUP SETID`` back plus one XADD wake the
    readers. The figure is the median round of each; the ratio is of the medians.
(b) **latency at fixed offered loads** (1k, 5k, 20k events/s by default): a paced publisher
    thread XADDs ``rate x --duration`` events (at most ``--max-events``), in small pipelines,
    each event stamped with the publish time (``ts_ns``) right before its XADD. A collector
    thread long-polls the subscription (``next(timeout)``) and notes ``time.time_ns()`` when a
    batch of results returns. Latency = that time minus the event's XADD time (ns, recorded by
    the publisher for the event the row ``(id, temperature)`` names; ``source_time_ms`` is the
    same instant at 1 ms resolution and is used as a cross-check). ``vs schedule`` measures from
    when the event was *due* (start + i / rate) instead: it includes any publisher lag.
    If the pipeline cannot keep up, the backlog and the latency grow for the whole run: the
    table shows the delivered rate and the p50 latency of the first and last tenth of events.

(c) **the peer**: the same backlogs and loads through the filter query hand-written as one
    redis-py loop in its own process (:mod:`bench.filter_loop`), its results piped to this
    process and collected the same way (``--no-peer`` skips it). It runs beside each app, and
    each backlog and each load goes through the app and the loop in turn, the order alternating.

Between loads the app drains (every result received) and rests 1 s; before each load this
process's heap is frozen (:func:`bench.common.freeze_heap`) so that garbage collection of what
the harness keeps alive does not pause the publisher and the subscriber.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from bench import profiling
from bench.common import (
    bench_env,
    command_line,
    format_table,
    freeze_heap,
    load_average,
    print_lines,
    rate,
)
from bench.filter_loop import FilterLoop
from bench.ingest import GROUP, Held, create_group, hold_backlog, release_held
from bench.pipeline import (
    CPU_HEADERS,
    CPU_NOTE,
    QUERY_ID,
    SOURCE_ID,
    CpuMeter,
    CpuUsage,
    cpu_cells,
    fresh_stream,
    hot_app,
    hot_payloads,
    hot_temperature,
    int_list,
    result_key,
    sensor_id,
    stamp_payload,
)
from bench.results import Recorder
from drasi_ray import DrasiRay
from drasi_ray.actors.subscription import Subscription
from drasi_ray.model.results import QueryResult
from drasi_ray.streams import resp
from drasi_ray.testing.waiting import wait_until

MAX_CHUNK = 200
"""Most events one XADD pipeline carries when the publisher is behind schedule."""
TICK_S = 0.001
"""Shortest sleep of the paced publisher: events due within it go in one pipeline."""
DRAIN_TIMEOUT_S = 300.0
SETTLE_S = 0.5
"""How long the subscriber must take nothing more, once the app is idle, to end a wait."""
TARGET_RATE = 5000
TARGET_P99_MS = 20.0
DRASI_RAY = "drasi_ray"
PEER = "peer"
"""The ``system`` of the hand-written loop's rows (:mod:`bench.filter_loop`)."""

# --------------------------------------------------------------------------------------------
# subscriber side
# --------------------------------------------------------------------------------------------


Arrival = tuple[tuple[str, float], int, int]
"""One result row as the collector keeps it: ``(result_key, source_time_ms, timestamp_ms)``."""


@dataclass
class Received:
    """One batch the subscription returned, and when (``time.time_ns()`` after ``next``)."""

    at_ns: int
    results: tuple[Arrival, ...]  # a row per diff of the batch's results


Poll = Callable[[float], Sequence[Arrival]]
"""Waits up to the given seconds for the next batch of results; () if none came."""


def subscription_poll(subscription: Subscription) -> Poll:
    """Long-polls ``subscription`` (``next(timeout)``), each result reduced to its arrivals."""
    return lambda timeout: _arrivals(subscription.next(timeout=timeout))


class Collector:
    """Long-polls the results (a subscription, or the peer's pipe) in a thread; keeps every
    batch with its arrival time.

    Each result is reduced on arrival to an :data:`Arrival` of strings and numbers, which the
    garbage collector stops tracking: the benchmark process (publisher, subscriber and this
    record) then keeps no growing heap of tracked objects. Keeping the results themselves
    (50,000 dicts per load) made each full collection of this process pause it for 50-100 ms,
    delaying XADDs after their timestamp and the subscriber's next poll: latency of the
    harness, not of the pipeline (see also :func:`bench.common.freeze_heap`).
    """

    def __init__(self, poll: Poll) -> None:
        self._poll = poll
        self._stop = threading.Event()
        self.batches: list[Received] = []
        self.count = 0  # result rows received (one per event in this workload)
        self._thread = threading.Thread(target=self._run, name="collector", daemon=True)

    def start(self) -> Collector:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            arrivals = self._poll(0.2)
            if arrivals:
                at_ns = time.time_ns()
                self.batches.append(Received(at_ns, tuple(arrivals)))
                self.count += len(arrivals)

    def wait_for(self, total: int, timeout_s: float) -> bool:
        """True once ``total`` results arrived in all; False after ``timeout_s``."""
        try:
            wait_until(lambda: self.count >= total, timeout_s, poll_s=0.002)
        except TimeoutError:
            return False
        return True

    def mark(self) -> int:
        """Index of the next batch (results from here on belong to the next phase)."""
        return len(self.batches)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _arrivals(results: Sequence[QueryResult]) -> tuple[Arrival, ...]:
    return tuple(
        (result_key(diff), result.source_time_ms, result.timestamp_ms)
        for result in results
        for diff in result.results
    )


# --------------------------------------------------------------------------------------------
# publisher side
# --------------------------------------------------------------------------------------------


@dataclass
class Published:
    """What the paced publisher did: per event, its due and XADD times (ns)."""

    rate: int
    due_ns: list[int]
    sent_ns: list[int]
    seconds: float = 0.0

    @property
    def achieved_rate(self) -> float:
        return rate(len(self.sent_ns), self.seconds)


def paced_publish(
    client: redis.Redis, stream: str, templates: Sequence[bytes], per_second: int
) -> Published:
    """XADD ``templates`` at ``per_second``, stamping each with its publish time.

    Every wake-up publishes the events due by then in one pipeline (at most
    :data:`MAX_CHUNK`), their ``ts_ns`` and recorded time being ``time_ns()`` just before.
    The XADDs are hand-packed RESP on one connection (:func:`_xadd_all`): through redis-py's
    pipeline this load generator alone took 61% of a core at 5,000 events/s (a pipeline of
    ~5 XADDs per millisecond), CPU the pipeline under test then lacked on a 2-core machine.
    Not :class:`~drasi_ray.streams.publisher.Publisher`, which checks a connection out of the
    pool per call: at ~1,000 calls a second that took 47-57% of a core against 20-36% here
    (alternating runs, 5,000 events/s).
    """
    count = len(templates)
    sent = [0] * count
    origin_ns = time.time_ns()
    due = [origin_ns + (i * 1_000_000_000) // per_second for i in range(count)]
    started = time.perf_counter()
    done = 0
    connection = client.connection_pool.get_connection()
    try:
        while done < count:
            now = time.time_ns()
            upto = min(count, (now - origin_ns) * per_second // 1_000_000_000 + 1, done + MAX_CHUNK)
            if upto <= done:  # at least TICK_S between wake-ups: a real producer batches too
                time.sleep(max((due[done] - now) / 1e9, TICK_S))
                continue
            stamp = str(now).encode()
            _xadd_all(connection, stream, [stamp_payload(t, stamp) for t in templates[done:upto]])
            sent[done:upto] = [now] * (upto - done)
            done = upto
    finally:
        client.connection_pool.release(connection)
    return Published(per_second, due, sent, time.perf_counter() - started)


def _xadd_all(connection: Any, stream: str, payloads: Sequence[bytes]) -> None:
    """``XADD stream * data <payload>`` for each payload, in one write; raise on an error."""
    key = stream.encode()
    connection.send_packed_command(  # a list of chunks (the sync client iterates it)
        [b"".join(resp.pack((b"XADD", key, b"*", b"data", payload)) for payload in payloads)]
    )
    for _ in payloads:
        connection.read_response()  # raises ResponseError on an error reply


# --------------------------------------------------------------------------------------------
# a load's figures
# --------------------------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted values (``q`` in [0, 1])."""
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


@dataclass
class LoadResult:
    """Latencies (ms) of one offered load, in publish order, and the rates."""

    consumers: int
    offered: int
    events: int
    published_rate: float
    delivered_rate: float
    latencies_ms: list[float]
    schedule_ms: list[float]
    source_time_ms: list[float]
    missing: int
    cpu: CpuUsage
    loads: tuple[float, float]
    changes_per_batch: float = 0.0
    system: str = DRASI_RAY
    sorted_ms: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.sorted_ms = sorted(self.latencies_ms)

    def p(self, q: float) -> float:
        return percentile(self.sorted_ms, q)

    @property
    def label(self) -> str:
        return "the hand-written loop" if self.system == PEER else f"{self.consumers} consumer(s)"

    def tenth_p50(self, last: bool) -> float:
        """p50 of the first (or last) tenth of the events in publish order."""
        size = max(len(self.latencies_ms) // 10, 1)
        part = self.latencies_ms[-size:] if last else self.latencies_ms[:size]
        return percentile(sorted(part), 0.5)

    @property
    def steady(self) -> bool:
        """Kept up: delivered >= 95% of offered, and the last tenth's p50 did not grow
        beyond twice the first tenth's (+ 20 ms of slack for jitter)."""
        kept_up = self.delivered_rate >= 0.95 * self.offered
        growth = self.tenth_p50(True) <= 2 * self.tenth_p50(False) + 20.0
        return kept_up and growth and (self.missing == 0 or self.consumers > 1)


def load_figures(
    consumers: int,
    published: Published,
    keys: Sequence[tuple[str, float]],
    batches: Sequence[Received],
    cpu: CpuUsage,
    loads: tuple[float, float],
    system: str = DRASI_RAY,
) -> LoadResult:
    """Match every received row to the event it names; latencies in publish order."""
    index = {key: i for i, key in enumerate(keys)}
    arrived = [0] * len(keys)
    source_ms = [0.0] * len(keys)
    for batch in batches:
        for key, source_time_ms, _produced_ms in batch.results:
            i = index.get(key)
            if i is not None and not arrived[i]:
                arrived[i] = batch.at_ns
                source_ms[i] = batch.at_ns / 1e6 - source_time_ms
    got = [i for i in range(len(keys)) if arrived[i]]
    latencies = [(arrived[i] - published.sent_ns[i]) / 1e6 for i in got]
    schedule = [(arrived[i] - published.due_ns[i]) / 1e6 for i in got]
    last_ns = max((arrived[i] for i in got), default=published.sent_ns[0])
    span_s = (last_ns - published.sent_ns[0]) / 1e9
    # With several consumers a change overtaken by a newer one of the same sensor yields no
    # result (see settle): it was processed all the same, so it counts as delivered.
    processed = len(keys) if consumers > 1 else len(got)
    return LoadResult(
        consumers,
        published.rate,
        len(keys),
        published.achieved_rate,
        rate(processed, span_s),
        latencies,
        schedule,
        [source_ms[i] for i in got],
        len(keys) - len(got),
        cpu,
        loads,
        system=system,
    )


# --------------------------------------------------------------------------------------------
# one app: sustained backlog, then each load
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    consumers: tuple[int, ...]
    rates: tuple[int, ...]
    duration_s: float
    max_events: int
    backlog_events: int
    batch_size: int
    block_ms: int
    sensors: int
    durable: bool
    peer: bool
    record: bool
    profile_dir: Path | None = None
    sustained_rounds: int = 5
    """py-spy profiles of drasi_ray's processes during each load go in ``<dir>/<rate>/``"""


@dataclass(frozen=True)
class Round:
    """One backlog drained: seconds until its last result arrived, CPU meanwhile."""

    events: int
    seconds: float
    cpu: CpuUsage
    loads: tuple[float, float]

    @property
    def rate(self) -> float:
        return rate(self.events, self.seconds)


@dataclass(frozen=True)
class Sustained:
    """One system's sustained rounds, in order; its figures are those of its median round."""

    consumers: int
    rounds: tuple[Round, ...]
    system: str = DRASI_RAY
    changes_per_batch: float = float("nan")

    @property
    def median(self) -> Round:
        """The round of the median rate (the lower middle one of an even count)."""
        ordered = sorted(self.rounds, key=lambda r: r.rate)
        return ordered[(len(ordered) - 1) // 2]

    @property
    def rate(self) -> float:
        return self.median.rate

    @property
    def round_rates(self) -> tuple[float, ...]:
        return tuple(r.rate for r in self.rounds)

    def rounds_text(self) -> str:
        return " ".join(f"{r / 1000:.1f}k" for r in self.round_rates)


def settle(app: DrasiRay, collector: Collector, expected: int, timeout_s: float) -> bool:
    """Wait until the subscriber has ``expected`` results in all (True), or until the app is
    idle and the subscriber takes nothing more (False: some results never come).

    With several consumers an older change can reach the coordinator after a newer change of
    the same element; the versioned store then drops it and it yields no result (docs/semantics.md:
    several consumers converge to the in-order result, intermediate results may be skipped).
    Waiting for those would wait forever, so idleness ends the wait too.

    The usual wait ends within a few ms of the last result, so a CPU meter stopped right after
    it measures the app over the window the peer's is measured over (to its last result).
    While results keep arriving only the subscriber is watched, as the peer's are: the app is
    asked whether it is idle (polls of Redis and a call to the coordinator) only after
    ``SETTLE_S`` without a result, so a drain longer than that is neither disturbed by the
    polls nor metered past its end.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        before = collector.count
        if collector.wait_for(expected, SETTLE_S):  # the usual end: every result came
            return True
        if collector.count > before and time.monotonic() < deadline:
            continue  # still arriving
        app.wait_until_idle(max(deadline - time.monotonic(), 1.0))  # acked and delivered
        before = collector.count
        time.sleep(SETTLE_S)  # the subscriber's long poll takes what the query buffered
        if collector.count == before:
            return collector.count >= expected


def drain_app(
    app: DrasiRay,
    collector: Collector,
    url: str,
    stream: str,
    payloads: Sequence[bytes],
    meter: CpuMeter,
) -> Round:
    """Hold ``payloads`` as a backlog, release it; the round ends when the subscriber has every
    result (or, if some never come, at the last one that came)."""
    with redis.Redis.from_url(url) as client:
        held = hold_backlog(client, url, stream, payloads)
        expected = collector.count + len(payloads)
        mark = collector.mark()
        load_before = load_average()
        meter.start()
        started = time.time_ns()
        release_held(client, stream, held)
        settle(app, collector, expected, DRAIN_TIMEOUT_S)
        cpu = meter.stop()
    last = max((batch.at_ns for batch in collector.batches[mark:]), default=time.time_ns())
    return Round(len(payloads), (last - started) / 1e9, cpu, (load_before, load_average()))


def load_events(
    first_seq: int, per_second: int, options: Options
) -> tuple[list[bytes], list[tuple[str, float]]]:
    """One load's payloads (stamped at publish) and the result key each event yields."""
    count = min(int(per_second * options.duration_s), options.max_events)
    templates = hot_payloads(first_seq, count, options.sensors, live=True)
    keys = [
        (sensor_id(seq, options.sensors), hot_temperature(seq, options.sensors))
        for seq in range(first_seq, first_seq + count)
    ]
    return templates, keys


def run_load(
    app: DrasiRay,
    collector: Collector,
    url: str,
    stream: str,
    meter: CpuMeter,
    first_seq: int,
    per_second: int,
    options: Options,
) -> LoadResult:
    """Publish one offered load, wait for its results, and match them to their events."""
    templates, keys = load_events(first_seq, per_second, options)
    timeout_s = DRAIN_TIMEOUT_S + len(templates) / 1000
    counters = coordinator_counters(app)
    profile_dir = None if options.profile_dir is None else options.profile_dir / str(per_second)
    published, batches, cpu, loads = timed_load(
        url, stream, collector, meter, templates, per_second,
        lambda expected: settle(app, collector, expected, timeout_s), profile_dir,
    )  # fmt: skip
    consumers = len(app.consumer_actors(SOURCE_ID))
    result = load_figures(consumers, published, keys, batches, cpu, loads)
    result.changes_per_batch = changes_per_batch(counters, coordinator_counters(app))
    return result


def timed_load(
    url: str,
    stream: str,
    collector: Collector,
    meter: CpuMeter,
    templates: Sequence[bytes],
    per_second: int,
    wait: Callable[[int], object],
    profile_dir: Path | None = None,
) -> tuple[Published, list[Received], CpuUsage, tuple[float, float]]:
    """Publish ``templates`` at ``per_second`` and ``wait`` until the collector holds the
    count it is given; what was published, the batches received meanwhile, the CPU over the
    load and the load average before -> after (py-spy profiles of the meter's processes in
    ``profile_dir``, if given)."""
    mark, expected = collector.mark(), collector.count + len(templates)
    load_before = load_average()
    freeze_heap()
    pids = {
        f"{role}-{index}": pid
        for role, held in meter.roles.items()
        if role not in ("ray system", "redis")
        for index, pid in enumerate(held)
    }
    with profiling.py_spy_all(pids, profile_dir):
        meter.start()
        with redis.Redis.from_url(url) as client:
            published = paced_publish(client, stream, templates, per_second)
        wait(expected)
        cpu = meter.stop()
    return published, collector.batches[mark:], cpu, (load_before, load_average())


def coordinator_counters(app: DrasiRay) -> tuple[int, int]:
    """The coordinator's ``(batches, changes)`` so far."""
    totals = app.status().totals
    return totals.batches, totals.changes


def changes_per_batch(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Mean changes per batch the coordinator received between two counter readings."""
    batches = after[0] - before[0]
    return (after[1] - before[1]) / batches if batches else 0.0


def run_app(
    url: str, redis_pid: int | None, consumers: int, options: Options
) -> tuple[list[Sustained], list[LoadResult]]:
    """One app with ``consumers`` consumers and, unless ``--no-peer``, the peer's loop beside
    it: the sustained rounds, then every offered load, each through both in turn (the order
    alternating). The sustained rows and the loads of both."""
    stream = fresh_stream(f"latency{consumers}")
    create_group(url, stream)
    app = hot_app(
        url, stream, consumers, options.batch_size, options.block_ms, "latency", options.durable
    )
    app.start()
    subscription = app.subscribe(QUERY_ID, capacity=100_000)
    collector = Collector(subscription_poll(subscription)).start()
    try:
        with contextlib.ExitStack() as stack:
            peer = None
            if options.peer:
                peer = stack.enter_context(PeerBacklog(url, options.batch_size, options.block_ms))
            return _through_both(app, collector, url, stream, peer, redis_pid, consumers, options)
    finally:
        collector.stop()
        subscription.close()
        app.stop()
        with redis.Redis.from_url(url) as client:
            client.delete(stream)


def _through_both(
    app: DrasiRay,
    collector: Collector,
    url: str,
    stream: str,
    peer: PeerBacklog | None,
    redis_pid: int | None,
    consumers: int,
    options: Options,
) -> tuple[list[Sustained], list[LoadResult]]:
    meter = CpuMeter.for_app(app, redis_pid)
    peer_meter = peer.meter(redis_pid) if peer is not None else None
    counters = coordinator_counters(app)
    ours: list[Round] = []
    theirs: list[Round] = []
    events = options.backlog_events
    for number in range(options.sustained_rounds):
        payloads = hot_payloads(number * events, events, options.sensors, live=False)
        steps = [_into(ours, drain_app, app, collector, url, stream, payloads, meter)]
        if peer is not None and peer_meter is not None:
            steps.append(_into(theirs, peer.drain, payloads, peer_meter))
        _in_turn(number, steps)
        mine = ours[-1].rate
        versus = f", peer {theirs[-1].rate:,.0f} ({mine / theirs[-1].rate:.2f}x)" if theirs else ""
        print(f"  {consumers} consumer(s), round {number + 1}: {mine:,.0f} events/s{versus}")
    per_batch = changes_per_batch(counters, coordinator_counters(app))
    sustained = [Sustained(consumers, tuple(ours), DRASI_RAY, per_batch)]
    if theirs:
        sustained.append(Sustained(consumers, tuple(theirs), PEER))
    loads: list[LoadResult] = []
    first_seq = events * options.sustained_rounds
    for number, per_second in enumerate(options.rates):
        steps = [
            _into(loads, run_load, app, collector, url, stream, meter, first_seq, per_second,
                  options)
        ]  # fmt: skip
        if peer is not None and peer_meter is not None:
            steps.append(
                _into(loads, peer_load, url, peer, peer_meter, consumers, first_seq, per_second,
                      options)
            )  # fmt: skip
        _in_turn(number, steps)
        first_seq += loads[-1].events
    return sustained, loads


def _into(out: list[Any], function: Callable[..., Any], *args: Any) -> Callable[[], None]:
    """A step that appends ``function(*args)`` to ``out``."""
    return lambda: out.append(function(*args))


def _in_turn(number: int, steps: list[Callable[[], None]]) -> None:
    """Run ``steps`` (drasi_ray's, then the peer's) in order in even rounds, reversed in odd
    ones, resting 1 s before each: the two meet the same stretches of machine load."""
    for step in steps if number % 2 == 0 else reversed(steps):
        time.sleep(1.0)
        step()


class PeerBacklog:
    """The hand-written loop (:mod:`bench.filter_loop`) reading a fresh stream, its results
    collected as a subscription's; stopped and the stream dropped on exit."""

    def __init__(self, url: str, batch_size: int, block_ms: int):
        self.url = url
        self.stream = fresh_stream("peer")
        create_group(url, self.stream)
        self.loop = FilterLoop(url, self.stream, GROUP, batch_size, block_ms).start()
        self.collector = Collector(self.loop.poll).start()

    def meter(self, redis_pid: int | None) -> CpuMeter:
        """CPU of the loop's process (as ``consumers``), Redis and the rest."""
        return CpuMeter.for_roles({"consumers": [self.loop.pid]}, redis_pid)

    def drain(self, payloads: Sequence[bytes], meter: CpuMeter) -> Round:
        """Hold ``payloads`` as a backlog, release it; the round ends when the last of its
        results arrived. Raises RuntimeError if they do not all arrive within
        :data:`DRAIN_TIMEOUT_S`."""
        with redis.Redis.from_url(self.url) as client:
            held: Held = hold_backlog(client, self.url, self.stream, payloads)
            expected = self.collector.count + len(payloads)
            mark = self.collector.mark()
            load_before = load_average()
            meter.start()
            started = time.time_ns()
            release_held(client, self.stream, held)
            if not self.collector.wait_for(expected, DRAIN_TIMEOUT_S):
                raise RuntimeError(f"the peer delivered {self.collector.count} of {expected}")
            cpu = meter.stop()
        last = max(batch.at_ns for batch in self.collector.batches[mark:])
        return Round(len(payloads), (last - started) / 1e9, cpu, (load_before, load_average()))

    def __enter__(self) -> PeerBacklog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.collector.stop()
        self.loop.stop()
        with redis.Redis.from_url(self.url) as client:
            client.delete(self.stream)


def peer_load(
    url: str,
    peer: PeerBacklog,
    meter: CpuMeter,
    consumers: int,
    first_seq: int,
    per_second: int,
    options: Options,
) -> LoadResult:
    """One offered load through the hand-written loop, measured as :func:`run_load` measures
    the app's (its row's ``consumers``: the app's it ran beside)."""
    templates, keys = load_events(first_seq, per_second, options)
    timeout_s = DRAIN_TIMEOUT_S + len(templates) / 1000
    published, batches, cpu, loads_1m = timed_load(
        url, peer.stream, peer.collector, meter, templates, per_second,
        functools.partial(peer.collector.wait_for, timeout_s=timeout_s),
    )  # fmt: skip
    result = load_figures(consumers, published, keys, batches, cpu, loads_1m, system=PEER)
    result.changes_per_batch = float("nan")  # the loop keeps no such counter
    print(
        f"  peer beside {consumers} consumer(s), {per_second:,}/s offered: delivered "
        f"{result.delivered_rate:,.0f}/s, p50 {result.p(0.5):.1f} p95 {result.p(0.95):.1f} "
        f"p99 {result.p(0.99):.1f} ms",
        flush=True,
    )
    return result


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------


def _per_batch(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def sustained_table(rows: Sequence[Sustained]) -> list[str]:
    """One row per system and consumer count: its median round (the peer's row is the loop run
    beside the app of that consumer count), and every round's events/s."""
    headers = (
        "system", "consumers", "events", "seconds", "events/s", "rounds events/s",
        "changes/batch", *CPU_HEADERS, "load 1m",
    )  # fmt: skip
    return format_table(
        headers,
        [
            (s.system, s.consumers, m.events, f"{m.seconds:.2f}", m.rate, s.rounds_text(),
             _per_batch(s.changes_per_batch, 0), *cpu_cells(m.cpu),
             f"{m.loads[0]:.1f}->{m.loads[1]:.1f}")
            for s in rows
            for m in (s.median,)
        ],
    )  # fmt: skip


def latency_table(rows: Sequence[LoadResult]) -> list[str]:
    headers = (
        "system", "consumers", "offered/s", "events", "published/s", "delivered/s",
        "p50 ms", "p95 ms", "p99 ms", "max ms", "p99 vs schedule ms",
        "p50 first/last tenth ms", "p99 via source_time_ms", "kept up", "load 1m",
    )  # fmt: skip
    body = []
    for r in rows:
        schedule = sorted(r.schedule_ms)
        source = sorted(r.source_time_ms)
        body.append(
            (
                r.system, r.consumers, r.offered, r.events, r.published_rate, r.delivered_rate,
                f"{r.p(0.5):.1f}", f"{r.p(0.95):.1f}", f"{r.p(0.99):.1f}", f"{r.p(1.0):.1f}",
                f"{percentile(schedule, 0.99):.1f}",
                f"{r.tenth_p50(False):.1f} / {r.tenth_p50(True):.1f}",
                f"{percentile(source, 0.99):.1f}",
                f"{'yes' if r.steady else 'NO'}{_missing_note(r)}",
                f"{r.loads[0]:.1f}->{r.loads[1]:.1f}",
            )
        )  # fmt: skip
    return format_table(headers, body)


def _missing_note(row: LoadResult) -> str:
    if not row.missing:
        return ""
    what = "superseded" if row.consumers > 1 else "MISSING"
    return f" ({row.missing} {what})"


def cpu_table(rows: Sequence[LoadResult]) -> list[str]:
    headers = ("system", "consumers", "offered/s", "changes/batch", *CPU_HEADERS)
    body = [
        (r.system, r.consumers, r.offered, _per_batch(r.changes_per_batch, 1), *cpu_cells(r.cpu))
        for r in rows
    ]
    return format_table(headers, body)


def verdict(rows: Sequence[LoadResult]) -> list[str]:
    """The issue's target, p99 <= 20 ms at 5,000 events/s offered, per consumer count."""
    lines = []
    for r in rows:
        if r.offered != TARGET_RATE or r.system != DRASI_RAY:
            continue
        met = r.steady and r.p(0.99) <= TARGET_P99_MS
        lines.append(
            f"Target p99 <= {TARGET_P99_MS:.0f} ms at {TARGET_RATE:,} events/s offered, "
            f"{r.consumers} consumer(s): p99 {r.p(0.99):.1f} ms, delivered "
            f"{r.delivered_rate:,.0f}/s -> {'MET' if met else 'NOT MET'}."
        )
    for r in rows:
        if not r.steady:
            lines.append(
                f"{r.label} at {r.offered:,}/s offered: the pipeline delivered "
                f"{r.delivered_rate:,.0f}/s, so the backlog and the latency grew for the whole "
                f"run (p50 {r.tenth_p50(False):.0f} ms in the first tenth of events, "
                f"{r.tenth_p50(True):.0f} ms in the last): latency unbounded at this load."
            )
    return lines


def versus_peer(sustained: Sequence[Sustained], loads: Sequence[LoadResult]) -> list[str]:
    """drasi_ray's figures against the hand-written loop's of the same run."""
    peers = {s.consumers: s for s in sustained if s.system == PEER}
    lines = []
    for s in sustained:
        peer = peers.get(s.consumers)
        if s.system != DRASI_RAY or peer is None:
            continue
        pairs = ", ".join(
            f"{mine / theirs:.2f}x"
            for mine, theirs in zip(s.round_rates, peer.round_rates, strict=True)
        )
        lines.append(
            f"Sustained, {s.consumers} consumer(s): {s.rate:,.0f} events/s (median of "
            f"{len(s.round_rates)} rounds), {s.rate / peer.rate:.2f}x the hand-written loop's "
            f"{peer.rate:,.0f} (median of its rounds, run in turn); round by round {pairs}."
        )
    peer_loads = {(r.consumers, r.offered): r for r in loads if r.system == PEER}
    for r in loads:
        other = peer_loads.get((r.consumers, r.offered))
        if r.system != DRASI_RAY or other is None:
            continue
        lines.append(
            f"At {r.offered:,} events/s, {r.label}: p50 / p99 {r.p(0.5):.1f} / {r.p(0.99):.1f} "
            f"ms against the hand-written loop's {other.p(0.5):.1f} / {other.p(0.99):.1f} ms."
        )
    return lines


PEER_LABEL = "the query hand-written as one redis-py loop, same run"


def record_figures(
    recorder: Recorder, sustained: Sequence[Sustained], loads: Sequence[LoadResult]
) -> None:
    """Sustained events/s per consumer count, and p50, p99 and the machine's busy cores per
    offered load (with each process's share), each against the hand-written loop's figure of
    the same run."""
    peers = {s.consumers: s for s in sustained if s.system == PEER}
    for s in sustained:
        if s.system != DRASI_RAY:
            continue
        peer = peers.get(s.consumers)
        rounds = len(s.round_rates)
        recorder.add(
            f"sustained, backlog to the subscriber, {s.consumers} consumer(s)",
            s.rate,
            "events/s",
            peer=f"{PEER_LABEL}, its rounds in turn with these" if peer else None,
            peer_value=peer.rate if peer else None,
            detail=f"median of {rounds} rounds of {s.median.events:,} events; rounds "
            + s.rounds_text(),
        )
    peer_loads = {(r.consumers, r.offered): r for r in loads if r.system == PEER}
    for r in loads:
        if r.system != DRASI_RAY:
            continue
        other = peer_loads.get((r.consumers, r.offered))
        kept = "kept up" if r.steady else f"did NOT keep up: delivered {r.delivered_rate:,.0f}/s"
        for name, q in (("p50", 0.5), ("p99", 0.99)):
            recorder.add(
                f"{name} XADD -> subscriber at {r.offered:,} events/s, {r.consumers} consumer(s)",
                r.p(q),
                "ms",
                peer=PEER_LABEL if other else None,
                peer_value=other.p(q) if other else None,
                detail=f"{r.events:,} events, {kept}",
            )
        recorder.add(
            f"cores busy at {r.offered:,} events/s, {r.consumers} consumer(s)",
            r.cpu.machine_cores,
            "cores",
            peer=PEER_LABEL if other else None,
            peer_value=other.cpu.machine_cores if other else None,
            detail=_cpu_split(r.cpu, "% of a core: ")
            + (_cpu_split(other.cpu, "; the loop's run: ", {"consumers": "loop"}) if other else ""),
        )


def _cpu_split(usage: CpuUsage, prefix: str, names: dict[str, str] | None = None) -> str:
    """The busy processes' shares of one core over a load, for a figure's detail."""
    names = names or {}
    shares = [
        f"{names.get(role, role)} {share:.0f}"
        for role, share in usage.per_role.items()
        if share >= 0.5
    ]
    return prefix + ", ".join(shares) + f" (elsewhere {usage.elsewhere_cores:.2f} cores)"


def notes(options: Options) -> list[str]:
    return [
        "Method (bench/latency.py docstring): Redis -> consumers -> coordinator -> filter query "
        "(README's) -> subscriber in the benchmark process, public API. Every event changes a "
        f"result row ({options.sensors:,} sensors, temperature always > 70 and changing), so "
        f"every event yields one QueryResult. Source: batch_size {options.batch_size}, "
        f"block_ms {options.block_ms}, group from 0, CHANNEL dispatch (subscription capacity "
        "100,000); coordinator state "
        + (
            "durable (written to Redis every batch, the default)."
            if options.durable
            else "in memory only (--memory-state: StateConfig(durable=False))."
        ),
        f"(a) sustained: {options.sustained_rounds} backlogs of {options.backlog_events:,} events, "
        "each released to the running app and to the peer's running loop in turn (the order "
        "alternating by round); a round's clock stops when the subscriber has received every "
        "result. Each row is its median round; `rounds events/s` lists every round in order.",
        "(b) latency: paced publisher thread (pipelined XADDs of the events due, ts_ns = publish "
        f"time), {options.duration_s:g} s per load or at most {options.max_events:,} events; "
        "latency = time.time_ns() when Subscription.next() returns the result - the event's XADD "
        "time (ns). `vs schedule`: from when the event was due (includes publisher lag). "
        "`p99 via source_time_ms`: the same from QueryResult.source_time_ms (1 ms resolution), "
        "a cross-check. `kept up`: delivered >= 95% of offered and the last tenth's p50 not "
        "above 2x the first tenth's + 20 ms. `superseded` (2+ consumers): events whose change "
        "reached the coordinator after a newer change of the same sensor, so the versioned "
        "store dropped it and it yielded no result (processed, counted as delivered, no "
        "latency); with 1 consumer any such event would be `MISSING`, a failure. Before each "
        "load the benchmark process collects and freezes its heap (gc.freeze) and keeps only "
        "(key, times) per result, so its own garbage collection does not pause the publisher "
        "and the subscriber (it did, 50-70 ms per full collection, before 2026-11-21 15:00).",
        "Peer (`system` peer, --no-peer to skip): the same query hand-written as one redis-py "
        "loop in its own process (bench/filter_loop.py: XREADGROUP with the same batch size and "
        "block time, orjson, the rows in a dict, one XACK per batch, results to this process "
        "through a pipe), running beside each app (its rows carry that app's consumer count) "
        "through the same backlogs and loads, each in turn with the app's (the order alternating), "
        "measured the same way; no durable state, no versioning, no dead letters, no scaling out. "
        "Its process is counted under `consumers %`.",
        "`changes/batch`: changes per batch the coordinator received (its counters before and "
        "after), i.e. how many entries one consumer read + Ray call carried.",
        CPU_NOTE,
    ]


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__)
    parser.add_argument("--consumers", default="1,2", help="consumer counts, comma-separated")
    parser.add_argument("--rates", default="1000,5000,20000", help="offered events/s")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per load")
    parser.add_argument("--max-events", type=int, default=60_000, help="cap per load")
    parser.add_argument("--backlog-events", type=int, default=30_000, help="events for (a)")
    parser.add_argument(
        "--sustained-rounds", type=int, default=5, help="backlogs for (a), each system in turn"
    )
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--block-ms", type=int, default=50)
    parser.add_argument("--sensors", type=int, default=1000)
    parser.add_argument(
        "--memory-state",
        action="store_true",
        help="StateConfig(durable=False): no Redis write of the element store per batch",
    )
    parser.add_argument(
        "--no-peer", action="store_true", help="skip the hand-written loop (bench/filter_loop.py)"
    )
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    parser.add_argument(
        "--profile-dir", type=Path, help="py-spy drasi_ray's processes during each load, here"
    )
    args = parser.parse_args(argv)
    return Options(
        int_list(args.consumers),
        int_list(args.rates),
        args.duration,
        args.max_events,
        args.backlog_events,
        args.batch_size,
        args.block_ms,
        args.sensors,
        not args.memory_state,
        not args.no_peer,
        not args.no_record,
        args.profile_dir,
        args.sustained_rounds,
    )


def main(argv: list[str] | None = None) -> int:
    """Run every consumer count, print the tables, append the figures to results.jsonl."""
    options = parse_args(argv)
    recorder = Recorder("latency", command_line("bench.latency", argv))
    sustained: list[Sustained] = []
    loads: list[LoadResult] = []
    with bench_env() as server:
        for consumers in options.consumers:
            print(f"{consumers} consumer(s) ...", flush=True)
            rows, loaded = run_app(server.url, server.pid, consumers, options)
            sustained += rows
            loads += loaded

    lines = [
        *notes(options),
        "",
        "(a) sustained throughput, backlog released, end to end to the subscriber:",
        "",
        *sustained_table(sustained),
        "",
        "(b) latency XADD -> result at the subscriber, at fixed offered loads:",
        "",
        *latency_table(loads),
        "",
        "CPU during each load (publishing to the last result):",
        "",
        *cpu_table(loads),
        "",
        *verdict(loads),
        "",
        *versus_peer(sustained, loads),
    ]
    print_lines(["", *lines])
    if options.profile_dir is not None:
        for directory in sorted(options.profile_dir.glob("*/")):
            heading = f"profiles at {directory.name} events/s:"
            print_lines(["", heading, *profiling.report(directory)])
    if options.record:
        record_figures(recorder, sustained, loads)
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
