"""Where an event's latency goes: Ray's hop floor, and the pipeline's path split in two.

(a) **Ray hop floor** (the peer: what any design built on Ray actor calls pays): an async actor
    awaits another async actor's method carrying a 100-element list, 500 times; and the driver
    calls the first, which calls the second (driver -> actor -> actor), 300 times.
(b) **Pipeline split**: the README's filter query, 1 consumer, batch 100, block 50 ms, a paced
    publisher (:func:`bench.latency.paced_publish`) at each offered load for a few seconds.
    ``QueryResult.timestamp_ms`` (when the query actor produced the result) splits each event's
    path into XADD -> produced (consumer, coordinator, query) and produced -> the subscriber's
    ``next()`` returning (the query actor's reply to the subscriber's long poll). Clocks are
    ``time.time_ns()`` of one machine; ``timestamp_ms`` has 1 ms resolution.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import ray
import redis

from bench.common import bench_env, command_line, format_table, load_average, print_lines, record
from bench.ingest import fresh_stream
from bench.latency import Collector, paced_publish, percentile
from bench.pipeline import QUERY_ID, hot_app, hot_payloads

SENSORS = 1000
SPLIT_HEADERS = (
    "(b) offered ev/s",
    "results",
    "XADD -> produced p50 / p99 ms",
    "produced -> subscriber p50 / p99 ms",
)


@ray.remote
class _Echo:
    async def size(self, items: list[int]) -> int:
        return len(items)


@ray.remote
class _Caller:
    def __init__(self, echo: Any) -> None:
        self._echo = echo

    async def once(self, items: list[int]) -> int:
        result: int = await self._echo.size.remote(items)
        return result

    async def timed(self, count: int, items: list[int]) -> list[float]:
        """Milliseconds of each of ``count`` awaited calls to the echo actor."""
        times = []
        for _ in range(count):
            started = time.perf_counter()
            await self._echo.size.remote(items)
            times.append((time.perf_counter() - started) * 1e3)
        return times


def hop_floor() -> list[tuple[str, float, float]]:
    """(what, p50 ms, p99 ms) of an actor -> actor call and of driver -> actor -> actor."""
    echo = _Echo.remote()  # type: ignore[attr-defined]
    caller = _Caller.remote(echo)  # type: ignore[attr-defined]
    items = list(range(100))
    ray.get(caller.once.remote(items))  # warm both actors up
    hop = sorted(ray.get(caller.timed.remote(500, items)))
    chain = []
    for _ in range(300):
        started = time.perf_counter()
        ray.get(caller.once.remote(items))
        chain.append((time.perf_counter() - started) * 1e3)
    chain.sort()
    for actor in (caller, echo):
        ray.kill(actor)
    return [
        ("async actor -> async actor (awaited call)", percentile(hop, 0.5), percentile(hop, 0.99)),
        ("driver -> actor -> actor", percentile(chain, 0.5), percentile(chain, 0.99)),
    ]


def path_split(url: str, rates: Sequence[int], seconds: float) -> list[tuple[Any, ...]]:
    """Per offered load: p50/p99 of XADD -> produced and of produced -> subscriber (ms)."""
    stream = fresh_stream("hops")
    app = hot_app(url, stream, 1, 100, 50, "hops")
    app.start()
    subscription = app.subscribe(QUERY_ID, capacity=100_000)
    collector = Collector(subscription).start()
    rows: list[tuple[Any, ...]] = []
    first = 0
    try:
        for per_second in rates:
            count = int(per_second * seconds)
            templates = hot_payloads(first, count, SENSORS, live=True)
            first += count
            mark, expected = collector.mark(), collector.count + count
            with redis.Redis.from_url(url) as client:
                paced_publish(client, stream, templates, per_second)
            collector.wait_for(expected, 120)
            produced, delivered = [], []
            for batch in collector.batches[mark:]:
                for result in batch.results:
                    produced.append(float(result.timestamp_ms - result.source_time_ms))
                    delivered.append(batch.at_ns / 1e6 - result.timestamp_ms)
            produced.sort()
            delivered.sort()
            rows.append(
                (
                    per_second, len(produced),
                    f"{percentile(produced, 0.5):.0f} / {percentile(produced, 0.99):.0f}",
                    f"{percentile(delivered, 0.5):.1f} / {percentile(delivered, 0.99):.1f}",
                )
            )  # fmt: skip
            print(f"  {per_second:,}/s: {rows[-1][2]} ms, {rows[-1][3]} ms", flush=True)
    finally:
        collector.stop()
        subscription.close()
        app.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hops", description=__doc__)
    parser.add_argument("--rates", default="100,1000,3000,5000", help="offered events/s")
    parser.add_argument("--seconds", type=float, default=6.0, help="seconds per load")
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args(argv)
    rates = [int(part) for part in args.rates.split(",") if part]
    before = load_average()
    with bench_env() as server:
        floor = hop_floor()
        split = path_split(server.url, rates, args.seconds)
    lines = [
        *format_table(
            ("(a) Ray hop floor", "p50 ms", "p99 ms"),
            [(what, f"{p50:.2f}", f"{p99:.2f}") for what, p50, p99 in floor],
        ),
        "",
        *format_table(SPLIT_HEADERS, split),
        "",
        f"load 1m {before:.1f}->{load_average():.1f} (2 cores)",
    ]
    print_lines(["", *lines])
    if not args.no_record:
        title = (__doc__ or "").strip().splitlines()[0]
        record("hops", [title, "", *lines], command_line("bench.hops", argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
