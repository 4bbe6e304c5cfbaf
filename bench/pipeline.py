"""What the pipeline benchmarks (:mod:`bench.latency`, :mod:`bench.scale`) share.

Workload ("hot" sensors): the realistic sensor updates of :mod:`bench.common` (one node update
per entry, 4-6 properties, ids cycling over ``sensors`` sensors), except that every
``temperature`` is above 70 and differs from the sensor's previous one, so *every* event
changes a row of the filter query and produces exactly one :class:`QueryResult` (an ADD the
first time a sensor is seen, an UPDATE after). The temperature of event ``seq`` is a function
of ``seq``, unique per sensor over 2,000 consecutive updates of it, so a result row
``(id, temperature)`` names the event that caused it.

Live events carry ``ts_ns`` = their publish time: payloads are built ahead with a 19-digit
placeholder, replaced by ``time.time_ns()`` right before the XADD (a cheap bytes replace, so a
paced publisher does not spend its time building JSON).

Where the CPU goes: :class:`CpuMeter` reads the CPU time of every process of the run (each
actor by its pid, the private Redis, the driver, Ray's own processes, which are the driver's
descendants) and of the whole machine, so a table can say which process was saturated and how
much of the 2 cores others used. :class:`StatusSampler` polls ``app.status()`` meanwhile.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil
import ray

from bench.common import BASE_TS_NS, SENSOR_QUERY, sensor_properties
from drasi_ray import DrasiRay
from drasi_ray.host.reports import QueryReport
from drasi_ray.model.changes import Op, node
from drasi_ray.model.config import Layout, ScalingConfig, StateConfig
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.testing.apps import one_source_app

GROUP = "bench"
QUERY_ID = "hot"
SOURCE_ID = "sensors"
TS_PLACEHOLDER = b"1999999999999999999"
"""Stands for the publish time in a payload built ahead (19 digits, like ``time_ns()`` now)."""
TEMPERATURE_STEPS = 2000

# --------------------------------------------------------------------------------------------
# workload
# --------------------------------------------------------------------------------------------


def int_list(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)`` (command-line lists of consumer counts and rates)."""
    return tuple(int(part) for part in text.split(",") if part.strip())


def sensor_id(seq: int, sensors: int) -> str:
    return f"sensor-{seq % sensors}"


def hot_temperature(seq: int, sensors: int) -> float:
    """70.01 .. 90.00, +0.01 at each update of the sensor (wrapping after 2,000 of them)."""
    return round(70.01 + ((seq // sensors) % TEMPERATURE_STEPS) * 0.01, 2)


def hot_payload(seq: int, sensors: int, rng: random.Random, ts_ns: int | None = None) -> bytes:
    """Entry ``seq``'s ``data`` field; ``ts_ns`` None leaves :data:`TS_PLACEHOLDER` in it."""
    element_id = sensor_id(seq, sensors)
    properties = sensor_properties(element_id, rng)
    properties["temperature"] = hot_temperature(seq, sensors)
    element = node(element_id, ["Sensor"], properties)
    stamp = int(TS_PLACEHOLDER) if ts_ns is None else ts_ns
    event = change_event(Op.UPDATE, element, stamp, db="sensors")
    return encode_cloud_event([event], source="sensor-source")


def hot_payloads(first: int, count: int, sensors: int, *, live: bool, seed: int = 7) -> list[bytes]:
    """Payloads of events ``first .. first+count-1``: ``live`` ones carry the placeholder,
    the others a fixed past ``ts_ns`` (a backlog published before the clock starts)."""
    rng = random.Random(seed + first)
    return [
        hot_payload(seq, sensors, rng, None if live else BASE_TS_NS + seq * 1_000_000)
        for seq in range(first, first + count)
    ]


def stamp_payload(payload: bytes, now_ns: bytes) -> bytes:
    """``payload`` with its ``ts_ns`` set to ``now_ns`` (19 ASCII digits)."""
    return payload.replace(TS_PLACEHOLDER, now_ns, 1)


def result_key(diff: Mapping[str, Any]) -> tuple[str, float]:
    """``(id, temperature)`` of the row an ADD or UPDATE diff brings (the event's name)."""
    row = diff["after"] if "after" in diff else diff["data"]
    return row["id"], row["temperature"]


# --------------------------------------------------------------------------------------------
# the app
# --------------------------------------------------------------------------------------------


def fresh_stream(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def hot_app(
    url: str,
    stream: str | Sequence[str],
    consumers: int,
    batch_size: int,
    block_ms: int,
    prefix: str,
    durable: bool = True,
    max_batch_size: int | None = None,
    layout: Layout = Layout.AUTO,
) -> DrasiRay:
    """DrasiRay, one PlatformSource (group ``bench`` from ``0``; one stream, or several: one
    per partition), the README's filter query.

    ``durable`` False keeps the coordinator's state in memory only (no Redis write per batch);
    ``max_batch_size`` caps the adaptive reads (None: the source's default); ``layout``: which
    processes run the pipeline (``scaling.layout``).
    """
    return one_source_app(
        url,
        stream,
        {QUERY_ID: SENSOR_QUERY},
        source_id=SOURCE_ID,
        prefix=f"bench-{prefix}",
        state_config=StateConfig(durable=durable),
        scaling_config=ScalingConfig(layout=layout),
        consumer_group=GROUP,
        consumers=consumers,
        batch_size=batch_size,
        max_batch_size=max_batch_size,
        block_ms=block_ms,
        start_id="0",
    )


def actor_pids(app: DrasiRay, source_id: str = SOURCE_ID) -> dict[str, list[int]]:
    """Process ids of the app's actors by kind: ``coordinator`` (the control plane and store
    shard 0; in the fused layout also the shared query host and consumer 0, which then count
    here only), ``shards`` (the other store shards), ``hosts`` (query hosts), ``consumers``.
    Each process is counted once, under the first of these kinds it belongs to."""
    kinds = actors_by_kind(app, source_id)
    seen: set[int] = set()
    pids: dict[str, list[int]] = {}
    for kind in ("coordinator", "shards", "hosts", "consumers"):
        found = ray.get([actor.pid.remote() for actor in kinds[kind]])
        pids[kind] = [pid for pid in found if pid not in seen]
        seen.update(found)
    return pids


def actors_by_kind(app: DrasiRay, source_id: str = SOURCE_ID) -> dict[str, list[Any]]:
    """The app's actor handles by kind (see :func:`actor_pids`; in the fused layout the
    coordinator's handle stands for the shared host and consumer 0 too)."""
    shards = app.shard_actors()
    return {
        "consumers": app.consumer_actors(source_id),
        "coordinator": shards[:1],
        "shards": shards[1:],
        "hosts": list(app.query_host_actors().values()),
    }


# --------------------------------------------------------------------------------------------
# where the CPU goes
# --------------------------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float | None:
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return float(times.user + times.system)


def _machine_busy_seconds() -> float:
    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def _descendants() -> list[int]:
    return [child.pid for child in psutil.Process().children(recursive=True)]


@dataclass(frozen=True)
class CpuUsage:
    """Share of one core per role (100 = one core busy the whole time), and the machine's."""

    wall_s: float
    per_role: dict[str, float]
    machine_cores: float
    """Busy cores of the whole machine (2 at most here), every process of every user."""

    @property
    def ours_cores(self) -> float:
        return sum(self.per_role.values()) / 100.0

    @property
    def elsewhere_cores(self) -> float:
        """Busy cores outside this run's processes (other engineers' tests, CI)."""
        return max(self.machine_cores - self.ours_cores, 0.0)

    def busiest(self) -> tuple[str, float]:
        """The role with the most CPU, Ray's own processes and the driver excluded."""
        candidates = {
            role: share
            for role, share in self.per_role.items()
            if role not in ("ray system", "driver")
        }
        return max(candidates.items(), key=lambda item: item[1])


@dataclass
class CpuMeter:
    """CPU seconds of each role's processes between :meth:`start` and :meth:`stop`.

    ``roles`` maps a role to pids (each actor counted whole; a consumer role sums its actors).
    The driver and the private Redis are roles of their own; every other descendant of the
    driver (GCS, raylet, idle workers) is ``ray system``.
    """

    roles: dict[str, list[int]]
    _start: dict[int, float] = field(default_factory=dict)
    _machine: float = 0.0
    _wall: float = 0.0

    @classmethod
    def for_app(cls, app: DrasiRay, redis_pid: int | None) -> CpuMeter:
        return cls.for_roles(actor_pids(app), redis_pid)

    @classmethod
    def for_roles(cls, roles: dict[str, list[int]], redis_pid: int | None) -> CpuMeter:
        """``roles`` plus Redis, this process (``driver``) and its other descendants."""
        roles = dict(roles)
        if redis_pid is not None:
            roles["redis"] = [redis_pid]
        roles["driver"] = [os.getpid()]
        known = {pid for pids in roles.values() for pid in pids}
        roles["ray system"] = [pid for pid in _descendants() if pid not in known]
        return cls(roles)

    def with_role(self, role: str, pids: Sequence[int]) -> CpuMeter:
        """A meter that also counts ``pids`` as ``role`` (and no longer as whatever role
        held them, e.g. ``ray system`` for a process this one spawned)."""
        roles = {
            name: [pid for pid in held if pid not in pids] for name, held in self.roles.items()
        }
        roles[role] = list(pids)
        return CpuMeter(roles)

    def start(self) -> CpuMeter:
        self._start = {
            pid: seconds
            for pids in self.roles.values()
            for pid in pids
            if (seconds := _cpu_seconds(pid)) is not None
        }
        self._machine = _machine_busy_seconds()
        self._wall = time.perf_counter()
        return self

    def stop(self) -> CpuUsage:
        wall = max(time.perf_counter() - self._wall, 1e-9)
        machine = (_machine_busy_seconds() - self._machine) / wall
        per_role = {}
        for role, pids in self.roles.items():
            used = 0.0
            for pid in pids:
                end = _cpu_seconds(pid)
                if end is not None and pid in self._start:
                    used += end - self._start[pid]
            per_role[role] = 100.0 * used / wall
        return CpuUsage(wall, per_role, machine)


CPU_ROLES = ("consumers", "coordinator", "shards", "hosts", "redis", "driver", "ray system")


def cpu_cells(usage: CpuUsage) -> list[str]:
    """``%`` of a core per role, then the machine's busy cores and those used elsewhere."""
    cells = [f"{usage.per_role.get(role, 0.0):.0f}" for role in CPU_ROLES]
    return [*cells, f"{usage.machine_cores:.2f}", f"{usage.elsewhere_cores:.2f}"]


CPU_HEADERS = (
    "consumers %",
    "coordinator %",
    "other shards %",
    "query hosts %",
    "redis %",
    "driver %",
    "ray system %",
    "machine cores busy",
    "of which elsewhere",
)

CPU_NOTE = (
    "CPU columns: CPU time of each process over the timed window, in % of one core "
    "(`consumers` sums the consumer actors; `coordinator` = the control plane and store "
    "shard 0, and in the fused layout the shared query host and consumer 0 in the same "
    "process; `other shards` sums store shards 1..K-1; `query hosts` sums the hosts of the "
    "queries; `ray system` = GCS, raylet, idle workers; "
    "`driver` = this benchmark's process: publisher and subscriber threads). "
    "`machine cores busy` = all processes of the machine (2 cores at most); "
    "`of which elsewhere` = busy cores not used by this run (other engineers, CI)."
)


# --------------------------------------------------------------------------------------------
# app.status() while it runs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusSample:
    at_s: float
    in_flight: int
    coordinator_batches: int
    coordinator_changes: int
    buffered: int


@dataclass(frozen=True)
class StatusSummary:
    samples: int
    in_flight_mean: float
    in_flight_max: int
    batches_per_s: float
    changes_per_batch: float
    buffered_max: int

    def cells(self) -> list[str]:
        return [
            f"{self.in_flight_mean:,.0f} / {self.in_flight_max:,}",
            f"{self.batches_per_s:,.0f}",
            f"{self.changes_per_batch:.0f}",
        ]


STATUS_HEADERS = ("in_flight mean / max", "coord. batches/s", "changes/batch")


def _sample(app: DrasiRay, started: float) -> StatusSample:
    status = app.status()
    consumers = status.consumers(SOURCE_ID) if SOURCE_ID in status.sources else []
    query = status.queries.get(QUERY_ID)
    subscribers = query.subscribers if isinstance(query, QueryReport) else {}
    return StatusSample(
        time.perf_counter() - started,
        sum(consumer.in_flight for consumer in consumers),
        status.totals.batches,
        status.totals.changes,
        sum(subscriber.buffered for subscriber in subscribers.values()),
    )


class StatusSampler:
    """Calls ``app.status()`` every ``interval_s`` in a thread until :meth:`stop`."""

    def __init__(self, app: DrasiRay, interval_s: float = 0.5) -> None:
        self._app = app
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.samples: list[StatusSample] = []
        self._thread = threading.Thread(target=self._run, name="status-sampler", daemon=True)

    def start(self) -> StatusSampler:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(_sample(self._app, self._started))
            self._stop.wait(self._interval_s)

    def stop(self) -> StatusSummary:
        self._stop.set()
        self._thread.join(timeout=30)
        return summarize_status(self.samples)


def summarize_status(samples: Sequence[StatusSample]) -> StatusSummary:
    """In-flight entries (summed over consumers) and the coordinator's batch rate and size."""
    if len(samples) < 2:
        return StatusSummary(len(samples), 0.0, 0, 0.0, 0.0, 0)
    first, last = samples[0], samples[-1]
    batches = last.coordinator_batches - first.coordinator_batches
    changes = last.coordinator_changes - first.coordinator_changes
    span = max(last.at_s - first.at_s, 1e-9)
    return StatusSummary(
        len(samples),
        sum(s.in_flight for s in samples) / len(samples),
        max(s.in_flight for s in samples),
        batches / span,
        changes / batches if batches else 0.0,
        max(s.buffered for s in samples),
    )
