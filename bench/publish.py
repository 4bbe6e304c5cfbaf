"""Producer side: what appending change events costs the process that writes them.

Each way XADDs the same seeded sensor payloads (:func:`bench.common.sensor_payloads`) to a fresh
stream of a private Redis, ``--chunk`` XADDs per round trip, best of ``--repeat`` runs:

- **peer**: redis-py's pipeline (``pipeline(transaction=False)``, ``xadd`` per payload,
  ``execute``), what a hand-written producer does;
- **Publisher**: :class:`drasi_ray.streams.publisher.Publisher` (hand-packed RESP), against
  the peer above;
- **peer (asyncio)** and **AsyncPublisher**: the same two with ``redis.asyncio`` (each run
  includes creating the client and the event loop), the publisher against that peer.

``CPU µs/entry`` is this process's CPU time (user + system) per entry; Redis runs in its own
process and is not counted. ``entries/s`` is wall-clock throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time
import uuid
from collections.abc import Callable, Sequence

import redis
import redis.asyncio as aioredis

from bench.common import bench_env, command_line, format_table, print_lines, sensor_payloads
from bench.results import Recorder
from drasi_ray.streams.publisher import AsyncPublisher, Publisher

HEADERS = ("way", "entries", "entries/s", "CPU µs/entry", "vs peer (CPU)")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _measure(run: Callable[[str], None], entries: int, repeat: int) -> tuple[float, float]:
    """Best (lowest CPU) of ``repeat`` runs: ``(entries/s, CPU µs per entry)``."""
    best: tuple[float, float] | None = None
    for _ in range(repeat):
        stream = f"publish-{uuid.uuid4().hex[:6]}"
        cpu, wall = _cpu_s(), time.perf_counter()
        run(stream)
        wall, cpu = time.perf_counter() - wall, _cpu_s() - cpu
        figures = (entries / wall, cpu / entries * 1e6)
        if best is None or figures[1] < best[1]:
            best = figures
    assert best is not None
    return best


def _peer(url: str, payloads: Sequence[bytes], chunk: int) -> Callable[[str], None]:
    client = redis.Redis.from_url(url)

    def run(stream: str) -> None:
        for start in range(0, len(payloads), chunk):
            pipe = client.pipeline(transaction=False)
            for payload in payloads[start : start + chunk]:
                pipe.xadd(stream, {b"data": payload})
            pipe.execute()

    return run


def _async_peer(url: str, payloads: Sequence[bytes], chunk: int) -> Callable[[str], None]:
    async def publish(stream: str) -> None:
        client = aioredis.Redis.from_url(url)
        try:
            for start in range(0, len(payloads), chunk):
                pipe = client.pipeline(transaction=False)
                for payload in payloads[start : start + chunk]:
                    pipe.xadd(stream, {b"data": payload})
                await pipe.execute()
        finally:
            await client.aclose()

    return lambda stream: asyncio.run(publish(stream))


def _publisher(url: str, payloads: Sequence[bytes], chunk: int) -> Callable[[str], None]:
    publisher = Publisher.from_url(url)

    def run(stream: str) -> None:
        publisher.publish(stream, payloads, chunk=chunk)

    return run


def _async_publisher(url: str, payloads: Sequence[bytes], chunk: int) -> Callable[[str], None]:
    async def publish(stream: str) -> None:
        async with AsyncPublisher.from_url(url) as publisher:
            await publisher.publish(stream, payloads, chunk=chunk)

    return lambda stream: asyncio.run(publish(stream))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.publish", description=__doc__)
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    recorder = Recorder("publish", command_line("bench.publish", argv))
    payloads = sensor_payloads(args.entries)
    rows: list[tuple[object, ...]] = []
    with bench_env(with_ray=False) as server:
        ways = (
            ("peer: redis-py pipeline", _peer),
            ("drasi_ray Publisher", _publisher),
            ("peer (asyncio): redis.asyncio pipeline", _async_peer),
            ("drasi_ray AsyncPublisher", _async_publisher),
        )
        peer_label, peer_cpu = "", 0.0
        for label, make in ways:
            rate, cpu = _measure(make(server.url, payloads, args.chunk), len(payloads), args.repeat)
            is_peer = label.startswith("peer")
            if is_peer:
                peer_label, peer_cpu = label, cpu
            ratio = f"{peer_cpu / cpu:.1f}x"
            rows.append((label, f"{len(payloads):,}", f"{rate:,.0f}", f"{cpu:.1f}", ratio))
            recorder.add(
                f"CPU per entry, {label}",
                cpu,
                "µs",
                peer=None if is_peer else peer_label,
                peer_value=None if is_peer else peer_cpu,
                detail=f"{rate:,.0f} entries/s, chunk {args.chunk}, best of {args.repeat}",
            )
    lines = [
        f"XADD of {len(payloads):,} sensor payloads ({len(payloads[0])} bytes), chunk "
        f"{args.chunk}, best of {args.repeat} by CPU; `vs peer (CPU)`: the CPU per entry of the "
        "peer row above it divided by this way's (higher is cheaper).",
        "",
        *format_table(HEADERS, rows),
    ]
    print_lines(lines)
    if not args.no_record:
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
