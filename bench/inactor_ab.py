"""What a change to the fused actor's code is worth, measured inside the running actor.

The machine's speed drifts by up to 2x within minutes (docs/performance.md), so whole drains of
two trees, even alternated, cannot resolve a change of a few percent. Here one app (the fused
layout, with :mod:`bench.latency`'s settings) drains one backlog of ``--events`` events while its
fused actor runs variant A (the code as it is) or variant B, chosen at random every
``--window-ms``. At each switch the actor charges the CPU time of its event-loop thread since
the last switch, and the events it decoded meanwhile, to the variant that ran. Both meet the
same stretches of the machine, and the figure is the ratio of their CPU per event (B / A). A
batch begun under one variant and finished under the other blurs the two a little, both ways
alike.

Variants (``--variants``), each B against A:

- ``same``: nothing differs: the method's own spread (A/A).
- ``hold-batches``: a batch in hand keeps its entries and decoded changes until its ack, as
  before :meth:`Screened.release <drasi_ray.source.reader.Screened.release>`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ray
import ray.cloudpickle
import redis

from bench.common import (
    bench_env,
    command_line,
    format_table,
    load_average,
    print_lines,
    rate,
)
from bench.ingest import create_group, hold_backlog, release_held
from bench.pipeline import QUERY_ID, actors_by_kind, fresh_stream, hot_app, hot_payloads
from bench.results import Recorder

VARIANTS = ("same", "hold-batches")


class _Switch:
    """Lives in the fused actor: which variant runs, and what each has cost so far."""

    def __init__(self, window_s: float) -> None:
        self.b = False
        self.window_s = window_s
        self.decoded = 0
        self.cpu = [0.0, 0.0]
        self.events = [0, 0]
        self._since = (0.0, 0)
        self._running = False

    def start(self, loop: Any) -> None:
        """Begin the accounts (called in the event-loop thread)."""
        self._since = (time.thread_time(), self.decoded)
        self._running = True
        loop.call_later(self.window_s, self._flip, loop)

    def stop(self) -> tuple[list[float], list[int]]:
        self._running = False
        return self.cpu, self.events

    def _flip(self, loop: Any) -> None:
        if not self._running:
            return
        now, decoded = time.thread_time(), self.decoded
        self.cpu[self.b] += now - self._since[0]
        self.events[self.b] += decoded - self._since[1]
        self._since = (now, decoded)
        self.b = random.random() < 0.5  # at random: never in step with the batches
        loop.call_later(self.window_s, self._flip, loop)


def _install(shell: Any, variant: str, window_s: float) -> bool:
    """In the fused actor: count decoded events, and make ``variant`` B (while switched on)."""
    from drasi_ray.source.reader import Reader, Screened

    switch = shell.inactor_switch = _Switch(window_s)
    screen = Reader._screen

    def counting(reader: Any, entries: Any, counts: Any) -> Any:
        switch.decoded += len(entries)
        return screen(reader, entries, counts)

    Reader._screen = counting  # type: ignore[method-assign,assignment]
    if variant == "hold-batches":
        release = Screened.release

        def held(screened: Screened) -> None:
            if not switch.b:
                release(screened)

        Screened.release = held  # type: ignore[method-assign,assignment]
    return True


def _begin(shell: Any) -> bool:
    role = next(iter(shell._consumers.values()))  # a fused consumer's task: the actor's loop
    loop = role._metrics_task.get_loop()
    loop.call_soon_threadsafe(shell.inactor_switch.start, loop)
    return True


def _end(shell: Any) -> tuple[list[float], list[int]]:
    result: tuple[list[float], list[int]] = shell.inactor_switch.stop()
    return result


@dataclass(frozen=True)
class Run:
    """One drain: its wall time, and each variant's loop-thread CPU and events (A, B)."""

    variant: str
    events: int
    seconds: float
    cpu_s: tuple[float, float]
    counted: tuple[int, int]

    def per_event_us(self, b: bool) -> float:
        return self.cpu_s[b] / max(self.counted[b], 1) * 1e6

    @property
    def rate(self) -> float:
        return rate(self.events, self.seconds)

    @property
    def ratio(self) -> float:
        return self.per_event_us(True) / self.per_event_us(False)


def drain(url: str, variant: str, events: int, window_ms: float, round_number: int) -> Run:
    """One app, one backlog of ``events``, drained with ``variant`` switched in at random."""
    stream = fresh_stream(f"inactor-{variant}-{round_number}")
    create_group(url, stream)
    app = hot_app(url, stream, 1, 100, 50, f"inactor{round_number}")
    app.start()
    try:
        subscription = app.subscribe(QUERY_ID)
        actor = actors_by_kind(app)["coordinator"][0]
        ray.get(actor.__ray_call__.remote(_install, variant, window_ms / 1000))
        with redis.Redis.from_url(url) as client:
            held = hold_backlog(client, url, stream, hot_payloads(0, events, 1000, live=False))
            ray.get(actor.__ray_call__.remote(_begin))
            started = time.perf_counter()
            release_held(client, stream, held)
            received = 0
            while received < events:
                received += len(subscription.next(timeout=10.0))
            seconds = time.perf_counter() - started
        cpu, counted = ray.get(actor.__ray_call__.remote(_end))
    finally:
        app.stop()
    return Run(variant, events, seconds, (cpu[0], cpu[1]), (counted[0], counted[1]))


def _row(run: Run) -> tuple[Any, ...]:
    return (
        run.variant,
        f"{run.rate:,.0f}",
        f"{run.counted[0]:,}",
        f"{run.per_event_us(False):.2f}",
        f"{run.counted[1]:,}",
        f"{run.per_event_us(True):.2f}",
        f"{run.ratio:.3f}",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inactor_ab", description=__doc__)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--window-ms", type=float, default=50.0)
    parser.add_argument("--runs", type=int, default=2, help="drains per variant")
    parser.add_argument("--no-record", action="store_true")
    options = parser.parse_args(argv)
    variants = [name.strip() for name in options.variants.split(",") if name.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    # The actor runs this module's functions: ship them by value (bench/ is not on its path).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
    recorder = Recorder("inactor_ab", command_line("bench.inactor_ab", argv))
    runs: list[Run] = []
    with bench_env() as server:
        for variant in variants:
            for number in range(options.runs):
                run = drain(server.url, variant, options.events, options.window_ms, number)
                print(f"  {variant}, run {number + 1}: B/A {run.ratio:.3f}", flush=True)
                runs.append(run)
    print_lines(
        format_table(
            ("variant", "events/s", "A events", "A µs/event", "B events", "B µs/event", "B/A"),
            [_row(run) for run in runs],
        )
    )
    for variant in variants:
        _record(recorder, [run for run in runs if run.variant == variant], options)
    if not options.no_record:
        recorder.write()
    return 0


def _record(recorder: Recorder, runs: Sequence[Run], options: argparse.Namespace) -> None:
    ratios = [run.ratio for run in runs]

    def per_event(b: bool) -> str:
        return ", ".join(f"{run.per_event_us(b):.2f}" for run in runs)

    recorder.add(
        f"fused actor's event-loop CPU per event, variant {runs[0].variant} against the code "
        f"as it is (B/A; backlog of {options.events:,} events, variant drawn every "
        f"{options.window_ms:g} ms; median of {len(runs)} drains)",
        statistics.median(ratios),
        "x",
        detail=(
            f"runs {', '.join(f'{ratio:.3f}' for ratio in ratios)}; A {per_event(False)} µs, "
            f"B {per_event(True)} µs per event; load {load_average():.1f}"
        ),
    )


if __name__ == "__main__":
    raise SystemExit(main())
