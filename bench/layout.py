"""Scaling out by actor count: K store shards and M query hosts, the CPU every kind of actor
spends per change, and a ceiling model built from those rates.

On a 2-core machine more actors cannot raise the throughput (the cores are busy already); what
scales, and what this benchmark measures, is the CPU each actor spends per change: a shard's
share must fall as 1/K, a host's as 1/M (it runs Q/M of the Q queries), while the work summed
over a kind stays what it was. The end-to-end rate of each run is reported beside it.

Workload: ``--sensors`` Sensor nodes in 10 Zone nodes, linked by IN relations (set up first,
so relations and their endpoints live on different shards), then a backlog of ``--events``
sensor updates (:mod:`bench.pipeline`'s hot workload: every update changes a row). Four
queries, so hosts have work to share: three filters (``temperature > 60``, ``> 70``, ``> 80``)
and a two-hop query over the relations (``(s:Sensor)-[:IN]->(z:Zone)`` where ``s.temperature >
75``). The backlog is released to the running app as in ``bench.scale``; the clock stops when
``wait_until_idle`` returns.

Layouts (``--layouts``, ``KxM``): shards 1, 2, 4 with one host, hosts 1, 2, 4 with one shard,
each with ``--consumers`` consumers; one more run of 1x1 without durable state separates what
Redis spends on the stream from what it spends on the element store, and one more of 1x1
without durable state over ``--streams`` streams (a partitioned source on the one server; the
backlog put on each element's stream) measures what the streams of a source cost that server.

The ceiling model (:mod:`bench.ceiling`) is built from these runs' µs per change: which part
limits first, what a 10-node cluster reaches, and when the source's server is the limit.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import ray
import redis

from bench.ceiling import (
    CLUSTER_NODES,
    CORES_PER_NODE,
    Costs,
    Partitioned,
    Scaled,
    ceilings,
    verdict,
)
from bench.ceiling import lines as ceiling_lines
from bench.common import bench_env, command_line, format_table, load_average, print_lines, rate
from bench.ingest import arm_backlog, release_backlog
from bench.pipeline import GROUP, CpuMeter, CpuUsage, actors_by_kind, fresh_stream, hot_payloads
from bench.results import Recorder
from drasi_ray import DrasiRay
from drasi_ray.model.changes import Op, node, relation
from drasi_ray.model.config import ScalingConfig, StateConfig
from drasi_ray.model.partitions import stream_for
from drasi_ray.source.decode import change_event, decode_entry, encode_cloud_event
from drasi_ray.testing.apps import one_source_app

SOURCE_ID = "sensors"
ZONES = 10
TIMEOUT_S = 600.0
QUERIES = {
    "over60": "MATCH (s:Sensor) WHERE s.temperature > 60 RETURN s.id AS id, s.temperature AS t",
    "over70": "MATCH (s:Sensor) WHERE s.temperature > 70 RETURN s.id AS id, s.temperature AS t",
    "over80": "MATCH (s:Sensor) WHERE s.temperature > 80 RETURN s.id AS id, s.temperature AS t",
    "zones": "MATCH (s:Sensor)-[:IN]->(z:Zone) WHERE s.temperature > 75 "
    "RETURN s.id AS id, z.name AS zone",
}


@dataclass(frozen=True)
class Options:
    layouts: tuple[tuple[int, int], ...]
    consumers: int
    events: int
    sensors: int
    batch_size: int
    record: bool
    streams: int = 3


@dataclass(frozen=True)
class LayoutRun:
    """One drain: the layout, its rate, and the CPU of every actor (µs per change)."""

    shards: int
    hosts: int
    durable: bool
    events: int
    seconds: float
    cpu: CpuUsage
    loads: tuple[float, float]
    streams: int = 1

    @property
    def rate(self) -> float:
        return rate(self.events, self.seconds)

    def per_change(self, role: str) -> float:
        """µs of CPU ``role`` spent per change of the run."""
        return self.cpu.per_role.get(role, 0.0) / 100 * self.cpu.wall_s / self.events * 1e6

    def kind(self, prefix: str) -> list[float]:
        """µs per change of each actor whose role starts with ``prefix``."""
        return [self.per_change(r) for r in sorted(self.cpu.per_role) if r.startswith(prefix)]

    @property
    def label(self) -> str:
        over = "" if self.streams == 1 else f" over {self.streams} streams"
        return f"K={self.shards} M={self.hosts}{over}" + (
            "" if self.durable else " (no durable state)"
        )


# --------------------------------------------------------------------------------------------
# workload and runs
# --------------------------------------------------------------------------------------------


def setup_payloads(sensors: int) -> list[bytes]:
    """Zones, and one IN relation per sensor (to zone ``i mod 10``)."""
    entries = []
    for zone in range(ZONES):
        element = node(f"zone-{zone}", ["Zone"], {"name": f"zone-{zone}"})
        entries.append(encode_cloud_event([change_event(Op.INSERT, element, 1)]))
    for sensor in range(sensors):
        link = relation(f"in-{sensor}", ["IN"], f"sensor-{sensor}", f"zone-{sensor % ZONES}")
        entries.append(encode_cloud_event([change_event(Op.INSERT, link, 1)]))
    return entries


def layout_app(
    url: str, stream: str | Sequence[str], shards: int, hosts: int, options: Options, durable: bool
) -> DrasiRay:
    return one_source_app(
        url,
        stream,
        QUERIES,
        source_id=SOURCE_ID,
        prefix="bench-layout",
        state_config=StateConfig(durable=durable),
        scaling_config=ScalingConfig(shards=shards, query_hosts=hosts),
        consumer_group=GROUP,
        consumers=options.consumers,
        batch_size=options.batch_size,
        block_ms=1000,
        start_id="0",
    )


def actor_roles(app: DrasiRay) -> dict[str, list[int]]:
    """One role per actor: ``consumer <i>``, ``shard <k>``, ``host <m>``."""
    kinds = actors_by_kind(app, SOURCE_ID)
    shards = [*kinds["coordinator"], *kinds["shards"]]
    roles: dict[str, list[int]] = {}
    for prefix, actors in (
        ("consumer", kinds["consumers"]),
        ("shard", shards),
        ("host", kinds["hosts"]),
    ):
        for index, pid in enumerate(ray.get([actor.pid.remote() for actor in actors])):
            roles[f"{prefix} {index}"] = [pid]
    return roles


def run_layout(
    url: str,
    redis_pid: int | None,
    shards: int,
    hosts: int,
    payloads: Sequence[bytes],
    options: Options,
    durable: bool = True,
    streams: int = 1,
) -> LayoutRun:
    """One backlog drain of ``payloads`` (setup first) through a K x M app whose source reads
    ``streams`` streams (each element's changes on its stream)."""
    base = fresh_stream(f"layout{shards}x{hosts}")
    keys = [base] if streams == 1 else [f"{base}-{index}" for index in range(streams)]
    wakes = {stream: arm_backlog(url, stream, part) for stream, part in _partition(payloads, keys)}
    app = layout_app(url, keys, shards, hosts, options, durable).start()
    try:
        meter = CpuMeter.for_roles(actor_roles(app), redis_pid)
        before = load_average()
        with redis.Redis.from_url(url) as client:
            meter.start()
            started = time.perf_counter()
            for stream, wake in wakes.items():
                release_backlog(client, stream, wake)
            app.wait_until_idle(TIMEOUT_S)
            seconds = time.perf_counter() - started
            cpu = meter.stop()
        changes = app.status().totals.changes
        if changes != len(payloads):
            raise RuntimeError(f"applied {changes} changes, expected {len(payloads)}")
    finally:
        app.stop()
        with redis.Redis.from_url(url) as client:
            client.delete(*keys)
    loads = (before, load_average())
    return LayoutRun(shards, hosts, durable, len(payloads), seconds, cpu, loads, streams)


def _partition(payloads: Sequence[bytes], streams: Sequence[str]) -> list[tuple[str, list[bytes]]]:
    """Each stream's payloads, in order: every entry on its element's stream."""
    if len(streams) == 1:
        return [(streams[0], list(payloads))]
    parts: dict[str, list[bytes]] = {stream: [] for stream in streams}
    for payload in payloads:
        element = decode_entry("1-0", {b"data": payload}).changes[0].element
        parts[stream_for(element.id, streams)].append(payload)
    return list(parts.items())


# --------------------------------------------------------------------------------------------
# tables, the model, figures
# --------------------------------------------------------------------------------------------


def _us(values: Sequence[float]) -> str:
    return " / ".join(f"{value:.1f}" for value in values) or "-"


def layout_table(runs: Sequence[LayoutRun]) -> list[str]:
    headers = (
        "layout", "events/s", "consumers µs (each)", "shards µs (each)", "shards µs (sum)",
        "hosts µs (each)", "hosts µs (sum)", "redis µs", "ray system µs", "driver µs",
        "machine cores busy", "load 1m",
    )  # fmt: skip
    rows = [
        (
            run.label, run.rate, _us(run.kind("consumer ")), _us(run.kind("shard ")),
            f"{sum(run.kind('shard ')):.1f}", _us(run.kind("host ")),
            f"{sum(run.kind('host ')):.1f}", f"{run.per_change('redis'):.1f}",
            f"{run.per_change('ray system'):.1f}", f"{run.per_change('driver'):.1f}",
            f"{run.cpu.machine_cores:.2f}", f"{run.loads[0]:.1f}->{run.loads[1]:.1f}",
        )
        for run in runs
    ]  # fmt: skip
    return format_table(headers, rows)


def costs_of(runs: Sequence[LayoutRun]) -> Costs:
    """The model's inputs: the 1x1 run, the runs with the most shards (one host) and the most
    hosts (one shard), and the 1x1 run without durable state (Redis's stream share)."""
    durable = [run for run in runs if run.durable]
    base = next(run for run in durable if (run.shards, run.hosts) == (1, 1))
    most_shards = max((run for run in durable if run.hosts == 1), key=lambda run: run.shards)
    most_hosts = max((run for run in durable if run.shards == 1), key=lambda run: run.hosts)
    volatile = next((run for run in runs if not run.durable and run.streams == 1), base)
    several = next((run for run in runs if not run.durable and run.streams > 1), None)
    summed = (
        sum(most_shards.kind("consumer "))
        + sum(most_shards.kind("shard "))
        + sum(most_hosts.kind("host "))
    )
    return Costs(
        consumers=sum(base.kind("consumer ")),
        shards=_scaled(base, most_shards, "shard ", most_shards.shards),
        hosts=_scaled(base, most_hosts, "host ", most_hosts.hosts),
        summed_actors=summed,
        ray_system=base.per_change("ray system"),
        redis_stream=volatile.per_change("redis"),
        redis_store=max(base.per_change("redis") - volatile.per_change("redis"), 0.0),
        partitioned=None
        if several is None
        else Partitioned(several.streams, several.per_change("redis")),
    )  # fmt: skip


def _scaled(base: LayoutRun, most: LayoutRun, prefix: str, count: int) -> Scaled:
    return Scaled(sum(base.kind(prefix)), _mean(most.kind(prefix)), count)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / max(len(values), 1)


def record(recorder: Recorder, runs: Sequence[LayoutRun], costs: Costs) -> None:
    detail = f"{runs[0].events:,} events backlog, {len(QUERIES)} queries"
    for run in runs:
        if not run.durable:
            if run.streams > 1:
                recorder.add(
                    f"CPU per change, Redis, K=1, M=1 over {run.streams} streams on one server, "
                    "no durable state",
                    run.per_change("redis"),
                    "µs",
                    detail=f"{detail}; end to end {run.rate:,.0f} events/s",
                )
            continue
        label = f"K={run.shards} shards, M={run.hosts} hosts"
        recorder.add(f"end to end, {label}", run.rate, "events/s", detail=detail)
        for what, value in (
            ("each store shard (mean)", _mean(run.kind("shard "))),
            ("store shards summed", sum(run.kind("shard "))),
            ("each query host (mean)", _mean(run.kind("host "))),
            ("query hosts summed", sum(run.kind("host "))),
            ("consumers summed", sum(run.kind("consumer "))),
            ("Redis", run.per_change("redis")),
            ("Ray's own processes", run.per_change("ray system")),
        ):
            recorder.add(f"CPU per change, {what}, {label}", value, "µs", detail=detail)
    for ceiling in ceilings(costs):
        if math.isfinite(ceiling.rate):
            recorder.add(
                f"ceiling model: {ceiling.part}", ceiling.rate, "changes/s", detail=ceiling.how
            )
    estimate, text = verdict(costs)
    recorder.add(
        f"ceiling model: {CLUSTER_NODES} nodes x {CORES_PER_NODE} cores, one stream per source",
        estimate,
        "changes/s",
        detail=text,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


def _layouts(text: str) -> tuple[tuple[int, int], ...]:
    pairs = []
    for item in text.split(","):
        shards, _, hosts = item.strip().partition("x")
        pairs.append((int(shards), int(hosts)))
    return tuple(pairs)


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.layout", description=__doc__)
    parser.add_argument("--layouts", default="1x1,2x1,4x1,1x2,1x4", help="KxM, comma-separated")
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sensors", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--no-record", action="store_true", help="do not append to results.jsonl")
    parser.add_argument(
        "--streams",
        type=int,
        default=3,
        help="streams of the partitioned run (1x1, no durable state); 1: no such run",
    )
    args = parser.parse_args(argv)
    return Options(
        _layouts(args.layouts), args.consumers, args.events, args.sensors, args.batch_size,
        not args.no_record, args.streams,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    recorder = Recorder("layout", command_line("bench.layout", argv))
    payloads = [
        *setup_payloads(options.sensors),
        *hot_payloads(0, options.events, options.sensors, live=False),
    ]
    runs: list[LayoutRun] = []
    with bench_env() as server:
        for shards, hosts in options.layouts:
            run = run_layout(server.url, server.pid, shards, hosts, payloads, options)
            runs.append(run)
            print(f"  {run.label}: {run.rate:,.0f} events/s", flush=True)
        volatile = run_layout(server.url, server.pid, 1, 1, payloads, options, durable=False)
        runs.append(volatile)
        print(f"  {volatile.label}: {volatile.rate:,.0f} events/s", flush=True)
        if options.streams > 1:
            several = run_layout(
                server.url, server.pid, 1, 1, payloads, options, False, options.streams
            )
            runs.append(several)
            print(f"  {several.label}: {several.rate:,.0f} events/s", flush=True)
    costs = costs_of(runs)
    lines = [
        f"Method (bench/layout.py docstring): {len(payloads):,} entries ({options.sensors:,} "
        f"sensors in {ZONES} zones, then {options.events:,} updates), {len(QUERIES)} queries, "
        f"{options.consumers} consumers, batch {options.batch_size}. µs = CPU microseconds per "
        "change of each process (each: one figure per actor, in index order).",
        "",
        *layout_table(runs),
        "",
        *ceiling_lines(costs),
    ]
    print_lines(["", *lines])
    if options.record:
        record(recorder, runs, costs)
        recorder.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
