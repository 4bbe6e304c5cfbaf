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

import redis

from bench.common import bench_env, command_line, format_table, load_average, print_lines, rate
from bench.filter_loop import FilterLoop
from bench.latency import Collector, subscription_poll
from bench.pipeline import GROUP, QUERY_ID, CpuMeter, CpuUsage, fresh_stream, hot_app, hot_payloads
from bench.results import Recorder
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
    url: str, stream: str, payloads: Sequence[bytes], chunk: int, pipe: Connection
) -> None:
    """The publisher process: connect, say ready, wait for go, XADD everything, report the
    wall-clock nanoseconds of its first and last XADD."""
    publisher = Publisher.from_url(url)
    pipe.send("ready")
    pipe.recv()
    first = time.time_ns()
    publisher.publish(stream, payloads, chunk=chunk)
    pipe.send((first, time.time_ns()))
    publisher.close()


class PublisherProcess:
    """A spawned process that publishes ``payloads`` on ``stream`` when :meth:`go` is called."""

    def __init__(self, url: str, stream: str, payloads: Sequence[bytes], chunk: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=publish_when_told,
            args=(url, stream, list(payloads), chunk, child),
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
    stream: str,
    payloads: Sequence[bytes],
    options: Options,
    collector: Collector,
    meter: Callable[[int], CpuMeter],
) -> LiveRun:
    """Publish live from a separate process; seconds from its first XADD until the last
    result arrived here."""
    publisher = PublisherProcess(url, stream, payloads, options.chunk)
    cpu_meter = meter(publisher.pid)
    before = load_average()
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
def _group_stream(url: str, prefix: str) -> Iterator[str]:
    """A fresh stream with the consumer group, deleted afterwards."""
    stream = fresh_stream(prefix)
    with redis.Redis.from_url(url) as client:
        client.xgroup_create(stream, GROUP, id="$", mkstream=True)
    try:
        yield stream
    finally:
        with redis.Redis.from_url(url) as client:
            client.delete(stream)


def run_drasi_ray(
    url: str, redis_pid: int | None, payloads: Sequence[bytes], options: Options
) -> LiveRun:
    with _group_stream(url, "live") as stream:
        app = hot_app(url, stream, 1, options.batch_size, 1000, "live").start()
        try:
            subscription = app.subscribe(QUERY_ID, capacity=1_000_000)
            collector = Collector(subscription_poll(subscription)).start()
            try:
                return timed_live(
                    "drasi_ray", url, stream, payloads, options, collector,
                    lambda pid: CpuMeter.for_app(app, redis_pid).with_role("publisher", [pid]),
                )  # fmt: skip
            finally:
                collector.stop()
        finally:
            app.stop()


def run_peer(
    url: str, redis_pid: int | None, payloads: Sequence[bytes], options: Options
) -> LiveRun:
    with _group_stream(url, "live-peer") as stream:
        loop = FilterLoop(url, stream, GROUP, options.batch_size, 1000).start()
        collector = Collector(loop.poll).start()
        try:
            roles = {"consumers": [loop.pid]}
            return timed_live(
                "peer", url, stream, payloads, options, collector,
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
    args = parser.parse_args(argv)
    return Options(
        args.events, args.rounds, args.chunk, args.sensors, args.batch_size, not args.no_record
    )


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    recorder = Recorder("live", command_line("bench.live", argv))
    payloads = hot_payloads(0, options.events, options.sensors, live=False)
    ours: list[LiveRun] = []
    peers: list[LiveRun] = []
    with bench_env() as server:
        for number in range(options.rounds):
            ours.append(run_drasi_ray(server.url, server.pid, payloads, options))
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
    if options.record:
        recorder.add(
            "end to end, 1 consumer, filter query, events published live by a separate process",
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


if __name__ == "__main__":
    raise SystemExit(main())
