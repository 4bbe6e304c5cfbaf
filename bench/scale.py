"""Scaling out consumers: the filter workload at 1, 2 and 4 consumer actors, and its bottleneck.

The workload of :mod:`bench.pipeline` (realistic sensor updates, every one changing a row of
the README's filter query) is pre-published as a backlog and released to the running app as in
``bench.ingest`` section d: the group is created after the backlog, the actors start and block,
then ``XGROUP SETID 0`` plus one XADD release it; the clock stops when ``wait_until_idle``
returns (every entry applied, delivered and acked). No subscriber: the query actor computes
and numbers every diff, nobody pulls them.

The peer, in the same run: the filter query hand-written as one redis-py loop in its own
process (:mod:`bench.filter_loop`), through the same backlog; its clock stops when every result
has reached this process (``--no-peer`` skips it).

Where the bottleneck is, three ways, on the unprofiled timed run:

- CPU time of every process over the run (:class:`bench.pipeline.CpuMeter`): consumers,
  coordinator, query actor, Redis, Ray's own processes, and the machine (2 cores);
- ``app.status()`` every 0.5 s: entries in flight (read, not acked) summed over consumers
  (bounded by ``max_in_flight`` = 4,000 each: near the bound, consumers wait on downstream),
  and the coordinator's batches per second and changes per batch;

and, on a second run of the same size (``--profile-counts``), py-spy on the coordinator and
the query actor (250 Hz, nonblocking, by function; :mod:`bench.profiling`): the top frames,
self and inclusive, and each process's sampled busy share (samples / (250 x seconds)).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import ray
import redis

from bench import profiling
from bench.common import (
    bench_env,
    command_line,
    format_table,
    load_average,
    print_lines,
    rate,
)
from bench.ingest import arm_backlog, release_backlog
from bench.latency import PeerBacklog
from bench.pipeline import (
    CPU_HEADERS,
    CPU_NOTE,
    QUERY_ID,
    STATUS_HEADERS,
    CpuMeter,
    CpuUsage,
    StatusSampler,
    StatusSummary,
    cpu_cells,
    fresh_stream,
    hot_app,
    hot_payloads,
    int_list,
)
from bench.results import Recorder
from drasi_ray import DrasiRay
from drasi_ray.model.config import PlatformSourceConfig

TIMEOUT_S = 600.0
MAX_IN_FLIGHT: int = PlatformSourceConfig.model_fields["max_in_flight"].default
"""PlatformSourceConfig.max_in_flight's default, the bound on each consumer's unacked entries."""
PROFILE_HZ = 250
TARGET_RATE = 50_000
"""Issue #7's target: end to end with a filter query, events/s on this 2-core machine."""
EVENTS = 200_000
"""The default backlog: drained in 3-4 s here, long enough that the figure is the sustained rate
(50,000 drained in 0.8 s on the 2026-11-22 machine, where the start of a drain weighs)."""


@dataclass(frozen=True)
class Options:
    consumers: tuple[int, ...]
    events: int
    batch_size: int
    max_batch_size: int | None
    block_ms: int
    sensors: int
    profile_counts: tuple[int, ...]
    profile_dir: Path | None
    peer: bool
    record: bool


@dataclass(frozen=True)
class ScaleRow:
    consumers: int
    events: int
    seconds: float
    cpu: CpuUsage
    status: StatusSummary
    loads: tuple[float, float]

    @property
    def rate(self) -> float:
        return rate(self.events, self.seconds)


@dataclass(frozen=True)
class Profiled:
    consumers: int
    seconds: float
    events: int
    profiles: dict[str, profiling.Profile]


# --------------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------------


class Backlog:
    """An app with an armed backlog on a fresh stream; stopped and the stream dropped on exit."""

    def __init__(self, url: str, consumers: int, payloads: Sequence[bytes], options: Options):
        self.url = url
        self.stream = fresh_stream(f"scale{consumers}")
        self.events = len(payloads)
        self._wake = arm_backlog(url, self.stream, payloads)
        self.app: DrasiRay = hot_app(
            url,
            self.stream,
            consumers,
            options.batch_size,
            options.block_ms,
            "scale",
            max_batch_size=options.max_batch_size,
        ).start()

    def drain(self) -> float:
        """Release the backlog; seconds until ``wait_until_idle`` returns."""
        with redis.Redis.from_url(self.url) as client:
            started = time.perf_counter()
            release_backlog(client, self.stream, self._wake)
            self.app.wait_until_idle(TIMEOUT_S)
            seconds = time.perf_counter() - started
        applied = self.app.status().totals.changes
        if applied != self.events:
            raise RuntimeError(f"applied {applied} changes, expected {self.events}")
        return seconds

    def __enter__(self) -> Backlog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.app.stop()
        with redis.Redis.from_url(self.url) as client:
            client.delete(self.stream)


def run_timed(
    url: str, redis_pid: int | None, consumers: int, payloads: Sequence[bytes], options: Options
) -> ScaleRow:
    """One unprofiled drain, with the CPU meter and the status sampler running."""
    with Backlog(url, consumers, payloads, options) as backlog:
        meter = CpuMeter.for_app(backlog.app, redis_pid)
        sampler = StatusSampler(backlog.app, 0.5)
        before = load_average()
        meter.start()
        sampler.start()
        seconds = backlog.drain()
        cpu, status = meter.stop(), sampler.stop()
    return ScaleRow(consumers, len(payloads), seconds, cpu, status, (before, load_average()))


@dataclass(frozen=True)
class PeerRun:
    events: int
    seconds: float
    cpu: CpuUsage

    @property
    def rate(self) -> float:
        return rate(self.events, self.seconds)


def run_peer(
    url: str, redis_pid: int | None, payloads: Sequence[bytes], options: Options
) -> PeerRun:
    """The hand-written loop (:mod:`bench.filter_loop`, one process) through the same backlog:
    seconds from the release until every result reached this process."""
    with PeerBacklog(url, options.batch_size, options.block_ms) as peer:
        drained = peer.drain(payloads, peer.meter(redis_pid))
    return PeerRun(len(payloads), drained.seconds, drained.cpu)


def run_profiled(
    url: str, consumers: int, payloads: Sequence[bytes], options: Options, directory: Path
) -> Profiled:
    """One more drain with py-spy on the coordinator (store shard 0) and the query's host."""
    with Backlog(url, consumers, payloads, options) as backlog:
        app = backlog.app
        pids = {
            "coordinator": int(ray.get(app.coordinator_actor().pid.remote())),
            "query host": int(ray.get(app.query_actor(QUERY_ID).pid.remote())),
        }
        files = {role: directory / f"{role}-{consumers}.txt" for role in pids}
        with ExitStack() as stack:
            for role, pid in pids.items():
                stack.enter_context(profiling.py_spy(pid, files[role], PROFILE_HZ))
            seconds = backlog.drain()
    profiles = {role: profiling.summarize(path) for role, path in files.items()}
    return Profiled(consumers, seconds, len(payloads), profiles)


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------


def scale_table(rows: Sequence[ScaleRow]) -> list[str]:
    base = rows[0].rate if rows else 0.0
    headers = (
        "consumers", "events", "seconds", "events/s", "vs 1st",
        *STATUS_HEADERS, "in_flight bound", *CPU_HEADERS, "load 1m",
    )  # fmt: skip
    body = [
        (
            r.consumers, r.events, f"{r.seconds:.2f}", r.rate,
            f"{r.rate / base:.2f}x" if base else "-",
            *r.status.cells(), r.consumers * MAX_IN_FLIGHT, *cpu_cells(r.cpu),
            f"{r.loads[0]:.1f}->{r.loads[1]:.1f}",
        )
        for r in rows
    ]  # fmt: skip
    return format_table(headers, body)


def bottleneck(row: ScaleRow) -> str:
    """One sentence from the CPU shares and the in-flight counts of a timed run."""
    role, share = row.cpu.busiest()
    bound = row.consumers * MAX_IN_FLIGHT
    waiting = row.status.in_flight_mean >= 0.5 * bound
    parts = [
        f"{row.consumers} consumer(s): busiest process {role} at {share:.0f}% of a core",
        f"machine {row.cpu.machine_cores:.2f} of 2 cores busy "
        f"({row.cpu.elsewhere_cores:.2f} elsewhere)",
        f"in flight {row.status.in_flight_mean:,.0f} of {bound:,} on average"
        + (" (consumers wait on downstream)" if waiting else ""),
    ]
    return "; ".join(parts) + "."


def versus_peer(rows: Sequence[ScaleRow], peer: PeerRun | None, batch_size: int) -> list[str]:
    if peer is None:
        return []
    ratios = " / ".join(f"{row.rate / peer.rate:.2f}x" for row in rows)
    counts = " / ".join(str(row.consumers) for row in rows)
    return [
        f"Peer: the hand-written loop (bench/filter_loop.py: one process, XREADGROUP COUNT "
        f"{batch_size}, orjson, rows in a dict, one XACK per batch, results piped to "
        f"this process; no durable state) drained the same backlog at {peer.rate:,.0f} events/s "
        f"(its process {peer.cpu.per_role.get('consumers', 0.0):.0f}% of a core, Redis "
        f"{peer.cpu.per_role.get('redis', 0.0):.0f}%, machine {peer.cpu.machine_cores:.2f} cores "
        f"busy); drasi_ray with {counts} consumers: {ratios} of it."
    ]


def verdict(rows: Sequence[ScaleRow]) -> list[str]:
    """The target per consumer count, with the CPU one event cost summed over our processes
    (what decides the rate once the machine is busy, and compares across machines)."""
    return [
        f"Target end to end >= {TARGET_RATE:,} events/s, {r.consumers} consumer(s): "
        f"{r.rate:,.0f} events/s, {r.cpu.ours_cores / r.rate * 1e6:.1f} µs of CPU per event "
        f"-> {'MET' if r.rate >= TARGET_RATE else 'NOT MET'}."
        for r in rows
    ]


def profile_lines(profiled: Profiled, limit: int = 10) -> list[str]:
    lines = [
        f"py-spy, {profiled.consumers} consumer(s): {profiled.events:,} events in "
        f"{profiled.seconds:.2f}s ({rate(profiled.events, profiled.seconds):,.0f} events/s "
        f"under the sampler), {PROFILE_HZ} Hz, nonblocking, by function.",
    ]
    for role, profile in profiled.profiles.items():
        busy = profile.samples / (PROFILE_HZ * max(profiled.seconds, 1e-9))
        lines += [
            "",
            f"{role} actor: {profile.samples} samples of active Python threads "
            f"({100 * busy:.0f}% of the drain's wall time).",
            "",
            *_frames(profile, "self", limit),
            "",
            *_frames(profile, "inclusive", limit),
        ]
    return lines


def _frames(profile: profiling.Profile, view: str, limit: int) -> list[str]:
    rows = [(profiling.shorten(f), n, f"{pct:.1f}%") for f, n, pct in profile.top(view, limit)]
    return format_table((f"frame ({view})", "samples", "share"), rows)


def record_figures(recorder: Recorder, rows: Sequence[ScaleRow], peer: PeerRun | None) -> None:
    """Per consumer count: events/s and CPU per event (every process of the run: actors,
    Redis, Ray's own, this driver), each against the hand-written loop's of the same run."""
    label = "the query hand-written as one redis-py loop, same run"
    for r in rows:
        detail = f"{r.events:,} events backlog"
        recorder.add(
            f"backlog drained end to end, {r.consumers} consumer(s)",
            r.rate,
            "events/s",
            peer=label if peer else None,
            peer_value=peer.rate if peer else None,
            detail=detail,
        )
        recorder.add(
            f"CPU per event, every process of the run summed, {r.consumers} consumer(s)",
            r.cpu.ours_cores / r.rate * 1e6,
            "µs",
            peer=label if peer else None,
            peer_value=peer.cpu.ours_cores / peer.rate * 1e6 if peer else None,
            detail=detail,
        )


def notes(options: Options) -> list[str]:
    return [
        "Method (bench/scale.py docstring): a pre-published backlog of "
        f"{options.events:,} sensor updates ({options.sensors:,} sensors, every update changes a "
        "row of the README's filter query) released to the running app; clock from release to "
        f"`wait_until_idle`. Source: batch_size {options.batch_size}, block_ms "
        f"{options.block_ms}, max_in_flight {MAX_IN_FLIGHT} per consumer (reads grow up to "
        f"{MAX_IN_FLIGHT // 2:,} while there is a backlog); no subscriber. "
        "`in_flight`: app.status() every 0.5 s, entries read and not acked summed over the "
        "consumers; `coord. batches/s`, `changes/batch`: the coordinator's counters over the "
        "run.",
        CPU_NOTE,
    ]


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--consumers", default="1,2,4", help="consumer counts, comma-separated")
    parser.add_argument(
        "--events", type=int, default=EVENTS, help=f"backlog per run (default {EVENTS:,})"
    )
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument(
        "--max-batch-size", type=int, help="cap of the adaptive reads (default: the source's)"
    )
    parser.add_argument("--block-ms", type=int, default=1000)
    parser.add_argument("--sensors", type=int, default=1000)
    parser.add_argument(
        "--profile-counts", default="1,4", help="consumer counts profiled ('' for none)"
    )
    parser.add_argument("--profile-dir", type=Path, help="keep py-spy's collapsed stacks here")
    parser.add_argument(
        "--no-peer", action="store_true", help="skip the hand-written loop (bench/filter_loop.py)"
    )
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    args = parser.parse_args(argv)
    return Options(
        int_list(args.consumers),
        args.events,
        args.batch_size,
        args.max_batch_size,
        args.block_ms,
        args.sensors,
        int_list(args.profile_counts),
        args.profile_dir,
        not args.no_peer,
        not args.no_record,
    )


def run_profiles(url: str, payloads: Sequence[bytes], options: Options) -> list[str]:
    if not options.profile_counts or not profiling.available():
        return ["(no py-spy profile: none asked for, or py-spy is not installed)"]
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        directory = options.profile_dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        for consumers in options.profile_counts:
            print(f"profiling {consumers} consumer(s) ...", flush=True)
            profiled = run_profiled(url, consumers, payloads, options, directory)
            lines += ["", *profile_lines(profiled)]
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run every consumer count, then the profiles; print, and append the figures to
    results.jsonl."""
    options = parse_args(argv)
    recorder = Recorder("scale", command_line("bench.scale", argv))
    payloads = hot_payloads(0, options.events, options.sensors, live=False)
    rows: list[ScaleRow] = []
    with bench_env() as server:
        for consumers in options.consumers:
            row = run_timed(server.url, server.pid, consumers, payloads, options)
            rows.append(row)
            print(f"  {consumers} consumer(s): {row.rate:,.0f} events/s", flush=True)
            print(f"  {bottleneck(row)}", flush=True)
        peer = run_peer(server.url, server.pid, payloads, options) if options.peer else None
        if peer is not None:
            print(f"  peer: {peer.rate:,.0f} events/s", flush=True)
        profiles = run_profiles(server.url, payloads, options)
    lines = [
        *notes(options),
        "",
        *scale_table(rows),
        "",
        *[bottleneck(row) for row in rows],
        "",
        *verdict(rows),
        *versus_peer(rows, peer, options.batch_size),
        *profiles,
    ]
    print_lines(["", *lines])
    if options.record:
        record_figures(recorder, rows, peer)
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
