"""Live throughput: events published by a separate process, end to end, against the peer.

What the target of issue 22 names: on this machine the single-shard pipeline (1 consumer,
the README's filter query, one store shard, one query host) must carry at least 50,000
events/s end to end while another process publishes 100,000 events live.

A publisher process (spawned: its own interpreter and CPU) XADDs ``--events`` sensor updates
(:mod:`bench.pipeline`'s hot workload: every event changes a result row) as fast as Redis takes
them, in pipelines of ``--chunk``, once told to go. The clock runs from its first XADD to the
arrival in this process of the last event's result: drasi_ray's through a subscription, the
peer's (:mod:`bench.filter_loop`, the query hand-written as one redis-py loop in its own
process) through its pipe, each collected by :class:`bench.latency.Collector`. The two run in
alternate rounds (``--rounds``) on fresh streams; the figure is the median of the rounds, with
the median ratio of the rounds' pairs.

``--streams 1,3`` measures a partitioned source instead of the peer: drasi_ray alone, its
source reading 1, then 3 streams (one Redis server; each a lane of the one consumer), in
alternate rounds. The publisher puts each event on the stream of its element
(:func:`drasi_ray.model.partitions.stream_for`) and sends each pipeline of ``--chunk`` events as
one pipeline per stream, in the events' order.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import redis

from bench import profiling
from bench.common import bench_env, command_line, format_table, load_average, print_lines, rate
from bench.filter_loop import FilterLoop
from bench.latency import Collector, subscription_poll
from bench.pipeline import GROUP, QUERY_ID, CpuMeter, CpuUsage, fresh_stream, hot_app, hot_payloads
from bench.results import Recorder
from drasi_ray.model.config import Layout
from drasi_ray.model.partitions import stream_for
from drasi_ray.source.decode import decode_entry
from drasi_ray.streams.publisher import Publisher

TARGET_RATE = 50_000
TIMEOUT_S = 300.0
STARTUP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Options:
    events: int
    rounds: int
    chunk: int
    sensors: int
    batch_size: int
    record: bool
    streams: tuple[int, ...] = ()
    """stream counts of a partitioned source to compare (empty: drasi_ray against the peer)"""
    profile_dir: Path | None = None
    """py-spy profiles of every process of drasi_ray's first round go here (None: none)"""
    layout: Layout = Layout.AUTO
    """which processes run drasi_ray's pipeline (``scaling.layout``)"""


LAYOUT_NAMES = {
    Layout.AUTO: "the default scaling: fused layout",
    Layout.FUSED: "fused layout",
    Layout.ACTORS: "every part an actor of its own",
}


@dataclass(frozen=True)
class LiveRun:
    system: str
    events: int
    seconds: float
    published_s: float
    cpu: CpuUsage
    loads: tuple[float, float]

    @property
    def rate(self) -> float:
        return rate(self.events, self.seconds)

    @property
    def published_rate(self) -> float:
        return rate(self.events, self.published_s)


# --------------------------------------------------------------------------------------------
# the publisher process
# --------------------------------------------------------------------------------------------


def publish_when_told(
    url: str, streams: Sequence[str], payloads: Sequence[bytes], chunk: int, pipe: Connection
) -> None:
    """The publisher process: connect, say ready, wait for go, XADD everything (each event on
    its element's stream), report the wall-clock nanoseconds of its first and last XADD."""
    publisher = Publisher.from_url(url)
    routed = partitioned(payloads, streams) if len(streams) > 1 else None
    pipe.send("ready")
    pipe.recv()
    first = time.time_ns()
    if routed is None:
        publisher.publish(streams[0], payloads, chunk=chunk)
    else:
        for start in range(0, len(payloads), chunk):
            for stream, part in routed(start, start + chunk).items():
                publisher.publish(stream, part, chunk=chunk)
    pipe.send((first, time.time_ns()))
    publisher.close()


def partitioned(
    payloads: Sequence[bytes], streams: Sequence[str]
) -> Callable[[int, int], dict[str, list[bytes]]]:
    """``slice(start, end)`` -> the payloads of that slice grouped by their element's stream,
    each group in order (the streams are worked out once, before the clock)."""
    targets = [
        stream_for(decode_entry("1-0", {b"data": payload}).changes[0].element.id, streams)
        for payload in payloads
    ]

    def grouped(start: int, end: int) -> dict[str, list[bytes]]:
        groups: dict[str, list[bytes]] = {}
        for index in range(start, min(end, len(payloads))):
            groups.setdefault(targets[index], []).append(payloads[index])
        return groups

    return grouped


class PublisherProcess:
    """A spawned process that publishes ``payloads`` on ``streams`` when :meth:`go` is
    called."""

    def __init__(
        self, url: str, streams: Sequence[str], payloads: Sequence[bytes], chunk: int
    ) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=publish_when_told,
            args=(url, list(streams), list(payloads), chunk, child),
            name="live-publisher",
            daemon=True,
        )
        self._process.start()
        child.close()
        if not self._pipe.poll(STARTUP_TIMEOUT_S):
            raise RuntimeError("the publisher process did not start")
        self._pipe.recv()

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    def go(self) -> None:
        self._pipe.send("go")

    def finished(self, timeout_s: float) -> tuple[int, int]:
        """Nanoseconds of the first and the last XADD (after they were all written)."""
        if not self._pipe.poll(timeout_s):
            raise RuntimeError("the publisher did not finish in time")
        first, last = self._pipe.recv()
        self._process.join(timeout=10)
        return first, last


# --------------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------------


def timed_live(
    system: str,
    url: str,
    streams: Sequence[str],
    payloads: Sequence[bytes],
    options: Options,
    collector: Collector,
    meter: Callable[[int], CpuMeter],
    profile_dir: Path | None = None,
) -> LiveRun:
    """Publish live from a separate process; seconds from its first XADD until the last
    result arrived here. With ``profile_dir``, py-spy samples every role's processes (the
    app's actors, Redis, the publisher, the driver) meanwhile."""
    publisher = PublisherProcess(url, streams, payloads, options.chunk)
    cpu_meter = meter(publisher.pid)
    pids = {
        f"{role}-{index}": pid
        for role, held in cpu_meter.roles.items()
        if role not in ("ray system", "redis")
        for index, pid in enumerate(held)
    }
    before = load_average()
    with profiling.py_spy_all(pids, profile_dir):
        cpu_meter.start()
        publisher.go()
        if not collector.wait_for(len(payloads), TIMEOUT_S):
            raise RuntimeError(f"{system}: {collector.count} of {len(payloads)} results arrived")
        cpu = cpu_meter.stop()
    first, last_xadd = publisher.finished(TIMEOUT_S)
    last = max(batch.at_ns for batch in collector.batches)
    return LiveRun(
        system, len(payloads), (last - first) / 1e9, (last_xadd - first) / 1e9, cpu,
        (before, load_average()),
    )  # fmt: skip


@contextmanager
def _group_streams(url: str, prefix: str, count: int = 1) -> Iterator[list[str]]:
    """``count`` fresh streams with the consumer group, deleted afterwards."""
    base = fresh_stream(prefix)
    streams = [base] if count == 1 else [f"{base}-{index}" for index in range(count)]
    with redis.Redis.from_url(url) as client:
        for stream in streams:
            client.xgroup_create(stream, GROUP, id="$", mkstream=True)
    try:
        yield streams
    finally:
        with redis.Redis.from_url(url) as client:
            client.delete(*streams)


def run_drasi_ray(
    url: str,
    redis_pid: int | None,
    payloads: Sequence[bytes],
    options: Options,
    streams: int = 1,
    profile_dir: Path | None = None,
) -> LiveRun:
    """drasi_ray's run; its source reads ``streams`` streams (1 consumer, a lane each)."""
    with _group_streams(url, "live", streams) as keys:
        app = hot_app(url, keys, 1, options.batch_size, 1000, "live", layout=options.layout).start()
        try:
            subscription = app.subscribe(QUERY_ID, capacity=1_000_000)
            collector = Collector(subscription_poll(subscription)).start()
            try:
                system = "drasi_ray" if streams == 1 else f"drasi_ray, {streams} streams"
                return timed_live(
                    system, url, keys, payloads, options, collector,
                    lambda pid: CpuMeter.for_app(app, redis_pid).with_role("publisher", [pid]),
                    profile_dir,
                )  # fmt: skip
            finally:
                collector.stop()
        finally:
            app.stop()


def run_peer(
    url: str, redis_pid: int | None, payloads: Sequence[bytes], options: Options
) -> LiveRun:
    with _group_streams(url, "live-peer") as (stream,):
        loop = FilterLoop(url, stream, GROUP, options.batch_size, 1000).start()
        collector = Collector(loop.poll).start()
        try:
            roles = {"consumers": [loop.pid]}
            return timed_live(
                "peer", url, [stream], payloads, options, collector,
                lambda pid: CpuMeter.for_roles({**roles, "publisher": [pid]}, redis_pid),
            )  # fmt: skip
        finally:
            collector.stop()
            loop.stop()


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def table(runs: Sequence[LiveRun]) -> list[str]:
    roles = ("consumers", "coordinator", "hosts", "redis", "publisher", "driver", "ray system")
    headers = (
        "system", "events", "seconds", "events/s", "published/s",
        *[f"{role} %" for role in roles], "machine cores busy", "load 1m",
    )  # fmt: skip
    rows = [
        (
            run.system, run.events, f"{run.seconds:.2f}", run.rate, run.published_rate,
            *[f"{run.cpu.per_role.get(role, 0.0):.0f}" for role in roles],
            f"{run.cpu.machine_cores:.2f}", f"{run.loads[0]:.1f}->{run.loads[1]:.1f}",
        )
        for run in runs
    ]  # fmt: skip
    return format_table(headers, rows)


def summary(ours: Sequence[LiveRun], peers: Sequence[LiveRun]) -> tuple[float, float, float]:
    """Medians of drasi_ray's and the peer's rates, and of the rounds' ratios."""
    ratios = [a.rate / b.rate for a, b in zip(ours, peers, strict=True)]
    return (
        statistics.median(run.rate for run in ours),
        statistics.median(run.rate for run in peers),
        statistics.median(ratios),
    )


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.live", description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=200, help="XADDs per pipeline")
    parser.add_argument("--sensors", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    parser.add_argument(
        "--profile-dir",
        type=Path,
        help="py-spy every process of drasi_ray's first round; collapsed stacks go here",
    )
    parser.add_argument(
        "--streams",
        default="",
        help="compare a source over these stream counts (e.g. 1,3) instead of the peer",
    )
    parser.add_argument(
        "--layout",
        choices=[layout.value for layout in Layout],
        default=Layout.AUTO.value,
        help="scaling.layout of drasi_ray's app (auto: the fused layout here)",
    )
    args = parser.parse_args(argv)
    counts = tuple(int(part) for part in args.streams.split(",") if part.strip())
    if any(count < 1 for count in counts):
        parser.error("--streams: counts must be >= 1")
    return Options(
        args.events, args.rounds, args.chunk, args.sensors, args.batch_size, not args.no_record,
        counts, args.profile_dir, Layout(args.layout),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    if options.streams:
        return compare_streams(options, argv)
    recorder = Recorder("live", command_line("bench.live", argv))
    payloads = hot_payloads(0, options.events, options.sensors, live=False)
    ours: list[LiveRun] = []
    peers: list[LiveRun] = []
    with bench_env() as server:
        for number in range(options.rounds):
            profile_dir = options.profile_dir if number == 0 else None
            ours.append(run_drasi_ray(server.url, server.pid, payloads, options, 1, profile_dir))
            peers.append(run_peer(server.url, server.pid, payloads, options))
            print(
                f"  round {number + 1}: drasi_ray {ours[-1].rate:,.0f} events/s, "
                f"peer {peers[-1].rate:,.0f} events/s",
                flush=True,
            )
    mine, theirs, ratio = summary(ours, peers)
    verdict = "MET" if mine >= TARGET_RATE else "NOT MET"
    lines = [
        f"Method (bench/live.py docstring): {options.events:,} events per run published by a "
        f"separate process (pipelines of {options.chunk} XADDs), 1 consumer, batch "
        f"{options.batch_size}, 1 store shard, 1 query host, {options.rounds} alternate rounds.",
        "",
        *table([run for pair in zip(ours, peers, strict=True) for run in pair]),
        "",
        f"Target >= {TARGET_RATE:,} events/s end to end: median {mine:,.0f} events/s -> "
        f"{verdict} (the peer: {theirs:,.0f}; median ratio of the rounds {ratio:.2f}x).",
    ]
    print_lines(["", *lines])
    if options.profile_dir is not None and options.profile_dir.exists():
        print_lines(["", *profiling.report(options.profile_dir)])
    if options.record:
        recorder.add(
            "end to end, 1 consumer, filter query, events published live by a separate process"
            f" ({LAYOUT_NAMES[options.layout]})",
            mine,
            "events/s",
            peer="the query hand-written as one redis-py loop, same publisher, alternate rounds",
            peer_value=theirs,
            ratio=ratio,
            detail=f"{options.events:,} events, median of {options.rounds} rounds; ratio = "
            "median of the rounds' ratios",
        )
        recorder.write()
    return 0


def compare_streams(options: Options, argv: list[str] | None) -> int:
    """drasi_ray alone, its source over each of ``options.streams`` stream counts in alternate
    rounds; the median rate of each count."""
    recorder = Recorder("live", command_line("bench.live", argv))
    payloads = hot_payloads(0, options.events, options.sensors, live=False)
    runs: dict[int, list[LiveRun]] = {count: [] for count in options.streams}
    with bench_env() as server:
        for number in range(options.rounds):
            for count in options.streams:
                runs[count].append(
                    run_drasi_ray(server.url, server.pid, payloads, options, streams=count)
                )
            print(
                f"  round {number + 1}: "
                + ", ".join(f"{c} stream(s) {runs[c][-1].rate:,.0f} events/s" for c in runs),
                flush=True,
            )
    medians = {count: statistics.median(run.rate for run in done) for count, done in runs.items()}
    base = medians[options.streams[0]]
    lines = [
        f"Method (bench/live.py docstring): {options.events:,} events per run published by a "
        f"separate process (pipelines of {options.chunk} XADDs, one per stream), 1 consumer "
        f"(a lane per stream), batch {options.batch_size}, 1 store shard, 1 query host, one "
        f"Redis server, {options.rounds} alternate rounds of each stream count.",
        "",
        *table([run for group in zip(*runs.values(), strict=True) for run in group]),
        "",
        *[
            f"{count} stream(s): median {rate:,.0f} events/s ({rate / base:.2f}x "
            f"{options.streams[0]} stream(s))"
            for count, rate in medians.items()
        ],
    ]
    print_lines(["", *lines])
    if options.record:
        for count, rate in medians.items():
            recorder.add(
                f"end to end, 1 consumer, filter query, live, a source over {count} stream(s) "
                "on one Redis",
                rate,
                "events/s",
                detail=f"{options.events:,} events, median of {options.rounds} rounds "
                f"alternating {', '.join(map(str, options.streams))} streams; "
                f"{rate / base:.2f}x {options.streams[0]} stream(s)",
            )
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
