"""Where an event's latency goes: Ray's hop floor, and the pipeline's path split in two.

(a) **Ray hop floor** (the peer: what any design built on Ray actor calls pays): an async actor
    awaits another async actor's method carrying a 100-element list, 2,000 times (with Ray's
    task events, and without: ``@ray.method(enable_task_events=False)``), and over a direct
    line (:mod:`drasi_ray.actors.line`, what the pipeline's per-batch calls use), with the CPU
    time both processes spent per call; the same against a plain threaded actor, and against a
    threaded actor that runs each call as a coroutine on its own event loop (what keeping async
    code in a threaded actor would cost); and the driver calls the first, which calls the
    second (driver -> actor -> actor), 300 times.
(b) **Pipeline split**: the README's filter query, 1 consumer, batch 100, block 50 ms, a paced
    publisher (:func:`bench.latency.paced_publish`) at each offered load for a few seconds.
    ``QueryResult.timestamp_ms`` (when the query actor produced the result) splits each event's
    path into XADD -> produced (consumer, coordinator, query) and produced -> the subscriber's
    ``next()`` returning (the query actor's reply to the subscriber's long poll). Clocks are
    ``time.time_ns()`` of one machine; ``timestamp_ms`` has 1 ms resolution.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

import psutil
import ray
import redis

from bench.common import (
    bench_env,
    command_line,
    format_table,
    freeze_heap,
    load_average,
    print_lines,
)
from bench.ingest import fresh_stream
from bench.latency import Collector, paced_publish, percentile, subscription_poll
from bench.pipeline import QUERY_ID, hot_app, hot_payloads
from bench.results import Recorder
from drasi_ray.actors.line import Line, LineAddress, LineServer

SENSORS = 1000
SPLIT_HEADERS = (
    "(b) offered ev/s",
    "results",
    "XADD -> produced p50 / p99 ms",
    "produced -> subscriber p50 / p99 ms",
)


class _SizeCalls(Protocol):
    """What the echo actor serves on its line."""

    async def size(self, items: list[int]) -> int: ...


@ray.remote
class _Echo:
    def __init__(self) -> None:
        self._line_server = LineServer[_SizeCalls](self, _SizeCalls)

    async def line_address(self) -> LineAddress | None:
        return await self._line_server.address()

    async def size(self, items: list[int]) -> int:
        return len(items)

    @ray.method(enable_task_events=False)
    async def size_quiet(self, items: list[int]) -> int:
        """The same, without Ray's per-call task events (what the pipeline's hot calls use)."""
        return len(items)

    def pid(self) -> int:
        return os.getpid()


@ray.remote
class _ThreadedEcho:
    """A plain (non-async) actor: Ray runs its calls on its own threads, no event loop."""

    @ray.method(enable_task_events=False)
    def size_quiet(self, items: list[int]) -> int:
        return len(items)

    def pid(self) -> int:
        return os.getpid()


@ray.remote
class _BridgedEcho:
    """A plain actor whose calls run as coroutines on a private event loop (the way to keep
    async code in a threaded actor): measures what the bridge costs."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True).start()

    async def _size(self, items: list[int]) -> int:
        return len(items)

    @ray.method(enable_task_events=False)
    def size_quiet(self, items: list[int]) -> int:
        return asyncio.run_coroutine_threadsafe(self._size(items), self._loop).result()

    def pid(self) -> int:
        return os.getpid()


@ray.remote
class _Caller:
    def __init__(self, echo: Any) -> None:
        self._echo = echo

    def pid(self) -> int:
        return os.getpid()

    async def once(self, items: list[int]) -> int:
        result: int = await self._echo.size.remote(items)
        return result

    async def timed(self, count: int, items: list[int], quiet: bool = False) -> list[float]:
        """Milliseconds of each of ``count`` awaited calls to the echo actor."""
        method = self._echo.size_quiet if quiet else self._echo.size
        times = []
        for _ in range(count):
            started = time.perf_counter()
            await method.remote(items)
            times.append((time.perf_counter() - started) * 1e3)
        return times

    async def timed_line(self, count: int, items: list[int]) -> list[float]:
        """The same calls over a direct line (what the pipeline's hot calls use)."""
        line = Line[_SizeCalls](self._echo)
        if not await line.opened():
            raise RuntimeError("the line to the echo actor did not open")
        times = []
        for _ in range(count):
            started = time.perf_counter()
            await line.call(_SizeCalls.size, items)
            times.append((time.perf_counter() - started) * 1e3)
        line.close()
        return times


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


HOP_HEADERS = ("(a) Ray hop floor", "p50 ms", "p99 ms", "caller CPU µs/call", "callee CPU µs/call")


def hop_floor(calls: int = 2000) -> list[tuple[Any, ...]]:
    """Per kind of call: p50 and p99 ms, and the CPU time the caller and callee processes
    spent per call (all their threads: Ray's own included). The caller is always an async
    actor; the callee an async actor (what the pipeline's actors are: Ray calls, and calls over
    a direct line), a plain threaded actor, and a threaded actor bridging each call into its
    own event loop."""
    items = list(range(100))
    rows: list[tuple[Any, ...]] = []
    threaded: Any = _ThreadedEcho
    bridged: Any = _BridgedEcho
    callees: list[tuple[str, Any, str]] = [
        ("async actor -> async actor", _Echo.options(), "events"),  # type: ignore[attr-defined]
        ("  same, task events off", None, "quiet"),
        ("  same, over a direct line (drasi_ray.actors.line)", None, "line"),
        ("async -> threaded actor (no event loop)", threaded.options(max_concurrency=8), "quiet"),
        ("async -> threaded actor + private loop", bridged.options(max_concurrency=8), "quiet"),
    ]
    echo: Any = None
    caller: Any = None
    for label, options, mode in callees:
        args: tuple[Any, ...] = (items,) if mode == "line" else (items, mode == "quiet")
        if options is not None:
            for actor in (caller, echo):
                if actor is not None:
                    ray.kill(actor)
            echo = options.remote()
            caller = _Caller.remote(echo)  # type: ignore[attr-defined]
            processes = [psutil.Process(ray.get(actor.pid.remote())) for actor in (caller, echo)]
            ray.get(caller.timed.remote(200, *args))  # warm both actors up
        run = caller.timed_line if mode == "line" else caller.timed
        before = [_cpu_s(p) for p in processes]
        hop = sorted(ray.get(run.remote(calls, *args)))
        spent = [(_cpu_s(p) - b) / calls * 1e6 for p, b in zip(processes, before, strict=True)]
        rows.append((label, *_ms(hop), f"{spent[0]:.0f}", f"{spent[1]:.0f}"))
    for actor in (caller, echo):
        ray.kill(actor)
    echo = _Echo.remote()  # type: ignore[attr-defined]
    caller = _Caller.remote(echo)  # type: ignore[attr-defined]
    ray.get(caller.once.remote(items))
    chain = []
    for _ in range(300):
        started = time.perf_counter()
        ray.get(caller.once.remote(items))
        chain.append((time.perf_counter() - started) * 1e3)
    chain.sort()
    rows.append(("driver -> actor -> actor", *_ms(chain), "-", "-"))
    for actor in (caller, echo):
        ray.kill(actor)
    return rows


def _ms(ordered: list[float]) -> tuple[str, str]:
    return f"{percentile(ordered, 0.5):.2f}", f"{percentile(ordered, 0.99):.2f}"


def path_split(url: str, rates: Sequence[int], seconds: float) -> list[tuple[Any, ...]]:
    """Per offered load: p50/p99 of XADD -> produced and of produced -> subscriber (ms)."""
    stream = fresh_stream("hops")
    app = hot_app(url, stream, 1, 100, 50, "hops")
    app.start()
    subscription = app.subscribe(QUERY_ID, capacity=100_000)
    collector = Collector(subscription_poll(subscription)).start()
    rows: list[tuple[Any, ...]] = []
    first = 0
    try:
        for per_second in rates:
            count = int(per_second * seconds)
            templates = hot_payloads(first, count, SENSORS, live=True)
            first += count
            mark, expected = collector.mark(), collector.count + count
            freeze_heap()
            with redis.Redis.from_url(url) as client:
                paced_publish(client, stream, templates, per_second)
            collector.wait_for(expected, 120)
            produced, delivered = [], []
            for batch in collector.batches[mark:]:
                for _key, source_time_ms, produced_ms in batch.results:
                    produced.append(float(produced_ms - source_time_ms))
                    delivered.append(batch.at_ns / 1e6 - produced_ms)
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


RAY_CALL = "async actor -> async actor"


def _hop_name(label: str) -> str:
    name = label.strip()
    return f"{RAY_CALL}, {name.removeprefix('same, ')}" if name.startswith("same,") else name


def record_figures(
    recorder: Recorder, floor: Sequence[tuple[Any, ...]], split: Sequence[tuple[Any, ...]]
) -> None:
    """(a) p50 and CPU per call of each kind of call, the direct line against the plain Ray
    call; (b) p99 of both halves of the path at each offered load."""
    ray_p50, ray_cpu = float(floor[0][1]), float(floor[0][3]) + float(floor[0][4])
    for label, p50, p99, caller, callee in floor:
        name = _hop_name(label)
        line = "direct line" in name
        peer = f"{RAY_CALL} through Ray, same run" if line else None
        recorder.add(
            f"call p50, {name}",
            float(p50),
            "ms",
            peer=peer,
            peer_value=ray_p50 if line else None,
            detail=f"p99 {p99} ms",
        )
        if caller != "-":
            recorder.add(
                f"CPU per call, caller + callee, {name}",
                float(caller) + float(callee),
                "µs",
                peer=peer,
                peer_value=ray_cpu if line else None,
                detail=f"caller {caller}, callee {callee}",
            )
    for offered, results, produced, delivered in split:
        for half, text in (("XADD -> produced", produced), ("produced -> subscriber", delivered)):
            p50, p99 = (float(part) for part in text.split(" / "))
            recorder.add(
                f"p99 {half} at {offered:,} events/s, 1 consumer",
                p99,
                "ms",
                detail=f"p50 {p50:g} ms, {results:,} results",
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hops", description=__doc__)
    parser.add_argument("--rates", default="100,1000,3000,5000", help="offered events/s")
    parser.add_argument("--seconds", type=float, default=6.0, help="seconds per load")
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    recorder = Recorder("hops", command_line("bench.hops", argv))
    rates = [int(part) for part in args.rates.split(",") if part]
    before = load_average()
    with bench_env() as server:
        floor = hop_floor()
        split = path_split(server.url, rates, args.seconds)
    lines = [
        *format_table(HOP_HEADERS, floor),
        "",
        *format_table(SPLIT_HEADERS, split),
        "",
        f"load 1m {before:.1f}->{load_average():.1f} (2 cores)",
    ]
    print_lines(["", *lines])
    if not args.no_record:
        record_figures(recorder, floor, split)
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
