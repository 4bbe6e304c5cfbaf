"""Reading a partitioned source: one ``XREADGROUP`` over every stream, or one per stream.

A consumer of a source over P streams could read them with ONE ``XREADGROUP ... STREAMS s1 ..
sP > ... >`` (COUNT applies per stream) or with one ``XREADGROUP`` per stream, which is what
its lanes do (:mod:`drasi_ray.source.lanes`). This measures what each shape costs, in Redis
alone (no Ray, no decoding): ``--events`` sensor updates spread over ``--streams`` streams by
element id (:func:`drasi_ray.model.partitions.stream_for`), drained through a consumer group by
one redis-py client reading ``--batch`` entries per stream per read and acking each stream's
entries with one ``XACK`` per stream per round; each shape makes two round trips per round
(the per-stream reads go in one pipeline, and the acks in another). Figures: the Redis
server's CPU µs per entry and the drain's entries/s, per shape, and the one-stream drain for
reference; ``--rounds`` alternate rounds, medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psutil
import redis

from bench.common import (
    bench_env,
    command_line,
    format_table,
    print_lines,
    rate,
    sensor_payloads,
)
from bench.results import Recorder
from drasi_ray.model.partitions import stream_for
from drasi_ray.source.decode import decode_entry
from drasi_ray.streams.publisher import Publisher

GROUP = "bench-partitions"
CONSUMER = "reader"


@dataclass(frozen=True)
class Options:
    events: int
    streams: int
    batch: int
    rounds: int
    record: bool


@dataclass(frozen=True)
class Drain:
    shape: str
    entries: int
    seconds: float
    redis_cpu_s: float

    @property
    def rate(self) -> float:
        return rate(self.entries, self.seconds)

    @property
    def redis_us(self) -> float:
        return self.redis_cpu_s / self.entries * 1e6


Reader = Callable[[redis.Redis, list[str], int], int]
"""Reads one round from the streams (and acks it); returns how many entries it read."""


def read_all_at_once(client: redis.Redis, streams: list[str], batch: int) -> int:
    """ONE XREADGROUP over every stream, then one XACK per stream, pipelined."""
    reply: Any = client.xreadgroup(GROUP, CONSUMER, {s: ">" for s in streams}, count=batch)
    if not reply:
        return 0
    pipe = client.pipeline(transaction=False)
    read = 0
    for stream, entries in reply:
        pipe.xack(stream, GROUP, *[entry_id for entry_id, _ in entries])
        read += len(entries)
    pipe.execute()
    return read


def read_each(client: redis.Redis, streams: list[str], batch: int) -> int:
    """One XREADGROUP per stream (as the lanes read), pipelined, then one XACK per stream,
    pipelined."""
    pipe = client.pipeline(transaction=False)
    for stream in streams:
        pipe.xreadgroup(GROUP, CONSUMER, {stream: ">"}, count=batch)
    replies: list[Any] = pipe.execute()
    acks = client.pipeline(transaction=False)
    read = 0
    for reply in replies:
        for stream, entries in reply or ():
            acks.xack(stream, GROUP, *[entry_id for entry_id, _ in entries])
            read += len(entries)
    if read:
        acks.execute()
    return read


def drain(
    url: str, pid: int, payloads: Sequence[bytes], count: int, shape: str, reader: Reader,
    batch: int,
) -> Drain:  # fmt: skip
    """Publish ``payloads`` over ``count`` fresh streams, then time draining them."""
    streams = [f"partitions-{shape}-{time.time_ns()}-{index}" for index in range(count)]
    parts: dict[str, list[bytes]] = {stream: [] for stream in streams}
    for payload in payloads:
        element = decode_entry("1-0", {b"data": payload}).changes[0].element
        parts[stream_for(element.id, streams)].append(payload)
    with Publisher.from_url(url) as publisher:
        for stream, part in parts.items():
            publisher.publish(stream, part, chunk=2000)
    server = psutil.Process(pid)
    with redis.Redis.from_url(url) as client:
        for stream in streams:
            client.xgroup_create(stream, GROUP, id="0")
        before = sum(server.cpu_times()[:2])
        started = time.perf_counter()
        total = 0
        while (read := reader(client, streams, batch)) > 0:
            total += read
        seconds = time.perf_counter() - started
        cpu = sum(server.cpu_times()[:2]) - before
        client.delete(*streams)
    if total != len(payloads):
        raise RuntimeError(f"{shape}: drained {total} of {len(payloads)} entries")
    return Drain(shape, total, seconds, cpu)


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.partitions", description=__doc__)
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--streams", type=int, default=3)
    parser.add_argument("--batch", type=int, default=500, help="entries per stream per read")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    if args.streams < 2:
        parser.error("--streams must be >= 2")
    return Options(args.events, args.streams, args.batch, args.rounds, not args.no_record)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    recorder = Recorder("partitions", command_line("bench.partitions", argv))
    payloads = sensor_payloads(options.events)
    shapes: list[tuple[str, int, Reader]] = [
        ("one stream", 1, read_each),
        (f"{options.streams} streams, one XREADGROUP over all", options.streams, read_all_at_once),
        (f"{options.streams} streams, one XREADGROUP per stream", options.streams, read_each),
    ]
    runs: dict[str, list[Drain]] = {shape: [] for shape, _, _ in shapes}
    with bench_env(with_ray=False) as server:
        assert server.pid is not None
        for number in range(options.rounds):
            for shape, count, reader in shapes:
                runs[shape].append(
                    drain(server.url, server.pid, payloads, count, shape, reader, options.batch)
                )
            print(f"  round {number + 1} done", flush=True)
    medians = {
        shape: (
            statistics.median(d.redis_us for d in done),
            statistics.median(d.rate for d in done),
        )
        for shape, done in runs.items()
    }
    lines = [
        f"Method (bench/partitions.py docstring): {options.events:,} entries, batch "
        f"{options.batch} per stream per read, one client, {options.rounds} alternate rounds "
        "(medians).",
        "",
        *format_table(
            ("shape", "Redis µs per entry", "entries/s"),
            [(shape, f"{us:.2f}", entries) for shape, (us, entries) in medians.items()],
        ),
    ]
    print_lines(["", *lines])
    if options.record:
        detail = f"{options.events:,} entries, batch {options.batch}, median of {options.rounds}"
        for shape, (us, entries) in medians.items():
            recorder.add(f"Redis CPU per entry read and acked, {shape}", us, "µs", detail=detail)
            recorder.add(f"drain, {shape}", entries, "entries/s", detail=detail)
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
